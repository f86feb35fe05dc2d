package org.jtorch.optim.lr;

import java.util.List;
import java.util.function.IntToDoubleFunction;
import org.jtorch.optim.Optimizer;

/**
 * Multiplies each group's learning rate by {@code lambda(epoch)} at every epoch after the first, as
 * {@code torch.optim.lr_scheduler.MultiplicativeLR} (LambdaLR's factors apply to the initial rate; these
 * compound). One function for all groups, or one per group. The functions are not part of the state
 * dict ({@code lr_lambdas} holds nulls, as PyTorch does for lambdas).
 */
public final class MultiplicativeLR extends EpochFunctionScheduler {
    public MultiplicativeLR(Optimizer optimizer, IntToDoubleFunction lambda) {
        this(optimizer, forEachGroup("MultiplicativeLR", optimizer, lambda), -1);
    }

    public MultiplicativeLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas) {
        this(optimizer, lambdas, -1);
    }

    public MultiplicativeLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas, int lastEpoch) {
        super("MultiplicativeLR", optimizer, lambdas, lastEpoch);
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        double[] r = scaled(1);
        if (lastEpoch > 0) {
            for (int i = 0; i < r.length; i++) r[i] *= lambdas.get(i).applyAsDouble(lastEpoch);
        }
        return r;
    }
}
