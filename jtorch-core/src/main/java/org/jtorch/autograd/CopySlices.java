package org.jtorch.autograd;

import org.jtorch.Tensor;

/**
 * The history of an in-place op on a view, as PyTorch's {@code CopySlices}: the op wrote into the base's memory, so the
 * base's history is rebased onto one node that takes the base's gradient, hands the view's slice of it to the op's
 * backward, writes the op's gradient for the view's old values back into that slice for the base's previous history,
 * and passes the op's other input gradients on. The view's own history is then regenerated from the base's (see
 * {@link Tensor#viewBase()}).
 *
 * <p>The base must be contiguous (the gradient is laid out like it); {@code Elementwise.checkInPlaceAllowed} refuses the
 * op before it writes otherwise, and refuses views of leaves that require grad, as PyTorch does.
 */
final class CopySlices {
    private CopySlices() {}

    /** Records {@code fn}, the backward of an in-place op on {@code view} (input {@code self} of {@code inputs}), on the view's base. */
    static Node record(String name, Tensor[] inputs, int self, Tensor view, BackwardFunction fn, SavedTensor[] saved) {
        Tensor base = view.viewBase();
        if (base.requiresGrad() && base.isLeaf()) {
            throw new IllegalStateException(name + ": a view of a leaf tensor that requires grad is being used in an in-place operation");
        }
        if (!base.isContiguous()) {
            throw new IllegalStateException(name + ": in-place operation on a view of a non-contiguous tensor that takes part in autograd"
                    + " is not supported; clone() the tensor first");
        }
        long[] size = view.shape();
        long[] stride = view.strides();
        long offset = view.storageOffset() - base.storageOffset();
        Tensor[] baseInputs = inputs.clone();
        baseInputs[self] = base;
        BackwardFunction copySlices = g -> {
            Tensor result = g[0].clone();
            Tensor slice = result.asStrided(size, stride, offset);
            Tensor[] grads = fn.apply(new Tensor[] {slice.clone()}).clone();
            if (grads[self] != null) slice.copy_(grads[self]);
            else slice.zero_();
            grads[self] = result;
            return grads;
        };
        return Autograd.record("CopySlices", baseInputs, new Tensor[] {base}, copySlices, saved);
    }
}
