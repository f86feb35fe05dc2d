package org.jtorch.distributed;

import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.optim.lr.LRScheduler;
import org.jtorch.optim.lr.LinearLR;

/**
 * The learning-rate rule of data-parallel recipes (Goyal et al., "Accurate, Large Minibatch SGD", 2017): when the
 * global batch grows k-fold (k ranks, each with the single-process batch), multiply the learning rate by k, and
 * reach that rate by a linear warm-up from the single-process rate over the first iterations, because the scaled
 * rate is too large while the weights change fast.
 *
 * <pre>{@code
 * var opt = new SGD(ddp.parameters(), SGD.options().lr(0.1));   // the single-process rate
 * LearningRateScaling.scaleLinearly(opt, pg.size());             // 0.1 * k
 * var warmup = LearningRateScaling.warmup(opt, pg.size(), 500);  // 0.1 -> 0.1 * k over 500 steps
 * for (...) { ...; opt.step(); warmup.step(); }                    // chain a decay with SequentialLR
 * }</pre>
 */
public final class LearningRateScaling {
    private LearningRateScaling() {}

    /** {@code baseLr * worldSize}. */
    public static double linear(double baseLr, int worldSize) {
        if (worldSize < 1) throw new IllegalArgumentException("LearningRateScaling: worldSize must be positive, got " + worldSize);
        return baseLr * worldSize;
    }

    /** {@code baseLr * globalBatch / baseBatch}, for a global batch that is not simply the single-process batch times the ranks. */
    public static double forBatch(double baseLr, long baseBatch, long globalBatch) {
        if (baseBatch < 1 || globalBatch < 1) {
            throw new IllegalArgumentException("LearningRateScaling: batch sizes must be positive, got " + baseBatch + " and " + globalBatch);
        }
        return baseLr * globalBatch / baseBatch;
    }

    /** Multiplies every parameter group's learning rate by {@code worldSize} (call once, before any scheduler). */
    public static void scaleLinearly(Optimizer optimizer, int worldSize) {
        if (optimizer == null) throw new NullPointerException("LearningRateScaling.scaleLinearly: optimizer is null");
        for (ParamGroup g : optimizer.paramGroups()) {
            if (g.has("initial_lr")) {
                throw new IllegalStateException("LearningRateScaling.scaleLinearly: a scheduler already recorded the initial rate; "
                        + "scale before creating schedulers");
            }
            g.setLr(linear(g.lr(), worldSize));
        }
    }

    /**
     * A scheduler, stepped once per iteration, that starts at the scaled rate divided by {@code worldSize} (the
     * single-process rate) and rises linearly to the scaled rate over {@code warmupSteps} steps, then holds it.
     */
    public static LRScheduler warmup(Optimizer optimizer, int worldSize, int warmupSteps) {
        if (warmupSteps < 1) throw new IllegalArgumentException("LearningRateScaling.warmup: warmupSteps must be positive, got " + warmupSteps);
        return new LinearLR(optimizer, 1.0 / Math.max(1, worldSize), 1.0, warmupSteps);
    }
}
