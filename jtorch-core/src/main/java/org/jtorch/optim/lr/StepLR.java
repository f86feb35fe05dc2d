package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/** Multiplies the learning rate by {@code gamma} every {@code stepSize} epochs, as {@code torch.optim.lr_scheduler.StepLR}. */
public final class StepLR extends LRScheduler {
    private int stepSize;
    private double gamma;

    public StepLR(Optimizer optimizer, int stepSize, double gamma) {
        this(optimizer, stepSize, gamma, -1);
    }

    /** {@code gamma} defaults to 0.1. */
    public StepLR(Optimizer optimizer, int stepSize) {
        this(optimizer, stepSize, 0.1, -1);
    }

    public StepLR(Optimizer optimizer, int stepSize, double gamma, int lastEpoch) {
        Arguments.nonNull("StepLR", "optimizer", optimizer);
        super(optimizer, lastEpoch);
        this.stepSize = stepSize;
        this.gamma = gamma;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        if (lastEpoch == 0 || lastEpoch % stepSize != 0) return scaled(1);
        return scaled(gamma);
    }

    @Override
    protected double[] closedFormLr() {
        return scaledBase(Math.pow(gamma, Math.floorDiv(lastEpoch, stepSize)));
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("step_size", stepSize);
        sd.put("gamma", gamma);
    }

    @Override
    protected void loadSettings(StateReader r) {
        int newStepSize = r.intOr("step_size", stepSize);
        gamma = r.doubleOr("gamma", gamma);
        stepSize = newStepSize;
    }
}
