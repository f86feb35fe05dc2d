package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.IntToDoubleFunction;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * The schedulers driven by a function of the epoch per group ({@link LambdaLR}, {@link MultiplicativeLR}).
 * The functions are not part of the state dict ({@code lr_lambdas} holds nulls, as PyTorch does for lambdas).
 */
abstract class EpochFunctionScheduler extends LRScheduler {
    protected final List<IntToDoubleFunction> lambdas;

    EpochFunctionScheduler(String name, Optimizer optimizer, List<IntToDoubleFunction> lambdas, int lastEpoch) {
        Arguments.nonNull(name, "optimizer", optimizer);
        Arguments.nonNullElements(name, "lambdas", lambdas);
        super(optimizer, lastEpoch);
        if (lambdas.size() != optimizer.paramGroups().size()) {
            throw new IllegalArgumentException(name + ": Expected " + optimizer.paramGroups().size() + " lr_lambdas, but got " + lambdas.size());
        }
        this.lambdas = List.copyOf(lambdas);
    }

    /** {@code lambda} once per group of {@code optimizer}. */
    static List<IntToDoubleFunction> forEachGroup(String name, Optimizer optimizer, IntToDoubleFunction lambda) {
        Arguments.nonNull(name, "optimizer", optimizer);
        Arguments.nonNull(name, "lambda", lambda);
        return Collections.nCopies(optimizer.paramGroups().size(), lambda);
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("lr_lambdas", new ArrayList<>(Collections.nCopies(lambdas.size(), null)));
    }
}
