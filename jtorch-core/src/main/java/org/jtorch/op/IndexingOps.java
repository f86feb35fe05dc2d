package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;

import java.util.Arrays;
import org.jtorch.types.DType;

/**
 * The indexing ops along one dimension, declared as structured ops ({@link OpDef.Kind#STRUCTURED}) with PyTorch's
 * derivatives ({@code derivatives.yaml}): {@code index_select} and {@code gather}, whose backwards add the gradient at
 * the indices into zeros of {@code self}'s shape ({@code self} is saved for its shape and dtype, as PyTorch 1.13's
 * gather saves it), and {@code index_add} and {@code scatter_add}, whose derivatives are the selects again. The
 * index tensor is the second input and gets no gradient; the dimension is the first scalar, unwrapped (the meta function
 * wraps it). A 0-d tensor indexes as one of size 1. Index values are checked by the kernels before they write: a bad one
 * raises {@link IndexOutOfBoundsException} naming the op, the value and the size of the dimension. Also declared here:
 * the scatters, {@code index_fill} and {@code index_copy}, the mask ops ({@code masked_fill}, {@code where},
 * {@code masked_select}), {@code embedding} with its backwards, and {@code one_hot}.
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
            .meta((in, g) -> indexAddMeta("index_select_backward", in, g, true))
            .derivatives(() -> Arrays.asList(null, null, call(IndexingOps.INDEX_SELECT, GRAD, INDEX, DIM)))
            .doc("grad added at index along dim into zeros of self's shape").build();

    /**
     * {@code self.index_add(dim, index, source, alpha)}: a copy of {@code self} with {@code alpha * source.select(dim, i)}
     * added to {@code self.select(dim, index[i])}; duplicates sum in index order. Also {@link #INDEX_SELECT}'s derivative.
     */
    public static final OpDef INDEX_ADD = OpDef.structured("index_add").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("source"), Param.scalar("dim", "int", null),
                    Param.scalar("alpha", "Scalar", "1"))
            .meta((in, g) -> indexAddMeta("index_add", in, g, true))
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
            .autocast(org.jtorch.types.Device.Type.CUDA, CastPolicy.PROMOTE)
            .meta((in, g) -> {
                gatherMeta("scatter_add", in[0], in[1], in[2], g);
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(GRAD, null, call(IndexingOps.GATHER, GRAD, INDEX, DIM)))
            .doc("self with src added at index along dim").build();

    /**
     * {@code self.scatter(dim, index, src)}: a copy of {@code self} with {@code src[i][j]} written at {@code [index[i][j]][j]}
     * for dim 0 (of duplicates, the last in index order on the CPU; any one on CUDA, as PyTorch); only the index-shaped
     * corner of {@code src} is read.
     */
    public static final OpDef SCATTER = OpDef.structured("scatter").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("src"), Param.scalar("dim", "int", null))
            .meta((in, g) -> {
                gatherMeta("scatter", in[0], in[1], in[2], g);
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(IndexingOps.SCATTER_VALUE, GRAD, INDEX, DIM, Expr.c(0)), null,
                    call(IndexingOps.GATHER, GRAD, INDEX, DIM)))
            .doc("self with src written at index along dim").build();

    /** {@code self.scatter(dim, index, value)}: a copy of {@code self} with {@code value} (as {@code fill_} converts it) at the indexed places. */
    public static final OpDef SCATTER_VALUE = OpDef.structured("scatter_value").py("scatter").node("ScatterBackward1").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.scalar("dim", "int", null), Param.scalar("value", "Scalar", null))
            .meta((in, g) -> {
                gatherMeta("scatter", in[0], in[1], null, g);
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(IndexingOps.SCATTER_VALUE, GRAD, INDEX, DIM, Expr.c(0)), null))
            .doc("self with value written at index along dim").build();

    /**
     * {@code self.index_fill(dim, index, value)}: a copy of {@code self} with {@code value} in the slices at the int64
     * {@code index} (a vector or 0-d) along {@code dim}; negative indices count from the end, as PyTorch.
     */
    public static final OpDef INDEX_FILL = OpDef.structured("index_fill").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.scalar("dim", "int", null), Param.scalar("value", "Scalar", null))
            .meta((in, g) -> {
                String op = "index_fill";
                requireIndex(op, in[0], in[1]);
                if (in[1].dtype() != DType.INT64) {
                    throw new IllegalArgumentException(op + ": expected dtype int64 for index, got " + in[1].dtype());
                }
                if (in[1].dim() > 1) {
                    throw new IllegalArgumentException(op + ": index has to be a vector or a scalar, got shape " + Shapes.format(in[1].shape()));
                }
                Shapes.wrapDim(op, (long) g[0], in[0].dim());
                return new Meta.Output(in[0].shape(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(IndexingOps.INDEX_FILL, GRAD, INDEX, DIM, Expr.c(0)), null))
            .doc("self with value in the slices at index along dim").build();

    /**
     * {@code self.index_copy(dim, index, source)}: a copy of {@code self} with {@code source.select(dim, i)} written to
     * {@code self.select(dim, index[i])}; {@code index} is int64 (of duplicates, the last in index order on the CPU).
     */
    public static final OpDef INDEX_COPY = OpDef.structured("index_copy").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("index"), Param.tensor("source"), Param.scalar("dim", "int", null))
            .autocast(org.jtorch.types.Device.Type.CPU, CastPolicy.PROMOTE)
            .meta((in, g) -> indexAddMeta("index_copy", in, g, false))
            .derivatives(() -> Arrays.asList(call(IndexingOps.INDEX_FILL, GRAD, INDEX, DIM, Expr.c(0)), null,
                    call(IndexingOps.INDEX_SELECT, GRAD, INDEX, DIM)))
            .doc("self with source's slices written at index along dim").build();

    private static final Expr MASK = Expr.in(1, "mask");

    /**
     * {@code self.masked_fill(mask, value)}: {@code value} (converted to self's dtype, as {@code fill_}) where the bool
     * {@code mask} is true, self elsewhere; the result has the broadcast shape of self and mask and self's dtype.
     */
    public static final OpDef MASKED_FILL = OpDef.structured("masked_fill").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("mask"), Param.scalar("value", "Scalar", null))
            .meta(IndexingOps::maskedFillMeta)
            .derivatives(() -> Arrays.asList(call(IndexingOps.MASKED_FILL, GRAD, MASK, Expr.c(0)), null))
            .doc("value where mask is true, self elsewhere").build();

    /**
     * {@code count_nonzero(Tensor self, int[]? dim=None) -> Tensor}: the number of nonzero (true) elements of {@code self}
     * over the dimensions {@code dim} (all of them when left out), as int64 with those dimensions removed. Scalars: the
     * number of dimensions given (-1 for none), then the dimensions. Not differentiable: a count. {@code nonzero} and
     * {@code masked_select} read its count on the host to size their results.
     */
    public static final OpDef COUNT_NONZERO = OpDef.structured("count_nonzero").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("dim", "int[]?", "None"))
            .meta((in, g) -> new Meta.Output(kept(in[0].shape(), countedDims("count_nonzero", in[0].dim(), g)), DType.INT64))
            .doc("the number of nonzero elements, over all or some dimensions").build();

    /**
     * {@code nonzero(Tensor self) -> Tensor}: int64 {@code [count, self.dim()]}, the coordinates of the nonzero elements in
     * row-major order. {@code count} is not PyTorch's parameter: the number of nonzero elements, which the front end reads
     * on the host by {@link #COUNT_NONZERO} (PyTorch's nonzero synchronises for it too), since a meta function does not
     * read memory; as {@link #MASKED_SELECT}'s. The kernel writes at most {@code count} rows. Not differentiable: indices.
     */
    public static final OpDef NONZERO = OpDef.structured("nonzero").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("count", "int", null))
            .meta((in, g) -> {
                if (!(g[0] >= 0) || g[0] != Math.rint(g[0])) {
                    throw new IllegalArgumentException("nonzero: count must be a non-negative integer, got " + g[0] + " (self of shape "
                            + Shapes.format(in[0].shape()) + ")");
                }
                return new Meta.Output(new long[] {(long) g[0], in[0].dim()}, DType.INT64);
            })
            .doc("the coordinates of the nonzero elements, `[count, self.dim()]`").build();

    /**
     * Which dimensions of a rank-{@code rank} tensor {@link #COUNT_NONZERO}'s scalars {@code g} count over (every one when
     * {@code g[0]} is -1 or 0); an error naming {@code op} for a dimension out of range or given twice.
     */
    public static boolean[] countedDims(String op, int rank, double[] g) {
        boolean[] counted = new boolean[rank];
        int n = (int) g[0];
        // no list, or an empty one (as sum's), counts over every dimension
        if (n <= 0) {
            Arrays.fill(counted, true);
            return counted;
        }
        // A 0-dim tensor takes dim 0 and -1 (as one dimension of size 1), which count nothing away.
        boolean[] seen = new boolean[Math.max(rank, 1)];
        for (int i = 0; i < n; i++) {
            int d = Shapes.wrapDim(op, (long) g[1 + i], rank);
            if (seen[d]) throw new IllegalArgumentException(op + ": dim " + d + " appears multiple times in the list of dims");
            seen[d] = true;
        }
        System.arraycopy(seen, 0, counted, 0, rank);
        return counted;
    }

    /** {@code shape} without the dimensions {@code counted} marks. */
    private static long[] kept(long[] shape, boolean[] counted) {
        return java.util.stream.IntStream.range(0, shape.length).filter(d -> !counted[d]).mapToLong(d -> shape[d]).toArray();
    }

    /**
     * {@code self.masked_select(mask)}: the elements of {@code self} where the bool {@code mask} is true, both broadcast
     * together, in row-major order, as a vector of {@code count} elements. {@code count} is not PyTorch's parameter: the
     * number of true elements of the broadcast mask, which the front end reads on the host (PyTorch's masked_select
     * synchronises for it too), since a meta function does not read memory.
     */
    public static final OpDef MASKED_SELECT = OpDef.structured("masked_select").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("mask"), Param.scalar("count", "int", null))
            .meta((in, g) -> {
                String op = "masked_select";
                requireMask(op, in[0], in[1], "mask");
                Shapes.broadcast(op, in[0].shape(), in[1].shape());
                return new Meta.Output(new long[] {(long) g[0]}, in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(call(IndexingOps.MASKED_SELECT_BACKWARD, GRAD, SELF, MASK), null))
            .doc("self's elements where mask is true, as a vector").build();

    /**
     * The gradient of {@link #MASKED_SELECT} (PyTorch's {@code masked_select_backward}): zeros of the broadcast shape of
     * {@code self} and {@code mask} with {@code grad}'s elements written where the mask is true, in row-major order
     * ({@code masked_scatter} into zeros); the dispatcher sums it to self's shape. Self is read for its shape only.
     */
    public static final OpDef MASKED_SELECT_BACKWARD = OpDef.structured("masked_select_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("grad"), Param.tensor("self"), Param.tensor("mask"))
            .meta((in, g) -> {
                String op = "masked_select_backward";
                StridedView grad = in[0], self = in[1], mask = in[2];
                requireMask(op, grad, mask, "mask");
                long[] shape = Shapes.broadcast(op, self.shape(), mask.shape());
                if (grad.dim() != 1) {
                    throw new IllegalArgumentException(op + ": expected a 1-D grad, got shape " + Shapes.format(grad.shape()));
                }
                return new Meta.Output(shape, grad.dtype());
            })
            .derivatives(() -> Arrays.asList(call(IndexingOps.MASKED_SELECT, GRAD, Expr.in(2, "mask"),
                    new Expr.Size(Expr.in(0, "grad"), 0)), null, null))
            .doc("grad written where mask is true into zeros of the broadcast shape").build();

    private static final Expr CONDITION = Expr.in(0, "condition");

    /**
     * {@code torch.where(condition, self, other)}: {@code self} where the bool {@code condition} is true, {@code other}
     * elsewhere, broadcast together. {@code self} and {@code other} have one dtype here: the front end promotes them first
     * (the promotion of a wrapped number needs the tensors, which a meta function does not see).
     */
    public static final OpDef WHERE = OpDef.structured("where").rule(DTypeRule.SAME)
            .signature(Param.tensor("condition"), Param.tensor("self"), Param.tensor("other"))
            .meta(IndexingOps::whereMeta)
            .derivatives(() -> Arrays.asList(null,
                    call(IndexingOps.MASKED_FILL, GRAD, call(PointwiseOps.LOGICAL_NOT, CONDITION), Expr.c(0)),
                    call(IndexingOps.MASKED_FILL, GRAD, CONDITION, Expr.c(0))))
            .doc("self where condition is true, other elsewhere").build();

    private static final Expr WEIGHT = Expr.in(0, "weight");
    private static final Expr INDICES = Expr.in(1, "indices");
    private static final Expr PADDING_IDX = Expr.scalar(0, "padding_idx");
    private static final Expr SCALE_GRAD_BY_FREQ = Expr.scalar(1, "scale_grad_by_freq");

    /**
     * {@code torch.embedding(weight, indices, padding_idx, scale_grad_by_freq)}: the rows of the 2-d {@code weight} at the
     * int64 or int32 {@code indices}, of shape {@code indices.shape + [embedding_dim]}. {@code padding_idx} (non-negative,
     * or NaN for None, as F.embedding's keyword) and {@code scale_grad_by_freq} (0 or 1) shape the gradient only
     * ({@link #EMBEDDING_DENSE_BACKWARD}).
     */
    public static final OpDef EMBEDDING = OpDef.structured("embedding").rule(DTypeRule.SAME)
            .signature(Param.tensor("weight"), Param.tensor("indices"), Param.scalar("padding_idx", "int?", "None"),
                    Param.scalar("scale_grad_by_freq", "bool", "False"))
            .meta((in, g) -> embeddingMeta("embedding", in[0], in[1], g[0]))
            .derivatives(() -> Arrays.asList(call(IndexingOps.EMBEDDING_DENSE_BACKWARD, GRAD, INDICES, new Expr.Size(WEIGHT, 0),
                    PADDING_IDX, SCALE_GRAD_BY_FREQ), null))
            .doc("rows of weight at indices").build();

    private static final Expr GRAD_OUTPUT = Expr.in(0, "grad_output");
    private static final Expr DENSE_PADDING_IDX = Expr.scalar(1, "padding_idx");
    private static final Expr DENSE_SCALE_GRAD_BY_FREQ = Expr.scalar(2, "scale_grad_by_freq");

    /**
     * The gradient of {@link #EMBEDDING} (PyTorch's {@code embedding_dense_backward}): {@code grad_output}'s rows added at
     * {@code indices} into zeros of {@code [num_weights, embedding_dim]} in index order, each divided first by how often
     * its index occurs when {@code scale_grad_by_freq}; row {@code padding_idx} stays zero. One kernel fills and adds.
     */
    public static final OpDef EMBEDDING_DENSE_BACKWARD = OpDef.structured("embedding_dense_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("grad_output"), Param.tensor("indices"), Param.scalar("num_weights", "int", null),
                    Param.scalar("padding_idx", "int?", null), Param.scalar("scale_grad_by_freq", "bool", null))
            .meta((in, g) -> embeddingDenseBackwardMeta(in[0], in[1], g))
            .derivatives(() -> Arrays.asList(call(IndexingOps.EMBEDDING_DENSE_DOUBLE_BACKWARD, GRAD, INDICES, DENSE_PADDING_IDX,
                    DENSE_SCALE_GRAD_BY_FREQ), null))
            .doc("grad_output's rows added at indices into zeros of [num_weights, embedding_dim]").build();

    /**
     * The gradient of {@link #EMBEDDING_DENSE_BACKWARD} with respect to its {@code grad_output}: {@code grad}'s rows at
     * {@code indices}, divided by their index's frequency when {@code scale_grad_by_freq}, zero at {@code padding_idx}
     * (PyTorch's {@code embedding_dense_double_backward}, with the frequency scaling its first backward applies).
     */
    public static final OpDef EMBEDDING_DENSE_DOUBLE_BACKWARD = OpDef.structured("embedding_dense_double_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("grad"), Param.tensor("indices"), Param.scalar("padding_idx", "int?", null),
                    Param.scalar("scale_grad_by_freq", "bool", null))
            .meta((in, g) -> embeddingMeta("embedding_dense_double_backward", in[0], in[1], g[0]))
            .derivatives(() -> Arrays.asList(call(IndexingOps.EMBEDDING_DENSE_BACKWARD, GRAD, INDICES, new Expr.Size(Expr.in(0, "grad"), 0),
                    PADDING_IDX, SCALE_GRAD_BY_FREQ), null))
            .doc("grad's rows at indices, zero at padding_idx").build();

    /**
     * {@code F.one_hot(self, num_classes)}: int64 one-hot vectors of the int64 class values of {@code self} in a new last
     * dimension of size {@code num_classes}. The front end resolves {@code num_classes=-1} (the largest value plus one)
     * and, on the CPU, checks the values on the host, as PyTorch; the kernels check them again as scatter indices.
     */
    public static final OpDef ONE_HOT = OpDef.structured("one_hot").rule(DTypeRule.INTEGRAL_OR_BOOL)
            .signature(Param.tensor("self"), Param.scalar("num_classes", "int", "-1"))
            .meta((in, g) -> {
                String op = "one_hot";
                StridedView self = in[0];
                if (self.dtype() != DType.INT64) {
                    throw new IllegalArgumentException(op + ": one_hot is only applicable to index tensor (int64), got " + self.dtype());
                }
                long classes = (long) g[0];
                if (classes < 0 || classes == 0 && self.numel() > 0 || classes != g[0]) {
                    throw new IllegalArgumentException(op + ": num_classes should be positive, got " + g[0]);
                }
                long[] shape = Arrays.copyOf(self.shape(), self.dim() + 1);
                shape[self.dim()] = classes;
                return new Meta.Output(shape, DType.INT64);
            })
            .doc("int64 one-hot vectors of self's class values in a new last dimension").build();

    private static final Expr INDICES_FROM_1 = Expr.rest(1, "indices");
    private static final Expr INDICES_FROM_2 = Expr.rest(2, "indices");

    /**
     * Advanced indexing, {@code self[indices]} (PyTorch's {@code index.Tensor}): the list {@code indices} holds one entry per
     * leading dimension, an int64 tensor or None (a full slice); the tensors broadcast together and select (negative
     * values count from the end); where the indexed dimensions are adjacent the broadcast index shape replaces them, else
     * it comes first ({@link AdvancedIndex}). Bool masks are not entries here: the front end expands each into int64 tensors
     * ({@code nonzero}, a read of the mask on the host, as PyTorch's). The gradient adds {@code grad} at the indices into
     * zeros of self's shape ({@link #INDEX_BACKWARD}: PyTorch's {@code index_put_} with accumulate on zeros; self is saved
     * for its shape and dtype, as {@link #INDEX_SELECT_BACKWARD}'s).
     */
    public static final OpDef INDEX_TENSOR = OpDef.structured("index").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), new Param("indices", "Tensor?[]", null))
            .meta((in, g) -> new Meta.Output(AdvancedIndex.forMeta("index", in[0], in, 1).resultShape(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(call(IndexingOps.INDEX_BACKWARD, SELF, GRAD, INDICES_FROM_1)))
            .doc("self's elements at the broadcast integer indices").build();

    /**
     * The gradient of {@link #INDEX_TENSOR}: {@code grad} added at {@code indices} into zeros of {@code self}'s shape, in
     * {@code grad}'s dtype (self's values are not read); duplicates sum in index order. One kernel fills and adds.
     */
    public static final OpDef INDEX_BACKWARD = OpDef.structured("index_backward").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("grad"), new Param("indices", "Tensor?[]", null))
            .meta((in, g) -> {
                String op = "index_backward";
                AdvancedIndex ai = AdvancedIndex.of(op, in[0], in, 2); // the kernel's geometry is the result's, not self's
                StridedView grad = in[1];
                if (grad == null) throw new IllegalArgumentException(op + ": grad is required");
                if (!java.util.Arrays.equals(grad.shape(), ai.resultShape())) {
                    throw new IllegalArgumentException(op + ": expected grad of the indexing result's shape " + Shapes.format(ai.resultShape())
                            + ", got " + Shapes.format(grad.shape()));
                }
                return new Meta.Output(in[0].shape(), grad.dtype());
            })
            .derivatives(() -> Arrays.asList(null, call(IndexingOps.INDEX_TENSOR, GRAD, INDICES_FROM_2)))
            .doc("grad added at the indices into zeros of self's shape").build();

    /**
     * {@code self.index_put(indices, values, accumulate)} (PyTorch's {@code index_put}, in place {@code index_put_} through
     * the dispatcher's in-place path): a copy of {@code self} whose places {@code self[indices]} selects get {@code values},
     * broadcast to their shape, or have them added when {@code accumulate} (duplicates then sum, in index order on the CPU).
     * The list comes last here, after {@code values}, so that its entries are the call's last inputs. {@code values} has
     * self's dtype. Autocast on CUDA promotes, as PyTorch 1.13's list.
     */
    public static final OpDef INDEX_PUT = OpDef.structured("index_put").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("values"), new Param("indices", "Tensor?[]", null),
                    Param.scalar("accumulate", "bool", "False"))
            .autocast(org.jtorch.types.Device.Type.CUDA, CastPolicy.PROMOTE)
            .meta(IndexingOps::indexPutMeta)
            .derivatives(() -> Arrays.asList(
                    new Expr.IfScalar(0, 1, GRAD, call(IndexingOps.INDEX_PUT, GRAD, new Expr.ZerosLike(Expr.in(1, "values")), INDICES_FROM_2,
                            Expr.c(0))),
                    call(IndexingOps.INDEX_TENSOR, GRAD, INDICES_FROM_2)))
            .doc("self with values written (or added) at the broadcast integer indices").build();

    private static Meta.Output indexPutMeta(StridedView[] in, double[] g) {
        String op = "index_put";
        StridedView self = in[0], values = in[1];
        if (values == null) throw new IllegalArgumentException(op + ": values is required");
        if (values.dtype() != self.dtype()) {
            throw new IllegalArgumentException(op + ": index put requires the source and destination dtypes match, got "
                    + self.dtype() + " for the destination and " + values.dtype() + " for the source");
        }
        AdvancedIndex ai = AdvancedIndex.forMeta(op, self, in, 2);
        long[] b = Shapes.broadcast(op, ai.resultShape(), values.shape());
        if (!Arrays.equals(b, ai.resultShape())) {
            throw new IllegalArgumentException(op + ": shape mismatch: value tensor of shape " + Shapes.format(values.shape())
                    + " cannot be broadcast to indexing result of shape " + Shapes.format(ai.resultShape()));
        }
        return new Meta.Output(self.shape(), self.dtype());
    }

    /**
     * The geometry of one advanced-indexing call (ATen's {@code AdvancedIndex}), from views: {@code self} with the indexed
     * dimensions made adjacent (permuted to the front where they are not), the first of them ({@code start}), the int64 index
     * tensors restrided to the result's shape, the size and stride of each indexed dimension, and the result's shape
     * ({@code self.shape[:start] + broadcast index shape + self.shape[start + count:]}).
     */
    public record AdvancedIndex(StridedView self, int start, StridedView[] indices, long[] sizes, long[] strides, long[] resultShape) {
        /**
         * The geometry of indexing {@code self} by the entries {@code in[from..]} (null for a full slice; int64 tensors); with
         * no tensor among them, none indexed: the result is self's shape, every element read or written once.
         */
        public static AdvancedIndex of(String op, StridedView self, StridedView[] in, int from) {
            return compute(op, self, in, from);
        }

        /** {@link #of} from a meta function, kept for the kernel of the same call ({@link #forKernel}). */
        static AdvancedIndex forMeta(String op, StridedView self, StridedView[] in, int from) {
            AdvancedIndex ai = compute(op, self, in, from);
            LAST.set(new Last(self, in.clone(), from, ai));
            return ai;
        }

        /**
         * {@link #of} from a kernel: the geometry the meta function of the same call computed, where it saw the same views
         * (compared by identity: immutable records), else computed here. The kept views are dropped either way, so that no
         * storage stays reachable from this thread after the call.
         */
        public static AdvancedIndex forKernel(String op, StridedView self, StridedView[] in, int from) {
            Last last = LAST.get();
            LAST.remove();
            return last != null && last.matches(self, in, from) ? last.geometry : compute(op, self, in, from);
        }

        /** The views a meta function computed a geometry from, and the geometry. */
        private record Last(StridedView self, StridedView[] in, int from, AdvancedIndex geometry) {
            boolean matches(StridedView s, StridedView[] other, int f) {
                if (s != self || f != from || other.length != in.length) return false;
                for (int i = 0; i < in.length; i++) if (other[i] != in[i]) return false;
                return true;
            }
        }

        private static final ThreadLocal<Last> LAST = new ThreadLocal<>();

        private static AdvancedIndex compute(String op, StridedView self, StridedView[] in, int from) {
            int entries = in.length - from;
            if (entries > self.dim()) {
                throw new IndexOutOfBoundsException(op + ": too many indices for tensor of dimension " + self.dim() + " (got " + entries
                        + " index entries)");
            }
            long[] b = null;
            int count = 0, first = -1, last = -1;
            for (int e = 0; e < entries; e++) {
                StridedView t = in[from + e];
                if (t == null) continue;
                if (t.dtype() != DType.INT64) {
                    throw new IllegalArgumentException(op + ": tensors used as indices must be long tensors here (the front end expands"
                            + " bool masks), got " + t.dtype() + " at index " + e);
                }
                b = b == null ? t.shape() : Shapes.broadcast(op, b, t.shape());
                if (first < 0) first = e;
                last = e;
                count++;
            }
            if (count == 0) return new AdvancedIndex(self, 0, new StridedView[0], new long[0], new long[0], self.shape());
            StridedView src = self;
            int[] dims = new int[count];
            if (last - first + 1 != count) {
                // not adjacent: the indexed dimensions move to the front, in order, the others after them
                int[] perm = new int[self.dim()];
                int j = 0;
                for (int d = 0; d < self.dim(); d++) if (d < entries && in[from + d] != null) perm[j++] = d;
                for (int d = 0; d < self.dim(); d++) if (d >= entries || in[from + d] == null) perm[j++] = d;
                src = self.permute(perm);
                for (int k = 0; k < count; k++) dims[k] = perm[k];
                first = 0;
            } else {
                for (int k = 0; k < count; k++) dims[k] = first + k;
            }
            long[] sShape = src.shape();
            int after = sShape.length - first - count;
            long[] result = new long[first + b.length + after];
            System.arraycopy(sShape, 0, result, 0, first);
            System.arraycopy(b, 0, result, first, b.length);
            System.arraycopy(sShape, first + count, result, first + b.length, after);
            StridedView[] indices = new StridedView[count];
            long[] sizes = new long[count];
            long[] strides = new long[count];
            for (int k = 0; k < count; k++) {
                StridedView t = in[from + dims[k]];
                long[] bs = Shapes.broadcastStrides(op, t.shape(), t.strides(), b);
                long[] st = new long[result.length];
                System.arraycopy(bs, 0, st, first, b.length);
                indices[k] = t.restrided(result, st, t.offset());
                sizes[k] = sShape[first + k];
                strides[k] = src.stride(first + k);
            }
            return new AdvancedIndex(src, first, indices, sizes, strides, result);
        }

        /** {@link #self} seen with the result's shape: its own strides outside the index dimensions, 0 across them. */
        public StridedView selfAsResult() {
            long[] st = self.strides();
            int count = indices.length;
            long[] r = new long[resultShape.length];
            int bLen = resultShape.length - (st.length - count);
            System.arraycopy(st, 0, r, 0, start);
            for (int d = start + count; d < st.length; d++) r[d - count + bLen] = st[d];
            return self.restrided(resultShape, r, self.offset());
        }
    }

    private static Meta.Output maskedFillMeta(StridedView[] in, double[] g) {
        String op = "masked_fill";
        StridedView self = in[0], mask = in[1];
        requireMask(op, self, mask, "mask");
        return new Meta.Output(Shapes.broadcast(op, self.shape(), mask.shape()), self.dtype());
    }

    private static Meta.Output whereMeta(StridedView[] in, double[] g) {
        String op = "where";
        StridedView condition = in[0], self = in[1], other = in[2];
        if (self == null || other == null) throw new IllegalArgumentException(op + ": self and other are required");
        if (condition == null) throw new IllegalArgumentException(op + ": condition is required");
        if (condition.dtype() != DType.BOOL) {
            throw new IllegalArgumentException(op + ": expected a bool condition, got " + condition.dtype());
        }
        if (self.dtype() != other.dtype()) {
            throw new IllegalArgumentException(op + ": expected self and other to have the same dtype, got " + self.dtype() + " and "
                    + other.dtype());
        }
        long[] shape = Shapes.broadcast(op, Shapes.broadcast(op, condition.shape(), self.shape()), other.shape());
        return new Meta.Output(shape, self.dtype());
    }

    private static Meta.Output embeddingMeta(String op, StridedView weight, StridedView indices, double paddingIdx) {
        if (indices == null) throw new IllegalArgumentException(op + ": indices is required");
        if (weight.dim() != 2) {
            throw new IllegalArgumentException(op + ": expected a 2-D weight [num_embeddings, embedding_dim], got shape "
                    + Shapes.format(weight.shape()));
        }
        requireEmbeddingIndices(op, weight, indices);
        if (!Double.isNaN(paddingIdx) && (paddingIdx < 0 || paddingIdx >= weight.size(0) || paddingIdx != Math.rint(paddingIdx))) {
            throw new IllegalArgumentException(op + ": padding_idx " + (long) paddingIdx + " must be within num_embeddings " + weight.size(0));
        }
        long[] shape = Arrays.copyOf(indices.shape(), indices.dim() + 1);
        shape[indices.dim()] = weight.size(1);
        return new Meta.Output(shape, weight.dtype());
    }

    private static Meta.Output embeddingDenseBackwardMeta(StridedView grad, StridedView indices, double[] g) {
        String op = "embedding_dense_backward";
        if (indices == null) throw new IllegalArgumentException(op + ": indices is required");
        requireEmbeddingIndices(op, grad, indices);
        if (grad.dim() != indices.dim() + 1 || !Arrays.equals(Arrays.copyOf(grad.shape(), indices.dim()), indices.shape())) {
            throw new IllegalArgumentException(op + ": expected grad_output of shape indices.shape + [embedding_dim], got "
                    + Shapes.format(grad.shape()) + " for indices " + Shapes.format(indices.shape()));
        }
        long num = (long) g[0];
        if (num < 0 || g[1] < 0 || g[1] >= num) {
            throw new IllegalArgumentException(op + ": num_weights " + num + " and padding_idx " + (long) g[1] + " out of range");
        }
        return new Meta.Output(new long[] {num, grad.size(grad.dim() - 1)}, grad.dtype());
    }

    private static void requireEmbeddingIndices(String op, StridedView like, StridedView indices) {
        requireIndex(op, like, indices);
        if (indices.dtype() != DType.INT64 && indices.dtype() != DType.INT32) {
            throw new IllegalArgumentException(op + ": expected indices of dtype int64 or int32, got " + indices.dtype());
        }
    }

    private static void requireMask(String op, StridedView self, StridedView mask, String name) {
        if (mask == null) throw new IllegalArgumentException(op + ": " + name + " is required");
        if (mask.dtype() != DType.BOOL && mask.dtype() != DType.UINT8) {
            throw new IllegalArgumentException(op + ": expected a bool mask, got " + mask.dtype());
        }
    }

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

    /** Checks an index_add's or index_copy's operands ({@code index} int32 or int64 when {@code int32Allowed}, else int64). */
    private static Meta.Output indexAddMeta(String op, StridedView[] in, double[] g, boolean int32Allowed) {
        StridedView self = in[0], index = in[1], source = in[2];
        requireIndex(op, self, index);
        if (source == null) throw new IllegalArgumentException(op + ": source is required");
        if (index.dim() > 1) {
            throw new IllegalArgumentException(op + ": index should have dimension 1 or 0, got shape " + Shapes.format(index.shape()));
        }
        if (index.dtype() != DType.INT64 && (!int32Allowed || index.dtype() != DType.INT32)) {
            throw new IllegalArgumentException(op + ": expected " + (int32Allowed ? "int32 or int64" : "int64") + " for index, got "
                    + index.dtype());
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
        if (d >= v.length) {
            // a 0-d source stands for one slice of a vector only
            throw new IllegalArgumentException(op + ": indexing dim " + d + " is out of bounds of the source tensor of shape "
                    + Shapes.format(source.shape()) + " (self " + Shapes.format(self.shape()) + ")");
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
        if (s[d] == 0 && index.numel() > 0) {
            // Every index is out of range for an empty dimension: said here, without data, on every device (CUDA's
            // index checks run on the device and report later).
            throw new IndexOutOfBoundsException(op + ": index out of range: dimension " + d + " of self " + Shapes.format(self.shape())
                    + " is empty, but index " + Shapes.format(index.shape()) + " has elements");
        }
        return index.shape();
    }

    private static void requireIndex(String op, StridedView self, StridedView index) {
        if (index == null) throw new IllegalArgumentException(op + ": index is required");
    }

    private static long[] atLeast1d(long[] shape) {
        return shape.length == 0 ? new long[] {1} : shape;
    }
}
