package org.jtorch.optim.lr;

import java.util.List;
import java.util.function.IntToDoubleFunction;
import org.jtorch.optim.Optimizer;

/**
 * Sets each group's learning rate to its initial value times {@code lambda(epoch)}, as
 * {@code torch.optim.lr_scheduler.LambdaLR}. One function for all groups, or one per group. The
 * functions are not part of the state dict ({@code lr_lambdas} holds nulls, as PyTorch does for lambdas).
 */
public final class LambdaLR extends EpochFunctionScheduler {
    public LambdaLR(Optimizer optimizer, IntToDoubleFunction lambda) {
        this(optimizer, forEachGroup("LambdaLR", optimizer, lambda), -1);
    }

    public LambdaLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas) {
        this(optimizer, lambdas, -1);
    }

    public LambdaLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas, int lastEpoch) {
        super("LambdaLR", optimizer, lambdas, lastEpoch);
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        double[] r = new double[lambdas.size()];
        for (int i = 0; i < r.length; i++) r[i] = baseLrs.get(i) * lambdas.get(i).applyAsDouble(lastEpoch);
        return r;
    }
}
