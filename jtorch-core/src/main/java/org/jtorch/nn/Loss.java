package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * Base of the loss modules: {@link #forward(Tensor, Tensor)} compares an input with a target. Class
 * weights given to a loss are registered as buffers (so they move with {@link #to}), as PyTorch does.
 */
public abstract class Loss extends Module {
    protected final F.Reduction reduction;

    protected Loss(F.Reduction reduction) {
        this.reduction = reduction;
    }

    public F.Reduction reduction() {
        return reduction;
    }

    public abstract Tensor forward(Tensor input, Tensor target);

    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + ": a loss takes an input and a target; call forward(input, target)");
    }
}
