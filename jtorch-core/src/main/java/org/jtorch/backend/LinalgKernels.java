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

    /**
     * Pointwise work on a finished block of a matrix product's output, rows {@code [row0, row1)} and columns
     * {@code [col0, col1)}: the JIT's fused epilogue (bias, activation, residual add). Blocks do not overlap and
     * together cover the output once.
     */
    @FunctionalInterface
    interface Epilogue {
        void block(long row0, long row1, long col0, long col1);
    }

    /**
     * {@link #bmm} of one {@code [1, M, K] x [1, K, N]} product, then {@code epilogue} over the output. A backend may
     * run the epilogue on each block of the output as it finishes, while the block is in cache (the CPU's float32
     * GEMM does); by default it runs once over the whole output after the product.
     */
    default void mmWithEpilogue(StridedView a, StridedView b, StridedView out, double alpha, double beta, Epilogue epilogue) {
        bmm(a, b, out, alpha, beta);
        epilogue.block(0, out.size(1), 0, out.size(2));
    }

    /** An activation a backend's GEMM can apply as it writes the product (cuBLASLt's epilogues). */
    enum Activation {
        NONE,
        /** {@code max(x, 0)}. */
        RELU,
        /** GELU's tanh form, {@code 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))} (PyTorch's {@code approximate="tanh"}). */
        GELU_TANH
    }

    /**
     * {@code out = activation(a @ b + bias)} for one {@code [1, M, K] x [1, K, N]} product in one kernel, {@code bias}
     * a contiguous {@code [N]} vector of {@code out}'s dtype added to every row (or null); {@code preActivation} (null,
     * or laid out as {@code out}) also receives {@code a @ b + bias}, the activation's input, for its gradient. Returns
     * false, having done nothing, where the backend has no such kernel for these operands (then the caller runs
     * {@link #bmm} and the rest itself); by default it has none.
     */
    default boolean mmBiasActivation(StridedView a, StridedView b, StridedView out, StridedView bias, Activation activation,
                                     StridedView preActivation) {
        return false;
    }

    /**
     * Whether {@link #mmBiasActivation} takes these operands with {@code out} (and, with {@code preActivation}, the
     * pre-activation matrix) a fresh contiguous {@code [1, M, N]} of {@code a}'s dtype, answered without running: the
     * dispatcher's test of {@code _linear_activation}'s fused kernel, asked before it allocates. A kernel that then
     * declines at run time (a library without an algorithm for the epilogue) leaves its caller the unfused way. By
     * default none is taken.
     */
    default boolean takesBiasActivation(StridedView a, StridedView b, StridedView bias, Activation activation, boolean preActivation) {
        return false;
    }

    /** A right-hand matrix prepared once for many products with it ({@link LinalgKernels#packRight}). */
    @FunctionalInterface
    interface PackedRight extends AutoCloseable {
        /**
         * {@code out = alpha * a @ B + beta * out}, {@code a} {@code [M, K]} of any strides, {@code out} {@code [M, N]} with
         * unit column stride, both of B's dtype and device; beta 0 ignores the old contents of {@code out}.
         */
        void multiply(StridedView a, StridedView out, double alpha, double beta);

        /** Releases the packed copy's memory at once (a caller closes it when its products are done). */
        @Override
        default void close() {}
    }

    /**
     * {@code b} ({@code [K, N]}, any strides) packed once into the backend's GEMM layout, for products with many left-hand
     * matrices while its values stay fixed (a recurrent layer's hidden weights over its time steps, which a GEMM would
     * otherwise pack again at every step); null where the backend has no such form for {@code b} (then the caller runs
     * {@link #bmm}). The matrix must stay alive and unchanged while the result is used: the products may read the
     * packed copy or, short ones, the matrix in place. By default there is none.
     */
    default PackedRight packRight(StridedView b) {
        return null;
    }
}
