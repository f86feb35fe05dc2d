package org.jtorch.nn;

import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The keyword arguments of {@link Conv1d}, {@link Conv2d} and {@link ConvTranspose2d} beyond the
 * positional {@code (inChannels, outChannels, kernelSize)}, with PyTorch's defaults: stride 1,
 * padding 0, dilation 1, groups 1, bias, padding mode "zeros", output padding 0 (transposed only).
 * Sizes take one value for every spatial dimension or one per dimension:
 * {@code new Conv2d(3, 16, 3, Conv2d.options().stride(2).padding(1).bias(false))}.
 */
public final class ConvOptions {
    int[] stride = {1};
    int[] padding = {0};
    String paddingString;
    int[] dilation = {1};
    int[] outputPadding = {0};
    int groups = 1;
    boolean bias = true;
    String paddingMode = "zeros";
    DType dtype = Torch.defaultDtype();
    Device device = Device.cpu();
    Generator generator = Generator.defaultGenerator();

    ConvOptions() {}

    public ConvOptions stride(int... stride) {
        this.stride = stride.clone();
        return this;
    }

    public ConvOptions padding(int... padding) {
        this.padding = padding.clone();
        this.paddingString = null;
        return this;
    }

    /** "valid" (no padding) or "same" (output size = input size; stride 1 only). */
    public ConvOptions padding(String padding) {
        this.paddingString = padding;
        return this;
    }

    public ConvOptions dilation(int... dilation) {
        this.dilation = dilation.clone();
        return this;
    }

    /** Transposed convolutions only: extra rows/columns added to one side of the output. */
    public ConvOptions outputPadding(int... outputPadding) {
        this.outputPadding = outputPadding.clone();
        return this;
    }

    public ConvOptions groups(int groups) {
        this.groups = groups;
        return this;
    }

    public ConvOptions bias(boolean bias) {
        this.bias = bias;
        return this;
    }

    /**
     * "zeros" (default), "reflect", "replicate" or "circular": the last three pad the input with
     * {@code F.pad} before an unpadded convolution, as PyTorch (transposed convolutions: "zeros" only).
     */
    public ConvOptions paddingMode(String paddingMode) {
        this.paddingMode = paddingMode;
        return this;
    }

    public ConvOptions dtype(DType dtype) {
        this.dtype = dtype;
        return this;
    }

    public ConvOptions device(Device device) {
        this.device = device;
        return this;
    }

    /** The generator the initial weights are drawn from. */
    public ConvOptions generator(Generator generator) {
        this.generator = generator;
        return this;
    }
}
