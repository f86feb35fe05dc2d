package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * Decays the learning rate to 0 over {@code totalIters} epochs as {@code (1 - epoch / totalIters)^power},
 * as {@code torch.optim.lr_scheduler.PolynomialLR} (PyTorch 1.13), then keeps it there.
 */
public final class PolynomialLR extends LRScheduler {
    private int totalIters;
    private double power;

    /** PyTorch's defaults: 5 epochs, power 1 (linear). */
    public PolynomialLR(Optimizer optimizer) {
        this(optimizer, 5, 1.0, -1);
    }

    public PolynomialLR(Optimizer optimizer, int totalIters, double power) {
        this(optimizer, totalIters, power, -1);
    }

    public PolynomialLR(Optimizer optimizer, int totalIters, double power, int lastEpoch) {
        Arguments.nonNull("PolynomialLR", "optimizer", optimizer);
        super(optimizer, lastEpoch);
        this.totalIters = totalIters;
        this.power = power;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        if (lastEpoch == 0 || lastEpoch > totalIters) return scaled(1);
        return scaled(Math.pow((1.0 - (double) lastEpoch / totalIters) / (1.0 - (double) (lastEpoch - 1) / totalIters), power));
    }

    @Override
    protected double[] closedFormLr() {
        return scaledBase(Math.pow(1.0 - (double) Math.min(totalIters, lastEpoch) / totalIters, power));
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("total_iters", totalIters);
        sd.put("power", power);
    }

    @Override
    protected void loadSettings(StateReader r) {
        int newTotal = r.intOr("total_iters", totalIters);
        power = r.doubleOr("power", power);
        totalIters = newTotal;
    }
}
