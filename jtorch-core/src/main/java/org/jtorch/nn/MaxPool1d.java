package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Reductions.ValuesIndices;

/**
 * 1-D max pooling over {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.MaxPool1d}; the stride defaults to
 * the kernel size. {@link #forwardWithIndices} also returns the indices ({@code return_indices=True}).
 */
public class MaxPool1d extends Module {
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final int dilation;
    private final boolean ceilMode;

    public MaxPool1d(int kernelSize) {
        this(kernelSize, kernelSize, 0, 1, false);
    }

    /** A null stride means the kernel size (PyTorch's None). */
    public MaxPool1d(int kernelSize, Integer stride) {
        this(kernelSize, stride, 0, 1, false);
    }

    public MaxPool1d(int kernelSize, Integer stride, int padding, int dilation, boolean ceilMode) {
        this.kernelSize = kernelSize;
        this.stride = stride == null ? kernelSize : stride;
        this.padding = padding;
        this.dilation = dilation;
        this.ceilMode = ceilMode;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.maxPool1d(input, kernelSize, stride, padding, dilation, ceilMode);
    }

    public ValuesIndices forwardWithIndices(Tensor input) {
        return F.maxPool1dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + kernelSize + ", stride=" + stride + ", padding=" + padding + ", dilation=" + dilation + ", ceil_mode="
                + SpatialRepr.bool(ceilMode);
    }
}
