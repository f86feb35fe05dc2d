package org.jtorch.ops;

import org.jtorch.op.JoiningOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.ViewOps;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;

/**
 * Joining and splitting along a dimension, with PyTorch's semantics: {@code cat}, {@code stack},
 * {@code split}, {@code split_with_sizes}, {@code chunk}, {@code unbind}.
 *
 * <p>{@code cat} and {@code stack} are declared variadic ops ({@link JoiningOps}): the dispatcher runs their checks,
 * kernels (each input copied into its slice of the result), autograd (each input gets its slice of the gradient,
 * converted back to its dtype) and trace. The splitting ops ({@link ViewOps#SPLIT}, {@link ViewOps#SPLIT_WITH_SIZES}, {@link
 * ViewOps#CHUNK}, {@link ViewOps#UNBIND}) return views that share storage with their input; the caller owns (closes) them.
 * Each call is one autograd node for all its views, whose backward joins their gradients once (zeros for a view that got
 * none), and one traced op with several outputs.
 */
public final class Joining {
    private Joining() {}

    /**
     * {@code torch.cat(tensors, dim)}: inputs must have the same number of dimensions and equal sizes
     * except along {@code dim}; the result dtype promotes over all inputs. As PyTorch's legacy rule,
     * 1-d tensors with no elements are skipped whatever their shape elsewhere. The declared op {@link JoiningOps#CAT}.
     */
    public static Tensor cat(List<Tensor> tensors, int dim) {
        return join(JoiningOps.CAT, tensors, dim);
    }

    /** {@code torch.stack(tensors, dim)}: equal-shaped inputs joined along a new dimension {@code dim} ({@link JoiningOps#STACK}). */
    public static Tensor stack(List<Tensor> tensors, int dim) {
        return join(JoiningOps.STACK, tensors, dim);
    }

    private static Tensor join(OpDef op, List<Tensor> tensors, int dim) {
        if (tensors.isEmpty()) throw new IllegalArgumentException(op.pyName() + ": expected a non-empty list of tensors");
        Tensor[] inputs = tensors.toArray(new Tensor[0]);
        for (int i = 0; i < inputs.length; i++) {
            if (inputs[i] == null) throw new IllegalArgumentException(op.pyName() + ": tensor " + i + " of the list is null");
        }
        return Dispatcher.call(op, inputs, dim);
    }

    /** {@code self.split(splitSize, dim)}: views of {@code splitSize} along {@code dim}, the last one possibly smaller. */
    public static List<Tensor> split(Tensor self, long splitSize, int dim) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEndAll(ViewOps.SPLIT, new Tensor[] {self}, new double[] {splitSize, dim}, () -> split(self, splitSize, dim));
        }
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
        return Views.splitViews(ViewOps.SPLIT, self, d, splitSizes(op, parts, splitSize, size), false);
    }

    /** {@code parts} sizes of {@code splitSize}, the last one what remains of {@code size}. */
    private static long[] splitSizes(String op, long parts, long splitSize, long size) {
        if (parts > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(op + ": cannot return " + parts + " views (more than a Java list can hold)");
        }
        long[] sizes = new long[(int) parts];
        for (int i = 0; i < sizes.length; i++) sizes[i] = Math.min(splitSize, size - i * splitSize);
        return sizes;
    }

    /** {@code self.split(sizes, dim)} ({@code split_with_sizes}): the sizes must sum to {@code self.size(dim)}. */
    public static List<Tensor> split(Tensor self, long[] sizes, int dim) {
        if (Dispatcher.tracing()) {
            double[] args = new double[sizes.length + 1];
            args[0] = dim;
            for (int i = 0; i < sizes.length; i++) args[i + 1] = sizes[i];
            return Dispatcher.traceFrontEndAll(ViewOps.SPLIT_WITH_SIZES, new Tensor[] {self}, args, () -> split(self, sizes, dim));
        }
        return splitWithSizes(ViewOps.SPLIT_WITH_SIZES, self, sizes, dim);
    }

    private static List<Tensor> splitWithSizes(OpDef splitOp, Tensor self, long[] sizes, int dim) {
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
        return Views.splitViews(splitOp, self, d, sizes.clone(), false);
    }

    /** {@code self.chunk(chunks, dim)}: at most {@code chunks} views of {@code ceil(size / chunks)} elements. */
    public static List<Tensor> chunk(Tensor self, int chunks, int dim) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEndAll(ViewOps.CHUNK, new Tensor[] {self}, new double[] {chunks, dim}, () -> chunk(self, chunks, dim));
        }
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
            return splitWithSizes(ViewOps.CHUNK, self, new long[chunks], d);
        }
        long parts = splitSize == 0 ? 1 : (size - 1) / splitSize + 1;
        return Views.splitViews(ViewOps.CHUNK, self, d, splitSizes(op, parts, splitSize, size), false);
    }

    /** {@code self.unbind(dim)}: the slices along {@code dim}, each without that dimension (views). */
    public static List<Tensor> unbind(Tensor self, int dim) {
        if (Dispatcher.tracing()) return Dispatcher.traceFrontEndAll(ViewOps.UNBIND, new Tensor[] {self}, new double[] {dim}, () -> unbind(self, dim));
        String op = "unbind";
        self.checkOpen(op);
        if (self.dim() == 0) throw new IndexOutOfBoundsException(op + ": dimension specified as " + dim + " but tensor has no dimensions");
        int d = Shapes.wrapDim(op, dim, self.dim());
        return Views.splitViews(ViewOps.UNBIND, self, d, new long[0], true);
    }
}
