package org.jtorch.nn;

import org.jtorch.Tensor;

/** Log-softmax along {@code dim}, as {@code torch.nn.LogSoftmax}. */
public class LogSoftmax extends Module {
    private final int dim;

    public LogSoftmax(int dim) {
        this.dim = dim;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.logSoftmax(dim);
    }

    @Override
    protected String extraRepr() {
        return "dim=" + dim;
    }
}
