package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;

/**
 * Adaptive max pooling of {@code (N, C, D, H, W)} or {@code (C, D, H, W)} to a fixed output size, as
 * {@code torch.nn.AdaptiveMaxPool3d}: one size or three; {@link #AdaptiveMaxPool3d(Long, Long, Long)} keeps an input
 * size (PyTorch's None) where given null. {@link #forwardWithIndices} also returns the indices.
 */
public class AdaptiveMaxPool3d extends Module {
    private final long[] outputSize; // -1 keeps the input's size, as Pooling3d spells None

    public AdaptiveMaxPool3d(long... outputSize) {
        this.outputSize = sizes("AdaptiveMaxPool3d", outputSize);
    }

    /** {@code (outD, outH, outW)}; null keeps the input's size in that dimension (PyTorch's None). */
    public AdaptiveMaxPool3d(Long outD, Long outH, Long outW) {
        this.outputSize = sizes("AdaptiveMaxPool3d", outD, outH, outW);
    }

    static long[] sizes(String module, long[] outputSize) {
        Arguments.nonNull(module, "outputSize", outputSize);
        if (outputSize.length != 1 && outputSize.length != 3) {
            throw new IllegalArgumentException(module + ": output_size must be 1 or 3 sizes, got " + outputSize.length);
        }
        return F.checkSizes(module, outputSize).clone();
    }

    static long[] sizes(String module, Long outD, Long outH, Long outW) {
        return new long[] {F.noneAsInput(module, outD), F.noneAsInput(module, outH), F.noneAsInput(module, outW)};
    }

    @Override
    public Tensor forward(Tensor input) {
        try (ValuesIndices r = forwardWithIndices(input)) {
            return r.values().alias();
        }
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        return org.jtorch.ops.Pooling3d.adaptiveMaxPool3d(input, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + SpatialRepr.of(outputSize);
    }
}
