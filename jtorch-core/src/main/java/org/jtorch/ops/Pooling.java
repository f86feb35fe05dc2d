package org.jtorch.ops;


import org.jtorch.op.FrontEndOps;
import org.jtorch.op.PoolingOps;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.memory.MemoryScope;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.DType;

/**
 * Pooling over the last one or two dimensions of {@code (N, C, L)} / {@code (C, L)} or {@code (N, C, H, W)} /
 * {@code (C, H, W)} floating-point inputs, with PyTorch's output-size rules, window clipping, NaN propagation and
 * index layout. 1-D pooling is 2-D pooling of a height-1 image ({@code max_pool1d(_with_indices)}, {@code avg_pool1d},
 * {@code adaptive_avg_pool1d} and {@code adaptive_max_pool1d} declared front ends over it, traced as one op each). The
 * backend kernels see contiguous float32 or float64 planes: other floating dtypes compute in float32 and round once,
 * strided inputs (channels-last) are copied first.
 *
 * <p>Every pooling here is a declared op ({@link PoolingOps}): these front ends check the call as PyTorch does and
 * compute its geometry, and the dispatcher runs the kernels, autograd (max pooling's backward scatters the gradient
 * to the indices it returned beside its values; the average poolings' is the adjoint kernel) and the trace.
 */
public final class Pooling {
    private Pooling() {}

    // ------------------------------------------------------------------ max pooling

    /** {@code max_pool2d}: kernel, stride (null or empty: the kernel), padding and dilation as 1 or 2 ints. */
    public static Tensor maxPool2d(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(FrontEndOps.MAX_POOL2D, new Tensor[] {x},
                    FrontEnds.lists(new int[][] {kernel, stride, padding, dilation}, ceilMode ? 1 : 0),
                    () -> maxPool2d(x, kernel, stride, padding, dilation, ceilMode));
        }
        return valuesOnly(maxPool("maxPool2d", x, 2, kernel, stride, padding, dilation, ceilMode, false));
    }

    /** {@code max_pool2d(..., return_indices=True)}: values and int64 flat indices {@code h * W + w} into each plane. */
    public static ValuesIndices maxPool2dWithIndices(Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation,
                                                     boolean ceilMode) {
        return maxPool("maxPool2d", x, 2, kernel, stride, padding, dilation, ceilMode, true);
    }

    /** {@code max_pool1d} over the last dimension of {@code (N, C, L)} or {@code (C, L)}; a null stride means the kernel size. */
    public static Tensor maxPool1d(Tensor x, int kernel, Integer stride, int padding, int dilation, boolean ceilMode) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.MAX_POOL1D, new Tensor[] {x}, FrontEnds.lists(new int[][] {{kernel}, list(stride), {padding},
                    {dilation}}, ceilMode ? 1 : 0), t -> maxPool1dValues(t[0], kernel, stride, padding, dilation, ceilMode));
        }
        return maxPool1dValues(x, kernel, stride, padding, dilation, ceilMode);
    }

    /** A null stride (PyTorch's None) as an absent list, as the trace records it. */
    private static int[] list(Integer stride) {
        return stride == null ? null : new int[] {stride};
    }

    private static Tensor maxPool1dValues(Tensor x, int kernel, Integer stride, int padding, int dilation, boolean ceilMode) {
        // PyTorch 1.13's CPU max_pool1d without autograd has its own check, which accepts an output length of 0
        // (max_pool1d(randn(2, 3, 1), 2, 1) has shape [2, 3, 0]); with grad, or on another device, it goes through
        // max_pool1d_with_indices, which refuses it.
        if (x != null && !x.isClosed() && x.device().isCpu() && !Autograd.needsGrad(x) && x.dim() >= 2 && kernel > 0
                && (stride == null || stride > 0) && padding >= 0 && padding <= kernel / 2 && dilation > 0) {
            long[] shape = x.shape();
            if (shape[shape.length - 1] > 0
                    && outSize(shape[shape.length - 1], kernel, stride == null ? kernel : stride, padding, dilation, ceilMode) == 0) {
                checkRank("maxPool1d", x, 1, false);
                shape[shape.length - 1] = 0;
                return Tensor.empty(shape, x.dtype(), x.device());
            }
        }
        return valuesOnly(maxPool("maxPool1d", x, 1, new int[] {kernel}, stride == null ? null : new int[] {stride}, new int[] {padding},
                new int[] {dilation}, ceilMode, false));
    }

    /** {@code max_pool1d(..., return_indices=True)}; a null stride means the kernel size. */
    public static ValuesIndices maxPool1dWithIndices(Tensor x, int kernel, Integer stride, int padding, int dilation, boolean ceilMode) {
        if (Dispatcher.wrapsFrontEnds()) {
            return valuesIndices(Dispatcher.frontEndAll(FrontEndOps.MAX_POOL1D_WITH_INDICES, new Tensor[] {x}, FrontEnds.lists(new int[][] {{kernel},
                    list(stride), {padding}, {dilation}}, ceilMode ? 1 : 0), t -> outputs(maxPool("maxPool1d", t[0], 1, new int[] {kernel},
                    list(stride), new int[] {padding}, new int[] {dilation}, ceilMode, true))));
        }
        return maxPool("maxPool1d", x, 1, new int[] {kernel}, stride == null ? null : new int[] {stride}, new int[] {padding},
                new int[] {dilation}, ceilMode, true);
    }

    /** The declared op ({@link PoolingOps#MAX_POOL2D_WITH_INDICES}): values, and indices only where asked for ({@code wantIndices}). */
    private static ValuesIndices maxPool(String op, Tensor x, int dims, int[] kernel, int[] stride, int[] padding, int[] dilation,
                                         boolean ceilMode, boolean wantIndices) {
        Pool2d g = geometry(op, x, dims, kernel, stride, padding, dilation, ceilMode, true).g;
        double[] geometry = {dims, g.inH(), g.inW(), g.outH(), g.outW(), g.kH(), g.kW(), g.sH(), g.sW(), g.pH(), g.pW(), g.dH(), g.dW()};
        if (!wantIndices) return new ValuesIndices(Dispatcher.call(PoolingOps.MAX_POOL2D_WITH_INDICES, new Tensor[] {x}, geometry), null);
        Tensor[] r = Dispatcher.callAll(PoolingOps.MAX_POOL2D_WITH_INDICES, new Tensor[] {x}, geometry);
        return new ValuesIndices(r[0], r[1]);
    }

    /** The values; the indices, if any, are released (backward keeps its own reference). */
    private static Tensor valuesOnly(ValuesIndices r) {
        if (r.indices() != null) r.indices().close();
        return r.values();
    }

    // ------------------------------------------------------------------ average pooling

    /**
     * {@code avg_pool2d}: kernel, stride (null or empty: the kernel) and padding as 1 or 2 ints; a positive
     * {@code divisorOverride} replaces the window size as divisor.
     */
    public static Tensor avgPool2d(Tensor x, int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad,
                                   long divisorOverride) {
        if (divisorOverride < 0) {
            throw new IllegalArgumentException("avgPool2d: divisor must be not zero, got " + divisorOverride);
        }
        Geometry geo = geometry("avgPool2d", x, 2, kernel, stride, padding, new int[] {1}, ceilMode, false);
        return avgPool(x, geo.g, 2, countIncludePad, divisorOverride);
    }

    /** {@code avg_pool1d} over the last dimension; a null stride means the kernel size. */
    public static Tensor avgPool1d(Tensor x, int kernel, Integer stride, int padding, boolean ceilMode, boolean countIncludePad) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.AVG_POOL1D, new Tensor[] {x}, FrontEnds.lists(new int[][] {{kernel}, list(stride), {padding}},
                    ceilMode ? 1 : 0, countIncludePad ? 1 : 0), t -> averaged1d(t[0], kernel, stride, padding, ceilMode, countIncludePad));
        }
        return averaged1d(x, kernel, stride, padding, ceilMode, countIncludePad);
    }

    private static Tensor averaged1d(Tensor x, int kernel, Integer stride, int padding, boolean ceilMode, boolean countIncludePad) {
        Geometry geo = geometry("avgPool1d", x, 1, new int[] {kernel}, stride == null ? null : new int[] {stride}, new int[] {padding},
                new int[] {1}, ceilMode, false);
        return avgPool(x, geo.g, 1, countIncludePad, 0);
    }

    /** The declared op ({@link PoolingOps#AVG_POOL2D}) over the last one or two dimensions of {@code x}. */
    private static Tensor avgPool(Tensor x, Pool2d g, int spatial, boolean countIncludePad, long divisor) {
        return Dispatcher.call(PoolingOps.AVG_POOL2D, new Tensor[] {x}, avgGeometry(g, spatial, countIncludePad, divisor));
    }

    private static double[] avgGeometry(Pool2d g, int spatial, boolean countIncludePad, long divisor) {
        return new double[] {spatial, g.inH(), g.inW(), g.outH(), g.outW(), g.kH(), g.kW(), g.sH(), g.sW(), g.pH(), g.pW(),
                countIncludePad ? 1 : 0, divisor};
    }

    // ------------------------------------------------------------------ adaptive pooling

    /**
     * {@code adaptive_avg_pool2d} to {@code outputSize} (1 or 2 sizes; -1 keeps the input's, as PyTorch's None). Output cell {@code o} averages input {@code [floor(o * I / O), ceil((o + 1) * I / O))}.
     */
    public static Tensor adaptiveAvgPool2d(Tensor x, long... outputSize) {
        return adaptiveAvg(adaptive("adaptiveAvgPool2d", x, 2, outputSize), 2, x);
    }

    /** {@code adaptive_avg_pool1d} of {@code (N, C, L)} or {@code (C, L)} to length {@code outputSize}. */
    public static Tensor adaptiveAvgPool1d(Tensor x, long outputSize) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.ADAPTIVE_AVG_POOL1D, new Tensor[] {x}, new double[] {outputSize},
                    t -> adaptiveAvg(adaptive("adaptiveAvgPool1d", t[0], 1, new long[] {outputSize}), 1, t[0]));
        }
        return adaptiveAvg(adaptive("adaptiveAvgPool1d", x, 1, new long[] {outputSize}), 1, x);
    }

    /** The declared op ({@link PoolingOps#ADAPTIVE_AVG_POOL2D}) over the last one or two dimensions of {@code x}. */
    private static Tensor adaptiveAvg(Adaptive a, int spatial, Tensor x) {
        return Dispatcher.call(PoolingOps.ADAPTIVE_AVG_POOL2D, new Tensor[] {x}, spatial, a.inH, a.inW, a.outH, a.outW);
    }

    /** {@code adaptive_max_pool2d} with indices (flat {@code h * W + w} per plane); sizes as {@link #adaptiveAvgPool2d}. */
    public static ValuesIndices adaptiveMaxPool2d(Tensor x, long... outputSize) {
        return adaptiveMax("adaptiveMaxPool2d", x, 2, outputSize);
    }

    /** {@code adaptive_max_pool1d} with indices into the last dimension. */
    public static ValuesIndices adaptiveMaxPool1d(Tensor x, long outputSize) {
        if (Dispatcher.wrapsFrontEnds()) {
            return valuesIndices(Dispatcher.frontEndAll(FrontEndOps.ADAPTIVE_MAX_POOL1D, new Tensor[] {x}, new double[] {outputSize},
                    t -> outputs(adaptiveMax("adaptiveMaxPool1d", t[0], 1, new long[] {outputSize}))));
        }
        return adaptiveMax("adaptiveMaxPool1d", x, 1, new long[] {outputSize});
    }

    /** A max pool's outputs as a front end returns them ({@code Dispatcher.frontEndAll}), and back. */
    static java.util.List<Tensor> outputs(ValuesIndices r) {
        return java.util.List.of(r.values(), r.indices());
    }

    static ValuesIndices valuesIndices(java.util.List<Tensor> r) {
        return new ValuesIndices(r.get(0), r.get(1));
    }

    private static ValuesIndices adaptiveMax(String op, Tensor x, int dims, long[] outputSize) {
        Adaptive a = adaptive(op, x, dims, outputSize);
        Tensor[] r = Dispatcher.callAll(PoolingOps.ADAPTIVE_MAX_POOL2D, new Tensor[] {x}, dims, a.inH, a.inW, a.outH, a.outW);
        return new ValuesIndices(r[0], r[1]);
    }

    // ------------------------------------------------------------------ max unpooling

    /**
     * {@code max_unpool2d}: places each value of {@code x} at its index (from {@link #maxPool2dWithIndices}) in a
     * zero plane of size {@code outputSize} (2 ints; null: {@code (in - 1) * stride - 2 * padding + kernel}).
     */
    public static Tensor maxUnpool2d(Tensor x, Tensor indices, int[] kernel, int[] stride, int[] padding, long[] outputSize) {
        String op = "maxUnpool2d";
        checkRank(op, x, 2, false);
        int[] k = pair(op, "kernel_size", kernel, null);
        int[] s = pair(op, "stride", stride, k);
        int[] p = pair(op, "padding", padding, new int[] {0, 0});
        long inH = x.size(-2);
        long inW = x.size(-1);
        long outH;
        long outW;
        if (outputSize == null) {
            outH = (inH - 1) * s[0] - 2L * p[0] + k[0];
            outW = (inW - 1) * s[1] - 2L * p[1] + k[1];
        } else {
            long[] o = outputSize.length > 2 ? Arrays.copyOfRange(outputSize, outputSize.length - 2, outputSize.length) : outputSize;
            if (o.length != 2) {
                throw new IllegalArgumentException(op + ": output_size must have 2 trailing sizes, got " + Arrays.toString(outputSize));
            }
            outH = o[0];
            outW = o[1];
        }
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.MAX_UNPOOL2D, new Tensor[] {x, indices}, new double[] {outH, outW},
                    t -> maxUnpool2d(t[0], t[1], outH, outW));
        }
        return maxUnpool2d(x, indices, outH, outW);
    }

    /** {@code max_unpool2d} into planes of {@code outH x outW}: PyTorch's op, which takes the output size only. */
    static Tensor maxUnpool2d(Tensor x, Tensor indices, long outH, long outW) {
        String op = "maxUnpool2d";
        checkRank(op, x, 2, false);
        if (indices.dtype() != DType.INT64) {
            throw new IllegalArgumentException(op + ": expected indices of dtype int64, got " + indices.dtype());
        }
        if (!Arrays.equals(x.shape(), indices.shape())) {
            throw new IllegalArgumentException(op + ": expected input and indices of the same shape, got " + Shapes.format(x.shape())
                    + " and " + Shapes.format(indices.shape()));
        }
        long inH = x.size(-2);
        long inW = x.size(-1);
        long[] outShape = x.shape();
        outShape[outShape.length - 2] = outH;
        outShape[outShape.length - 1] = outW;
        long planes = x.numel() / Math.max(1, inH * inW);
        try (Tensor idx = indices.reshape(planes, inH * inW)) {
            if (idx.numel() > 0) {
                long max = idx.max().itemLong();
                long min = idx.min().itemLong();
                if (min < 0 || max >= outH * outW) {
                    throw new IndexOutOfBoundsException(op + ": found an invalid max index " + (min < 0 ? min : max)
                            + " (output volumes are of size " + outH + "x" + outW + ")");
                }
            }
            return MemoryScope.run(() -> Torch.zeros(new long[] {planes, outH * outW}, x.dtype(), x.device())
                    .scatter(1, idx, x.reshape(planes, inH * inW)).reshape(outShape));
        }
    }

    // ------------------------------------------------------------------ backward ops (aten's *_backward)

    /** {@code max_pool2d_with_indices_backward}: {@code grad} scattered to the flat {@code indices} of each input plane. */
    public static Tensor maxPool2dBackward(Tensor grad, Tensor indices, long[] inputShape) {
        checkBackward("maxPool2dBackward", grad, indices.shape());
        int r = inputShape.length;
        if (r != 3 && r != 4 || grad.dim() != r || indices.dtype() != DType.INT64) {
            throw new IllegalArgumentException("maxPool2dBackward: expected a 3-D or 4-D input shape, and a gradient and int64 indices"
                    + " of the same rank, got " + Shapes.format(inputShape) + ", " + Shapes.format(grad.shape()) + " and "
                    + indices.dtype());
        }
        checkBackwardInput("maxPool2dBackward", grad, inputShape);
        return Dispatcher.call(PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, new Tensor[] {grad, indices}, 2, inputShape[r - 2],
                inputShape[r - 1], grad.size(-2), grad.size(-1));
    }

    /** {@code avg_pool2d_backward} for an input of {@code inputShape} with these pooling arguments. */
    public static Tensor avgPool2dBackward(Tensor grad, long[] inputShape, int[] kernel, int[] stride, int[] padding, boolean ceilMode,
                                           boolean countIncludePad, long divisorOverride) {
        long[] ones = new long[inputShape.length];
        Arrays.fill(ones, 1);
        // The geometry checks read only shape and dtype: a broadcast view stands in for the input.
        try (Tensor probe = Tensor.empty(ones, grad.dtype(), grad.device()); Tensor input = probe.expand(inputShape)) {
            Geometry geo = geometry("avgPool2dBackward", input, 2, kernel, stride, padding, new int[] {1}, ceilMode, false);
            checkBackward("avgPool2dBackward", grad, geo.outShape);
            return Dispatcher.call(PoolingOps.AVG_POOL2D_BACKWARD, new Tensor[] {grad}, avgGeometry(geo.g, 2, countIncludePad,
                    divisorOverride));
        }
    }

    /** {@code _adaptive_avg_pool2d_backward} for an input of {@code inputShape}. */
    public static Tensor adaptiveAvgPool2dBackward(Tensor grad, long[] inputShape) {
        int r = inputShape.length;
        if (r != 3 && r != 4 || grad.dim() != r) {
            throw new IllegalArgumentException("adaptiveAvgPool2dBackward: expected a 3-D or 4-D input shape and a gradient of the same rank, got "
                    + Shapes.format(inputShape) + " and " + Shapes.format(grad.shape()));
        }
        checkBackwardInput("adaptiveAvgPool2dBackward", grad, inputShape);
        long inH = inputShape[r - 2];
        long inW = inputShape[r - 1];
        return Dispatcher.call(PoolingOps.ADAPTIVE_AVG_POOL2D_BACKWARD, new Tensor[] {grad}, 2, inH, inW, grad.size(-2), grad.size(-1));
    }

    /**
     * A backward op's input shape (3-D or 4-D, as checked by the caller): no negative size, the non-batch
     * sizes non-zero as the forward requires, and the gradient's leading (batch, channel) sizes the same.
     */
    private static void checkBackwardInput(String op, Tensor grad, long[] inputShape) {
        Shapes.checkedNumel(op, inputShape);
        int r = inputShape.length;
        for (int i = r - 3; i < r; i++) {
            if (inputShape[i] == 0) {
                throw new IllegalArgumentException(op + ": expected an input shape with non-zero sizes in its non-batch dimensions, got "
                        + Shapes.format(inputShape));
            }
        }
        for (int i = 0; i < r - 2; i++) {
            if (grad.size(i) != inputShape[i]) {
                throw new IllegalArgumentException(op + ": a gradient of shape " + Shapes.format(grad.shape())
                        + " does not match the input shape " + Shapes.format(inputShape) + " in its leading (batch, channel) dimensions");
            }
        }
    }

    private static void checkBackward(String op, Tensor grad, long[] outShape) {
        if (!Arrays.equals(grad.shape(), outShape)) {
            throw new IllegalArgumentException(op + ": expected a gradient of shape " + Shapes.format(outShape) + ", got "
                    + Shapes.format(grad.shape()));
        }
        if (!grad.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected a floating-point gradient, got " + grad.dtype());
        }
    }

    // ------------------------------------------------------------------ geometry

    private record Geometry(Pool2d g, long[] outShape) {}

    private record Adaptive(long planes, long inH, long inW, long outH, long outW, long[] outShape) {}

    /** Checks a pooling call as PyTorch's {@code pool2d_shape_check} and computes its geometry. */
    private static Geometry geometry(String op, Tensor x, int dims, int[] kernel, int[] stride, int[] padding, int[] dilation,
                                     boolean ceilMode, boolean isMax) {
        checkRank(op, x, dims, !isMax);
        int[] k = dims == 2 ? pair(op, "kernel_size", kernel, null) : new int[] {1, single(op, "kernel_size", kernel)};
        int[] s = dims == 2 ? pair(op, "stride", stride, k) : new int[] {1, stride == null || stride.length == 0 ? k[1] : single(op, "stride", stride)};
        int[] p = dims == 2 ? pair(op, "padding", padding, new int[] {0, 0}) : new int[] {0, single(op, "padding", padding)};
        int[] d = dims == 2 ? pair(op, "dilation", dilation, new int[] {1, 1}) : new int[] {1, single(op, "dilation", dilation)};
        if (k[0] <= 0 || k[1] <= 0) {
            throw new IllegalArgumentException(op + ": kernel size should be greater than zero, but got " + sizes(k, dims));
        }
        if (s[0] <= 0 || s[1] <= 0) {
            throw new IllegalArgumentException(op + ": stride should be greater than zero, but got " + sizes(s, dims));
        }
        if (d[0] <= 0 || d[1] <= 0) {
            throw new IllegalArgumentException(op + ": dilation should be greater than zero, but got " + sizes(d, dims));
        }
        if (p[0] < 0 || p[1] < 0 || p[0] > k[0] / 2 || p[1] > k[1] / 2) {
            throw new IllegalArgumentException(op + ": pad should be at least zero and at most half of kernel size, but got padding "
                    + sizes(p, dims) + " for kernel size " + sizes(k, dims));
        }
        long[] shape = x.shape();
        int r = shape.length;
        long inH = dims == 2 ? shape[r - 2] : 1;
        long inW = shape[r - 1];
        long outH = outSize(inH, k[0], s[0], p[0], d[0], ceilMode);
        long outW = outSize(inW, k[1], s[1], p[1], d[1], ceilMode);
        if (outH < 1 || outW < 1) {
            long[] out = shape.clone();
            if (dims == 2) out[r - 2] = outH;
            out[r - 1] = outW;
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(shape) + " with kernel size " + sizes(k, dims)
                    + ", stride " + sizes(s, dims) + ", padding " + sizes(p, dims) + (isMax ? ", dilation " + sizes(d, dims) : "")
                    + " gives output size " + Shapes.format(out) + ", which is too small");
        }
        long[] outShape = shape.clone();
        if (dims == 2) outShape[r - 2] = outH;
        outShape[r - 1] = outW;
        long planes = Shapes.numel(shape) / (inH * inW);
        return new Geometry(new Pool2d(planes, inH, inW, outH, outW, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]), outShape);
    }

    /** PyTorch's {@code pooling_output_shape}: floor (or ceil) division, and no window may start in the right padding. */
    static long outSize(long in, int k, int s, int p, int d, boolean ceilMode) {
        long o = Math.floorDiv(in + 2L * p - (long) d * (k - 1) - 1 + (ceilMode ? s - 1 : 0), s) + 1;
        if (ceilMode && (o - 1) * s >= in + p) o--;
        return o;
    }

    private static Adaptive adaptive(String op, Tensor x, int dims, long[] outputSize) {
        checkRank(op, x, dims, false);
        if (outputSize == null || outputSize.length < 1 || outputSize.length > dims) {
            throw new IllegalArgumentException(op + ": output_size must be " + (dims == 2 ? "1 or 2 sizes" : "1 size") + ", got "
                    + Arrays.toString(outputSize));
        }
        long[] shape = x.shape();
        int r = shape.length;
        long inH = dims == 2 ? shape[r - 2] : 1;
        long inW = shape[r - 1];
        long outH = dims == 2 ? outputSize[0] : 1;
        long outW = outputSize[outputSize.length - 1];
        // -1 is the 2-d form's None (keep the input's size); the 1-d form has no None.
        long smallest = dims == 2 ? -1 : 0;
        if (outH < smallest || outW < smallest) {
            throw new IllegalArgumentException(op + ": elements of output_size must be greater than or equal to 0"
                    + (dims == 2 ? " (or -1 for None)" : "") + " but received " + Arrays.toString(outputSize));
        }
        if (dims == 2 && outH < 0) outH = inH;
        if (outW < 0) outW = inW;
        long[] outShape = shape.clone();
        if (dims == 2) outShape[r - 2] = outH;
        outShape[r - 1] = outW;
        long planes = Shapes.numel(shape) / (inH * inW);
        return new Adaptive(planes, inH, inW, outH, outW, outShape);
    }

    /**
     * Floating dtype (or int64 where {@code int64Ok}: average pooling, which divides with truncation as PyTorch's),
     * and {@code (C, spatial...)} or {@code (N, C, spatial...)} with non-empty non-batch dimensions (the batch may
     * be empty), as PyTorch's checks.
     */
    private static void checkRank(String op, Tensor x, int dims, boolean int64Ok) {
        x.checkOpen(op);
        if (x.dim() != dims + 1 && x.dim() != dims + 2) {
            throw new IllegalArgumentException(op + ": expected a " + (dims + 1) + "-D (unbatched) or " + (dims + 2)
                    + "-D (batched) input, got shape " + Shapes.format(x.shape()));
        }
        for (int i = x.dim() - dims - 1; i < x.dim(); i++) {
            if (x.size(i) == 0) {
                throw new IllegalArgumentException(op + ": expected an input with non-zero sizes in its non-batch dimensions, got shape "
                        + Shapes.format(x.shape()));
            }
        }
        if (!x.dtype().isFloatingPoint() && !(int64Ok && x.dtype() == DType.INT64)) {
            throw new IllegalArgumentException(op + ": expected a floating-point" + (int64Ok ? " or int64" : "") + " input, got "
                    + x.dtype());
        }
    }

    /** One or two ints as a pair; null or empty gives {@code fallback} (an error when there is none). */
    static int[] pair(String op, String what, int[] v, int[] fallback) {
        if (v == null || v.length == 0) {
            if (fallback == null) throw new IllegalArgumentException(op + ": " + what + " must be given");
            return fallback;
        }
        if (v.length == 1) return new int[] {v[0], v[0]};
        if (v.length == 2) return v.clone();
        throw new IllegalArgumentException(op + ": " + what + " must either be a single int, or a tuple of two ints, got "
                + Arrays.toString(v));
    }

    private static int single(String op, String what, int[] v) {
        if (v == null || v.length != 1) {
            throw new IllegalArgumentException(op + ": " + what + " must be a single int, got " + Arrays.toString(v));
        }
        return v[0];
    }

    private static String sizes(int[] v, int dims) {
        return dims == 2 ? "[" + v[0] + ", " + v[1] + "]" : String.valueOf(v[1]);
    }
}
