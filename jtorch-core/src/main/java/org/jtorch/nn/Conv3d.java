package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 3-D convolution over {@code [N, C, D, H, W]} (or unbatched {@code [C, D, H, W]}) inputs, as {@code torch.nn.Conv3d};
 * keyword arguments through {@link #options()}: {@code new Conv3d(4, 8, 3, Conv3d.options().stride(2).padding(1))}.
 * State-dict keys {@code weight} ({@code [out, in / groups, kD, kH, kW]}) and {@code bias}.
 */
public class Conv3d extends ConvNd {

    public Conv3d(long inChannels, long outChannels, int kernelSize) {
        this(inChannels, outChannels, new int[] {kernelSize}, options());
    }

    public Conv3d(long inChannels, long outChannels, int kernelSize, ConvOptions options) {
        this(inChannels, outChannels, new int[] {kernelSize}, options);
    }

    /** {@code kernelSize} is {@code {k}} or {@code {kD, kH, kW}}. */
    public Conv3d(long inChannels, long outChannels, int[] kernelSize, ConvOptions options) {
        Arguments.nonNull("Conv3d", "kernelSize", kernelSize);
        Arguments.nonNull("Conv3d", "options", options);
        super("Conv3d", 3, inChannels, outChannels, kernelSize, options, false);
    }

    public static ConvOptions options() {
        return new ConvOptions();
    }

    @Override
    public Tensor forward(Tensor input) {
        F.Conv o = F.Conv.options().bias(bias()).stride(stride).dilation(dilation).groups(groups);
        Tensor padded = paddedInput(input);
        if (padded != null) {
            try (padded) {
                return F.conv3d(padded, weight(), o);
            }
        }
        return F.conv3d(input, weight(), paddingString != null ? o.padding(paddingString) : o.padding(padding));
    }
}
