package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@code conv3d} and {@code conv_transpose3d}, declared ops ({@link FrontEndOps#CONV3D}, {@link FrontEndOps#CONV_TRANSPOSE3D})
 * composed of the 2-d convolutions: one batched 2-d convolution per depth tap, the taps summed, so the gradients (and
 * gradients of gradients) are the 2-d ones. Sizes take 1 or 3 values. Autocast casts the operands once by the op's
 * policy; the trace records a call with numeric padding as one op.
 *
 * <p>float16 and bfloat16 operands are widened to float32 for the taps and their sum, and the result rounded once, as a
 * native kernel accumulates (summing rounded taps would round once a tap). float16 is refused on the CPU, as the 2-d
 * convolutions refuse it there.
 */
public final class Convolution3d {
    private Convolution3d() {}

    /** {@code F.conv3d} with numeric padding (the same before and after, per dimension). */
    public static Tensor conv3d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        int[] s = triple("conv3d", "stride", stride), p = triple("conv3d", "padding", padding), d = triple("conv3d", "dilation", dilation);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV3D, new Tensor[] {input, weight, bias}, FrontEnds.concat(s, p, d, new int[] {groups}),
                    t -> conv3d(t[0], t[1], t[2], s, p, null, d, groups));
        }
        return conv3d(input, weight, bias, s, p, null, d, groups);
    }

    /**
     * {@code F.conv3d} with {@code padding="valid"} (none) or {@code "same"} (the output as large as the input; stride 1
     * only; an odd total padding puts the extra element after, as PyTorch). Traced as its parts: padding on one side
     * only has no numeric form in the op's signature.
     */
    public static Tensor conv3d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation, int groups) {
        int[] s = triple("conv3d", "stride", stride), d = triple("conv3d", "dilation", dilation);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV3D, new Tensor[] {input, weight, bias}, null,
                    t -> conv3d(t[0], t[1], t[2], s, null, padding, d, groups));
        }
        return conv3d(input, weight, bias, s, null, padding, d, groups);
    }

    private static Tensor conv3d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, String paddingMode, int[] dilation,
                                 int groups) {
        String op = "conv3d";
        Convolution.checkOperands(op, 3, input, weight, bias, groups);
        if (input.dim() == 4) {
            try (Tensor batched = input.unsqueeze(0); Tensor y = conv3d(batched, weight, bias, stride, padding, paddingMode, dilation, groups)) {
                return y.squeeze(0);
            }
        }
        if (input.size(1) != weight.size(1) * groups) {
            throw new IllegalArgumentException(op + ": input " + Shapes.format(input.shape()) + " has " + input.size(1)
                    + " channels, but weight " + Shapes.format(weight.shape()) + " with groups=" + groups + " expects " + weight.size(1) * groups);
        }
        if (weight.size(0) % groups != 0) {
            throw new IllegalArgumentException(op + ": weight " + Shapes.format(weight.shape()) + " has " + weight.size(0)
                    + " output channels, which groups=" + groups + " does not divide");
        }
        checkSizes(op, stride, dilation, padding == null ? new int[3] : padding, new int[3]);
        long[] kernel = {weight.size(2), weight.size(3), weight.size(4)};
        long[] before = new long[3], after = new long[3];
        if (paddingMode != null) {
            boolean same = switch (paddingMode) {
                case "same" -> true;
                case "valid" -> false;
                default -> throw new IllegalArgumentException(op + ": padding must be \"valid\", \"same\" or sizes, got '" + paddingMode + "'");
            };
            if (same && (stride[0] != 1 || stride[1] != 1 || stride[2] != 1)) {
                throw new IllegalArgumentException(op + ": padding='same' is not supported for strided convolutions");
            }
            for (int i = 0; i < 3 && same; i++) {
                long total = dilation[i] * (kernel[i] - 1);
                before[i] = total / 2;
                after[i] = total - before[i];
            }
        } else {
            for (int i = 0; i < 3; i++) before[i] = after[i] = padding[i];
        }
        for (int i = 0; i < 3; i++) {
            long extent = input.size(i + 2) + before[i] + after[i], reach = dilation[i] * (kernel[i] - 1) + 1;
            if (extent < reach) {
                throw new IllegalArgumentException(op + ": padded input size per channel " + Arrays.toString(paddedSizes(input, before, after))
                        + " is smaller than the (dilated) kernel size " + Arrays.toString(reaches(kernel, dilation)) + ": input of shape "
                        + Shapes.format(input.shape()) + ", weight of shape " + Shapes.format(weight.shape()));
            }
        }
        DType dtype = input.dtype();
        return MemoryScope.run(() -> {
            Tensor x = widened(input), w = widened(weight), b = bias == null ? null : widened(bias);
            x = Padding.pad(x, new long[] {before[2], after[2], before[1], after[1], before[0], after[0]}, Padding.Mode.CONSTANT, 0);
            long depth = (x.size(2) - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
            long n = x.size(0), c = x.size(1);
            Tensor sum = null;
            for (int kd = 0; kd < kernel[0]; kd++) {
                long start = (long) kd * dilation[0];
                // Depth slices [N, C, oD, H, W] -> a batch of images [N * oD, C, H, W].
                Tensor slices = x.slice(2, start, start + (depth - 1) * stride[0] + 1, stride[0]);
                Tensor images = slices.permute(0, 2, 1, 3, 4).reshape(n * depth, c, x.size(3), x.size(4));
                Tensor tap = Convolution.conv2d(images, w.select(2, kd), null, new int[] {stride[1], stride[2]}, new int[] {0},
                        new int[] {dilation[1], dilation[2]}, groups);
                sum = sum == null ? tap : sum.add(tap);
            }
            Tensor y = sum.reshape(n, depth, sum.size(1), sum.size(2), sum.size(3)).permute(0, 2, 1, 3, 4);
            y = b == null ? y.contiguous() : y.add(b.view(1, -1, 1, 1, 1));
            return y.dtype() == dtype ? y : y.to(dtype);
        });
    }

    /**
     * {@code F.conv_transpose3d}: weight {@code [C_in, C_out / groups, kD, kH, kW]}; each input depth slice goes through one
     * batched 2-d transposed convolution per depth tap {@code kd}, and slice {@code d} lands at output depth
     * {@code d * strideD + kd * dilationD - paddingD}.
     */
    public static Tensor convTranspose3d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding,
                                         int groups, int[] dilation) {
        String op = "convTranspose3d";
        int[] s = triple(op, "stride", stride), p = triple(op, "padding", padding), o = triple(op, "outputPadding", outputPadding);
        int[] d = triple(op, "dilation", dilation);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV_TRANSPOSE3D, new Tensor[] {input, weight, bias},
                    FrontEnds.concat(s, p, o, new int[] {groups}, d), t -> convTranspose3dTaps(t[0], t[1], t[2], s, p, o, groups, d));
        }
        return convTranspose3dTaps(input, weight, bias, s, p, o, groups, d);
    }

    private static Tensor convTranspose3dTaps(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding,
                                              int groups, int[] dilation) {
        String op = "convTranspose3d";
        Arguments.nonNull(op, "input", input);
        Arguments.nonNull(op, "weight", weight);
        if (input.dim() == 4) {
            try (Tensor batched = input.unsqueeze(0);
                 Tensor y = convTranspose3dTaps(batched, weight, bias, stride, padding, outputPadding, groups, dilation)) {
                return y.squeeze(0);
            }
        }
        if (input.dim() != 5 || weight.dim() != 5 || weight.numel() == 0) {
            throw new IllegalArgumentException(op + ": expected a 4-D or 5-D input [N, C_in, D, H, W] and a non-empty 5-D weight "
                    + "[C_in, C_out / groups, kD, kH, kW], got " + Shapes.format(input.shape()) + " and " + Shapes.format(weight.shape()));
        }
        if (groups < 1 || weight.size(0) % groups != 0) {
            throw new IllegalArgumentException(op + ": groups=" + groups + " must be positive and divide the weight's first dimension, "
                    + "got weight " + Shapes.format(weight.shape()));
        }
        if (input.size(1) != weight.size(0)) {
            throw new IllegalArgumentException(op + ": weight " + Shapes.format(weight.shape()) + " expects an input with "
                    + weight.size(0) + " channels, got input " + Shapes.format(input.shape()));
        }
        checkSizes(op, stride, dilation, padding, outputPadding);
        for (int i = 0; i < 3; i++) {
            if (outputPadding[i] >= stride[i] && outputPadding[i] >= dilation[i]) {
                throw new IllegalArgumentException(op + ": output padding must be smaller than either stride or dilation, but got "
                        + "outputPadding " + Arrays.toString(outputPadding) + ", stride " + Arrays.toString(stride) + " and dilation "
                        + Arrays.toString(dilation));
            }
        }
        checkDtypes(op, input, weight, bias);
        long n = input.size(0), depth = input.size(2), kernelD = weight.size(2);
        long spread = (depth - 1) * stride[0] + 1;
        long full = spread + dilation[0] * (kernelD - 1) + outputPadding[0];
        long[] out = new long[3];
        out[0] = full - 2L * padding[0];
        for (int i = 1; i < 3; i++) {
            out[i] = (input.size(i + 2) - 1) * stride[i] - 2L * padding[i] + (long) dilation[i] * (weight.size(i + 2) - 1) + outputPadding[i] + 1;
        }
        if (out[0] < 1 || out[1] < 1 || out[2] < 1) {
            throw new IllegalArgumentException(op + ": input " + Shapes.format(input.shape()) + " with weight " + Shapes.format(weight.shape())
                    + ", stride " + Arrays.toString(stride) + ", padding " + Arrays.toString(padding) + " and dilation "
                    + Arrays.toString(dilation) + " gives output size " + Arrays.toString(out) + " per channel, which is too small");
        }
        DType dtype = input.dtype();
        return MemoryScope.run(() -> {
            Tensor x = widened(input), w = widened(weight), b = bias == null ? null : widened(bias);
            Tensor images = x.permute(0, 2, 1, 3, 4).reshape(n * depth, x.size(1), x.size(3), x.size(4));
            Tensor sum = null;
            for (int kd = 0; kd < kernelD; kd++) {
                Tensor tap = Convolution.convTranspose2d(images, w.select(2, kd), null, new int[] {stride[1], stride[2]},
                        new int[] {padding[1], padding[2]}, new int[] {outputPadding[1], outputPadding[2]}, groups,
                        new int[] {dilation[1], dilation[2]});
                Tensor t = tap.reshape(n, depth, tap.size(1), tap.size(2), tap.size(3));
                if (stride[0] > 1) {
                    // stride - 1 zero slices after each input slice: [N, D, s, C, H, W] -> [N, D * s, C, H, W], trimmed.
                    Tensor spaced = Padding.pad(t.unsqueeze(2), new long[] {0, 0, 0, 0, 0, 0, 0, stride[0] - 1}, Padding.Mode.CONSTANT, 0);
                    t = spaced.reshape(n, depth * stride[0], tap.size(1), tap.size(2), tap.size(3)).narrow(1, 0, spread);
                }
                long before = (long) kd * dilation[0];
                Tensor placed = Padding.pad(t, new long[] {0, 0, 0, 0, 0, 0, before, full - before - spread}, Padding.Mode.CONSTANT, 0);
                sum = sum == null ? placed : sum.add(placed);
            }
            Tensor y = sum.narrow(1, padding[0], out[0]).permute(0, 2, 1, 3, 4);
            y = b == null ? y.contiguous() : y.add(b.view(1, -1, 1, 1, 1));
            return y.dtype() == dtype ? y : y.to(dtype);
        });
    }

    /** float16 and bfloat16 as float32 (the taps and their sum in float32, rounded once at the end); others as they are. */
    private static Tensor widened(Tensor t) {
        return t.dtype() == DType.FLOAT16 || t.dtype() == DType.BFLOAT16 ? t.to(DType.FLOAT32) : t;
    }

    /** The operands' dtypes and devices as the 2-d transposed convolution checks them, named for the 3-d op. */
    private static void checkDtypes(String op, Tensor input, Tensor weight, Tensor bias) {
        Device device = Dispatcher.sameDevice(FrontEndOps.CONV_TRANSPOSE3D, input, weight, bias);
        for (Tensor t : new Tensor[] {weight, bias}) {
            if (t != null && t.dtype() != input.dtype()) {
                throw new IllegalArgumentException(op + ": input type (" + input.dtype() + ") and " + (t == weight ? "weight" : "bias")
                        + " type (" + t.dtype() + ") should be the same");
            }
        }
        DType t = input.dtype();
        if ((t == DType.FLOAT16 && device.isCpu()) || !t.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": not implemented for " + t + " on " + (device.isCpu() ? "the CPU" : device));
        }
    }

    private static void checkSizes(String op, int[] stride, int[] dilation, int[] padding, int[] outputPadding) {
        for (int i = 0; i < 3; i++) {
            if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0 || outputPadding[i] < 0) {
                throw new IllegalArgumentException(op + ": expected positive stride " + Arrays.toString(stride) + " and dilation "
                        + Arrays.toString(dilation) + ", and non-negative padding " + Arrays.toString(padding)
                        + (op.startsWith("convTranspose") ? " and output padding " + Arrays.toString(outputPadding) : ""));
            }
        }
    }

    private static long[] paddedSizes(Tensor input, long[] before, long[] after) {
        return new long[] {input.size(2) + before[0] + after[0], input.size(3) + before[1] + after[1], input.size(4) + before[2] + after[2]};
    }

    private static long[] reaches(long[] kernel, int[] dilation) {
        return new long[] {dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1, dilation[2] * (kernel[2] - 1) + 1};
    }

    /** A size argument of 1 or 3 values as 3. */
    static int[] triple(String op, String name, int[] sizes) {
        if (sizes == null || (sizes.length != 1 && sizes.length != 3)) {
            throw new IllegalArgumentException(op + ": expected " + name + " to be 1 or 3 ints, got " + Arrays.toString(sizes));
        }
        return sizes.length == 1 ? new int[] {sizes[0], sizes[0], sizes[0]} : sizes.clone();
    }
}
