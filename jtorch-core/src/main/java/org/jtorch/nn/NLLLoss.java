package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Negative log likelihood, as {@code torch.nn.NLLLoss}; {@code weight} (may be null) becomes buffer {@code weight}, owned by the module; see {@link F#nllLoss}. */
public class NLLLoss extends Loss {
    private final long ignoreIndex;

    public NLLLoss() {
        this(null, -100, F.Reduction.MEAN);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public NLLLoss(F.Reduction reduction) {
        this(null, -100, reduction);
    }

    public NLLLoss(Tensor weight, long ignoreIndex, F.Reduction reduction) {
        Arguments.nonNull("NLLLoss", "reduction", reduction);
        super(reduction);
        registerBuffer("weight", weight);
        this.ignoreIndex = ignoreIndex;
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.nllLoss(input, target, buffer("weight"), ignoreIndex, reduction);
    }
}
