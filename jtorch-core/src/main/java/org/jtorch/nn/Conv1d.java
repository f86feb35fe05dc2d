package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * 1-D convolution over {@code [N, C, L]} (or unbatched {@code [C, L]}) inputs, as {@code torch.nn.Conv1d};
 * keyword arguments through {@link #options()}. State-dict keys {@code weight}
 * ({@code [out, in / groups, k]}) and {@code bias}.
 */
public class Conv1d extends ConvNd {

    public Conv1d(long inChannels, long outChannels, int kernelSize) {
        this(inChannels, outChannels, kernelSize, options());
    }

    public Conv1d(long inChannels, long outChannels, int kernelSize, ConvOptions options) {
        Arguments.nonNull("Conv1d", "options", options);
        super("Conv1d", 1, inChannels, outChannels, new int[] {kernelSize}, options, false);
    }

    public static ConvOptions options() {
        return new ConvOptions();
    }

    @Override
    public Tensor forward(Tensor input) {
        Tensor padded = paddedInput(input);
        if (padded != null) {
            try (padded) {
                return F.conv1d(padded, weight(), bias(), stride[0], 0, dilation[0], groups);
            }
        }
        if (paddingString != null) return F.conv1d(input, weight(), bias(), stride[0], paddingString, dilation[0], groups);
        return F.conv1d(input, weight(), bias(), stride[0], padding[0], dilation[0], groups);
    }
}
