package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Arguments;
import org.jtorch.ops.Reductions.ValuesIndices;

/**
 * Adaptive max pooling of {@code (N, C, H, W)} or {@code (C, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveMaxPool2d}: one size or two; -1 keeps the input's (None).
 * {@link #forwardWithIndices} also returns the indices.
 */
public class AdaptiveMaxPool2d extends Module {
    private final long[] outputSize;

    public AdaptiveMaxPool2d(long... outputSize) {
        Arguments.nonNull("AdaptiveMaxPool2d", "outputSize", outputSize);
        if (outputSize.length < 1 || outputSize.length > 2) {
            throw new IllegalArgumentException("AdaptiveMaxPool2d: output_size must be 1 or 2 sizes, got " + outputSize.length);
        }
        this.outputSize = outputSize.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.adaptiveMaxPool2d(input, outputSize);
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        return F.adaptiveMaxPool2dWithIndices(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
