package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Adaptive average pooling of {@code (N, C, H, W)} or {@code (C, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveAvgPool2d}: one size (square) or two; {@link #AdaptiveAvgPool2d(Long, Long)} keeps an input size (PyTorch's None) where given null.
 * {@code new AdaptiveAvgPool2d(1)} is the global average pool of a ResNet head.
 */
public class AdaptiveAvgPool2d extends Module {
    private final long[] outputSize; // -1 keeps the input's size, as Pooling spells None

    public AdaptiveAvgPool2d(long... outputSize) {
        Arguments.nonNull("AdaptiveAvgPool2d", "outputSize", outputSize);
        if (outputSize.length < 1 || outputSize.length > 2) {
            throw new IllegalArgumentException("AdaptiveAvgPool2d: output_size must be 1 or 2 sizes, got " + outputSize.length);
        }
        this.outputSize = F.checkSizes("AdaptiveAvgPool2d", outputSize).clone();
    }

    /** {@code (outH, outW)}; null keeps the input's size in that dimension (PyTorch's None). */
    public AdaptiveAvgPool2d(Long outH, Long outW) {
        this.outputSize = new long[] {F.noneAsInput("AdaptiveAvgPool2d", outH), F.noneAsInput("AdaptiveAvgPool2d", outW)};
    }

    @Override
    public Tensor forward(Tensor input) {
        Arguments.nonNull("AdaptiveAvgPool2d", "input", input);
        return org.jtorch.ops.Pooling.adaptiveAvgPool2d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
