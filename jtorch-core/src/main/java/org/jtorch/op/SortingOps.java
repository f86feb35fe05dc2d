package org.jtorch.op;

import org.jtorch.types.DType;

/**
 * The sorting primitives, as structured ops ({@link OpDef.Kind#STRUCTURED}) without derivatives (their results are
 * positions): the stable sort's first positions along a dimension, which sort, topk, kthvalue, median and mode gather
 * values with (differentiable through {@code gather}), and the binary search of {@code searchsorted} over rows.
 */
public final class SortingOps {
    private SortingOps() {}

    /**
     * The positions along {@code dim} of the first {@code k} elements of each line of {@code self} in stable ascending
     * order (descending when {@code descending}), int64; NaN sorts above every number. Scalars: the dimension (wrapped
     * by the meta function), {@code descending} (0 or 1) and {@code k} (NaN: the whole line).
     */
    public static final OpDef SORT_INDICES = OpDef.structured("sort_indices").py("argsort").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("dim", "int", "-1"), Param.scalar("descending", "bool", "False"),
                    Param.scalar("k", "int?", "None"))
            .meta((in, g) -> {
                StridedView x = in[0];
                int d = Shapes.wrapDim("argsort", (long) g[0], x.dim());
                long[] shape = x.shape().clone();
                long n = x.dim() == 0 ? 1 : shape[d];
                long k = Double.isNaN(g[2]) ? n : (long) g[2];
                if (k < 0 || k > n) {
                    throw new IllegalArgumentException("argsort: k = " + k + " out of range for a line of " + n + " (input shape "
                            + Shapes.format(x.shape()) + ")");
                }
                if (shape.length > 0) shape[d] = k;
                return new Meta.Output(shape, DType.INT64);
            })
            .doc("the positions of the first k elements of each line along dim in stable sorted order").build();

    /**
     * {@code torch.searchsorted}: for each value of {@code self}, the number of boundaries below it ({@code right}: not
     * above it) in its row of {@code sorted_sequence} (1-D, or with the same leading dims as {@code self}); {@code sorter}
     * (int64) sorts an unsorted sequence. A hand-written front end ({@link OpDef.Kind#FRONT_END}: the operands brought
     * to one dtype and to rows, then {@link #SEARCHSORTED_ROWS}), traced as one op; its device layer is the dispatcher's.
     * Traced scalars: {@code out_int32}, {@code right} ({@code side = "right"} arrives as {@code right}).
     */
    public static final OpDef SEARCHSORTED = OpDef.frontEnd("searchsorted", false).rule(DTypeRule.SAME_NO_BOOL)
            .signature(Param.tensor("sorted_sequence"), Param.tensor("self"), Param.scalar("out_int32", "bool", "False"),
                    Param.scalar("right", "bool", "False"), Param.scalar("side", "str?", "None"),
                    new Param("sorter", "Tensor?", "None"))
            .doc("`ops.Sorting.searchsorted` (the operands as rows of one dtype, then `_searchsorted_rows`)").build();

    /**
     * For each value of row {@code r} of {@code values} ({@code [rows, m]}), the first position in its row of
     * {@code boundaries} ({@code [1 or rows, n]}, each row sorted) whose boundary is {@code >= v} ({@code > v} when
     * {@code right}), int64. Both of one dtype and contiguous: {@code torch.searchsorted}'s front end brings its operands
     * to these rows.
     */
    public static final OpDef SEARCHSORTED_ROWS = OpDef.structured("searchsorted_rows").py("_searchsorted_rows").rule(DTypeRule.SAME)
            .signature(Param.tensor("boundaries"), Param.tensor("values"), Param.scalar("right", "bool", "False"))
            .meta((in, g) -> {
                StridedView b = in[0], v = in[1];
                boolean rows = b.dim() == 2 && v.dim() == 2 && (b.size(0) == 1 || b.size(0) == v.size(0));
                if (!rows || b.dtype() != v.dtype() || !b.isContiguous() || !v.isContiguous()) {
                    throw new IllegalArgumentException("searchsorted_rows: expected contiguous boundaries [1 or rows, n] and values"
                            + " [rows, m] of one dtype, got " + b.dtype() + Shapes.format(b.shape()) + " and " + v.dtype()
                            + Shapes.format(v.shape()));
                }
                return new Meta.Output(v.shape(), DType.INT64);
            })
            .doc("the binary search of searchsorted over rows of sorted boundaries").build();
}
