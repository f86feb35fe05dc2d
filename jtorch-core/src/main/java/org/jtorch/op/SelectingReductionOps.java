package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;

import java.util.Arrays;
import java.util.List;
import org.jtorch.types.DType;

/**
 * The reductions along one dimension that select an element rather than combine them: {@code max(dim)} and
 * {@code min(dim)} (values and the index of each, a multi-output op) and {@code argmax}/{@code argmin}, as structured ops
 * ({@link OpDef.Kind#STRUCTURED}). Scalars: the dimension (unwrapped; the meta function wraps it) and {@code keepdim}.
 * A 0-d input reduces as one of size 1 along dim 0 or -1.
 *
 * <p>The gradient of the values goes to the selected elements only ({@link #VALUE_SELECTING_REDUCTION_BACKWARD}, ATen's
 * name), and the gradient of that backward is a gather at the same indices ({@link #SELECT_AT_INDICES}): each is the
 * other's derivative, so gradients of any order are these two kernels again.
 */
public final class SelectingReductionOps {
    private SelectingReductionOps() {}

    private static final Expr SELF = Expr.in(0, "self");
    private static final Expr DIM = Expr.scalar(0, "dim");
    private static final Expr KEEPDIM = Expr.scalar(1, "keepdim");
    private static final Param DIM_PARAM = Param.scalar("dim", "int", null);
    private static final Param KEEPDIM_PARAM = Param.scalar("keepdim", "bool", "False");

    /** {@code torch.max(self, dim, keepdim)}: the largest element along dim (NaN wins) and the index of its first occurrence. */
    public static final OpDef MAX_DIM = withIndices("max_dim", "max", "the largest element along dim (NaN wins) and its first index");

    /** {@code torch.min(self, dim, keepdim)}: the smallest element along dim (NaN wins) and the index of its first occurrence. */
    public static final OpDef MIN_DIM = withIndices("min_dim", "min", "the smallest element along dim (NaN wins) and its first index");

    /** {@code torch.argmax(self, dim, keepdim)}: the index of the first largest element along dim (NaN wins), int64. */
    public static final OpDef ARGMAX = indexOnly("argmax", "the index of the first largest element along dim (NaN wins)");

    public static final OpDef ARGMIN = indexOnly("argmin", "the index of the first smallest element along dim (NaN wins)");

    /**
     * The gradient of {@link #MAX_DIM} and {@link #MIN_DIM}: zeros of {@code self}'s shape with {@code grad} at {@code indices}
     * along {@code dim} ({@code grad} and {@code indices} reduced-shaped, with or without the dimension as {@code keepdim}
     * says). {@code self} is read for its shape only.
     */
    public static final OpDef VALUE_SELECTING_REDUCTION_BACKWARD = OpDef.structured("value_selecting_reduction_backward")
            .rule(DTypeRule.SAME)
            .signature(Param.tensor("grad"), Param.tensor("indices"), Param.tensor("self"), DIM_PARAM, KEEPDIM_PARAM)
            .meta((in, g) -> {
                String op = "value_selecting_reduction_backward";
                long[] reduced = reducedShape(op, in[2], g);
                requireReduced(op, "grad", in[0], reduced, in[2]);
                requireIndices(op, in[1], reduced, in[2]);
                return new Meta.Output(in[2].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(SelectingReductionOps.SELECT_AT_INDICES, GRAD, Expr.in(1, "indices"), DIM, KEEPDIM),
                    null, null))
            .doc("zeros of self's shape with grad at indices along dim").build();

    /** {@code self}'s elements at {@code indices} along {@code dim}: the gradient of {@link #VALUE_SELECTING_REDUCTION_BACKWARD}. */
    public static final OpDef SELECT_AT_INDICES = OpDef.structured("select_at_indices").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("indices"), DIM_PARAM, KEEPDIM_PARAM)
            .meta((in, g) -> {
                long[] reduced = reducedShape("select_at_indices", in[0], g);
                requireIndices("select_at_indices", in[1], reduced, in[0]);
                return new Meta.Output(reduced, in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(SelectingReductionOps.VALUE_SELECTING_REDUCTION_BACKWARD, GRAD, Expr.in(1, "indices"),
                    SELF, DIM, KEEPDIM), null))
            .doc("self's elements at indices along dim").build();

    private static OpDef withIndices(String name, String py, String doc) {
        return OpDef.structured(name).py(py).rule(DTypeRule.SAME)
                .outputs((in, g) -> {
                    long[] reduced = reducedShape(py, in[0], g);
                    return new Meta.Output[] {new Meta.Output(reduced, in[0].dtype()), new Meta.Output(reduced, DType.INT64)};
                }, "values", "indices")
                .signature(Param.tensor("self"), DIM_PARAM, KEEPDIM_PARAM)
                .derivatives(() -> List.of(call(VALUE_SELECTING_REDUCTION_BACKWARD, GRAD, Expr.output(1, "indices"), SELF, DIM, KEEPDIM)))
                .doc(doc).build();
    }

    private static OpDef indexOnly(String name, String doc) {
        return OpDef.structured(name).rule(DTypeRule.SAME)
                .signature(Param.tensor("self"), DIM_PARAM, KEEPDIM_PARAM)
                .meta((in, g) -> {
                    if (in[0].dtype() == DType.BOOL) throw new IllegalArgumentException(name + ": not implemented for " + in[0].dtype());
                    return new Meta.Output(reducedShape(name, in[0], g), DType.INT64);
                })
                .doc(doc).build();
    }

    /**
     * The shape of {@code self} reduced over the call's dimension ({@code g[0]}, with {@code keepdim} {@code g[1]}); an
     * error naming the op when the dimension is out of range or empty, as PyTorch's.
     */
    static long[] reducedShape(String op, StridedView self, double[] g) {
        int d = Shapes.wrapDim(op, (long) g[0], self.dim());
        boolean keepdim = g.length > 1 && g[1] != 0;
        if (self.dim() == 0) return new long[0];
        long[] shape = self.shape();
        if (shape[d] == 0) {
            throw new IllegalArgumentException(op + "(): Expected reduction dim " + d + " to have non-zero size (input shape "
                    + Shapes.format(shape) + ")");
        }
        if (keepdim) {
            long[] r = shape.clone();
            r[d] = 1;
            return r;
        }
        long[] r = new long[shape.length - 1];
        for (int k = 0, j = 0; k < shape.length; k++) if (k != d) r[j++] = shape[k];
        return r;
    }

    private static void requireReduced(String op, String what, StridedView t, long[] reduced, StridedView self) {
        if (t == null || !Arrays.equals(t.shape(), reduced)) {
            throw new IllegalArgumentException(op + ": expected " + what + " of shape " + Shapes.format(reduced) + " for self "
                    + Shapes.format(self.shape()) + ", got " + (t == null ? "none" : Shapes.format(t.shape())));
        }
    }

    private static void requireIndices(String op, StridedView indices, long[] reduced, StridedView self) {
        requireReduced(op, "indices", indices, reduced, self);
        if (indices.dtype() != DType.INT64) throw new IllegalArgumentException(op + ": expected int64 indices, got " + indices.dtype());
    }
}
