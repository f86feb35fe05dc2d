package org.jtorch.ops;

import org.jtorch.op.Callback;
import org.jtorch.op.ConvolutionOps;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The convolution family, as {@code torch.nn.functional}: {@code conv1d}, {@code conv2d} (stride,
 * padding as numbers or "same"/"valid", dilation, groups, optional bias), {@code convTranspose2d},
 * {@code unfold} (im2col) and {@code fold} (col2im). Inputs are batched ({@code [N, C, ...]}) or
 * unbatched ({@code [C, ...]}).
 *
 * <p>Every op validates its arguments, builds one {@link Geometry} and runs the declared primitives of
 * {@link ConvolutionOps} through the dispatcher (the convolution, its input gradient, which is the transposed
 * convolution, its weight and bias gradients, im2col and col2im), whose derivatives are written with each other, so
 * gradients of gradients work as well.
 * float32 and float64 compute natively; bfloat16 computes in float32 and rounds once; integer
 * convolutions (conv1d/conv2d only, as PyTorch's CPU) compute in float64, exact while the sums stay
 * below 2^53. float16 convolutions compute in float32 and round once on CUDA, and are rejected on the
 * CPU as by PyTorch 1.13's CPU backend; float16 unfold/fold are accepted everywhere.
 */
public final class Convolution {
    private Convolution() {}

    // ------------------------------------------------------------------ public ops

    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        int[] s = pair("conv2d", "stride", stride, 2), p = pair("conv2d", "padding", padding, 2), d = pair("conv2d", "dilation", dilation, 2);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV2D, new Tensor[] {input, weight, bias}, FrontEnds.concat(s, p, d, new int[] {groups}),
                    t -> conv("conv2d", 2, t[0], t[1], t[2], s, p, null, d, groups));
        }
        return conv("conv2d", 2, input, weight, bias, s, p, null, d, groups);
    }

    /** {@code padding} is "valid" (none) or "same" (output size = input size; stride 1 only). */
    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation, int groups) {
        int[] s = pair("conv2d", "stride", stride, 2), d = pair("conv2d", "dilation", dilation, 2);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV2D, new Tensor[] {input, weight, bias}, null,
                    t -> conv("conv2d", 2, t[0], t[1], t[2], s, null, padding, d, groups));
        }
        return conv("conv2d", 2, input, weight, bias, s, null, padding, d, groups);
    }

    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation, int groups) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV1D, new Tensor[] {input, weight, bias}, new double[] {stride, padding, dilation, groups},
                    t -> conv("conv1d", 1, t[0], t[1], t[2], new int[] {stride}, new int[] {padding}, null, new int[] {dilation}, groups));
        }
        return conv("conv1d", 1, input, weight, bias, new int[] {stride}, new int[] {padding}, null, new int[] {dilation}, groups);
    }

    /** {@code padding} is "valid" (none) or "same" (output length = input length; stride 1 only). */
    public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation, int groups) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV1D, new Tensor[] {input, weight, bias}, null,
                    t -> conv("conv1d", 1, t[0], t[1], t[2], new int[] {stride}, null, padding, new int[] {dilation}, groups));
        }
        return conv("conv1d", 1, input, weight, bias, new int[] {stride}, null, padding, new int[] {dilation}, groups);
    }

    /**
     * {@code torch.nn.functional.conv_transpose2d}: the gradient of {@code conv2d} with respect to its input.
     * {@code weight} is {@code [in_channels, out_channels / groups, kH, kW]}; the output's size is
     * {@code (H - 1) * stride - 2 * padding + dilation * (k - 1) + outputPadding + 1}.
     */
    public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
                                         int[] outputPadding, int groups, int[] dilation) {
        String op = "conv_transpose2d";
        int[] s = pair(op, "stride", stride, 2);
        int[] p = pair(op, "padding", padding, 2);
        int[] op2 = pair(op, "output_padding", outputPadding, 2);
        int[] d = pair(op, "dilation", dilation, 2);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV_TRANSPOSE2D, new Tensor[] {input, weight, bias},
                    FrontEnds.concat(s, p, op2, new int[] {groups}, d), t -> convTranspose2d(op, t[0], t[1], t[2], s, p, op2, groups, d));
        }
        return convTranspose2d(op, input, weight, bias, s, p, op2, groups, d);
    }

    /**
     * {@code F.conv_transpose1d} for {@code [N, C_in, L]} and weight {@code [C_in, C_out / groups, k]}: the 2-d transposed
     * convolution over a height of one.
     */
    public static Tensor convTranspose1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int outputPadding, int groups,
                                         int dilation) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.CONV_TRANSPOSE1D, new Tensor[] {input, weight, bias},
                    new double[] {stride, padding, outputPadding, groups, dilation},
                    t -> convTranspose1dRow(t[0], t[1], t[2], stride, padding, outputPadding, groups, dilation));
        }
        return convTranspose1dRow(input, weight, bias, stride, padding, outputPadding, groups, dilation);
    }

    private static Tensor convTranspose1dRow(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int outputPadding, int groups,
                                             int dilation) {
        input.checkOpen("convTranspose1d");
        weight.checkOpen("convTranspose1d");
        if (input.dim() != 3 || weight.dim() != 3) {
            throw new IllegalArgumentException("convTranspose1d: expected a 3-D input [N, C_in, L] and a 3-D weight [C_in, C_out / groups, k], got "
                    + Shapes.format(input.shape()) + " and " + Shapes.format(weight.shape()));
        }
        try (Tensor x = input.unsqueeze(2); Tensor w = weight.unsqueeze(2);
             Tensor y = convTranspose2d(x, w, bias, new int[] {1, stride}, new int[] {0, padding}, new int[] {0, outputPadding}, groups,
                     new int[] {1, dilation})) {
            return y.squeeze(2);
        }
    }

    private static Tensor convTranspose2d(String op, Tensor input, Tensor weight, Tensor bias, int[] s, int[] p, int[] op2, int groups,
                                          int[] d) {
        checkOperands(op, 2, input, weight, bias, groups);
        for (int i = 0; i < 2; i++) {
            if (s[i] <= 0) throw new IllegalArgumentException(op + ": stride must be positive, got " + Arrays.toString(s));
            if (d[i] <= 0) throw new IllegalArgumentException(op + ": dilation must be positive, got " + Arrays.toString(d));
            if (p[i] < 0) throw new IllegalArgumentException(op + ": negative padding is not supported, got " + Arrays.toString(p));
            if (op2[i] < 0 || (op2[i] >= s[i] && op2[i] >= d[i])) {
                throw new IllegalArgumentException(op + ": output padding must be smaller than either stride or dilation, got output_padding="
                        + Arrays.toString(op2) + ", stride=" + Arrays.toString(s) + ", dilation=" + Arrays.toString(d));
            }
        }
        boolean batched = input.dim() == 4;
        long n = batched ? input.size(0) : 1;
        long cin = input.size(batched ? 1 : 0);
        long h = input.size(-2), w = input.size(-1);
        if (weight.size(0) != cin) {
            throw new IllegalArgumentException(op + ": given groups=" + groups + ", weight of shape " + Shapes.format(weight.shape())
                    + " expects input of shape " + Shapes.format(input.shape()) + " to have " + weight.size(0) + " channels, but got "
                    + cin + " channels");
        }
        if (cin % groups != 0) {
            throw new IllegalArgumentException(op + ": input channels (" + cin + ") must be divisible by groups (" + groups + ")");
        }
        long cout = weight.size(1) * groups;
        long kh = weight.size(2), kw = weight.size(3);
        long hOut = (h - 1) * s[0] - 2L * p[0] + d[0] * (kh - 1) + op2[0] + 1;
        long wOut = (w - 1) * s[1] - 2L * p[1] + d[1] * (kw - 1) + op2[1] + 1;
        if (hOut <= 0 || wOut <= 0) {
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(input.shape()) + " with weight of shape "
                    + Shapes.format(weight.shape()) + " gives a non-positive output size (" + hOut + " x " + wOut + ")");
        }
        checkBias(op, bias, cout);
        // The convolution this one transposes maps the output [N, cout, hOut, wOut] to the input.
        Geometry geo = geometry(n, cout, hOut, wOut, cin, kh, kw, s[0], s[1], p[0], p[1], d[0], d[1], groups, h, w);
        long[] outShape = batched ? new long[] {n, cout, hOut, wOut} : new long[] {cout, hOut, wOut};
        return convT(input, weight, bias, geo, outShape);
    }

    /**
     * {@code torch.nn.functional.unfold} (im2col): {@code [N, C, H, W] -> [N, C * kH * kW, L]}, each column
     * one sliding block of the zero-padded input.
     */
    public static Tensor unfold(Tensor input, int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        String op = "unfold";
        input.checkOpen(op);
        int[] k = pair(op, "kernel_size", kernelSize, 2), d = pair(op, "dilation", dilation, 2);
        int[] p = pair(op, "padding", padding, 2), s = pair(op, "stride", stride, 2);
        boolean emptyNonBatch = false;
        for (int i = input.dim() == 4 ? 1 : 0; i < input.dim(); i++) emptyNonBatch |= input.size(i) == 0;
        if ((input.dim() != 4 && input.dim() != 3) || emptyNonBatch) {
            throw new IllegalArgumentException(op + ": expected a 3-D (unbatched) or 4-D (batched) input with non-zero dimensions"
                    + " other than the batch, got shape " + Shapes.format(input.shape()));
        }
        checkFoldDtype(op, input.dtype());
        checkWindow(op, k, d, p, s);
        boolean batched = input.dim() == 4;
        long n = batched ? input.size(0) : 1;
        long c = input.size(batched ? 1 : 0), h = input.size(-2), w = input.size(-1);
        long oh = (h + 2L * p[0] - d[0] * (k[0] - 1L) - 1) / s[0] + 1;
        long ow = (w + 2L * p[1] - d[1] * (k[1] - 1L) - 1) / s[1] + 1;
        if (h + 2L * p[0] < d[0] * (k[0] - 1L) + 1 || w + 2L * p[1] < d[1] * (k[1] - 1L) + 1 || oh <= 0 || ow <= 0) {
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(input.shape()) + " with padding "
                    + Arrays.toString(p) + " is too small for kernel " + Arrays.toString(k) + " with dilation " + Arrays.toString(d));
        }
        Geometry geo = geometry(n, c, h, w, c, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], 1, oh, ow);
        long[] outShape = batched ? new long[] {n, c * k[0] * k[1], oh * ow} : new long[] {c * k[0] * k[1], oh * ow};
        return im2col(input, geo, outShape);
    }

    /**
     * {@code torch.nn.functional.fold} (col2im): {@code [N, C * kH * kW, L] -> [N, C, H, W]}, summing the
     * values that overlapping blocks put at the same position.
     */
    public static Tensor fold(Tensor input, int[] outputSize, int[] kernelSize, int[] dilation, int[] padding, int[] stride) {
        String op = "fold";
        input.checkOpen(op);
        int[] o = pair(op, "output_size", outputSize, 2), k = pair(op, "kernel_size", kernelSize, 2);
        int[] d = pair(op, "dilation", dilation, 2), p = pair(op, "padding", padding, 2), s = pair(op, "stride", stride, 2);
        if (input.dim() != 3 && input.dim() != 2) {
            throw new IllegalArgumentException(op + ": expected a 2-D (unbatched) or 3-D (batched) input, got shape "
                    + Shapes.format(input.shape()));
        }
        checkFoldDtype(op, input.dtype());
        checkWindow(op, k, d, p, s);
        if (o[0] <= 0 || o[1] <= 0) {
            throw new IllegalArgumentException(op + ": output_size must be positive, got " + Arrays.toString(o));
        }
        boolean batched = input.dim() == 3;
        long n = batched ? input.size(0) : 1;
        long rows = input.size(-2), l = input.size(-1);
        long kk = (long) k[0] * k[1];
        if (rows % kk != 0) {
            throw new IllegalArgumentException(op + ": expected size of input's dimension 1 to be divisible by the product of kernel_size ("
                    + kk + "), but got input of shape " + Shapes.format(input.shape()));
        }
        long oh = (o[0] + 2L * p[0] - d[0] * (k[0] - 1L) - 1) / s[0] + 1;
        long ow = (o[1] + 2L * p[1] - d[1] * (k[1] - 1L) - 1) / s[1] + 1;
        if (oh <= 0 || ow <= 0 || oh * ow != l) {
            throw new IllegalArgumentException(op + ": given output_size=" + Arrays.toString(o) + ", kernel_size=" + Arrays.toString(k)
                    + ", dilation=" + Arrays.toString(d) + ", padding=" + Arrays.toString(p) + ", stride=" + Arrays.toString(s)
                    + ", expected size of input's dimension 2 to be " + Math.max(0, oh) * Math.max(0, ow) + " blocks, but got input of shape "
                    + Shapes.format(input.shape()));
        }
        long c = rows / kk;
        Geometry geo = geometry(n, c, o[0], o[1], c, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], 1, oh, ow);
        long[] outShape = batched ? new long[] {n, c, o[0], o[1]} : new long[] {c, o[0], o[1]};
        return col2im(input, geo, outShape);
    }

    // ------------------------------------------------------------------ validation

    /** conv1d / conv2d: validates, builds the geometry and runs {@link #conv}. */
    private static Tensor conv(String op, int dims, Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
                               String paddingMode, int[] dilation, int groups) {
        Planned p = plan(op, dims, input, weight, bias, stride, padding, paddingMode, dilation, groups);
        return conv(input, weight, bias, p.geo(), p.outShape());
    }

    /**
     * {@code conv2d} of a batched float32 input with float32 weight and bias with a fused epilogue, the declared op
     * {@link ConvolutionOps#CONVOLUTION_EPILOGUE} run without autograd (and, as every op taking a callback, not traced, no
     * autocast: {@link Callback}): {@code epilogue} is given the output and returns the work the backend runs on each
     * block of it as the convolution finishes it ({@link ConvolutionKernels#conv2dWithEpilogue}). The JIT's entry point
     * for a pointwise chain fed by a convolution in inference; {@code args} are the traced ones (stride, padding and
     * dilation as pairs, then groups). Returns the output as the epilogue left it, or null, having done nothing, for
     * operands this path does not take (another dtype or rank, mixed devices).
     */
    public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, double[] args, Callback<ConvolutionKernels.Epilogue> epilogue) {
        try (var g = org.jtorch.autograd.Grad.noGrad()) {
            return conv2dWithEpilogue(input, weight, bias, args, epilogue);
        }
    }

    /**
     * {@link #conv2d(Tensor, Tensor, Tensor, double[], Callback)} for an epilogue that only reads each block, leaving
     * the output as the convolution wrote it: the convolution's autograd is recorded as by {@code conv2d}. The JIT's
     * training-mode batch norm gathers its statistics this way.
     */
    public static Tensor conv2dObserved(Tensor input, Tensor weight, Tensor bias, double[] args, Callback<ConvolutionKernels.Epilogue> observer) {
        return conv2dWithEpilogue(input, weight, bias, args, observer);
    }

    private static Tensor conv2dWithEpilogue(Tensor input, Tensor weight, Tensor bias, double[] args,
                                             Callback<ConvolutionKernels.Epilogue> epilogue) {
        if (input.dim() != 4 || input.dtype() != DType.FLOAT32 || weight.dtype() != DType.FLOAT32
                || bias != null && (bias.dtype() != DType.FLOAT32 || !bias.device().equals(input.device()))
                || !weight.device().equals(input.device())) {
            return null;
        }
        int[] v = new int[args.length];
        for (int i = 0; i < v.length; i++) v[i] = (int) args[i];
        Planned p = plan("conv2d", 2, input, weight, bias, new int[] {v[0], v[1]}, new int[] {v[2], v[3]}, null,
                new int[] {v[4], v[5]}, v[6]);
        return Dispatcher.call(ConvolutionOps.CONVOLUTION_EPILOGUE, new Tensor[] {input, weight, bias}, epilogue, scalars(p.geo()));
    }

    /** A convolution's checked geometry and output shape. */
    private record Planned(Geometry geo, long[] outShape) {}

    private static Planned plan(String op, int dims, Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
                                String paddingMode, int[] dilation, int groups) {
        checkOperands(op, dims, input, weight, bias, groups);
        boolean batched = input.dim() == dims + 2;
        long n = batched ? input.size(0) : 1;
        long cin = input.size(batched ? 1 : 0);
        long cout = weight.size(0);
        if (cout % groups != 0) {
            throw new IllegalArgumentException(op + ": weight of shape " + Shapes.format(weight.shape()) + " has " + cout
                    + " output channels, which is not divisible by groups=" + groups);
        }
        if (weight.size(1) * groups != cin) {
            throw new IllegalArgumentException(op + ": given groups=" + groups + ", weight of shape " + Shapes.format(weight.shape())
                    + " expects input of shape " + Shapes.format(input.shape()) + " to have " + weight.size(1) * groups
                    + " channels, but got " + cin + " channels");
        }
        checkBias(op, bias, cout);
        for (int i = 0; i < dims; i++) {
            if (stride[i] <= 0) throw new IllegalArgumentException(op + ": stride must be positive, got " + Arrays.toString(stride));
            if (dilation[i] <= 0) throw new IllegalArgumentException(op + ": dilation must be positive, got " + Arrays.toString(dilation));
        }
        // Spatial sizes as 2-D: a 1-D convolution is a 2-D one of height 1.
        long h = dims == 2 ? input.size(-2) : 1, w = input.size(-1);
        long kh = dims == 2 ? weight.size(2) : 1, kw = weight.size(-1);
        int sh = dims == 2 ? stride[0] : 1, sw = stride[dims - 1];
        int dh = dims == 2 ? dilation[0] : 1, dw = dilation[dims - 1];
        long ph, pw, oh, ow;
        if (paddingMode != null) {
            switch (paddingMode) {
                case "valid" -> {
                    ph = 0;
                    pw = 0;
                }
                case "same" -> {
                    for (int s : stride) {
                        if (s != 1) throw new IllegalArgumentException(op + ": padding='same' is not supported for strided convolutions");
                    }
                    // Total padding d * (k - 1); an odd total puts the extra row/column at the bottom/right, as PyTorch.
                    ph = dh * (kh - 1) / 2;
                    pw = dw * (kw - 1) / 2;
                }
                default -> throw new IllegalArgumentException(op + ": invalid padding string '" + paddingMode
                        + "', should be one of 'valid' or 'same'");
            }
        } else {
            for (int p : padding) {
                if (p < 0) throw new IllegalArgumentException(op + ": negative padding is not supported, got " + Arrays.toString(padding));
            }
            ph = dims == 2 ? padding[0] : 0;
            pw = padding[dims - 1];
        }
        boolean same = "same".equals(paddingMode);
        long extH = same ? dh * (kh - 1) : 2 * ph, extW = same ? dw * (kw - 1) : 2 * pw;
        if (h + extH < dh * (kh - 1) + 1 || w + extW < dw * (kw - 1) + 1) {
            String size = dims == 2 ? (h + extH) + " x " + (w + extW) : String.valueOf(w + extW);
            String kernel = dims == 2 ? (dh * (kh - 1) + 1) + " x " + (dw * (kw - 1) + 1) : String.valueOf(dw * (kw - 1) + 1);
            throw new IllegalArgumentException(op + ": padded input size per channel (" + size + ") is smaller than the (dilated) kernel size ("
                    + kernel + "): input of shape " + Shapes.format(input.shape()) + ", weight of shape " + Shapes.format(weight.shape()));
        }
        oh = (h + extH - dh * (kh - 1) - 1) / sh + 1;
        ow = (w + extW - dw * (kw - 1) - 1) / sw + 1;
        Geometry geo = geometry(n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow);
        long[] outShape;
        if (dims == 2) outShape = batched ? new long[] {n, cout, oh, ow} : new long[] {cout, oh, ow};
        else outShape = batched ? new long[] {n, cout, ow} : new long[] {cout, ow};
        return new Planned(geo, outShape);
    }

    /** The operands of a {@code dims}-d convolution named {@code op} (a declared op): ranks, devices, dtypes, sizes. */
    static void checkOperands(String op, int dims, Tensor input, Tensor weight, Tensor bias, int groups) {
        input.checkOpen(op);
        weight.checkOpen(op);
        if (bias != null) bias.checkOpen(op);
        if (input.dim() != dims + 1 && input.dim() != dims + 2) {
            throw new IllegalArgumentException(op + ": expected " + (dims + 1) + "-D (unbatched) or " + (dims + 2)
                    + "-D (batched) input, but got input of shape " + Shapes.format(input.shape()));
        }
        if (weight.dim() != dims + 2) {
            throw new IllegalArgumentException(op + ": expected a " + (dims + 2) + "-D weight, but got weight of shape "
                    + Shapes.format(weight.shape()));
        }
        if (groups <= 0) throw new IllegalArgumentException(op + ": groups must be positive, got " + groups);
        Device device = Dispatcher.sameDevice(OpRegistry.get(op), input, weight, bias);
        for (Tensor t : new Tensor[] {weight, bias}) {
            if (t == null) continue;
            if (t.dtype() != input.dtype()) {
                throw new IllegalArgumentException(op + ": input type (" + input.dtype() + ") and " + (t == weight ? "weight" : "bias")
                        + " type (" + t.dtype() + ") should be the same");
            }
        }
        DType t = input.dtype();
        // float16 is refused on the CPU only, as by PyTorch 1.13 (CUDA has it: autocast's float16 convolutions).
        if ((t == DType.FLOAT16 && device.isCpu()) || t == DType.BOOL || (t.isIntegral() && op.startsWith("conv_transpose"))) {
            throw new IllegalArgumentException(op + ": not implemented for " + t + " on " + (device.isCpu() ? "the CPU" : device));
        }
        for (long s : weight.shape()) {
            if (s == 0) throw new IllegalArgumentException(op + ": weight of shape " + Shapes.format(weight.shape()) + " has a zero dimension");
        }
        for (int i = input.dim() - dims - 1; i < input.dim(); i++) {
            if (input.size(i) == 0) {
                throw new IllegalArgumentException(op + ": expected input of shape " + Shapes.format(input.shape())
                        + " to have non-zero channel and spatial sizes");
            }
        }
    }

    private static void checkBias(String op, Tensor bias, long cout) {
        if (bias != null && (bias.dim() != 1 || bias.size(0) != cout)) {
            throw new IllegalArgumentException(op + ": expected a bias of shape [" + cout + "], but got bias of shape " + Shapes.format(bias.shape()));
        }
    }

    private static void checkFoldDtype(String op, DType t) {
        if (!t.isFloatingPoint()) throw new IllegalArgumentException(op + ": not implemented for " + t + " (floating dtypes only)");
    }

    private static void checkWindow(String op, int[] k, int[] d, int[] p, int[] s) {
        for (int i = 0; i < 2; i++) {
            if (k[i] <= 0) throw new IllegalArgumentException(op + ": kernel_size must be positive, got " + Arrays.toString(k));
            if (d[i] <= 0) throw new IllegalArgumentException(op + ": dilation must be positive, got " + Arrays.toString(d));
            if (s[i] <= 0) throw new IllegalArgumentException(op + ": stride must be positive, got " + Arrays.toString(s));
            if (p[i] < 0) throw new IllegalArgumentException(op + ": padding must be non-negative, got " + Arrays.toString(p));
        }
    }

    /** One value for every spatial dimension, or one per dimension. */
    private static int[] pair(String op, String what, int[] v, int dims) {
        if (v == null || (v.length != 1 && v.length != dims)) {
            throw new IllegalArgumentException(op + ": " + what + " needs 1 or " + dims + " values, got "
                    + (v == null ? "null" : Arrays.toString(v)));
        }
        if (v.length == dims) return v.clone();
        int[] r = new int[dims];
        Arrays.fill(r, v[0]);
        return r;
    }

    private static Geometry geometry(long n, long cin, long h, long w, long cout, long kh, long kw, long sh, long sw,
                                     long ph, long pw, long dh, long dw, long groups, long oh, long ow) {
        return new Geometry(Math.toIntExact(n), Math.toIntExact(cin), Math.toIntExact(h), Math.toIntExact(w), Math.toIntExact(cout),
                Math.toIntExact(kh), Math.toIntExact(kw), Math.toIntExact(sh), Math.toIntExact(sw), Math.toIntExact(ph),
                Math.toIntExact(pw), Math.toIntExact(dh), Math.toIntExact(dw), Math.toIntExact(groups), Math.toIntExact(oh),
                Math.toIntExact(ow));
    }

    // ------------------------------------------------------------------ differentiable primitives

    private static long[] inShape(Geometry g) {
        return new long[] {g.n(), g.cin(), g.h(), g.w()};
    }

    private static long[] outShape(Geometry g) {
        return new long[] {g.n(), g.cout(), g.oh(), g.ow()};
    }

    private static long[] weightShape(Geometry g) {
        return new long[] {g.cout(), g.cinG(), g.kh(), g.kw()};
    }

    /** {@code conv(x, w) + b} with the result shaped {@code outShape} (x and w may be 1-D-convolution or unbatched shapes). */
    static Tensor conv(Tensor x, Tensor w, Tensor b, Geometry geo, long[] outShape) {
        return primitive(ConvolutionOps.CONVOLUTION, geo, outShape, x, inShape(geo), w, weightShape(geo), b);
    }

    /** The transpose of {@code conv} over {@code geo} (its forward maps conv-output space to conv-input space) plus {@code b}. */
    static Tensor convT(Tensor x, Tensor w, Tensor b, Geometry geo, long[] outShape) {
        return primitive(ConvolutionOps.CONVOLUTION_TRANSPOSE, geo, outShape, x, outShape(geo), w, weightShape(geo), b);
    }

    static Tensor im2col(Tensor x, Geometry geo, long[] outShape) {
        return primitive(ConvolutionOps.IM2COL, geo, outShape, x, inShape(geo), null, null, null);
    }

    static Tensor col2im(Tensor x, Geometry geo, long[] outShape) {
        long[] columns = {geo.n(), (long) geo.cin() * geo.kh() * geo.kw(), (long) geo.oh() * geo.ow()};
        return primitive(ConvolutionOps.COL2IM, geo, outShape, x, columns, null, null, null);
    }

    /**
     * Runs a convolution primitive on {@code a} (and {@code w}, {@code bias}) seen with the primitive's shapes, its result
     * seen as {@code resultShape}: the front ends' unbatched and 1-D shapes are views of the primitives' 4-D ones.
     */
    private static Tensor primitive(OpDef op, Geometry geo, long[] resultShape, Tensor a, long[] aShape, Tensor w, long[] wShape,
                                    Tensor bias) {
        try (Tensor a4 = shaped(a, aShape); Tensor w4 = w == null ? null : shaped(w, wShape)) {
            Tensor[] inputs = op == ConvolutionOps.IM2COL || op == ConvolutionOps.COL2IM ? new Tensor[] {a4} : new Tensor[] {a4, w4, bias};
            Tensor r = Dispatcher.structured(op, inputs, scalars(geo));
            if (Arrays.equals(r.shape(), resultShape)) return r;
            try (r) {
                return r.view(resultShape);
            }
        }
    }

    /** {@code t} seen as {@code shape} (an alias when it has it already, so that the caller may close it). */
    private static Tensor shaped(Tensor t, long[] shape) {
        return Arrays.equals(t.shape(), shape) ? t.alias() : t.reshape(shape);
    }

    /** The geometry as the primitives' scalars, in its record order. */
    private static double[] scalars(Geometry g) {
        return new double[] {g.n(), g.cin(), g.h(), g.w(), g.cout(), g.kh(), g.kw(), g.sh(), g.sw(), g.ph(), g.pw(), g.dh(), g.dw(),
                g.groups(), g.oh(), g.ow()};
    }
}
