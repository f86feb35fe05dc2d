package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Arguments;

/**
 * 2-D average pooling over {@code (N, C, H, W)} or {@code (C, H, W)}, as {@code torch.nn.AvgPool2d}. Sizes are
 * one int or two; the stride defaults to the kernel size; a positive {@code divisorOverride} replaces the
 * window size as divisor (0: none).
 */
public class AvgPool2d extends Module {
    private final int[] kernelSize;
    private final int[] stride;
    private final int[] padding;
    private final boolean ceilMode;
    private final boolean countIncludePad;
    private final long divisorOverride;

    public AvgPool2d(int kernelSize) {
        this(new int[] {kernelSize}, null, new int[] {0}, false, true, 0);
    }

    public AvgPool2d(int kernelSize, int stride) {
        this(new int[] {kernelSize}, new int[] {stride}, new int[] {0}, false, true, 0);
    }

    public AvgPool2d(int kernelSize, int stride, int padding) {
        this(new int[] {kernelSize}, new int[] {stride}, new int[] {padding}, false, true, 0);
    }

    /** A null stride means the kernel size. */
    public AvgPool2d(int[] kernelSize, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad, long divisorOverride) {
        Arguments.nonNull("AvgPool2d", "kernelSize", kernelSize);
        Arguments.nonNull("AvgPool2d", "padding", padding);
        this.kernelSize = kernelSize.clone();
        this.stride = stride == null || stride.length == 0 ? kernelSize.clone() : stride.clone();
        this.padding = padding.clone();
        this.ceilMode = ceilMode;
        this.countIncludePad = countIncludePad;
        this.divisorOverride = divisorOverride;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.avgPool2d(input, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + SpatialRepr.of(kernelSize) + ", stride=" + SpatialRepr.of(stride) + ", padding=" + SpatialRepr.of(padding);
    }
}
