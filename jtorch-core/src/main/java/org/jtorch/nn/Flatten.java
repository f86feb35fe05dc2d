package org.jtorch.nn;

import org.jtorch.Tensor;

/** Flattens dimensions {@code startDim..endDim} into one (defaults 1 and -1), as {@code torch.nn.Flatten}. */
public class Flatten extends Module {
    private final int startDim;
    private final int endDim;

    public Flatten() {
        this(1, -1);
    }

    public Flatten(int startDim, int endDim) {
        this.startDim = startDim;
        this.endDim = endDim;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.flatten(startDim, endDim);
    }

    @Override
    protected String extraRepr() {
        return "start_dim=" + startDim + ", end_dim=" + endDim;
    }
}
