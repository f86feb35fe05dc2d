package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;

/**
 * 3-D max pooling over {@code (N, C, D, H, W)} or {@code (C, D, H, W)}, as {@code torch.nn.MaxPool3d}. Sizes are one
 * int (every dimension) or three; the keywords are {@link F.MaxPool}'s (the stride defaults to the kernel size).
 * {@link #forwardWithIndices} also returns the flat indices ({@code return_indices=True}).
 */
public class MaxPool3d extends Module {
    private final int[] kernelSize;
    private final F.MaxPool options;

    public MaxPool3d(int kernelSize) {
        this(new int[] {kernelSize}, F.MaxPool.options());
    }

    public MaxPool3d(int kernelSize, int stride, int padding) {
        this(new int[] {kernelSize}, F.MaxPool.options().stride(stride).padding(padding));
    }

    public MaxPool3d(int[] kernelSize, F.MaxPool options) {
        Arguments.nonNull("MaxPool3d", "kernelSize", kernelSize);
        Arguments.nonNull("MaxPool3d", "options", options);
        this.kernelSize = kernelSize.clone();
        this.options = options.stride() == null || options.stride().length == 0 ? options.stride(kernelSize) : options;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.maxPool3d(input, kernelSize, options);
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        return F.maxPool3dWithIndices(input, kernelSize, options);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + SpatialRepr.of(kernelSize) + ", stride=" + SpatialRepr.of(options.stride()) + ", padding="
                + SpatialRepr.of(options.padding()) + ", dilation=" + SpatialRepr.of(options.dilation()) + ", ceil_mode="
                + SpatialRepr.bool(options.ceilMode());
    }
}
