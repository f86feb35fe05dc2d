package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.IntToDoubleFunction;
import org.jtorch.ops.Arguments;
import org.jtorch.optim.Optimizer;

/**
 * Sets each group's learning rate to its initial value times {@code lambda(epoch)}, as
 * {@code torch.optim.lr_scheduler.LambdaLR}. One function for all groups, or one per group. The
 * functions are not part of the state dict ({@code lr_lambdas} holds nulls, as PyTorch does for lambdas).
 */
public final class LambdaLR extends LRScheduler {
    private final List<IntToDoubleFunction> lambdas;

    public LambdaLR(Optimizer optimizer, IntToDoubleFunction lambda) {
        Arguments.nonNull("LambdaLR", "optimizer", optimizer);
        Arguments.nonNull("LambdaLR", "lambda", lambda);
        this(optimizer, Collections.nCopies(optimizer.paramGroups().size(), lambda), -1);
    }

    public LambdaLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas) {
        this(optimizer, lambdas, -1);
    }

    public LambdaLR(Optimizer optimizer, List<IntToDoubleFunction> lambdas, int lastEpoch) {
        Arguments.nonNull("LambdaLR", "optimizer", optimizer);
        Arguments.nonNullElements("LambdaLR", "lambdas", lambdas);
        super(optimizer, lastEpoch);
        if (lambdas.size() != optimizer.paramGroups().size()) {
            throw new IllegalArgumentException("LambdaLR: Expected " + optimizer.paramGroups().size() + " lr_lambdas, but got "
                    + lambdas.size());
        }
        this.lambdas = List.copyOf(lambdas);
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        double[] r = new double[lambdas.size()];
        for (int i = 0; i < r.length; i++) r[i] = baseLrs.get(i) * lambdas.get(i).applyAsDouble(lastEpoch);
        return r;
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("lr_lambdas", new ArrayList<>(Collections.nCopies(lambdas.size(), null)));
    }
}
