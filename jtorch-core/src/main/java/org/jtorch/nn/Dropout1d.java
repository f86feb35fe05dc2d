package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Generator;

/**
 * Channel dropout of {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.Dropout1d}: in training zeroes each whole channel with
 * probability {@code p} (default 0.5) and scales the rest by {@code 1 / (1 - p)}; the identity in evaluation mode.
 */
public class Dropout1d extends DropoutNd {
    public Dropout1d() {
        this(0.5);
    }

    public Dropout1d(double p) {
        this(p, Generator.defaultGenerator());
    }

    /** Dropout1d drawing its masks from {@code gen}. */
    public Dropout1d(double p, Generator gen) {
        super("Dropout1d", p, gen);
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.dropout1d(input, p(), isTraining(), generator());
    }
}
