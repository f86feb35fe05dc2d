package org.jtorch.nn;

import org.jtorch.Tensor;

/** Softmax along {@code dim}, as {@code torch.nn.Softmax}. */
public class Softmax extends Module {
    private final int dim;

    public Softmax(int dim) {
        this.dim = dim;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.softmax(dim);
    }

    @Override
    protected String extraRepr() {
        return "dim=" + dim;
    }
}
