package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/** Multiplies the learning rate by {@code gamma} every epoch, as {@code torch.optim.lr_scheduler.ExponentialLR}. */
public final class ExponentialLR extends LRScheduler {
    private double gamma;

    public ExponentialLR(Optimizer optimizer, double gamma) {
        this(optimizer, gamma, -1);
    }

    public ExponentialLR(Optimizer optimizer, double gamma, int lastEpoch) {
        Arguments.nonNull("ExponentialLR", "optimizer", optimizer);
        super(optimizer, lastEpoch);
        this.gamma = gamma;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        return scaled(lastEpoch == 0 ? 1 : gamma);
    }

    @Override
    protected double[] closedFormLr() {
        return scaledBase(Math.pow(gamma, lastEpoch));
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("gamma", gamma);
    }

    @Override
    protected void loadSettings(StateReader r) {
        gamma = r.doubleOr("gamma", gamma);
    }
}
