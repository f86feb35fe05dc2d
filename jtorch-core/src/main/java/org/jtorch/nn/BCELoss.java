package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Binary cross entropy of probabilities, as {@code torch.nn.BCELoss}; {@code weight} (may be null) becomes buffer {@code weight}, owned by the module; see {@link F#binaryCrossEntropy}. */
public class BCELoss extends Loss {

    public BCELoss() {
        this(null, F.Reduction.MEAN);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public BCELoss(F.Reduction reduction) {
        this(null, reduction);
    }

    public BCELoss(Tensor weight, F.Reduction reduction) {
        Arguments.nonNull("BCELoss", "reduction", reduction);
        super(reduction);
        registerBuffer("weight", weight);
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.binaryCrossEntropy(input, target, buffer("weight"), reduction);
    }
}
