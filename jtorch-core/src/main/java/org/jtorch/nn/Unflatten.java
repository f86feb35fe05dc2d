package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Splits dimension {@code dim} into {@code sizes}, as {@code torch.nn.Unflatten}. */
public class Unflatten extends Module {
    private final int dim;
    private final long[] sizes;

    public Unflatten(int dim, long... sizes) {
        Arguments.nonNull("Unflatten", "sizes", sizes);
        this.dim = dim;
        this.sizes = sizes.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.unflatten(dim, sizes);
    }

    @Override
    protected String extraRepr() {
        return "dim=" + dim + ", unflattened_size=" + java.util.Arrays.toString(sizes).replace('[', '(').replace(']', ')');
    }
}
