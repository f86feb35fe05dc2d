package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;

import java.util.Arrays;
import org.jtorch.DType;

/**
 * The indexing ops along one dimension, declared as structured ops ({@link OpDef.Kind#STRUCTURED}) with PyTorch's
 * derivatives ({@code derivatives.yaml}): {@code index_select} and {@code gather}, whose backwards add the gradient at
 * the indices into zeros of {@code self}'s shape ({@code self} is saved for its shape and dtype, as PyTorch 1.13's
 * gather saves it), and {@code index_add} and {@code scatter_add}, whose derivatives are the selects again. The
 * index tensor is the second input and gets no gradient; the dimension is the first scalar, unwrapped (the meta function
 * wraps it). A 0-d tensor indexes as one of size 1. Index values are checked by the kernels before they write: a bad one
 * raises {@link IndexOutOfBoundsException} naming the op, the value and the size of the dimension.
 */
public final class IndexingOps {
    private IndexingOps() {}

    private static final Expr SELF = Expr.in(0, "self");
    private static final Expr INDEX = Expr.in(1, "index");
    private static final Expr DIM = Expr.scalar(0, "dim");

    /** {@code self.index_select(dim, index)}: {@code index} a vector (or 0-d) of int32 or int64. */
    public static final OpDef INDEX_SELECT = OpDef.structured("index_select").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.scalar("dim", "int", null))
            .meta(IndexingOps::indexSelectMeta)
            .derivatives(() -> Arrays.asList(call(IndexingOps.INDEX_SELECT_BACKWARD, SELF, INDEX, GRAD, DIM), null))
            .doc("self's slices at index along dim").build();

    /**
     * The gradient of {@link #INDEX_SELECT}: {@code grad} added at {@code index} along {@code dim} into zeros of
     * {@code self}'s shape and dtype (self's values are not read: its gradient here is none). One kernel fills and adds;
     * {@code index_add} into a zeros tensor would allocate, fill and copy it first.
     */
    public static final OpDef INDEX_SELECT_BACKWARD = OpDef.structured("index_select_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("grad"), Param.scalar("dim", "int", null))
            .meta((in, g) -> indexAddMeta("index_select_backward", in, g))
            .derivatives(() -> Arrays.asList(null, null, call(IndexingOps.INDEX_SELECT, GRAD, INDEX, DIM)))
            .doc("grad added at index along dim into zeros of self's shape").build();

    /**
     * {@code self.index_add(dim, index, source, alpha)}: a copy of {@code self} with {@code alpha * source.select(dim, i)}
     * added to {@code self.select(dim, index[i])}; duplicates sum in index order. Also {@link #INDEX_SELECT}'s derivative.
     */
    public static final OpDef INDEX_ADD = OpDef.structured("index_add").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("source"), Param.scalar("dim", "int", null),
                    Param.scalar("alpha", "Scalar", "1"))
            .meta((in, g) -> indexAddMeta("index_add", in, g))
            .derivatives(() -> Arrays.asList(GRAD, null, call(PointwiseOps.MUL, call(IndexingOps.INDEX_SELECT, GRAD, INDEX, DIM),
                    Expr.scalar(1, "alpha"))))
            .doc("self with alpha * source added at index along dim").build();

    /** {@code self.gather(dim, index)}: {@code out[i][j] = self[index[i][j]][j]} for dim 0; index is int64. */
    public static final OpDef GATHER = OpDef.structured("gather").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.scalar("dim", "int", null))
            .meta((in, g) -> new Meta.Output(gatherMeta("gather", in[0], in[1], null, g).clone(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(call(IndexingOps.GATHER_BACKWARD, SELF, INDEX, GRAD, DIM), null))
            .doc("self's elements at index along dim").build();

    /**
     * The gradient of {@link #GATHER}: {@code grad} added at {@code index} along {@code dim} into zeros of {@code self}'s
     * shape and dtype (PyTorch's {@code gather_backward}; self's values are not read).
     */
    public static final OpDef GATHER_BACKWARD = OpDef.structured("gather_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("grad"), Param.scalar("dim", "int", null))
            .meta((in, g) -> {
                gatherMeta("gather_backward", in[0], in[1], in[2], g);
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(null, null, call(IndexingOps.GATHER, GRAD, INDEX, DIM)))
            .doc("grad added at index along dim into zeros of self's shape").build();

    /**
     * {@code self.scatter_add(dim, index, src)}: a copy of {@code self} with {@code src[i][j]} added at
     * {@code [index[i][j]][j]} for dim 0; only the index-shaped corner of {@code src} is read (its front end passes
     * that corner, so that the gradient of the rest is zero).
     */
    public static final OpDef SCATTER_ADD = OpDef.structured("scatter_add").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("src"), Param.scalar("dim", "int", null))
            .autocast(org.jtorch.Device.Type.CUDA, CastPolicy.PROMOTE)
            .meta((in, g) -> {
                gatherMeta("scatter_add", in[0], in[1], in[2], g);
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(GRAD, null, call(IndexingOps.GATHER, GRAD, INDEX, DIM)))
            .doc("self with src added at index along dim").build();

    private static Meta.Output indexSelectMeta(StridedView[] in, double[] g) {
        String op = "index_select";
        StridedView self = in[0], index = in[1];
        requireIndex(op, self, index);
        if (index.dim() > 1) {
            throw new IllegalArgumentException(op + ": index is supposed to be a vector, got shape " + Shapes.format(index.shape()));
        }
        if (index.dtype() != DType.INT64 && index.dtype() != DType.INT32) {
            throw new IllegalArgumentException(op + ": expected int32 or int64 for index, got " + index.dtype());
        }
        int d = Shapes.wrapDim(op, (long) g[0], self.dim());
        if (self.dim() == 0) {
            if (index.numel() != 1) {
                throw new IllegalArgumentException(op + ": index to a 0-d tensor can have only 1 value, got " + index.numel());
            }
            return new Meta.Output(new long[0], self.dtype());
        }
        long[] shape = self.shape().clone();
        shape[d] = index.numel();
        return new Meta.Output(shape, self.dtype());
    }

    private static Meta.Output indexAddMeta(String op, StridedView[] in, double[] g) {
        StridedView self = in[0], index = in[1], source = in[2];
        requireIndex(op, self, index);
        if (source == null) throw new IllegalArgumentException(op + ": source is required");
        if (!source.device().equals(self.device())) {
            throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + self.device()
                    + " (self) and " + source.device() + " (source)");
        }
        if (index.dim() > 1) {
            throw new IllegalArgumentException(op + ": index should have dimension 1 or 0, got shape " + Shapes.format(index.shape()));
        }
        if (index.dtype() != DType.INT64 && index.dtype() != DType.INT32) {
            throw new IllegalArgumentException(op + ": expected int32 or int64 for index, got " + index.dtype());
        }
        if (self.dtype() != source.dtype()) {
            throw new IllegalArgumentException(op + ": self (" + self.dtype() + ") and source (" + source.dtype()
                    + ") must have the same dtype");
        }
        double alpha = g.length > 1 ? g[1] : 1;
        if (!self.dtype().isFloatingPoint() && alpha != Math.rint(alpha)) {
            throw new IllegalArgumentException(op + ": for integral input tensors, alpha must not be a floating point number, got "
                    + alpha);
        }
        int d = Shapes.wrapDim(op, (long) g[0], self.dim());
        long[] s = atLeast1d(self.shape()), v = atLeast1d(source.shape());
        boolean zeroD = self.dim() == 0 || source.dim() == 0;
        if (!zeroD && v.length != s.length) {
            throw new IllegalArgumentException(op + ": source " + Shapes.format(source.shape())
                    + " must have the same number of dimensions as self " + Shapes.format(self.shape()));
        }
        if (v[d] != index.numel()) {
            throw new IllegalArgumentException(op + ": number of indices (" + index.numel() + ") should be equal to source.size("
                    + d + ") (" + v[d] + ")");
        }
        for (int k = 0; k < s.length && !zeroD; k++) {
            if (k != d && s[k] != v[k]) {
                throw new IllegalArgumentException(op + ": self " + Shapes.format(self.shape()) + " and source "
                        + Shapes.format(source.shape()) + " must match in every dimension but " + d);
            }
        }
        return new Meta.Output(self.shape(), self.dtype());
    }

    /**
     * Checks a gather's ({@code src} null) or a scatter's operands and gives the index's shape (1-d for a 0-d index): ranks
     * equal (0-d counts as 1-d), the index no larger than {@code self} apart from {@code dim} nor than {@code src}.
     */
    private static long[] gatherMeta(String op, StridedView self, StridedView index, StridedView src, double[] g) {
        requireIndex(op, self, index);
        if (index.dtype() != DType.INT64) {
            throw new IllegalArgumentException(op + ": expected dtype int64 for index, got " + index.dtype());
        }
        if (src != null) {
            if (!src.device().equals(self.device())) {
                throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + self.device()
                        + " (self) and " + src.device() + " (src)");
            }
            if (src.dtype() != self.dtype()) {
                throw new IllegalArgumentException(op + ": expected self.dtype to be equal to src.dtype, got " + self.dtype()
                        + " and " + src.dtype());
            }
        }
        int d = Shapes.wrapDim(op, (long) g[0], self.dim());
        long[] s = atLeast1d(self.shape()), i = atLeast1d(index.shape()), v = src == null ? null : atLeast1d(src.shape());
        if (s.length != i.length || (v != null && v.length != i.length)) {
            throw new IllegalArgumentException(op + ": index tensor must have the same number of dimensions as the input (index "
                    + Shapes.format(index.shape()) + ", self " + Shapes.format(self.shape())
                    + (src == null ? "" : ", src " + Shapes.format(src.shape())) + ")");
        }
        for (int k = 0; k < s.length; k++) {
            if ((k != d && i[k] > s[k]) || (v != null && i[k] > v[k])) {
                throw new IllegalArgumentException(op + ": size does not match at dimension " + k + ": expected index "
                        + Shapes.format(index.shape()) + " to be smaller than self " + Shapes.format(self.shape())
                        + " apart from dimension " + d + (src == null ? "" : " and to be smaller than src " + Shapes.format(src.shape())));
            }
        }
        return index.shape();
    }

    private static void requireIndex(String op, StridedView self, StridedView index) {
        if (index == null) throw new IllegalArgumentException(op + ": index is required");
        if (!index.device().equals(self.device())) {
            throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + self.device()
                    + " and " + index.device() + " (index)");
        }
    }

    private static long[] atLeast1d(long[] shape) {
        return shape.length == 0 ? new long[] {1} : shape;
    }
}
