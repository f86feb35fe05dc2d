package org.jtorch.backend;

import java.util.function.BiConsumer;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.PoolingOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the declared poolings ({@link PoolingOps}: average, adaptive average, max with indices and their backwards) for one backend, from its {@link SpatialKernels},
 * which take contiguous {@code [planes, H, W]} operands of float32 or float64: other dtypes and layouts are copied into
 * scratch first (float16/bfloat16 to float32, integers to float64) and the result rounded once.
 */
public final class PoolingOpKernels {
    private PoolingOpKernels() {}

    private static final int SPATIAL = 0, IN_H = 1, IN_W = 2, OUT_H = 3, OUT_W = 4, COUNT_INCLUDE_PAD = 11, DIVISOR = 12;
    private static final int DILATION_H = 11, DILATION_W = 12;

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, PoolingOps.AVG_POOL2D.kernel(), (out, in, g) -> planes(backend, in[0], out, g, false,
                (i, o) -> backend.spatial().avgPool2d(i, o, pool2d(i, g), g[COUNT_INCLUDE_PAD] != 0, (long) g[DIVISOR])));
        KernelRegistry.register(type, PoolingOps.AVG_POOL2D_BACKWARD.kernel(), (out, in, g) -> planes(backend, in[0], out, g, true,
                (go, gi) -> backend.spatial().avgPool2dBackward(go, gi, pool2d(go, g), g[COUNT_INCLUDE_PAD] != 0, (long) g[DIVISOR])));
        KernelRegistry.register(type, PoolingOps.ADAPTIVE_AVG_POOL2D.kernel(), (out, in, g) -> planes(backend, in[0], out, g, false,
                (i, o) -> backend.spatial().adaptiveAvgPool2d(i, o)));
        KernelRegistry.register(type, PoolingOps.ADAPTIVE_AVG_POOL2D_BACKWARD.kernel(), (out, in, g) -> planes(backend, in[0], out, g,
                true, (go, gi) -> backend.spatial().adaptiveAvgPool2dBackward(go, gi)));
        KernelRegistry.registerMulti(type, PoolingOps.MAX_POOL2D_WITH_INDICES.kernel(), (outs, in, g) ->
                withIndices(backend, in[0], outs, g, (i, o, idx) -> backend.spatial().maxPool2d(i, o, idx, maxPool2d(i, g))));
        KernelRegistry.registerMulti(type, PoolingOps.ADAPTIVE_MAX_POOL2D.kernel(), (outs, in, g) ->
                withIndices(backend, in[0], outs, g, (i, o, idx) -> backend.spatial().adaptiveMaxPool2d(i, o, idx)));
        KernelRegistry.register(type, PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD.kernel(), (out, in, g) -> {
            // [planes, 1, n] rows: the kernel zeroes each input-sized row and adds the gradient at the indices
            long planes = planes(in[0], g), inPlane = (long) g[IN_H] * (long) g[IN_W], outPlane = (long) g[OUT_H] * (long) g[OUT_W];
            DType compute = computeType(in[0].dtype());
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView go = scratch.operand(in[0], compute, new long[] {planes, 1, outPlane});
                StridedView idx = scratch.operand(in[1], DType.INT64, new long[] {planes, 1, outPlane});
                StridedView r = scratch.result(out, compute);
                backend.spatial().maxPoolBackward(go, idx, r.view(planes, 1, inPlane));
                scratch.finish(r, out);
            }
        });
        KernelRegistry.register(type, PoolingOps.MAX_POOL_DOUBLE_BACKWARD.kernel(), (out, in, g) -> {
            // a gather along each plane's row: exact in every dtype, so no compute dtype
            long planes = planes(in[0], g), inPlane = (long) g[IN_H] * (long) g[IN_W], outPlane = (long) g[OUT_H] * (long) g[OUT_W];
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView self = scratch.operand(in[0], in[0].dtype(), new long[] {planes, inPlane});
                StridedView idx = scratch.operand(in[1], DType.INT64, new long[] {planes, outPlane});
                backend.indexing().gather(self, 1, idx, out.view(planes, outPlane));
            }
        });
    }

    /** A max pooling's window geometry over {@code planes}. */
    private static Pool2d maxPool2d(StridedView planes, double[] g) {
        return new Pool2d(planes.size(0), (long) g[IN_H], (long) g[IN_W], (long) g[OUT_H], (long) g[OUT_W], (int) g[5], (int) g[6],
                (int) g[7], (int) g[8], (int) g[9], (int) g[10], (int) g[DILATION_H], (int) g[DILATION_W]);
    }

    /** A max pooling's kernel over {@code [planes, H, W]} operands: input, values, int64 indices. */
    @FunctionalInterface
    private interface IndexedPool {
        void run(StridedView in, StridedView out, StridedView indices);
    }

    /**
     * Runs {@code kernel} on {@code src} seen as {@code [planes, in_h, in_w]} of the compute dtype into {@code outs}' values
     * (rounded once) and indices (none where the dispatcher skipped them), each seen as {@code [planes, out_h, out_w]}.
     */
    private static void withIndices(Backend backend, StridedView src, StridedView[] outs, double[] g, IndexedPool kernel) {
        long planes = planes(src, g), inH = (long) g[IN_H], inW = (long) g[IN_W], outH = (long) g[OUT_H], outW = (long) g[OUT_W];
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView s = scratch.operand(src, computeType(src.dtype()), new long[] {planes, inH, inW});
            StridedView r = scratch.result(outs[0], s.dtype());
            kernel.run(s, r.view(planes, outH, outW), outs[1] == null ? null : outs[1].view(planes, outH, outW));
            scratch.finish(r, outs[0]);
        }
    }

    /** The number of pooled planes of {@code v}: the product of its sizes before the pooled dimensions. */
    private static long planes(StridedView v, double[] g) {
        long planes = 1;
        for (int d = 0; d < v.dim() - (int) g[SPATIAL]; d++) planes *= v.size(d);
        return planes;
    }

    /** float64 and int64 compute in float64; the other dtypes in float32 (rounded once). */
    private static DType computeType(DType t) {
        return t == DType.FLOAT64 || t == DType.INT64 ? DType.FLOAT64 : DType.FLOAT32;
    }

    /** An average pooling's window geometry over {@code planes} (dilation 1). */
    private static Pool2d pool2d(StridedView planes, double[] g) {
        return new Pool2d(planes.size(0), (long) g[IN_H], (long) g[IN_W], (long) g[OUT_H], (long) g[OUT_W], (int) g[5], (int) g[6],
                (int) g[7], (int) g[8], (int) g[9], (int) g[10], 1, 1);
    }

    /**
     * Runs {@code kernel(src, dst)} on {@code src} and {@code out} seen as {@code [planes, H, W]} of the compute dtype: from
     * input-sized to output-sized planes, or the reverse for a {@code backward}.
     */
    private static void planes(Backend backend, StridedView src, StridedView out, double[] g, boolean backward,
                               BiConsumer<StridedView, StridedView> kernel) {
        long inH = (long) g[IN_H], inW = (long) g[IN_W], outH = (long) g[OUT_H], outW = (long) g[OUT_W];
        long planes = planes(src, g);
        DType compute = computeType(src.dtype());
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView s = scratch.operand(src, compute, backward ? new long[] {planes, outH, outW} : new long[] {planes, inH, inW});
            StridedView r = scratch.result(out, compute);
            kernel.accept(s, backward ? r.view(planes, inH, inW) : r.view(planes, outH, outW));
            scratch.finish(r, out);
        }
    }
}
