package org.jtorch.backend;

import org.jtorch.op.ReduceOp;
import org.jtorch.op.StridedView;

/**
 * Reductions over dimensions (sum, prod, max/min with indices, norms, var, logsumexp), cumulative
 * scans and softmax.
 *
 * <p>Layout convention for reductions, as ATen's TensorIterator: an output argument has the
 * input's shape, with stride 0 along every reduced dimension (a keepdim output broadcast back to
 * the input's shape). Output element {@code o} therefore reduces exactly the input elements that
 * map to it, and a kernel needs no dimension list. Outputs are freshly allocated by the front end
 * (no stride is 0 except along reduced dimensions). Reductions over zero elements write the
 * operator's empty value; the front end rejects the ones PyTorch rejects (max of empty).
 */
public interface ReductionKernels {
    /**
     * {@code out = op(in)} over the reduced dimensions, accumulated in double (floating input) or long
     * (integral and bool input; not for {@link ReduceOp#NORM}), converted to {@code out}'s dtype on store.
     * {@code p} is the norm order, ignored by other operators.
     */
    void reduce(ReduceOp op, StridedView in, StridedView out, double p);

    /**
     * The maximum ({@code max == true}) or minimum along {@code dim} and its index (int64), first
     * occurrence on ties; NaN beats every number (the first NaN wins). {@code values} may be null
     * (argmax); {@code indices} and {@code values} follow the layout convention with {@code dim}
     * reduced; the input's size along {@code dim} is at least 1.
     */
    void argReduce(boolean max, StridedView in, StridedView values, StridedView indices, int dim);

    /**
     * Variance (or standard deviation when {@code sqrt}) over the reduced dimensions, computed in
     * double: {@code sum (x - mean)^2 / max(0, N - correction)}.
     */
    void variance(StridedView in, StridedView out, double correction, boolean sqrt);

    /** {@code log(sum(exp(x)))} over the reduced dimensions, shifted by the maximum for stability. */
    void logsumexp(StridedView in, StridedView out);

    /**
     * Inclusive scan along {@code dim}: cumulative sum, or product when {@code prod}. {@code in} and
     * {@code out} have the same shape and dtype; floating scans accumulate in double, integral in long.
     */
    void scan(boolean prod, StridedView in, StridedView out, int dim);

    /**
     * Stable sort along {@code dim}: writes to {@code indices} (int64, {@code in}'s shape except that its size k
     * along {@code dim} may be smaller) the positions along {@code dim} of the first k elements of each line in
     * ascending order, or descending when {@code descending}. NaN is larger than every number, equal elements
     * (NaNs among themselves, -0.0 and 0.0) keep their order. The sorted values are {@code in.gather(dim, indices)}.
     * A backend may select the k first without sorting the rest (topk, kthvalue, median).
     */
    void argsort(StridedView in, StridedView indices, int dim, boolean descending);

    /**
     * Binary search of each value in its row of sorted boundaries, as PyTorch's {@code searchsorted}: writes to
     * {@code out} the first position whose boundary is {@code >= v} ({@code > v} when {@code right}), moving right
     * while that test fails (so a NaN value lands after every boundary). {@code boundaries} is
     * {@code [1 or rows, n]}, {@code values} {@code [rows, m]} of the same dtype and {@code out} {@code [rows, m]}
     * int64, all contiguous; a single boundary row serves every row.
     */
    void searchsorted(StridedView boundaries, StridedView values, StridedView out, boolean right);

    /**
     * Softmax ({@code log == false}) or log-softmax along {@code dim}, stable (max subtracted). {@code in}
     * and {@code out} have the same shape and floating dtype.
     */
    void softmax(StridedView in, StridedView out, int dim, boolean log);
}
