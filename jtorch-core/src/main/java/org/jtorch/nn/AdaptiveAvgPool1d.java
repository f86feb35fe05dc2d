package org.jtorch.nn;

import org.jtorch.Tensor;

/** Adaptive average pooling of {@code (N, C, L)} or {@code (C, L)} to length {@code outputSize}, as {@code torch.nn.AdaptiveAvgPool1d}. */
public class AdaptiveAvgPool1d extends Module {
    private final long outputSize;

    public AdaptiveAvgPool1d(long outputSize) {
        this.outputSize = outputSize;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.adaptiveAvgPool1d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + outputSize;
    }
}
