package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 3-D average pooling over {@code (N, C, D, H, W)} or {@code (C, D, H, W)}, as {@code torch.nn.AvgPool3d}. Sizes are
 * one int or three; the keywords are {@link F.AvgPool}'s (the stride defaults to the kernel size):
 * {@code new AvgPool3d(new int[] {3}, F.AvgPool.options().stride(2).countIncludePad(false))}.
 */
public class AvgPool3d extends Module {
    private final int[] kernelSize;
    private final F.AvgPool options;

    public AvgPool3d(int kernelSize) {
        this(new int[] {kernelSize}, F.AvgPool.options());
    }

    public AvgPool3d(int kernelSize, int stride, int padding) {
        this(new int[] {kernelSize}, F.AvgPool.options().stride(stride).padding(padding));
    }

    public AvgPool3d(int[] kernelSize, F.AvgPool options) {
        Arguments.nonNull("AvgPool3d", "kernelSize", kernelSize);
        Arguments.nonNull("AvgPool3d", "options", options);
        this.kernelSize = kernelSize.clone();
        this.options = options.stride() == null || options.stride().length == 0 ? options.stride(kernelSize) : options;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.avgPool3d(input, kernelSize, options);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + SpatialRepr.of(kernelSize) + ", stride=" + SpatialRepr.of(options.stride()) + ", padding="
                + SpatialRepr.of(options.padding());
    }
}
