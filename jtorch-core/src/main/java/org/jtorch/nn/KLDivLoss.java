package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Kullback-Leibler divergence, as {@code torch.nn.KLDivLoss}; see {@link F#klDiv}. */
public class KLDivLoss extends Loss {
    private final boolean logTarget;

    public KLDivLoss() {
        this(F.Reduction.MEAN, false);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public KLDivLoss(F.Reduction reduction) {
        this(reduction, false);
    }

    public KLDivLoss(F.Reduction reduction, boolean logTarget) {
        Arguments.nonNull("KLDivLoss", "reduction", reduction);
        super(reduction);
        this.logTarget = logTarget;
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.klDiv(input, target, reduction, logTarget);
    }
}
