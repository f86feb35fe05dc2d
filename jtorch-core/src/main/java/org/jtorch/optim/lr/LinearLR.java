package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * Scales the learning rate by a factor moving linearly from {@code startFactor} to {@code endFactor}
 * over {@code totalIters} epochs, as {@code torch.optim.lr_scheduler.LinearLR} (warm-up or decay).
 */
public final class LinearLR extends LRScheduler {
    private double startFactor;
    private double endFactor;
    private int totalIters;

    /** PyTorch's defaults: start 1/3, end 1, 5 iterations. */
    public LinearLR(Optimizer optimizer) {
        this(optimizer, 1.0 / 3, 1.0, 5, -1);
    }

    public LinearLR(Optimizer optimizer, double startFactor, double endFactor, int totalIters) {
        this(optimizer, startFactor, endFactor, totalIters, -1);
    }

    public LinearLR(Optimizer optimizer, double startFactor, double endFactor, int totalIters, int lastEpoch) {
        Arguments.nonNull("LinearLR", "optimizer", optimizer);
        super(optimizer, lastEpoch);
        if (startFactor > 1.0 || startFactor < 0) {
            throw new IllegalArgumentException("LinearLR: Starting multiplicative factor expected to be between 0 and 1.");
        }
        if (endFactor > 1.0 || endFactor < 0) {
            throw new IllegalArgumentException("LinearLR: Ending multiplicative factor expected to be between 0 and 1.");
        }
        this.startFactor = startFactor;
        this.endFactor = endFactor;
        this.totalIters = totalIters;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        if (lastEpoch == 0) return scaled(startFactor);
        if (lastEpoch > totalIters) return scaled(1);
        return scaled(1.0 + (endFactor - startFactor)
                / (totalIters * startFactor + (lastEpoch - 1) * (endFactor - startFactor)));
    }

    @Override
    protected double[] closedFormLr() {
        return scaledBase(startFactor + (endFactor - startFactor) * Math.min(totalIters, lastEpoch) / totalIters);
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("start_factor", startFactor);
        sd.put("end_factor", endFactor);
        sd.put("total_iters", totalIters);
    }

    @Override
    protected void loadSettings(StateReader r) {
        double newStart = r.doubleOr("start_factor", startFactor);
        double newEnd = r.doubleOr("end_factor", endFactor);
        totalIters = r.intOr("total_iters", totalIters);
        startFactor = newStart;
        endFactor = newEnd;
    }
}
