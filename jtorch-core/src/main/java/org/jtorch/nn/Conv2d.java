package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 2-D convolution over {@code [N, C, H, W]} (or unbatched {@code [C, H, W]}) inputs, as
 * {@code torch.nn.Conv2d}; keyword arguments through {@link #options()}:
 * {@code new Conv2d(64, 128, 3, Conv2d.options().stride(2).padding(1).bias(false))}.
 * State-dict keys {@code weight} ({@code [out, in / groups, kH, kW]}) and {@code bias}.
 */
public class Conv2d extends ConvNd {

    public Conv2d(long inChannels, long outChannels, int kernelSize) {
        this(inChannels, outChannels, new int[] {kernelSize}, options());
    }

    public Conv2d(long inChannels, long outChannels, int kernelSize, ConvOptions options) {
        this(inChannels, outChannels, new int[] {kernelSize}, options);
    }

    /** {@code kernelSize} is {@code {k}} or {@code {kH, kW}}. */
    public Conv2d(long inChannels, long outChannels, int[] kernelSize, ConvOptions options) {
        Arguments.nonNull("Conv2d", "kernelSize", kernelSize);
        Arguments.nonNull("Conv2d", "options", options);
        super("Conv2d", 2, inChannels, outChannels, kernelSize, options, false);
    }

    public static ConvOptions options() {
        return new ConvOptions();
    }

    @Override
    public Tensor forward(Tensor input) {
        Tensor padded = paddedInput(input);
        if (padded != null) {
            try (padded) {
                return F.conv2d(padded, weight(), bias(), stride, new int[] {0}, dilation, groups);
            }
        }
        if (paddingString != null) return F.conv2d(input, weight(), bias(), stride, paddingString, dilation, groups);
        return F.conv2d(input, weight(), bias(), stride, padding, dilation, groups);
    }
}
