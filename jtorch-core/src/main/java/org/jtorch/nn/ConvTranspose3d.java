package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 3-D transposed convolution (the gradient of {@link Conv3d} with respect to its input), as
 * {@code torch.nn.ConvTranspose3d}; keyword arguments (stride, padding, outputPadding, groups, dilation, bias) through
 * {@link #options()}. State-dict keys {@code weight} ({@code [in, out / groups, kD, kH, kW]}) and {@code bias}.
 */
public class ConvTranspose3d extends ConvNd {

    public ConvTranspose3d(long inChannels, long outChannels, int kernelSize) {
        this(inChannels, outChannels, new int[] {kernelSize}, options());
    }

    public ConvTranspose3d(long inChannels, long outChannels, int kernelSize, ConvOptions options) {
        this(inChannels, outChannels, new int[] {kernelSize}, options);
    }

    public ConvTranspose3d(long inChannels, long outChannels, int[] kernelSize, ConvOptions options) {
        Arguments.nonNull("ConvTranspose3d", "kernelSize", kernelSize);
        Arguments.nonNull("ConvTranspose3d", "options", options);
        super("ConvTranspose3d", 3, inChannels, outChannels, kernelSize, options, true);
    }

    public static ConvOptions options() {
        return new ConvOptions();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.convTranspose3d(input, weight(), F.ConvTranspose.options().bias(bias()).stride(stride).padding(padding)
                .outputPadding(outputPadding).groups(groups).dilation(dilation));
    }
}
