package org.jtorch.nn;

import org.jtorch.Generator;
import org.jtorch.Tensor;

/**
 * Channel dropout of {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.Dropout1d}: in training zeroes each whole channel with
 * probability {@code p} (default 0.5) and scales the rest by {@code 1 / (1 - p)}; the identity in evaluation mode.
 */
public class Dropout1d extends Module {
    private final double p;
    private final Generator gen;

    public Dropout1d() {
        this(0.5);
    }

    public Dropout1d(double p) {
        this(p, Generator.defaultGenerator());
    }

    /** Channel dropout drawing its masks from {@code gen}. */
    public Dropout1d(double p, Generator gen) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("Dropout1d: dropout probability has to be between 0 and 1, but got " + p);
        }
        this.p = p;
        this.gen = gen;
    }

    public double p() {
        return p;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.dropout1d(input, p, isTraining(), gen);
    }

    @Override
    protected String extraRepr() {
        return "p=" + p + ", inplace=False";
    }
}
