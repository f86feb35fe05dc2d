package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Generator;

/**
 * In training mode zeroes each element with probability {@code p} (default 0.5) and scales the rest
 * by {@code 1 / (1 - p)}; in evaluation mode returns its input unchanged, as {@code torch.nn.Dropout}. With
 * {@code inplace} the input tensor itself is masked.
 */
public class Dropout extends DropoutNd {
    public Dropout() {
        this(0.5);
    }

    public Dropout(double p) {
        this(p, Generator.defaultGenerator());
    }

    /** Dropout drawing its masks from {@code gen}. */
    public Dropout(double p, Generator gen) {
        super("Dropout", p, gen);
    }

    /** {@code nn.Dropout(p, inplace=True)}: in training the input itself is masked ({@link F#dropout_}). */
    public Dropout(double p, boolean inplace) {
        this(p, inplace, Generator.defaultGenerator());
    }

    public Dropout(double p, boolean inplace, Generator gen) {
        super("Dropout", p, gen, inplace);
    }

    @Override
    public Tensor forward(Tensor input) {
        return inplace() ? F.dropout_(input, p(), isTraining(), generator()) : F.dropout(input, p(), isTraining(), generator());
    }
}
