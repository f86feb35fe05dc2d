package org.jtorch.cuda.kernels;

/**
 * Grid and block sizes of the grid-stride kernels: {@value #THREADS} threads a block, enough blocks
 * for one work item a thread, capped at {@value #BLOCKS_PER_SM} blocks per multiprocessor (a full
 * device at 2,048 resident threads per SM) so that large tensors loop inside the kernel instead of
 * launching millions of blocks.
 */
public final class LaunchGeometry {
    public static final int THREADS = 256;
    public static final int BLOCKS_PER_SM = 8;

    private LaunchGeometry() {}

    /**
     * Blocks for {@code n} elements processed {@code perItem} at a time (the 16-byte vector width
     * of the contiguous kernels, 1 for the strided ones) on a device of {@code multiprocessors} SMs; at
     * least 1, and 0 only for {@code n == 0} (no launch).
     */
    public static int blocks(long n, int perItem, int multiprocessors) {
        if (n < 0 || perItem < 1 || multiprocessors < 1) {
            throw new IllegalArgumentException("blocks: n=" + n + ", perItem=" + perItem + ", multiprocessors=" + multiprocessors);
        }
        if (n == 0) return 0;
        long items = (n + perItem - 1) / perItem;
        long wanted = (items + THREADS - 1) / THREADS;
        return (int) Math.max(1, Math.min(wanted, (long) multiprocessors * BLOCKS_PER_SM));
    }

    /** Elements of {@code elementBytes} bytes in one 16-byte vector ({@code Vec16<T>::N}). */
    public static int vectorWidth(int elementBytes) {
        return 16 / elementBytes;
    }
}
