package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Mean absolute error, as {@code torch.nn.L1Loss}; see {@link F#l1Loss}. */
public class L1Loss extends Loss {

    public L1Loss() {
        this(F.Reduction.MEAN);
    }

    public L1Loss(F.Reduction reduction) {
        Arguments.nonNull("L1Loss", "reduction", reduction);
        super(reduction);

    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.l1Loss(input, target, reduction);
    }
}
