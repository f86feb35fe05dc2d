package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * Scales the learning rate by {@code factor} for the first {@code totalIters} epochs, then restores it,
 * as {@code torch.optim.lr_scheduler.ConstantLR} (a constant warm-up).
 */
public final class ConstantLR extends LRScheduler {
    private double factor;
    private int totalIters;

    /** PyTorch's defaults: factor 1/3 for 5 epochs. */
    public ConstantLR(Optimizer optimizer) {
        this(optimizer, 1.0 / 3, 5, -1);
    }

    public ConstantLR(Optimizer optimizer, double factor, int totalIters) {
        this(optimizer, factor, totalIters, -1);
    }

    public ConstantLR(Optimizer optimizer, double factor, int totalIters, int lastEpoch) {
        Arguments.nonNull("ConstantLR", "optimizer", optimizer);
        if (factor > 1.0 || factor < 0) {
            throw new IllegalArgumentException("ConstantLR: Constant multiplicative factor expected to be between 0 and 1.");
        }
        super(optimizer, lastEpoch);
        this.factor = factor;
        this.totalIters = totalIters;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        if (lastEpoch == 0) return scaled(factor);
        if (lastEpoch != totalIters) return scaled(1);
        return scaled(1.0 / factor);
    }

    @Override
    protected double[] closedFormLr() {
        return scaledBase(factor + (lastEpoch >= totalIters ? 1 - factor : 0));
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("factor", factor);
        sd.put("total_iters", totalIters);
    }

    @Override
    protected void loadSettings(StateReader r) {
        double newFactor = r.doubleOr("factor", factor);
        totalIters = r.intOr("total_iters", totalIters);
        factor = newFactor;
    }
}
