package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;

/**
 * Adaptive max pooling of {@code (N, C, H, W)} or {@code (C, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveMaxPool2d}: one size or two; {@link #AdaptiveMaxPool2d(Long, Long)} keeps an input size (PyTorch's None) where given null.
 * {@link #forwardWithIndices} also returns the indices.
 */
public class AdaptiveMaxPool2d extends Module {
    private final long[] outputSize; // -1 keeps the input's size, as Pooling spells None

    public AdaptiveMaxPool2d(long... outputSize) {
        Arguments.nonNull("AdaptiveMaxPool2d", "outputSize", outputSize);
        if (outputSize.length < 1 || outputSize.length > 2) {
            throw new IllegalArgumentException("AdaptiveMaxPool2d: output_size must be 1 or 2 sizes, got " + outputSize.length);
        }
        this.outputSize = F.checkSizes("AdaptiveMaxPool2d", outputSize).clone();
    }

    /** {@code (outH, outW)}; null keeps the input's size in that dimension (PyTorch's None). */
    public AdaptiveMaxPool2d(Long outH, Long outW) {
        this.outputSize = new long[] {F.noneAsInput("AdaptiveMaxPool2d", outH), F.noneAsInput("AdaptiveMaxPool2d", outW)};
    }

    @Override
    public Tensor forward(Tensor input) {
        try (ValuesIndices r = forwardWithIndices(input)) {
            return r.values().alias();
        }
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        Arguments.nonNull("AdaptiveMaxPool2d", "input", input);
        return org.jtorch.ops.Pooling.adaptiveMaxPool2d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
