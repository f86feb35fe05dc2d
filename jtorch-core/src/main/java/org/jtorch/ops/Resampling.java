package org.jtorch.ops;

import org.jtorch.op.Shapes;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Resampling of {@code (N, C, spatial...)} images: {@code interpolate} (nearest, nearest-exact, linear, bilinear,
 * bicubic, trilinear; bilinear and bicubic also antialiased) and {@code pixel_shuffle} / {@code pixel_unshuffle}.
 *
 * <p>Interpolation is separable: each spatial dimension, last first, is resampled on its own with PyTorch's
 * source indices and weights (source positions computed in float32 for every input but float64, which computes in
 * float64, as PyTorch's CPU kernels). Nearest modes gather ({@code indexSelect}); the interpolating modes mix a few
 * gathers with per-position weights, {@code sum_k x[i_k] * w_k}: two taps for linear, four for bicubic (Keys' cubic
 * convolution with {@code A = -0.75}, indices clamped to the edge), and for antialiasing as many as the filter
 * (triangle, or cubic with {@code A = -0.5}) stretched by the downscaling factor covers, normalised to sum to one, as
 * PyTorch 1.13's {@code _upsample_*_aa}. The gradients are those of these primitives. Resampling the last dimension
 * first evaluates the same products and sums as PyTorch's kernel ({@code sum_h wh * (sum_w ww * x)}). Each mode and
 * spatial rank is a declared op as PyTorch's ({@code upsample_nearest1d} ... {@code _upsample_bicubic2d_aa}: the output
 * size resolved, {@code align_corners}, the scales), traced as one op and replayed from its arguments.
 */
public final class Resampling {
    private Resampling() {}

    /**
     * {@code F.interpolate}: exactly one of {@code size} and {@code scaleFactor} (one value for every spatial
     * dimension or one per dimension). With a scale factor the output size is {@code floor(in * scale)}, and the
     * source index uses {@code 1 / scale} unless {@code recomputeScaleFactor} (then {@code in / out}, as with a size).
     * {@code alignCorners} (null: false) is for the linear modes only.
     */
    public static Tensor interpolate(Tensor x, long[] size, double[] scaleFactor, String mode, Boolean alignCorners,
                                     boolean recomputeScaleFactor) {
        return interpolate(x, size, scaleFactor, mode, alignCorners, recomputeScaleFactor, false);
    }

    /**
     * {@code F.interpolate} with {@code antialias}: for bilinear and bicubic (4-D input), a downscaling dimension is
     * low-pass filtered as it is resampled (upscaling ones are plain interpolation, up to the edge handling).
     */
    public static Tensor interpolate(Tensor x, long[] size, double[] scaleFactor, String mode, Boolean alignCorners,
                                     boolean recomputeScaleFactor, boolean antialias) {
        String op = "interpolate";
        x.checkOpen(op);
        int spatial = x.dim() - 2;
        boolean cubic = mode.equals("bicubic");
        boolean linear = mode.equals("linear") || mode.equals("bilinear") || mode.equals("trilinear") || cubic;
        boolean nearest = mode.equals("nearest") || mode.equals("nearest-exact");
        if (!linear && !nearest) {
            throw new IllegalArgumentException(op + ": unsupported mode '" + mode
                    + "' (expected nearest, nearest-exact, linear, bilinear, bicubic or trilinear)");
        }
        if (antialias && !mode.equals("bilinear") && !cubic) {
            throw new IllegalArgumentException(op + ": anti-alias option is only supported for bilinear and bicubic modes, got " + mode);
        }
        if (spatial < 1 || spatial > 3) {
            throw new IllegalArgumentException(op + ": only 3-D, 4-D and 5-D input tensors are supported (got shape "
                    + Shapes.format(x.shape()) + ") for the mode " + mode);
        }
        if (alignCorners != null && !linear) {
            throw new IllegalArgumentException(op + ": align_corners option can only be set with the interpolating modes: "
                    + "linear | bilinear | bicubic | trilinear (got " + mode + ")");
        }
        int needed = mode.equals("linear") ? 1 : mode.equals("bilinear") || cubic ? 2 : mode.equals("trilinear") ? 3 : spatial;
        if (needed != spatial) {
            throw new IllegalArgumentException(op + ": got " + x.dim() + "-D input of shape " + Shapes.format(x.shape()) + ", but "
                    + mode + " mode needs " + (needed + 2) + "-D input");
        }
        if (linear && !x.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + mode + " mode needs a floating-point input, got " + x.dtype());
        }
        if ((size == null) == (scaleFactor == null)) {
            throw new IllegalArgumentException(op + ": " + (size == null ? "either size or scale_factor should be defined"
                    : "only one of size or scale_factor should be defined"));
        }
        long[] in = Arrays.copyOfRange(x.shape(), 2, x.dim());
        long[] out = new long[spatial];
        double[] scales = new double[spatial]; // 0: none
        if (size != null) {
            if (size.length != 1 && size.length != spatial) {
                throw new IllegalArgumentException(op + ": size shape must match input shape. Input is " + spatial + "D, size is "
                        + size.length);
            }
            for (int i = 0; i < spatial; i++) out[i] = size[size.length == 1 ? 0 : i];
        } else {
            if (scaleFactor.length != 1 && scaleFactor.length != spatial) {
                throw new IllegalArgumentException(op + ": scale_factor shape must match input shape. Input is " + spatial
                        + "D, scale_factor is " + scaleFactor.length);
            }
            for (int i = 0; i < spatial; i++) {
                double s = scaleFactor[scaleFactor.length == 1 ? 0 : i];
                out[i] = (long) Math.floor(in[i] * s);
                scales[i] = recomputeScaleFactor ? 0 : s;
            }
        }
        boolean align = alignCorners != null && alignCorners;
        return upsample(declared(mode, antialias, spatial), x, out, align, scales);
    }

    /** The declared op of {@code mode} (with {@code antialias}) over {@code spatial} dimensions ({@code upsample_bilinear2d}, ...). */
    private static OpDef declared(String mode, boolean antialias, int spatial) {
        return switch (mode) {
            case "nearest" -> spatial == 1 ? FrontEndOps.UPSAMPLE_NEAREST1D : spatial == 2 ? FrontEndOps.UPSAMPLE_NEAREST2D : FrontEndOps.UPSAMPLE_NEAREST3D;
            case "nearest-exact" -> spatial == 1 ? FrontEndOps.UPSAMPLE_NEAREST_EXACT1D : spatial == 2 ? FrontEndOps.UPSAMPLE_NEAREST_EXACT2D
                    : FrontEndOps.UPSAMPLE_NEAREST_EXACT3D;
            case "linear" -> FrontEndOps.UPSAMPLE_LINEAR1D;
            case "bilinear" -> antialias ? FrontEndOps.UPSAMPLE_BILINEAR2D_AA : FrontEndOps.UPSAMPLE_BILINEAR2D;
            case "bicubic" -> antialias ? FrontEndOps.UPSAMPLE_BICUBIC2D_AA : FrontEndOps.UPSAMPLE_BICUBIC2D;
            case "trilinear" -> FrontEndOps.UPSAMPLE_TRILINEAR3D;
            default -> throw new IllegalStateException("no upsample op for mode " + mode);
        };
    }

    /** Each upsample op: its interpolate mode, antialias, and number of spatial dimensions. */
    private record Upsample(String mode, boolean antialias, int spatial) {}

    private static final Map<OpDef, Upsample> UPSAMPLES = upsamples();

    private static Map<OpDef, Upsample> upsamples() {
        Map<OpDef, Upsample> m = new HashMap<>();
        for (String mode : new String[] {"nearest", "nearest-exact"}) {
            for (int k = 1; k <= 3; k++) m.put(declared(mode, false, k), new Upsample(mode, false, k));
        }
        m.put(FrontEndOps.UPSAMPLE_LINEAR1D, new Upsample("linear", false, 1));
        m.put(FrontEndOps.UPSAMPLE_TRILINEAR3D, new Upsample("trilinear", false, 3));
        for (String mode : new String[] {"bilinear", "bicubic"}) {
            for (boolean aa : new boolean[] {false, true}) m.put(declared(mode, aa, 2), new Upsample(mode, aa, 2));
        }
        return Map.copyOf(m);
    }

    /** Whether {@code op} is one of {@code F.interpolate}'s declared modes ({@code upsample_nearest2d}, ...). */
    static boolean isUpsample(OpDef op) {
        return UPSAMPLES.containsKey(op);
    }

    /**
     * {@code op}, an upsample op, called from its arguments ({@code Dispatcher.call}, the JIT's replay): the output size,
     * {@code align_corners} for the interpolating modes, then one scale per spatial dimension (0: None).
     */
    static Tensor upsampleAs(OpDef op, Tensor x, double[] args) {
        x.checkOpen(op.pyName());
        Upsample u = UPSAMPLES.get(op);
        int k = u.spatial();
        boolean nearest = u.mode().startsWith("nearest");
        int expected = 2 * k + (nearest ? 0 : 1);
        if (x.dim() != k + 2 || args.length != expected) {
            throw new IllegalArgumentException(op.pyName() + ": expected a " + (k + 2) + "-D input and " + expected + " arguments (output_size"
                    + (nearest ? "" : ", align_corners") + ", " + k + " scales), got input of shape " + Shapes.format(x.shape()) + " ("
                    + x.dtype() + ", " + x.device() + ") and " + Arrays.toString(args));
        }
        if (!nearest && !x.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op.pyName() + ": needs a floating-point input, got " + x.dtype() + " (shape "
                    + Shapes.format(x.shape()) + ", " + x.device() + ")");
        }
        long[] out = new long[k];
        for (int i = 0; i < k; i++) out[i] = (long) args[i];
        double[] scales = Arrays.copyOfRange(args, args.length - k, args.length);
        return upsample(op, x, out, !nearest && args[k] != 0, scales);
    }

    /** Resamples {@code x}'s spatial dimensions to {@code out} as {@code op}; a scale of 0 uses {@code in / out}. */
    private static Tensor upsample(OpDef op, Tensor x, long[] out, boolean align, double[] scales) {
        String name = "interpolate (" + op.pyName() + ")";
        String input = " for input of shape " + Shapes.format(x.shape()) + " (" + x.dtype() + ", " + x.device() + ")";
        long[] in = Arrays.copyOfRange(x.shape(), 2, x.dim());
        for (int i = 0; i < out.length; i++) {
            if (in[i] <= 0 || out[i] <= 0) {
                throw new IllegalArgumentException(name + ": input and output sizes should be greater than 0, but got input "
                        + Arrays.toString(in) + " and output " + Arrays.toString(out) + input);
            }
            // The per-position index tables are Java arrays (a huge scale factor saturates the size at 2^63 - 1).
            if (out[i] > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException(name + ": output size " + out[i] + " (spatial dimension " + i + " of "
                        + Arrays.toString(out) + ") is too large: at most 2^31 - 9 positions per dimension" + input);
            }
        }
        Upsample u = UPSAMPLES.get(op);
        if (Dispatcher.wrapsFrontEnds()) {
            double[] args = new double[2 * out.length + (u.mode().startsWith("nearest") ? 0 : 1)];
            for (int i = 0; i < out.length; i++) args[i] = out[i];
            if (!u.mode().startsWith("nearest")) args[out.length] = align ? 1 : 0;
            System.arraycopy(scales, 0, args, args.length - out.length, out.length);
            return Dispatcher.frontEnd(op, new Tensor[] {x}, args, t -> resampled(t[0], u, in, out, align, scales));
        }
        return resampled(x, u, in, out, align, scales);
    }

    /** The checked resampling: each spatial dimension, last first, on its own. */
    private static Tensor resampled(Tensor x, Upsample u, long[] in, long[] out, boolean align, double[] scales) {
        String mode = u.mode();
        boolean nearest = mode.startsWith("nearest");
        boolean cubic = mode.equals("bicubic");
        boolean f64 = x.dtype() == DType.FLOAT64;
        // float16 / bfloat16 mix in float32 and round once at the end (PyTorch 1.13 rounds every bfloat16 step).
        boolean widen = !nearest && x.dtype() != DType.FLOAT32 && !f64;
        return MemoryScope.run(() -> {
            Tensor cur = widen ? x.to(DType.FLOAT32) : x;
            for (int i = out.length - 1; i >= 0; i--) {
                int d = 2 + i;
                if (nearest) {
                    long[] idx = new long[(int) out[i]];
                    for (int j = 0; j < idx.length; j++) {
                        idx[j] = mode.equals("nearest") ? nearestIndex(j, in[i], out[i], scales[i]) : nearestExactIndex(j, in[i], out[i], scales[i]);
                    }
                    cur = cur.indexSelect(d, Torch.tensor(idx).to(cur.device()));
                } else if (u.antialias()) {
                    cur = weighted(cur, d, antialiasTaps(in[i], out[i], scales[i], align, cubic, f64));
                } else if (cubic) {
                    cur = weighted(cur, d, cubicTaps(in[i], out[i], scales[i], align, f64));
                } else {
                    cur = linear(cur, d, in[i], out[i], scales[i], align, f64);
                }
            }
            return widen ? cur.to(x.dtype()) : cur;
        });
    }

    /** PyTorch's {@code compute_scales_value<float>}: {@code 1 / scale} when given, else {@code in / out}. */
    private static float scaleF(long in, long out, double scale) {
        return scale > 0 ? (float) (1.0 / scale) : (float) in / out;
    }

    /** PyTorch's {@code nearest_idx}, with its special cases for equal and doubled sizes. */
    static long nearestIndex(long j, long in, long out, double scale) {
        if (out == in) return j;
        if (out == 2 * in) return j >> 1;
        float s = scaleF(in, out, scale);
        return Math.min((long) Math.floor((float) j * s), in - 1);
    }

    /** PyTorch's {@code nearest_exact_idx}: {@code floor((j + 0.5) * scale)}. */
    static long nearestExactIndex(long j, long in, long out, double scale) {
        float s = scaleF(in, out, scale);
        return Math.min((long) Math.floor((float) ((j + 0.5) * s)), in - 1);
    }

    /** Linear resampling of dimension {@code d}: PyTorch's {@code area_pixel_compute_source_index} and weights. */
    private static Tensor linear(Tensor x, int d, long in, long out, double scale, boolean align, boolean f64) {
        long[] i0 = new long[(int) out];
        long[] i1 = new long[(int) out];
        double[] l0 = new double[(int) out];
        double[] l1 = new double[(int) out];
        for (int j = 0; j < out; j++) {
            double src;
            if (f64) {
                double s = align ? (out > 1 ? (double) (in - 1) / (out - 1) : 0) : scale > 0 ? 1.0 / scale : (double) in / out;
                src = align ? s * j : Math.max(s * (j + 0.5) - 0.5, 0);
            } else {
                float s = align ? (out > 1 ? (float) (in - 1) / (out - 1) : 0f) : scaleF(in, out, scale);
                float f = align ? s * j : s * (j + 0.5f) - 0.5f;
                src = f < 0 ? 0 : f;
            }
            i0[j] = (long) src;
            i1[j] = i0[j] + (i0[j] < in - 1 ? 1 : 0);
            if (f64) {
                l1[j] = src - i0[j];
                l0[j] = 1 - l1[j];
            } else {
                float lf = (float) src - i0[j];
                l1[j] = lf;
                l0[j] = 1f - lf;
            }
        }
        long[] wshape = new long[x.dim() - d];
        Arrays.fill(wshape, 1);
        wshape[0] = out;
        DType wt = x.dtype();
        // Indices and weights are computed on the host, then moved to the input's device.
        Device dev = x.device();
        Tensor w0 = Torch.tensor(l0, wshape).to(dev, wt);
        Tensor w1 = Torch.tensor(l1, wshape).to(dev, wt);
        return x.indexSelect(d, Torch.tensor(i0).to(dev)).mul(w0).add(x.indexSelect(d, Torch.tensor(i1).to(dev)).mul(w1));
    }

    /** The source positions and weights of a dimension's output positions: {@code out[j] = sum_k x[index[k][j]] * weight[k][j]}. */
    private record Taps(long[][] index, double[][] weight) {}

    /** {@code sum_k x.indexSelect(d, index[k]) * weight[k]}, the weights broadcast along the dimensions after {@code d}. */
    private static Tensor weighted(Tensor x, int d, Taps taps) {
        int out = taps.index[0].length;
        long[] wshape = new long[x.dim() - d];
        Arrays.fill(wshape, 1);
        wshape[0] = out;
        Device dev = x.device();
        Tensor sum = null;
        for (int k = 0; k < taps.index.length; k++) {
            Tensor term = x.indexSelect(d, Torch.tensor(taps.index[k]).to(dev)).mul(Torch.tensor(taps.weight[k], wshape).to(dev, x.dtype()));
            sum = sum == null ? term : sum.add(term);
        }
        return sum;
    }

    /** PyTorch's {@code area_pixel_compute_scale}: the source step per output position. */
    private static double sourceScale(long in, long out, double scale, boolean align, boolean f64) {
        if (align) return out > 1 ? (f64 ? (double) (in - 1) / (out - 1) : (float) (in - 1) / (out - 1)) : 0;
        return f64 ? (scale > 0 ? 1.0 / scale : (double) in / out) : scaleF(in, out, scale);
    }

    /** Keys' cubic convolution kernel with parameter {@code a} (-0.75 for bicubic, -0.5 for antialiasing, as PyTorch's). */
    private static double cubicKernel(double x, double a) {
        x = Math.abs(x);
        if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
        if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
        return 0;
    }

    /** Bicubic: four taps around {@code floor(src)}, clamped to the edge; the source position is not clamped at 0. */
    private static Taps cubicTaps(long in, long out, double scale, boolean align, boolean f64) {
        double s = sourceScale(in, out, scale, align, f64);
        long[][] index = new long[4][(int) out];
        double[][] weight = new double[4][(int) out];
        for (int j = 0; j < out; j++) {
            double src = align ? s * j : s * (j + 0.5) - 0.5;
            if (!f64) src = align ? (float) s * j : (float) s * (j + 0.5f) - 0.5f;
            long i0 = (long) Math.floor(src);
            double t = src - i0;
            for (int k = 0; k < 4; k++) {
                index[k][j] = Math.min(Math.max(i0 - 1 + k, 0), in - 1);
                weight[k][j] = cubicKernel(t + 1 - k, -0.75);
            }
        }
        return new Taps(index, weight);
    }

    /**
     * Antialiasing: output {@code j} averages the inputs within the filter's support around {@code center = scale * (j +
     * 0.5)}, the filter stretched by {@code scale} when downscaling, its weights normalised to sum to one.
     */
    private static Taps antialiasTaps(long in, long out, double scale, boolean align, boolean cubic, boolean f64) {
        double s = sourceScale(in, out, scale, align, f64);
        double support = (cubic ? 2.0 : 1.0) * (s >= 1 ? s : 1);
        double invScale = s >= 1 ? 1 / s : 1;
        long[] start = new long[(int) out];
        double[][] rows = new double[(int) out][];
        int taps = 1;
        for (int j = 0; j < out; j++) {
            double center = s * (j + 0.5);
            long first = Math.max((long) (center - support + 0.5), 0);
            int count = (int) (Math.min((long) (center + support + 0.5), in) - first);
            double[] w = new double[Math.max(count, 0)];
            double total = 0;
            for (int k = 0; k < w.length; k++) {
                double at = (k + first - center + 0.5) * invScale;
                w[k] = cubic ? cubicKernel(at, -0.5) : Math.max(0, 1 - Math.abs(at));
                total += w[k];
            }
            for (int k = 0; k < w.length && total != 0; k++) w[k] /= total;
            start[j] = first;
            rows[j] = w;
            taps = Math.max(taps, w.length);
        }
        // Positions with fewer taps than the widest one read their first input again with weight 0.
        long[][] index = new long[taps][(int) out];
        double[][] weight = new double[taps][(int) out];
        for (int j = 0; j < out; j++) {
            for (int k = 0; k < taps; k++) {
                index[k][j] = k < rows[j].length ? start[j] + k : Math.min(start[j], in - 1);
                weight[k][j] = k < rows[j].length ? rows[j][k] : 0;
            }
        }
        return new Taps(index, weight);
    }

    // ------------------------------------------------------------------ pixel shuffle

    /** {@code pixel_shuffle}: {@code (*, C r^2, H, W) -> (*, C, H r, W r)}. */
    public static Tensor pixelShuffle(Tensor x, int upscaleFactor) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.PIXEL_SHUFFLE, new Tensor[] {x}, FrontEnds.args(upscaleFactor),
                    t -> shuffled(t[0], upscaleFactor));
        }
        return shuffled(x, upscaleFactor);
    }

    private static Tensor shuffled(Tensor x, int upscaleFactor) {
        String op = "pixelShuffle";
        x.checkOpen(op);
        if (x.dim() < 3) {
            throw new IllegalArgumentException(op + ": expects input to have at least 3 dimensions, but got input of shape "
                    + Shapes.format(x.shape()));
        }
        if (upscaleFactor <= 0) throw new IllegalArgumentException(op + ": upscale_factor must be greater than 0, got " + upscaleFactor);
        long r = upscaleFactor;
        int n = x.dim();
        long c = x.size(-3);
        if (c % (r * r) != 0) {
            throw new IllegalArgumentException(op + ": expects its input's 'channel' dimension to be divisible by the square of "
                    + "upscale_factor, but input.size(-3)=" + c + " is not divisible by " + r * r + " (input shape "
                    + Shapes.format(x.shape()) + ")");
        }
        long h = x.size(-2);
        long w = x.size(-1);
        long[] batch = Arrays.copyOf(x.shape(), n - 3);
        return MemoryScope.run(() -> {
            Tensor t = x.reshape(concat(batch, c / (r * r), r, r, h, w));
            int b = batch.length;
            // (*, C, r, r, H, W) -> (*, C, H, r, W, r)
            Tensor p = t.permute(perm(b, b, b + 3, b + 1, b + 4, b + 2));
            return p.reshape(concat(batch, c / (r * r), h * r, w * r));
        });
    }

    /** {@code pixel_unshuffle}: {@code (*, C, H r, W r) -> (*, C r^2, H, W)}. */
    public static Tensor pixelUnshuffle(Tensor x, int downscaleFactor) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.PIXEL_UNSHUFFLE, new Tensor[] {x}, FrontEnds.args(downscaleFactor),
                    t -> unshuffled(t[0], downscaleFactor));
        }
        return unshuffled(x, downscaleFactor);
    }

    private static Tensor unshuffled(Tensor x, int downscaleFactor) {
        String op = "pixelUnshuffle";
        x.checkOpen(op);
        if (x.dim() < 3) {
            throw new IllegalArgumentException(op + ": expects input to have at least 3 dimensions, but got input of shape "
                    + Shapes.format(x.shape()));
        }
        if (downscaleFactor <= 0) {
            throw new IllegalArgumentException(op + ": downscale_factor must be greater than 0, got " + downscaleFactor);
        }
        long r = downscaleFactor;
        int n = x.dim();
        long c = x.size(-3);
        long h = x.size(-2);
        long w = x.size(-1);
        if (h % r != 0 || w % r != 0) {
            throw new IllegalArgumentException(op + ": expects height and width to be divisible by downscale_factor, but input "
                    + Shapes.format(x.shape()) + " is not divisible by " + r);
        }
        long[] batch = Arrays.copyOf(x.shape(), n - 3);
        return MemoryScope.run(() -> {
            Tensor t = x.reshape(concat(batch, c, h / r, r, w / r, r));
            int b = batch.length;
            // (*, C, H, r, W, r) -> (*, C, r, r, H, W)
            Tensor p = t.permute(perm(b, b, b + 2, b + 4, b + 1, b + 3));
            return p.reshape(concat(batch, c * r * r, h / r, w / r));
        });
    }

    private static long[] concat(long[] batch, long... rest) {
        long[] r = Arrays.copyOf(batch, batch.length + rest.length);
        System.arraycopy(rest, 0, r, batch.length, rest.length);
        return r;
    }

    private static int[] perm(int b, int... tail) {
        int[] r = new int[b + tail.length];
        for (int i = 0; i < b; i++) r[i] = i;
        System.arraycopy(tail, 0, r, b, tail.length);
        return r;
    }
}
