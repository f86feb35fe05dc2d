package org.jtorch.nn;

import org.jtorch.Tensor;

/** 1-D average pooling over {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.AvgPool1d}; the stride defaults to the kernel size. */
public class AvgPool1d extends Module {
    private final int kernelSize;
    private final int stride;
    private final int padding;
    private final boolean ceilMode;
    private final boolean countIncludePad;

    public AvgPool1d(int kernelSize) {
        this(kernelSize, kernelSize, 0, false, true);
    }

    /** A null stride means the kernel size (PyTorch's None). */
    public AvgPool1d(int kernelSize, Integer stride) {
        this(kernelSize, stride, 0, false, true);
    }

    public AvgPool1d(int kernelSize, Integer stride, int padding, boolean ceilMode, boolean countIncludePad) {
        this.kernelSize = kernelSize;
        this.stride = stride == null ? kernelSize : stride;
        this.padding = padding;
        this.ceilMode = ceilMode;
        this.countIncludePad = countIncludePad;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.avgPool1d(input, kernelSize, stride, padding, ceilMode, countIncludePad);
    }

    @Override
    protected String extraRepr() {
        // PyTorch stores AvgPool1d's sizes as 1-tuples.
        return "kernel_size=(" + kernelSize + ",), stride=(" + stride + ",), padding=(" + padding + ",)";
    }
}
