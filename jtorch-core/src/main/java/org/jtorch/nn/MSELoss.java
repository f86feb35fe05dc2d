package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Mean squared error, as {@code torch.nn.MSELoss}; see {@link F#mseLoss}. */
public class MSELoss extends Loss {

    public MSELoss() {
        this(F.Reduction.MEAN);
    }

    public MSELoss(F.Reduction reduction) {
        Arguments.nonNull("MSELoss", "reduction", reduction);
        super(reduction);

    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.mseLoss(input, target, reduction);
    }
}
