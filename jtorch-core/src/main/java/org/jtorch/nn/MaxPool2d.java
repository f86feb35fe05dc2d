package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;

/**
 * 2-D max pooling over {@code (N, C, H, W)} or {@code (C, H, W)}, as {@code torch.nn.MaxPool2d}. Sizes are one
 * int (both dimensions) or two; the stride defaults to the kernel size. {@link #forwardWithIndices} also returns
 * the flat indices ({@code return_indices=True}).
 */
public class MaxPool2d extends Module {
    private final int[] kernelSize;
    private final int[] stride;
    private final int[] padding;
    private final int[] dilation;
    private final boolean ceilMode;

    public MaxPool2d(int kernelSize) {
        this(new int[] {kernelSize}, null, new int[] {0}, new int[] {1}, false);
    }

    public MaxPool2d(int kernelSize, int stride) {
        this(new int[] {kernelSize}, new int[] {stride}, new int[] {0}, new int[] {1}, false);
    }

    public MaxPool2d(int kernelSize, int stride, int padding) {
        this(new int[] {kernelSize}, new int[] {stride}, new int[] {padding}, new int[] {1}, false);
    }

    /** A null stride means the kernel size. */
    public MaxPool2d(int[] kernelSize, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        Arguments.nonNull("MaxPool2d", "kernelSize", kernelSize);
        Arguments.nonNull("MaxPool2d", "padding", padding);
        Arguments.nonNull("MaxPool2d", "dilation", dilation);
        this.kernelSize = kernelSize.clone();
        this.stride = stride == null || stride.length == 0 ? kernelSize.clone() : stride.clone();
        this.padding = padding.clone();
        this.dilation = dilation.clone();
        this.ceilMode = ceilMode;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.maxPool2d(input, kernelSize, stride, padding, dilation, ceilMode);
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        return F.maxPool2dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + SpatialRepr.of(kernelSize) + ", stride=" + SpatialRepr.of(stride) + ", padding="
                + SpatialRepr.of(padding) + ", dilation=" + SpatialRepr.of(dilation) + ", ceil_mode=" + SpatialRepr.bool(ceilMode);
    }
}
