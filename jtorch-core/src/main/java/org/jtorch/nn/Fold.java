package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Combines sliding blocks into an image, summing overlaps (col2im), as {@code torch.nn.Fold}:
 * {@code [N, C*kH*kW, L] -> [N, C, outH, outW]}. Sizes take one value for both dimensions or one per dimension.
 */
public class Fold extends Module {
    private final int[] outputSize;
    private final int[] kernelSize;
    private final int[] dilation;
    private final int[] padding;
    private final int[] stride;

    public Fold(int[] outputSize, int[] kernelSize) {
        this(outputSize, kernelSize, new int[] {1}, new int[] {0}, new int[] {1});
    }

    public Fold(int[] outputSize, int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        Arguments.nonNull("Fold", "outputSize", outputSize);
        Arguments.nonNull("Fold", "kernelSize", kernelSize);
        Arguments.nonNull("Fold", "dilation", dilation);
        Arguments.nonNull("Fold", "padding", padding);
        Arguments.nonNull("Fold", "stride", stride);
        this.outputSize = outputSize.clone();
        this.kernelSize = kernelSize.clone();
        this.dilation = dilation.clone();
        this.padding = padding.clone();
        this.stride = stride.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.fold(input, outputSize, kernelSize, dilation, padding, stride);
    }

    @Override
    protected String extraRepr() {
        return "output_size=" + value(outputSize) + ", kernel_size=" + value(kernelSize) + ", dilation=" + value(dilation)
                + ", padding=" + value(padding) + ", stride=" + value(stride);
    }

    /** As PyTorch prints the argument it was given: a single int, or a tuple. */
    static String value(int[] v) {
        return v.length == 1 ? String.valueOf(v[0]) : ConvNd.tuple(v);
    }
}
