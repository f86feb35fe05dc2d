package org.jtorch.cuda.kernels;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.Locale;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.types.DType;

/**
 * Host-side choices for the pooling kernels of {@code pool.cu}, with no GPU involved: the entry point for
 * an op and dtype (float32 and float64 only, as {@link org.jtorch.backend.SpatialKernels} promises), how
 * many work items a launch covers (one thread each, grid-stride: outputs for the forward kernels and for
 * the max-pooling scatter's gradient elements, inputs for the gathering average-pooling gradients), and the
 * argument bytes, with {@code jt::Pool2d} packed as the C struct.
 */
public final class PoolPlan {
    private PoolPlan() {}

    /** The kernels of {@code pool.cu}, each named as the {@link org.jtorch.backend.SpatialKernels} method it serves. */
    public enum Op {
        MAX("maxPool2d"), MAX_BACKWARD("maxPoolBackward"), AVG("avgPool2d"), AVG_BACKWARD("avgPool2dBackward"),
        ADAPTIVE_AVG("adaptiveAvgPool2d"), ADAPTIVE_AVG_BACKWARD("adaptiveAvgPool2dBackward"), ADAPTIVE_MAX("adaptiveMaxPool2d");

        private final String method;

        Op(String method) {
            this.method = method;
        }

        /** The backend method's name, for error messages. */
        public String method() {
            return method;
        }
    }

    /** {@code jt::Pool2d}: i64 planes, in_h, in_w, out_h, out_w; int k_h, k_w, s_h, s_w, p_h, p_w, d_h, d_w (72 bytes). */
    public static final StructLayout POOL2D = MemoryLayout.structLayout(
            JAVA_LONG.withName("planes"), JAVA_LONG.withName("in_h"), JAVA_LONG.withName("in_w"), JAVA_LONG.withName("out_h"),
            JAVA_LONG.withName("out_w"), JAVA_INT.withName("k_h"), JAVA_INT.withName("k_w"), JAVA_INT.withName("s_h"),
            JAVA_INT.withName("s_w"), JAVA_INT.withName("p_h"), JAVA_INT.withName("p_w"), JAVA_INT.withName("d_h"),
            JAVA_INT.withName("d_w"));

    /**
     * {@code jt_pool_<op>_<f32|f64>}; other dtypes throw {@link IllegalArgumentException} naming the method, dtype
     * and device (the front end converts them before calling).
     */
    public static String entry(Op op, DType t) {
        if (t != DType.FLOAT32 && t != DType.FLOAT64) {
            throw new IllegalArgumentException(op.method() + ": the CUDA pooling kernels take float32 or float64, got " + t
                    + " (device cuda)");
        }
        return "jt_pool_" + op.name().toLowerCase(Locale.ROOT) + "_" + ElementwisePlan.suffix(t);
    }

    /** Blocks of {@link LaunchGeometry#THREADS} for one thread per item (0: no launch). */
    public static int blocks(long items, int multiprocessors) {
        return LaunchGeometry.blocks(items, 1, multiprocessors);
    }

    /** The bytes of {@code jt::Pool2d} for {@code g}. */
    public static MemorySegment packPool2d(Arena arena, Pool2d g) {
        MemorySegment m = arena.allocate(POOL2D);
        long[] longs = {g.planes(), g.inH(), g.inW(), g.outH(), g.outW()};
        int[] ints = {g.kH(), g.kW(), g.sH(), g.sW(), g.pH(), g.pW(), g.dH(), g.dW()};
        for (int i = 0; i < longs.length; i++) m.set(JAVA_LONG, 8L * i, longs[i]);
        for (int i = 0; i < ints.length; i++) m.set(JAVA_INT, 8L * longs.length + 4L * i, ints[i]);
        return m;
    }

    /** {@code jt_pool_max_T(const T* x, T* out, jt_i64* indices (0: none), Pool2d g)}. */
    public static KernelArgs maxArgs(Arena arena, long x, long out, long indices, Pool2d g) {
        return new KernelArgs(arena).pointer(x).pointer(out).pointer(indices).struct(packPool2d(arena, g));
    }

    /** {@code jt_pool_max_backward_T(const T* grad_out, const jt_i64* indices, T* grad_in, jt_i64 planes, jt_i64 n, jt_i64 m)}. */
    public static KernelArgs maxBackwardArgs(Arena arena, long gradOut, long indices, long gradIn, long planes, long n, long m) {
        return new KernelArgs(arena).pointer(gradOut).pointer(indices).pointer(gradIn).i64(planes).i64(n).i64(m);
    }

    /**
     * {@code jt_pool_avg_T(const T* x, T* out, Pool2d g, int count_include_pad, jt_i64 divisor_override)}, and
     * {@code jt_pool_avg_backward_T(grad_out, grad_in, ...)} with the same parameters.
     */
    public static KernelArgs avgArgs(Arena arena, long in, long out, Pool2d g, boolean countIncludePad, long divisorOverride) {
        return new KernelArgs(arena).pointer(in).pointer(out).struct(packPool2d(arena, g)).i32(countIncludePad ? 1 : 0)
                .i64(divisorOverride);
    }

    /**
     * {@code jt_pool_adaptive_avg_T(const T* x, T* out, jt_i64 planes, in_h, in_w, out_h, out_w)}, and its backward
     * {@code (grad_out, grad_in, ...)} with the same parameters; the sizes are always the forward's input and output.
     */
    public static KernelArgs adaptiveArgs(Arena arena, long in, long out, long planes, long inH, long inW, long outH, long outW) {
        return new KernelArgs(arena).pointer(in).pointer(out).i64(planes).i64(inH).i64(inW).i64(outH).i64(outW);
    }

    /** {@code jt_pool_adaptive_max_T(const T* x, T* out, jt_i64* indices, jt_i64 planes, in_h, in_w, out_h, out_w)}. */
    public static KernelArgs adaptiveMaxArgs(Arena arena, long x, long out, long indices, long planes, long inH, long inW, long outH,
                                             long outW) {
        return new KernelArgs(arena).pointer(x).pointer(out).pointer(indices).i64(planes).i64(inH).i64(inW).i64(outH).i64(outW);
    }
}
