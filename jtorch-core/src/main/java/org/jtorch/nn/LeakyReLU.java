package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code x > 0 ? x : negativeSlope * x}, as {@code torch.nn.LeakyReLU} (default slope 0.01). */
public class LeakyReLU extends Module {
    private final double negativeSlope;

    public LeakyReLU() {
        this(0.01);
    }

    public LeakyReLU(double negativeSlope) {
        this.negativeSlope = negativeSlope;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.leakyRelu(negativeSlope);
    }

    @Override
    protected String extraRepr() {
        return "negative_slope=" + negativeSlope;
    }
}
