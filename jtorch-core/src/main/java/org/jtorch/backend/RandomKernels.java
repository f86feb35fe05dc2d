package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Random fills of contiguous tensors from Philox streams: element {@code i} is a pure function of
 * {@code (seed, firstBlock, i)}, so results do not depend on threading or device.
 */
public interface RandomKernels {
    /** Uniform in {@code [low, high)}; element i uses word {@code i % 4} of block {@code firstBlock + i / 4}. */
    void uniform(StridedView out, double low, double high, long seed, long firstBlock);

    /** Normal(mean, std) by Box-Muller; elements {@code 2j, 2j+1} come from pair j (words 2(j%2), 2(j%2)+1 of block firstBlock + j/2). */
    void normal(StridedView out, double mean, double std, long seed, long firstBlock);

    /** Integers uniform in {@code [low, high)}; element i uses words 0-1 (i even) or 2-3 (i odd) of block firstBlock + i/2. */
    void randint(StridedView out, long low, long high, long seed, long firstBlock);

    /**
     * multinomial's draws on the device, with nothing read back: {@code buffer} (contiguous float64 on the device) holds
     * {@code rows x c} weights, then the uniforms ({@code rows x k}, with replacement) or {@code log(1 - u)} ({@code rows x c},
     * without), as {@link RandomOpKernels}' multinomial lays them out; {@code out} (contiguous int64, {@code rows x k}) gets the
     * same indices as the host's draws from that buffer. A bad row ({@code prob_dist} of {@code shape}) is reported the way
     * the device reports its deferred checks, naming the op, shape and row. Returns false where the backend has no such kernel
     * (the caller reads the buffer to the host and draws there); the CPU has none (its host loop reads memory directly).
     */
    default boolean multinomial(StridedView buffer, long rows, long c, long k, boolean replacement, long[] shape, StridedView out) {
        return false;
    }
}
