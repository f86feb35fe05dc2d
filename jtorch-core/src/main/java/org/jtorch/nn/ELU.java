package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code x > 0 ? x : alpha * (exp(x) - 1)}, as {@code torch.nn.ELU} (default alpha 1). */
public class ELU extends Module {
    private final double alpha;

    public ELU() {
        this(1.0);
    }

    public ELU(double alpha) {
        this.alpha = alpha;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.elu(input, alpha);
    }

    @Override
    protected String extraRepr() {
        return "alpha=" + alpha;
    }
}
