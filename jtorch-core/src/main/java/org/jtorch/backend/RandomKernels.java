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
}
