package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Smooth L1 loss with threshold {@code beta} (default 1), as {@code torch.nn.SmoothL1Loss}; see {@link F#smoothL1Loss}. */
public class SmoothL1Loss extends Loss {
    private final double beta;

    public SmoothL1Loss() {
        this(F.Reduction.MEAN, 1.0);
    }

    /** PyTorch's defaults but {@code reduction}. */
    public SmoothL1Loss(F.Reduction reduction) {
        this(reduction, 1.0);
    }

    public SmoothL1Loss(F.Reduction reduction, double beta) {
        Arguments.nonNull("SmoothL1Loss", "reduction", reduction);
        super(reduction);
        this.beta = beta;
    }

    @Override
    public Tensor forward(Tensor input, Tensor target) {
        return F.smoothL1Loss(input, target, reduction, beta);
    }
}
