package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Arguments;

/**
 * Adaptive average pooling of {@code (N, C, H, W)} or {@code (C, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveAvgPool2d}: one size (square) or two; -1 keeps the input's (None).
 * {@code new AdaptiveAvgPool2d(1)} is the global average pool of a ResNet head.
 */
public class AdaptiveAvgPool2d extends Module {
    private final long[] outputSize;

    public AdaptiveAvgPool2d(long... outputSize) {
        Arguments.nonNull("AdaptiveAvgPool2d", "outputSize", outputSize);
        if (outputSize.length < 1 || outputSize.length > 2) {
            throw new IllegalArgumentException("AdaptiveAvgPool2d: output_size must be 1 or 2 sizes, got " + outputSize.length);
        }
        this.outputSize = outputSize.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.adaptiveAvgPool2d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
