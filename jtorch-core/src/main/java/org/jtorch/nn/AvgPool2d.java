package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 2-D average pooling over {@code (N, C, H, W)} or {@code (C, H, W)}, as {@code torch.nn.AvgPool2d}. Sizes are
 * one int or two; the keywords are {@link F.AvgPool}'s (the stride defaults to the kernel size, no divisor override):
 * {@code new AvgPool2d(new int[] {3}, F.AvgPool.options().stride(2).divisorOverride(4L))}.
 */
public class AvgPool2d extends Module {
    private final int[] kernelSize;
    private final F.AvgPool options;

    public AvgPool2d(int kernelSize) {
        this(new int[] {kernelSize}, F.AvgPool.options());
    }

    public AvgPool2d(int kernelSize, int stride) {
        this(new int[] {kernelSize}, F.AvgPool.options().stride(stride));
    }

    public AvgPool2d(int kernelSize, int stride, int padding) {
        this(new int[] {kernelSize}, F.AvgPool.options().stride(stride).padding(padding));
    }

    public AvgPool2d(int[] kernelSize, F.AvgPool options) {
        Arguments.nonNull("AvgPool2d", "kernelSize", kernelSize);
        Arguments.nonNull("AvgPool2d", "options", options);
        this.kernelSize = kernelSize.clone();
        this.options = options.stride() == null || options.stride().length == 0 ? options.stride(kernelSize) : options;
    }

    /**
     * A null stride means the kernel size; a positive {@code divisorOverride} replaces the window size as divisor (0: none).
     *
     * @deprecated 0 stands for PyTorch's None here; use {@link #AvgPool2d(int[], F.AvgPool)}.
     */
    @Deprecated
    public AvgPool2d(int[] kernelSize, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad, long divisorOverride) {
        this(kernelSize, new F.AvgPool(stride, checkedPadding(padding), ceilMode, countIncludePad, divisor(divisorOverride)));
    }

    private static int[] checkedPadding(int[] padding) {
        Arguments.nonNull("AvgPool2d", "padding", padding);
        return padding;
    }

    private static Long divisor(long divisorOverride) {
        if (divisorOverride < 0) throw new IllegalArgumentException("AvgPool2d: divisor must be not zero, got " + divisorOverride);
        return divisorOverride == 0 ? null : divisorOverride;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.avgPool2d(input, kernelSize, options);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + SpatialRepr.of(kernelSize) + ", stride=" + SpatialRepr.of(options.stride()) + ", padding="
                + SpatialRepr.of(options.padding());
    }
}
