package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Extracts sliding blocks (im2col), as {@code torch.nn.Unfold}: {@code [N, C, H, W] -> [N, C*kH*kW, L]}.
 * Sizes take one value for both dimensions or one per dimension.
 */
public class Unfold extends Module {
    private final int[] kernelSize;
    private final int[] dilation;
    private final int[] padding;
    private final int[] stride;

    public Unfold(int... kernelSize) {
        this(kernelSize, new int[] {1}, new int[] {0}, new int[] {1});
    }

    public Unfold(int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        Arguments.nonNull("Unfold", "kernelSize", kernelSize);
        Arguments.nonNull("Unfold", "dilation", dilation);
        Arguments.nonNull("Unfold", "padding", padding);
        Arguments.nonNull("Unfold", "stride", stride);
        this.kernelSize = kernelSize.clone();
        this.dilation = dilation.clone();
        this.padding = padding.clone();
        this.stride = stride.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.unfold(input, kernelSize, dilation, padding, stride);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + Fold.value(kernelSize) + ", dilation=" + Fold.value(dilation) + ", padding=" + Fold.value(padding)
                + ", stride=" + Fold.value(stride);
    }
}
