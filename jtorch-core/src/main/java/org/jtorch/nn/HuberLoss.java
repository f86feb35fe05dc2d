package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Huber loss with threshold {@code delta} (default 1), as {@code torch.nn.HuberLoss}; see {@link F#huberLoss}. */
public class HuberLoss extends Loss {
    private final double delta;

    public HuberLoss() {
        this(F.Reduction.MEAN, 1.0);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public HuberLoss(F.Reduction reduction) {
        this(reduction, 1.0);
    }

    public HuberLoss(F.Reduction reduction, double delta) {
        Arguments.nonNull("HuberLoss", "reduction", reduction);
        super(reduction);
        this.delta = delta;
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.huberLoss(input, target, reduction, delta);
    }
}
