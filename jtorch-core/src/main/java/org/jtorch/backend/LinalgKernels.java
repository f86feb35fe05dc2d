package org.jtorch.backend;

import org.jtorch.op.StridedView;

/** Matrix products: the batched GEMM behind mm, bmm, matmul, linear, addmm and baddbmm. */
public interface LinalgKernels {
    /**
     * {@code out[t] = alpha * a[t] @ b[t] + beta * out[t]} for every batch entry t, with {@code a}
     * {@code [B, M, K]}, {@code b} {@code [B, K, N]} and {@code out} {@code [B, M, N]}, all of one dtype.
     * {@code a} and {@code b} may have any strides (transposed views need no copy); {@code out} has unit
     * column stride. With {@code beta == 0} the old contents of {@code out} are ignored (NaN-safe).
     */
    void bmm(StridedView a, StridedView b, StridedView out, double alpha, double beta);
}
