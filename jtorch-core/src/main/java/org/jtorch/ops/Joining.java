package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.op.FrontEndOps;
import org.jtorch.op.Shapes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.amp.Autocast;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;

/**
 * Joining and splitting along a dimension, with PyTorch's semantics: {@code cat}, {@code stack},
 * {@code split}, {@code split_with_sizes}, {@code chunk}, {@code unbind}.
 *
 * <p>{@code cat} is composed from the backend's strided copy into slices of the output (no kernel of
 * its own): contiguous inputs then move as bulk row copies, and dtype promotion comes for free. The
 * splitting ops return views that share storage with their input; the caller owns (closes) them.
 *
 * <p>Autograd: {@code cat} and {@code stack} record one node that hands each input its slice of the
 * gradient (converted back to the input's dtype); the splitting ops are differentiable through the
 * view ops they return ({@code narrow}, {@code select}).
 */
public final class Joining {
    private Joining() {}

    /**
     * {@code torch.cat(tensors, dim)}: inputs must have the same number of dimensions and equal sizes
     * except along {@code dim}; the result dtype promotes over all inputs. As PyTorch's legacy rule,
     * 1-d tensors with no elements are skipped whatever their shape elsewhere.
     */
    public static Tensor cat(List<Tensor> tensors, int dim) {
        if (Dispatcher.tracing()) return Dispatcher.traceFrontEnd(FrontEndOps.CAT, tensors.toArray(new Tensor[0]), new double[] {dim}, () -> cat(tensors, dim));
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("cat", t -> cat(List.of(t), dim), tensors.toArray(new Tensor[0]));
            if (r != null) return r;
        }
        String op = "cat";
        if (tensors.isEmpty()) throw new IllegalArgumentException(op + ": expected a non-empty list of tensors");
        TypePromotion.State types = new TypePromotion.State();
        Tensor ref = null;
        int refPos = -1;
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = tensors.get(i);
            t.checkOpen(op);
            if (t.dim() == 0) {
                throw new IllegalArgumentException(op + ": zero-dimensional tensor (at position " + i + ") cannot be concatenated");
            }
            if (!t.device().equals(tensors.get(0).device())) {
                throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found "
                        + tensors.get(0).device() + " and " + t.device() + " (tensor " + i + ")");
            }
            types.add(t);
            if (ref == null && !isSkipped(t)) {
                ref = t;
                refPos = i;
            }
        }
        DType dtype = types.result();
        Device device = tensors.get(0).device();
        if (ref == null) return Tensor.empty(new long[] {0}, dtype, device);
        int d = Shapes.wrapDim(op, dim, ref.dim());
        long[] shape = ref.shape();
        long total = 0;
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = tensors.get(i);
            if (isSkipped(t)) continue;
            if (t.dim() != ref.dim()) {
                throw new IllegalArgumentException(op + ": tensors must have the same number of dimensions: got " + ref.dim()
                        + " (tensor " + refPos + ") and " + t.dim() + " (tensor " + i + ")");
            }
            for (int k = 0; k < shape.length; k++) {
                if (k != d && t.size(k) != shape[k]) {
                    throw new IllegalArgumentException(op + ": sizes of tensors must match except in dimension " + d
                            + ". Expected size " + shape[k] + " but got size " + t.size(k) + " for tensor number " + i
                            + " in the list (shapes " + Shapes.format(ref.shape()) + " and " + Shapes.format(t.shape()) + ")");
                }
            }
            total += t.size(d);
        }
        shape[d] = total;
        Tensor out = Tensor.empty(shape, dtype, device);
        long at = 0;
        for (Tensor t : tensors) {
            if (isSkipped(t)) continue;
            long n = t.size(d);
            if (n > 0 && t.numel() > 0) {
                try (Tensor slot = out.narrow(d, at, n)) {
                    Backends.of(device).copy(view(t), view(slot));
                }
            }
            at += n;
        }
        Tensor[] inputs = tensors.toArray(new Tensor[0]);
        if (!Autograd.needsGrad(inputs)) return out;
        long[][] shapes = new long[inputs.length][];
        DType[] inputTypes = new DType[inputs.length];
        boolean[] wanted = new boolean[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            shapes[i] = inputs[i].shape();
            inputTypes[i] = inputs[i].dtype();
            wanted[i] = inputs[i].requiresGrad();
        }
        // each input: grad.narrow(dim, its offset, its size)
        return Autograd.record("CatBackward0", out, g -> {
            Tensor[] r = new Tensor[shapes.length];
            long from = 0;
            for (int i = 0; i < shapes.length; i++) {
                boolean skipped = shapes[i].length == 1 && shapes[i][0] == 0;
                long n = skipped ? 0 : shapes[i][d];
                if (wanted[i]) {
                    r[i] = skipped ? Torch.zeros(shapes[i], inputTypes[i], g[0].device())
                            : Elementwise.castTo(g[0].narrow(d, from, n), inputTypes[i]);
                }
                from += n;
            }
            return r;
        }, inputs);
    }

    private static boolean isSkipped(Tensor t) {
        return t.dim() == 1 && t.size(0) == 0;
    }

    /** {@code torch.stack(tensors, dim)}: equal-shaped inputs joined along a new dimension {@code dim}. */
    public static Tensor stack(List<Tensor> tensors, int dim) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("stack", t -> stack(List.of(t), dim), tensors.toArray(new Tensor[0]));
            if (r != null) return r;
        }
        String op = "stack";
        if (tensors.isEmpty()) throw new IllegalArgumentException(op + ": expected a non-empty list of tensors");
        long[] shape = tensors.get(0).shape();
        for (int i = 0; i < tensors.size(); i++) {
            tensors.get(i).checkOpen(op);
            if (!Arrays.equals(shape, tensors.get(i).shape())) {
                throw new IllegalArgumentException(op + ": expects each tensor to be equal size, but got " + Shapes.format(shape)
                        + " at entry 0 and " + Shapes.format(tensors.get(i).shape()) + " at entry " + i);
            }
        }
        int d = Shapes.wrapDim(op, dim, shape.length + 1);
        List<Tensor> expanded = new ArrayList<>(tensors.size());
        Tensor out;
        try (Grad.Mode m = Grad.noGrad()) {
            for (Tensor t : tensors) expanded.add(t.unsqueeze(d));
            out = cat(expanded, d);
        } finally {
            for (Tensor t : expanded) t.close();
        }
        Tensor[] inputs = tensors.toArray(new Tensor[0]);
        if (!Autograd.needsGrad(inputs)) return out;
        DType[] types = new DType[inputs.length];
        boolean[] wanted = new boolean[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            types[i] = inputs[i].dtype();
            wanted[i] = inputs[i].requiresGrad();
        }
        // each input: grad.select(dim, its position)
        return Autograd.record("StackBackward0", out, g -> {
            Tensor[] r = new Tensor[types.length];
            for (int i = 0; i < types.length; i++) {
                if (wanted[i]) r[i] = Elementwise.castTo(g[0].select(d, i), types[i]);
            }
            return r;
        }, inputs);
    }

    /** {@code self.split(splitSize, dim)}: views of {@code splitSize} along {@code dim}, the last one possibly smaller. */
    public static List<Tensor> split(Tensor self, long splitSize, int dim) {
        String op = "split";
        self.checkOpen(op);
        if (self.dim() == 0) throw new IllegalArgumentException(op + ": expects at least a 1-dimensional tensor");
        int d = Shapes.wrapDim(op, dim, self.dim());
        long size = self.size(d);
        if (splitSize < 0) throw new IllegalArgumentException(op + ": split_size must be non-negative, got " + splitSize);
        if (splitSize == 0 && size != 0) {
            throw new IllegalArgumentException(op + ": split_size can only be 0 if dimension size is 0, but got dimension size of "
                    + size);
        }
        long parts = splitSize == 0 || size == 0 ? 1 : (size - 1) / splitSize + 1; // size + splitSize - 1 overflows for a huge split
        List<Tensor> r = new ArrayList<>();
        for (long i = 0; i < parts; i++) {
            long start = i * splitSize;
            r.add(self.narrow(d, start, Math.min(splitSize, size - start)));
        }
        return markedViews(r, "SplitBackward0");
    }

    /** {@code self.split(sizes, dim)} ({@code split_with_sizes}): the sizes must sum to {@code self.size(dim)}. */
    public static List<Tensor> split(Tensor self, long[] sizes, int dim) {
        String op = "split";
        self.checkOpen(op);
        if (self.dim() == 0) throw new IllegalArgumentException(op + ": expects at least a 1-dimensional tensor");
        int d = Shapes.wrapDim(op, dim, self.dim());
        long size = self.size(d);
        long sum = 0;
        for (long s : sizes) {
            if (s < 0) throw new IllegalArgumentException(op + ": split sizes must be non-negative, got " + Arrays.toString(sizes));
            sum += s;
            if (sum < 0) sum = Long.MAX_VALUE; // an overflowing total is certainly not the dimension's size
        }
        if (sum != size) {
            throw new IllegalArgumentException(op + ": split_with_sizes expects split sizes to sum exactly to " + size
                    + " (input tensor's size at dimension " + d + "), but got split sizes " + Arrays.toString(sizes));
        }
        List<Tensor> r = new ArrayList<>(sizes.length);
        long start = 0;
        for (long s : sizes) {
            r.add(self.narrow(d, start, s));
            start += s;
        }
        return markedViews(r, "SplitWithSizesBackward0");
    }

    /** {@code self.chunk(chunks, dim)}: at most {@code chunks} views of {@code ceil(size / chunks)} elements. */
    public static List<Tensor> chunk(Tensor self, int chunks, int dim) {
        String op = "chunk";
        self.checkOpen(op);
        if (self.dim() == 0) throw new IllegalArgumentException(op + ": expects at least a 1-dimensional tensor");
        if (chunks <= 0) throw new IllegalArgumentException(op + ": expects chunks to be greater than 0, got " + chunks);
        int d = Shapes.wrapDim(op, dim, self.dim());
        long size = self.size(d);
        long splitSize = (size + chunks - 1) / chunks;
        if (splitSize == 0 && size == 0) {
            // PyTorch keeps the requested number of (empty) chunks here; a Java list holds fewer than 2^31 - 8.
            if (chunks > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException(op + ": cannot return " + chunks + " empty chunks of a tensor of shape "
                        + Shapes.format(self.shape()) + " (more than a Java list can hold)");
            }
            return split(self, new long[chunks], d);
        }
        return split(self, splitSize, d);
    }

    /** {@code self.unbind(dim)}: the slices along {@code dim}, each without that dimension (views). */
    public static List<Tensor> unbind(Tensor self, int dim) {
        String op = "unbind";
        self.checkOpen(op);
        if (self.dim() == 0) throw new IndexOutOfBoundsException(op + ": dimension specified as " + dim + " but tensor has no dimensions");
        int d = Shapes.wrapDim(op, dim, self.dim());
        long n = self.size(d);
        List<Tensor> r = new ArrayList<>();
        for (long i = 0; i < n; i++) r.add(self.select(d, i));
        return markedViews(r, "UnbindBackward0");
    }

    /** The views one call returned, each marked as such: in-place ops on them are refused under autograd, as PyTorch's. */
    private static List<Tensor> markedViews(List<Tensor> views, String node) {
        for (int i = 0; i < views.size(); i++) views.get(i).markMultiOutputView(node, i);
        return views;
    }
}
