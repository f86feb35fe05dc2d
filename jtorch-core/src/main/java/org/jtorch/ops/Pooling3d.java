package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.Shapes;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * Pooling over the last three dimensions of {@code (N, C, D, H, W)} or {@code (C, D, H, W)}, with PyTorch's checks
 * ({@code pool3d_shape_check}), output sizes and index layout ({@code d * H * W + h * W + w} in each volume).
 *
 * <p>Every 3-d pool here is separable: its window is a product of per-dimension windows, and max, sum and the
 * per-dimension window counts PyTorch divides by all factor over it. So each op is two passes of the 2-d kernels of
 * {@link Pooling}: the {@code (H, W)} pool of every depth slice, then a {@code (kD, 1)} pool over the depth of the
 * result viewed as {@code [D, oH * oW]}. They run on every backend that has the 2-d kernels, and their gradients
 * (and double backward) are those of the 2-d ops. Ties and NaN resolve as PyTorch's loop over {@code (d, h, w)}:
 * the first maximum in that order, or the last NaN. Average pooling of float16/bfloat16 rounds after each pass (PyTorch
 * once); max pooling is exact.
 */
public final class Pooling3d {
    private Pooling3d() {}

    /** {@code max_pool3d}: kernel, stride (null or empty: the kernel), padding and dilation as 1 or 3 ints. */
    public static Tensor maxPool3d(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.MAX_POOL3D, new Tensor[] {x},
                    FrontEnds.lists(new int[][] {kernel, stride, padding, dilation}, ceilMode ? 1 : 0),
                    t -> maxPool3dValues(t[0], kernel, stride, padding, dilation, ceilMode));
        }
        return maxPool3dValues(x, kernel, stride, padding, dilation, ceilMode);
    }

    private static Tensor maxPool3dValues(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        try (ValuesIndices r = maxPool3dWithIndices("maxPool3d", x, kernel, stride, padding, dilation, ceilMode, false)) {
            return r.values().alias();
        }
    }

    /** {@code max_pool3d(..., return_indices=True)}: values and int64 flat indices {@code d * H * W + h * W + w}. */
    public static ValuesIndices maxPool3dWithIndices(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation,
                                                     boolean ceilMode) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Pooling.valuesIndices(Dispatcher.frontEndAll(FrontEndOps.MAX_POOL3D_WITH_INDICES, new Tensor[] {x},
                    FrontEnds.lists(new int[][] {kernel, stride, padding, dilation}, ceilMode ? 1 : 0),
                    t -> Pooling.outputs(maxPool3dWithIndices("maxPool3d", t[0], kernel, stride, padding, dilation, ceilMode, true))));
        }
        return maxPool3dWithIndices("maxPool3d", x, kernel, stride, padding, dilation, ceilMode, true);
    }

    private static ValuesIndices maxPool3dWithIndices(String op, Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation,
                                                      boolean ceilMode, boolean wantIndices) {
        Geometry g = geometry(op, x, kernel, stride, padding, dilation, ceilMode, true);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor slices = x.reshape(g.planes, g.in[0], g.in[1], g.in[2]);
            ValuesIndices hw = Pooling.maxPool2dWithIndices(slices, new int[] {g.k[1], g.k[2]}, new int[] {g.s[1], g.s[2]},
                    new int[] {g.p[1], g.p[2]}, new int[] {g.d[1], g.d[2]}, ceilMode);
            ValuesIndices depth = Pooling.maxPool2dWithIndices(hw.values().reshape(g.planes, 1, g.in[0], g.out[1] * g.out[2]),
                    new int[] {g.k[0], 1}, new int[] {g.s[0], 1}, new int[] {g.p[0], 0}, new int[] {g.d[0], 1}, ceilMode);
            Tensor values = scope.keep(depth.values().reshape(g.outShape));
            Tensor indices = wantIndices ? scope.keep(volumeIndices(g, hw.indices(), depth.indices())) : Tensor.empty(new long[] {0}, DType.INT64, x.device());
            return new ValuesIndices(values, indices);
        }
    }

    /**
     * The flat volume index of each output's maximum: the depth pass's index into {@code [D, oH * oW]} gives the depth
     * slice and, through the slice pass's indices, the {@code h * W + w} within it.
     */
    private static Tensor volumeIndices(Geometry g, Tensor sliceIndices, Tensor depthIndices) {
        try (Grad.Mode m = Grad.noGrad()) {
            long outPlane = g.out[1] * g.out[2];
            Tensor at = depthIndices.reshape(g.planes, g.out[0] * outPlane);
            Tensor withinSlice = sliceIndices.reshape(g.planes, g.in[0] * outPlane).gather(1, at);
            return at.div(outPlane, "floor").mul(g.in[1] * g.in[2]).add(withinSlice).reshape(g.outShape);
        }
    }

    /**
     * {@code avg_pool3d}: kernel, stride (null or empty: the kernel) and padding as 1 or 3 ints; a non-null
     * {@code divisorOverride} (positive) replaces the window's size as divisor. int64 inputs divide with truncation,
     * as PyTorch's.
     */
    public static Tensor avgPool3d(Tensor x, int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad,
                                   Long divisorOverride) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.AVG_POOL3D, new Tensor[] {x}, FrontEnds.lists(new int[][] {kernel, stride, padding},
                            ceilMode ? 1 : 0, countIncludePad ? 1 : 0, divisorOverride == null ? 0 : divisorOverride),
                    t -> averaged(t[0], kernel, stride, padding, ceilMode, countIncludePad, divisorOverride));
        }
        return averaged(x, kernel, stride, padding, ceilMode, countIncludePad, divisorOverride);
    }

    private static Tensor averaged(Tensor x, int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad,
                                   Long divisorOverride) {
        String op = "avgPool3d";
        if (divisorOverride != null && divisorOverride <= 0) {
            throw new IllegalArgumentException(op + ": divisor must be not zero (and positive), got " + divisorOverride);
        }
        Geometry g = geometry(op, x, kernel, stride, padding, new int[] {1}, ceilMode, false);
        if (x.dtype() == DType.INT64) return avgPool3dInt64(x, g, ceilMode, countIncludePad, divisorOverride);
        // With an override, each pass sums (divisor 1) and the sum is divided once.
        long passDivisor = divisorOverride == null ? 0 : 1;
        return MemoryScope.run(() -> {
            Tensor sums = avgPassed(x, g, ceilMode, countIncludePad, passDivisor);
            return divisorOverride == null ? sums : sums.div((double) divisorOverride);
        });
    }

    /** The two 2-d passes of average pooling, each dividing by its own dimensions' share of the divisor. */
    private static Tensor avgPassed(Tensor x, Geometry g, boolean ceilMode, boolean countIncludePad, long passDivisor) {
        Tensor slices = Pooling.avgPool2d(x.reshape(g.planes, g.in[0], g.in[1], g.in[2]), new int[] {g.k[1], g.k[2]},
                new int[] {g.s[1], g.s[2]}, new int[] {g.p[1], g.p[2]}, ceilMode, countIncludePad, passDivisor);
        Tensor depth = Pooling.avgPool2d(slices.reshape(g.planes, 1, g.in[0], g.out[1] * g.out[2]), new int[] {g.k[0], 1},
                new int[] {g.s[0], 1}, new int[] {g.p[0], 0}, ceilMode, countIncludePad, passDivisor);
        return depth.reshape(g.outShape);
    }

    /**
     * int64 as PyTorch's: the exact sum divided once by the integer divisor, truncating. The sums come from float64
     * passes (exact below 2^53), the per-cell divisor from the same passes over ones.
     */
    private static Tensor avgPool3dInt64(Tensor x, Geometry g, boolean ceilMode, boolean countIncludePad, Long divisorOverride) {
        return MemoryScope.run(() -> {
            Tensor xd = x.to(DType.FLOAT64);
            Tensor sums = avgPassed(xd, g, ceilMode, countIncludePad, 1);
            Tensor divisor;
            if (divisorOverride != null) {
                divisor = Torch.fullLike(sums, divisorOverride.doubleValue());
            } else {
                Tensor ones = Torch.onesLike(xd);
                Tensor counted = avgPassed(ones, g, ceilMode, countIncludePad, 1);
                // With padding counted, the averages of ones are counted / windowSize: the window's size is their ratio.
                divisor = countIncludePad ? counted.div(avgPassed(ones, g, ceilMode, true, 0)).round() : counted;
            }
            return sums.div(divisor, "trunc").to(DType.INT64);
        });
    }

    /** {@code adaptive_avg_pool3d} to {@code (oD, oH, oW)} (1 or 3 sizes; -1 keeps the input's, PyTorch's None). */
    public static Tensor adaptiveAvgPool3d(Tensor x, long... outputSize) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.ADAPTIVE_AVG_POOL3D, new Tensor[] {x}, FrontEnds.args(outputSize),
                    t -> adaptiveAvgPool3dOf(t[0], outputSize));
        }
        return adaptiveAvgPool3dOf(x, outputSize);
    }

    private static Tensor adaptiveAvgPool3dOf(Tensor x, long[] outputSize) {
        Adaptive a = adaptive("adaptiveAvgPool3d", x, outputSize);
        return MemoryScope.run(() -> {
            Tensor slices = Pooling.adaptiveAvgPool2d(x.reshape(a.planes, a.in[0], a.in[1], a.in[2]), a.out[1], a.out[2]);
            Tensor depth = Pooling.adaptiveAvgPool2d(slices.reshape(a.planes, 1, a.in[0], a.out[1] * a.out[2]), a.out[0],
                    a.out[1] * a.out[2]);
            return depth.reshape(a.outShape);
        });
    }

    /** {@code adaptive_max_pool3d} with indices (flat {@code d * H * W + h * W + w}); sizes as {@link #adaptiveAvgPool3d}. */
    public static ValuesIndices adaptiveMaxPool3d(Tensor x, long... outputSize) {
        Adaptive a = adaptive("adaptiveMaxPool3d", x, outputSize);
        if (Dispatcher.wrapsFrontEnds()) {
            return Pooling.valuesIndices(Dispatcher.frontEndAll(FrontEndOps.ADAPTIVE_MAX_POOL3D, new Tensor[] {x}, FrontEnds.args(a.out),
                    t -> Pooling.outputs(adaptiveMaxPooled(t[0], a))));
        }
        return adaptiveMaxPooled(x, a);
    }

    private static ValuesIndices adaptiveMaxPooled(Tensor x, Adaptive a) {
        Geometry g = new Geometry(a.planes, a.in, a.out, a.outShape, null, null, null, null);
        try (MemoryScope scope = new MemoryScope()) {
            ValuesIndices hw = Pooling.adaptiveMaxPool2d(x.reshape(a.planes, a.in[0], a.in[1], a.in[2]), a.out[1], a.out[2]);
            ValuesIndices depth = Pooling.adaptiveMaxPool2d(hw.values().reshape(a.planes, 1, a.in[0], a.out[1] * a.out[2]), a.out[0],
                    a.out[1] * a.out[2]);
            return new ValuesIndices(scope.keep(depth.values().reshape(a.outShape)), scope.keep(volumeIndices(g, hw.indices(), depth.indices())));
        }
    }

    /**
     * {@code max_unpool3d}: each value of {@code x} placed at its index (from {@link #maxPool3dWithIndices}) in a zero
     * volume of size {@code outputSize} (3 trailing sizes; null: {@code (in - 1) * stride - 2 * padding + kernel}).
     */
    public static Tensor maxUnpool3d(Tensor x, Tensor indices, int[] kernel, int[] stride, int[] padding, long[] outputSize) {
        String op = "maxUnpool3d";
        checkUnpoolOperands(x, indices);
        int[] k = triple(op, "kernel_size", kernel, null);
        int[] s = triple(op, "stride", stride, k);
        int[] p = triple(op, "padding", padding, new int[] {0, 0, 0});
        long[] shape = x.shape();
        int r = shape.length;
        long[] out = new long[3];
        if (outputSize == null) {
            for (int i = 0; i < 3; i++) out[i] = (shape[r - 3 + i] - 1) * s[i] - 2L * p[i] + k[i];
        } else {
            if (outputSize.length != 3 && outputSize.length != r) {
                throw new IllegalArgumentException(op + ": output_size must have 3 (or " + r + ") sizes, got " + Arrays.toString(outputSize));
            }
            System.arraycopy(outputSize, outputSize.length - 3, out, 0, 3);
            for (int i = 0; i < 3; i++) {
                // PyTorch's _unpool_output_size: within a stride of the default size.
                long natural = (shape[r - 3 + i] - 1) * s[i] - 2L * p[i] + k[i];
                if (out[i] <= natural - s[i] || out[i] >= natural + s[i]) {
                    throw new IllegalArgumentException(op + ": invalid output_size " + Arrays.toString(outputSize) + " (dimension " + i
                            + " must be between " + (natural - s[i]) + " and " + (natural + s[i]) + ", exclusive)");
                }
            }
        }
        if (Dispatcher.wrapsFrontEnds()) {
            double[] args = new double[9];
            for (int i = 0; i < 3; i++) {
                args[i] = out[i];
                args[3 + i] = s[i];
                args[6 + i] = p[i];
            }
            return Dispatcher.frontEnd(FrontEndOps.MAX_UNPOOL3D, new Tensor[] {x, indices}, args, t -> maxUnpool3d(t[0], t[1], out));
        }
        return maxUnpool3d(x, indices, out);
    }

    /** Indices of the values' shape and int64, the values a 4-d or 5-d volume, both on one device. */
    private static void checkUnpoolOperands(Tensor x, Tensor indices) {
        String op = "maxUnpool3d";
        Dispatcher.sameDevice(FrontEndOps.MAX_UNPOOL3D, x, indices);
        checkRank(op, x, false);
        if (indices.dtype() != DType.INT64) {
            throw new IllegalArgumentException(op + ": expected indices of dtype int64, got " + indices.dtype());
        }
        if (!Arrays.equals(x.shape(), indices.shape())) {
            throw new IllegalArgumentException(op + ": expected input and indices of the same shape, got " + Shapes.format(x.shape())
                    + " and " + Shapes.format(indices.shape()));
        }
    }

    /** {@code max_unpool3d} into volumes of {@code out} (3 sizes): PyTorch's op, which takes the output size resolved. */
    static Tensor maxUnpool3d(Tensor x, Tensor indices, long[] out) {
        String op = "maxUnpool3d";
        checkUnpoolOperands(x, indices);
        if (out.length != 3) throw new IllegalArgumentException(op + ": output_size must have 3 sizes, got " + Arrays.toString(out));
        for (long o : out) {
            if (o <= 0) throw new IllegalArgumentException(op + ": the output volume " + Arrays.toString(out) + " must be positive");
        }
        long[] shape = x.shape();
        int r = shape.length;
        long[] outShape = shape.clone();
        System.arraycopy(out, 0, outShape, r - 3, 3);
        long volume = out[0] * out[1] * out[2];
        long inVolume = shape[r - 3] * shape[r - 2] * shape[r - 1];
        long planes = x.numel() / inVolume;
        try (Tensor idx = indices.reshape(planes, inVolume)) {
            if (idx.numel() > 0) {
                long max = idx.max().itemLong();
                long min = idx.min().itemLong();
                if (min < 0 || max >= volume) {
                    throw new IndexOutOfBoundsException(op + ": found an invalid max index " + (min < 0 ? min : max)
                            + " (output volumes are of size " + out[0] + "x" + out[1] + "x" + out[2] + ")");
                }
            }
            return MemoryScope.run(() -> Torch.zeros(new long[] {planes, volume}, x.dtype(), x.device())
                    .scatter(1, idx, x.reshape(planes, inVolume)).reshape(outShape));
        }
    }

    // ------------------------------------------------------------------ geometry

    /** Sizes per dimension {@code (D, H, W)}; k, s, p, d are null for adaptive pools. */
    private record Geometry(long planes, long[] in, long[] out, long[] outShape, int[] k, int[] s, int[] p, int[] d) {}

    private record Adaptive(long planes, long[] in, long[] out, long[] outShape) {}

    /** PyTorch's {@code pool3d_shape_check} and output sizes. */
    private static Geometry geometry(String op, Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode,
                                     boolean isMax) {
        checkRank(op, x, !isMax);
        int[] k = triple(op, "kernel_size", kernel, null);
        int[] s = triple(op, "stride", stride, k);
        int[] p = triple(op, "padding", padding, new int[] {0, 0, 0});
        int[] d = triple(op, "dilation", dilation, new int[] {1, 1, 1});
        for (int i = 0; i < 3; i++) {
            if (k[i] <= 0) throw new IllegalArgumentException(op + ": kernel size should be greater than zero, but got " + Arrays.toString(k));
            if (s[i] <= 0) throw new IllegalArgumentException(op + ": stride should be greater than zero, but got " + Arrays.toString(s));
            if (d[i] <= 0) throw new IllegalArgumentException(op + ": dilation should be greater than zero, but got " + Arrays.toString(d));
            if (p[i] < 0 || p[i] > k[i] / 2) {
                throw new IllegalArgumentException(op + ": pad should be at least zero and at most half of kernel size, but got padding "
                        + Arrays.toString(p) + " for kernel size " + Arrays.toString(k));
            }
        }
        long[] shape = x.shape();
        int r = shape.length;
        long[] in = {shape[r - 3], shape[r - 2], shape[r - 1]};
        long[] out = new long[3];
        for (int i = 0; i < 3; i++) out[i] = Pooling.outSize(in[i], k[i], s[i], p[i], d[i], ceilMode);
        long[] outShape = shape.clone();
        System.arraycopy(out, 0, outShape, r - 3, 3);
        if (out[0] < 1 || out[1] < 1 || out[2] < 1) {
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(shape) + " with kernel size " + Arrays.toString(k)
                    + ", stride " + Arrays.toString(s) + ", padding " + Arrays.toString(p) + (isMax ? ", dilation " + Arrays.toString(d) : "")
                    + " gives output size " + Shapes.format(outShape) + ", which is too small");
        }
        return new Geometry(Shapes.numel(shape) / (in[0] * in[1] * in[2]), in, out, outShape, k, s, p, d);
    }

    private static Adaptive adaptive(String op, Tensor x, long[] outputSize) {
        checkRank(op, x, false);
        if (outputSize == null || (outputSize.length != 1 && outputSize.length != 3)) {
            throw new IllegalArgumentException(op + ": output_size must be 1 or 3 sizes, got " + Arrays.toString(outputSize));
        }
        long[] shape = x.shape();
        int r = shape.length;
        long[] in = {shape[r - 3], shape[r - 2], shape[r - 1]};
        long[] out = new long[3];
        for (int i = 0; i < 3; i++) {
            long o = outputSize.length == 1 ? outputSize[0] : outputSize[i];
            if (o < -1) {
                throw new IllegalArgumentException(op + ": elements of output_size must be greater than or equal to 0 (or -1 for None)"
                        + " but received " + Arrays.toString(outputSize));
            }
            out[i] = o < 0 ? in[i] : o;
        }
        long[] outShape = shape.clone();
        System.arraycopy(out, 0, outShape, r - 3, 3);
        return new Adaptive(Shapes.numel(shape) / (in[0] * in[1] * in[2]), in, out, outShape);
    }

    /**
     * {@code (C, D, H, W)} or {@code (N, C, D, H, W)} with non-empty non-batch dimensions, floating (or int64 where
     * {@code int64Ok}: average pooling).
     */
    private static void checkRank(String op, Tensor x, boolean int64Ok) {
        Arguments.nonNull(op, "input", x);
        x.checkOpen(op);
        if (x.dim() != 4 && x.dim() != 5) {
            throw new IllegalArgumentException(op + ": expected a 4-D (unbatched) or 5-D (batched) input, got shape " + Shapes.format(x.shape()));
        }
        for (int i = x.dim() - 4; i < x.dim(); i++) {
            if (x.size(i) == 0) {
                throw new IllegalArgumentException(op + ": expected an input with non-zero sizes in its non-batch dimensions, got shape "
                        + Shapes.format(x.shape()));
            }
        }
        if (!x.dtype().isFloatingPoint() && !(int64Ok && x.dtype() == DType.INT64)) {
            throw new IllegalArgumentException(op + ": expected a floating-point" + (int64Ok ? " or int64" : "") + " input, got " + x.dtype());
        }
    }

    /** One or three ints as a triple; null or empty gives {@code fallback} (an error when there is none). */
    private static int[] triple(String op, String what, int[] v, int[] fallback) {
        if (v == null || v.length == 0) {
            if (fallback == null) throw new IllegalArgumentException(op + ": " + what + " must be given");
            return fallback;
        }
        if (v.length == 1) return new int[] {v[0], v[0], v[0]};
        if (v.length == 3) return v.clone();
        throw new IllegalArgumentException(op + ": " + what + " must either be a single int, or a tuple of three ints, got "
                + Arrays.toString(v));
    }
}
