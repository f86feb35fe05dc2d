package org.jtorch.autograd;

import org.jtorch.Tensor;
import org.jtorch.op.Shapes;
import org.jtorch.op.ViewOps;
import org.jtorch.ops.Dispatcher;

/**
 * The history of an in-place op on a view, as PyTorch's {@code CopySlices}: the op wrote into the base's memory, so the
 * base's history is rebased onto one node that takes the base's gradient, hands the view's slice of it to the op's
 * backward, writes the op's gradient for the view's old values back into that slice for the base's previous history,
 * and passes the op's other input gradients on. The view's own history is then regenerated from the base's (see
 * {@link Tensor#viewBase()}).
 *
 * <p>The slice is read and written back by declared ops ({@code as_strided_backward} in its adjoint form, a read of the
 * gradient laid out as the base; {@code as_strided_scatter}), their positions relative to the gradient's first element: the
 * JIT traces a backward through this node, and a backward of it (create_graph) differentiates them.
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
        long[] baseShape = base.shape();
        ViewOps.Geometry slice = new ViewOps.Geometry(view.shape(), view.strides(), view.storageOffset() - base.storageOffset());
        // as_strided_scatter's scalars: the slice's size, stride and offset (what follows an empty input geometry's [0, 0])
        double[] all = ViewOps.asStridedScalars(new long[0], new long[0], 0, slice);
        double[] scatter = java.util.Arrays.copyOfRange(all, 2, all.length);
        // the slice read from the gradient laid out contiguously as the base: as_strided_backward's adjoint form
        double[] read = concat(ViewOps.geometryScalars(baseShape, Shapes.contiguousStrides(baseShape), 0), scatter);
        Tensor[] baseInputs = inputs.clone();
        baseInputs[self] = base;
        BackwardFunction copySlices = g -> {
            Tensor part = Dispatcher.call(ViewOps.AS_STRIDED_BACKWARD, new Tensor[] {g[0]}, read);
            Tensor[] grads = fn.apply(new Tensor[] {part}).clone();
            Tensor written = grads[self] != null ? grads[self] : org.jtorch.Torch.zeros(slice.shape(), g[0].dtype(), g[0].device());
            grads[self] = Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {g[0], written}, scatter);
            return grads;
        };
        return Autograd.record("CopySlices", baseInputs, new Tensor[] {base}, copySlices, saved);
    }

    /** The flag of {@code as_strided_backward}'s adjoint form (1), then the input's geometry, then the view's. */
    private static double[] concat(double[] input, double[] view) {
        double[] r = new double[1 + input.length + view.length];
        r[0] = 1;
        System.arraycopy(input, 0, r, 1, input.length);
        System.arraycopy(view, 0, r, 1 + input.length, view.length);
        return r;
    }
}
