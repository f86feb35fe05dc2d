package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Adaptive average pooling of {@code (N, C, D, H, W)} or {@code (C, D, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveAvgPool3d}: one size (cubic) or three; {@link #AdaptiveAvgPool3d(Long, Long, Long)} keeps an
 * input size (PyTorch's None) where given null.
 */
public class AdaptiveAvgPool3d extends Module {
    private final long[] outputSize; // -1 keeps the input's size, as Pooling3d spells None

    public AdaptiveAvgPool3d(long... outputSize) {
        this.outputSize = AdaptiveMaxPool3d.sizes("AdaptiveAvgPool3d", outputSize);
    }

    /** {@code (outD, outH, outW)}; null keeps the input's size in that dimension (PyTorch's None). */
    public AdaptiveAvgPool3d(Long outD, Long outH, Long outW) {
        this.outputSize = AdaptiveMaxPool3d.sizes("AdaptiveAvgPool3d", outD, outH, outW);
    }

    @Override
    public Tensor forward(Tensor input) {
        return org.jtorch.ops.Pooling3d.adaptiveAvgPool3d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
