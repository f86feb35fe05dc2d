package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Gather/scatter-style kernels: index select, gather, scatter, index add/copy, masked select,
 * nonzero and advanced (integer-tensor) indexing.
 *
 * <p>The front end ({@code org.jtorch.ops.Indexing}) checks shapes and dtypes; the kernels check index
 * values, because only they read the index memory. A bad one is reported with an
 * {@link IndexOutOfBoundsException} naming the op, the index value and the size of the dimension. A
 * synchronous backend (the CPU) validates all indices before it writes anything and throws from the
 * call, the destination unchanged. An asynchronous one (CUDA) may instead report at the caller's next
 * synchronisation with the device, as its other kernel errors, prefixed with the {@link IndexErrorContext}
 * current at the call; it must then skip the bad elements, never fault on them.
 * Index tensors are int64 unless stated otherwise and may be strided.
 */
public interface IndexKernels {
    /**
     * {@code out = self.index_select(dim, index)}: {@code index} is 1-d int32 or int64 with values in
     * {@code [0, self.size(dim))}; {@code out} is contiguous with {@code self}'s shape except
     * {@code index.numel()} at {@code dim}.
     */
    void indexSelect(StridedView self, int dim, StridedView index, StridedView out);

    /**
     * {@code out[i][j][k] = self[i][index[i][j][k]][k]} (for {@code dim == 1}): {@code out} has
     * {@code index}'s shape, {@code index.size(d) <= self.size(d)} for {@code d != dim}.
     */
    void gather(StridedView self, int dim, StridedView index, StridedView out);

    /**
     * In place: {@code self[i][index[i][j][k]][k] = src[i][j][k]} (for {@code dim == 1}), or {@code +=}
     * when {@code accumulate}; {@code src} has {@code index}'s shape (the front end narrows a larger
     * source, or broadcasts a scalar). Duplicate indices without {@code accumulate} keep one of the
     * written values, as PyTorch. {@code op} names the op in errors.
     */
    void scatter(String op, StridedView self, int dim, StridedView index, StridedView src, boolean accumulate);

    /**
     * In place: for each {@code i}, the slice {@code self.select(dim, index[i])} becomes
     * {@code source.select(dim, i)} ({@code accumulate == false}, index_copy / index_fill) or gets
     * {@code alpha * source.select(dim, i)} added ({@code accumulate}, index_add). {@code index} is 1-d
     * int32 or int64; negative values wrap when {@code wrapNegative} (index_fill), else they are errors.
     * {@code source} may be a broadcast view (index_fill passes an expanded scalar).
     */
    void indexAccumulate(String op, StridedView self, int dim, StridedView index, StridedView source, boolean accumulate,
                         double alpha, boolean wrapNegative);

    /** Number of nonzero elements (for bool: true elements). */
    long countNonzero(StridedView t);

    /** Writes the indices of the nonzero elements of {@code t}, in row-major order, into {@code out} (int64 [n, t.dim()]). */
    void nonzero(StridedView t, StridedView out);

    /**
     * Copies the elements of {@code self} where {@code mask} (bool or uint8, same shape as {@code self},
     * possibly broadcast) is nonzero, in row-major order, into the 1-d contiguous {@code out}.
     */
    void maskedSelect(StridedView self, StridedView mask, StridedView out);

    /**
     * Advanced-indexing gather, as ATen's index kernel: {@code src} is restrided to {@code out}'s shape
     * (stride 0 where the index tensors' result dimensions are), and {@code indices[k]} (int64, broadcast
     * to {@code out}'s shape) selects along a source dimension of size {@code sizes[k]} and stride
     * {@code strides[k]} (elements). Negative indices wrap.
     */
    void advancedIndex(StridedView src, StridedView[] indices, long[] sizes, long[] strides, StridedView out);

    /**
     * Advanced-indexing scatter ({@code index_put_}): the same geometry as {@link #advancedIndex} with
     * {@code dst} restrided to {@code values}' shape; writes or, when {@code accumulate}, adds (duplicate
     * indices then sum, deterministically).
     */
    void indexPut(StridedView dst, StridedView[] indices, long[] sizes, long[] strides, StridedView values, boolean accumulate);
}
