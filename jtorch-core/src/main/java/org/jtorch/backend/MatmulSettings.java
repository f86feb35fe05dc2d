package org.jtorch.backend;

/**
 * Process-wide precision switches of the matrix-product kernels, the counterpart of PyTorch's
 * {@code torch.backends.cuda.matmul.allow_tf32}. Only accelerator backends read them; the CPU backend
 * always computes float32 products in float32.
 */
public final class MatmulSettings {
    private static volatile boolean allowTf32 = false;

    private MatmulSettings() {}

    /**
     * Whether float32 matrix products may round their inputs to TF32 (10-bit mantissa) on tensor cores.
     * Default {@code false}, as PyTorch's {@code torch.backends.cuda.matmul.allow_tf32} since 1.12.
     */
    public static boolean allowTf32() {
        return allowTf32;
    }

    /** Sets {@link #allowTf32()}; returns the previous value (to restore it). */
    public static boolean setAllowTf32(boolean allow) {
        boolean previous = allowTf32;
        allowTf32 = allow;
        return previous;
    }
}
