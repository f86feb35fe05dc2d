package org.jtorch.optim;

import java.util.List;

/**
 * Options of the optimizers built on Adam's two moment estimates (Adam, AdamW, NAdam, RAdam, Adamax,
 * SparseAdam): {@code betas}, the decay rates of the first and second moments, and {@code eps}.
 */
public abstract class BetasOptions<O extends BetasOptions<O>> extends OptimizerOptions<O> {
    public O betas(double beta1, double beta2) {
        return set("betas", List.of(beta1, beta2));
    }

    public O eps(double eps) {
        return set("eps", eps);
    }
}
