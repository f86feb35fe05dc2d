package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 2-D transposed convolution (the gradient of {@link Conv2d} with respect to its input), as
 * {@code torch.nn.ConvTranspose2d}; keyword arguments (stride, padding, outputPadding, groups,
 * dilation, bias) through {@link #options()}. State-dict keys {@code weight}
 * ({@code [in, out / groups, kH, kW]}) and {@code bias}.
 */
public class ConvTranspose2d extends ConvNd {

    public ConvTranspose2d(long inChannels, long outChannels, int kernelSize) {
        this(inChannels, outChannels, new int[] {kernelSize}, options());
    }

    public ConvTranspose2d(long inChannels, long outChannels, int kernelSize, ConvOptions options) {
        this(inChannels, outChannels, new int[] {kernelSize}, options);
    }

    public ConvTranspose2d(long inChannels, long outChannels, int[] kernelSize, ConvOptions options) {
        Arguments.nonNull("ConvTranspose2d", "kernelSize", kernelSize);
        Arguments.nonNull("ConvTranspose2d", "options", options);
        super("ConvTranspose2d", 2, inChannels, outChannels, kernelSize, options, true);
    }

    public static ConvOptions options() {
        return new ConvOptions();
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.convTranspose2d(input, weight(), bias(), stride, padding, outputPadding, groups, dilation);
    }
}
