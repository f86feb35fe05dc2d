package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Cross entropy of logits with class-index or class-probability targets, as {@code torch.nn.CrossEntropyLoss}; {@code weight} (may be null) becomes buffer {@code weight}, owned by the module; see {@link F#crossEntropy}. */
public class CrossEntropyLoss extends Loss {
    private final long ignoreIndex;
    private final double labelSmoothing;

    public CrossEntropyLoss() {
        this(null, -100, F.Reduction.MEAN, 0.0);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public CrossEntropyLoss(F.Reduction reduction) {
        this(null, -100, reduction, 0);
    }

    public CrossEntropyLoss(Tensor weight, long ignoreIndex, F.Reduction reduction, double labelSmoothing) {
        Arguments.nonNull("CrossEntropyLoss", "reduction", reduction);
        super(reduction);
        registerBuffer("weight", weight);
        this.ignoreIndex = ignoreIndex;
        this.labelSmoothing = labelSmoothing;
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.crossEntropy(input, target, buffer("weight"), ignoreIndex, reduction, labelSmoothing);
    }
}
