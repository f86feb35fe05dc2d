package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Generator;

/**
 * Channel dropout of {@code (N, C, H, W)}, as {@code torch.nn.Dropout2d}: in training zeroes each whole channel with
 * probability {@code p} (default 0.5) and scales the rest by {@code 1 / (1 - p)}; the identity in evaluation mode.
 */
public class Dropout2d extends DropoutNd {
    public Dropout2d() {
        this(0.5);
    }

    public Dropout2d(double p) {
        this(p, Generator.defaultGenerator());
    }

    /** Dropout2d drawing its masks from {@code gen}. */
    public Dropout2d(double p, Generator gen) {
        super("Dropout2d", p, gen);
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.dropout2d(input, p(), isTraining(), generator());
    }
}
