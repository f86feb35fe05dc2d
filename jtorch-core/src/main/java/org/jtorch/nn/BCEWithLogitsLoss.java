package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Sigmoid plus binary cross entropy, stably, as {@code torch.nn.BCEWithLogitsLoss}; {@code weight} and {@code posWeight} (may be null) become buffers {@code weight} and {@code pos_weight}, owned by the module; see {@link F#binaryCrossEntropyWithLogits}. */
public class BCEWithLogitsLoss extends Loss {

    public BCEWithLogitsLoss() {
        this(null, F.Reduction.MEAN, null);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public BCEWithLogitsLoss(F.Reduction reduction) {
        this(null, reduction, null);
    }

    public BCEWithLogitsLoss(Tensor weight, F.Reduction reduction, Tensor posWeight) {
        Arguments.nonNull("BCEWithLogitsLoss", "reduction", reduction);
        super(reduction);
        registerBuffer("weight", weight);
        registerBuffer("pos_weight", posWeight);
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.binaryCrossEntropyWithLogits(input, target, buffer("weight"), buffer("pos_weight"), reduction);
    }
}
