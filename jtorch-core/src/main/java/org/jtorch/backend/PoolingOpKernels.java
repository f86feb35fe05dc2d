package org.jtorch.backend;

import java.util.function.BiConsumer;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.PoolingOps;
import org.jtorch.op.StridedView;

/**
 * The kernels of the declared average poolings ({@link PoolingOps}) for one backend, from its {@link SpatialKernels},
 * which take contiguous {@code [planes, H, W]} operands of float32 or float64: other dtypes and layouts are copied into
 * scratch first (float16/bfloat16 to float32, integers to float64) and the result rounded once.
 */
public final class PoolingOpKernels {
    private PoolingOpKernels() {}

    private static final int SPATIAL = 0, IN_H = 1, IN_W = 2, OUT_H = 3, OUT_W = 4, COUNT_INCLUDE_PAD = 11, DIVISOR = 12;

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
        long planes = 1;
        for (int d = 0; d < src.dim() - (int) g[SPATIAL]; d++) planes *= src.size(d);
        DType compute = src.dtype() == DType.FLOAT64 || src.dtype() == DType.INT64 ? DType.FLOAT64 : DType.FLOAT32;
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView s = scratch.operand(src, compute, backward ? new long[] {planes, outH, outW} : new long[] {planes, inH, inW});
            StridedView r = scratch.result(out, compute);
            kernel.accept(s, backward ? r.view(planes, inH, inW) : r.view(planes, outH, outW));
            scratch.finish(r, out);
        }
    }
}
