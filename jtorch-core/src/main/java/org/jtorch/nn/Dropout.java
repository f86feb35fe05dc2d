package org.jtorch.nn;

import org.jtorch.Generator;
import org.jtorch.Tensor;

/**
 * In training mode zeroes each element with probability {@code p} (default 0.5) and scales the rest
 * by {@code 1 / (1 - p)}; in evaluation mode returns its input unchanged, as {@code torch.nn.Dropout}.
 */
public class Dropout extends Module {
    private final double p;
    private final Generator gen;

    public Dropout() {
        this(0.5);
    }

    public Dropout(double p) {
        this(p, Generator.defaultGenerator());
    }

    /** Dropout drawing its masks from {@code gen}. */
    public Dropout(double p, Generator gen) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("Dropout: dropout probability has to be between 0 and 1, but got " + p);
        }
        this.p = p;
        this.gen = gen;
    }

    public double p() {
        return p;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.dropout(input, p, isTraining(), gen);
    }

    @Override
    protected String extraRepr() {
        return "p=" + p + ", inplace=False";
    }
}
