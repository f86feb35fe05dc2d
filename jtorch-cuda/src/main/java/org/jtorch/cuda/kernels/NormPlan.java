package org.jtorch.cuda.kernels;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import org.jtorch.types.DType;

/**
 * Host-side choices for the batch-norm kernels of {@code norm.cu}, with no GPU involved: entry points per
 * input dtype (float16, bfloat16, float32, float64), the per-channel reductions' block size, how many blocks
 * share a channel ({@link #splits}: one, unless there are too few channels to fill the device) and their grid,
 * the elementwise passes' grid, and the argument bytes, with up to four per-channel tensors packed as
 * {@code jt::ChannelTensors} (address, element stride, dtype code; address 0 for an absent tensor).
 */
public final class NormPlan {
    private NormPlan() {}

    /** The kernels of {@code norm.cu}. */
    public enum Kernel {
        STATS("stats"), STATS_FINISH("stats_finish"), STATS_ROWS("stats_rows"), APPLY("apply"), BACKWARD_SUMS("backward_sums"),
        BACKWARD_SUMS_ROWS("backward_sums_rows"), BACKWARD_INPUT("backward_input"),
        /** The three backward kernels of {@code relu(batch_norm(x))} in training: their arguments and then {@link #reluArgs}. */
        RELU_BACKWARD_SUMS("relu_backward_sums"), RELU_BACKWARD_SUMS_ROWS("relu_backward_sums_rows"), RELU_BACKWARD_INPUT("relu_backward_input");

        private final String name;

        Kernel(String name) {
            this.name = name;
        }
    }

    /** {@code JT_CHANNEL_TENSORS} of {@code norm.cu}. */
    public static final int CHANNEL_TENSORS = 4;

    /** {@code jt::ChannelTensors}: char* data[4]; i64 stride[4]; int dtype[4] (80 bytes). */
    public static final StructLayout CHANNEL_TENSORS_LAYOUT = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(CHANNEL_TENSORS, JAVA_LONG).withName("data"),
            MemoryLayout.sequenceLayout(CHANNEL_TENSORS, JAVA_LONG).withName("stride"),
            MemoryLayout.sequenceLayout(CHANNEL_TENSORS, JAVA_INT).withName("dtype"));

    /** A per-channel tensor as a kernel reads it: device address, element stride, dtype. */
    public record Channel(long address, long stride, DType dtype) {}

    /** Most threads a per-channel reduction block uses. */
    public static final int MAX_REDUCTION_THREADS = 512;

    /** {@code jt_norm_<kernel>_<f16|bf16|f32|f64>}; other dtypes throw naming the op, dtype and device. */
    public static String entry(Kernel k, String op, DType t) {
        if (!t.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": the CUDA batch-norm kernels take floating dtypes, got " + t + " (device cuda)");
        }
        return "jt_norm_" + k.name + "_" + ElementwisePlan.suffix(t);
    }

    /** Threads of a per-channel reduction over {@code count} elements: rounded up to a warp, 32..{@value #MAX_REDUCTION_THREADS}. */
    public static int reductionThreads(long count) {
        long warps = Math.max(1, (count + 31) / 32);
        return (int) Math.min(MAX_REDUCTION_THREADS, 32 * warps);
    }

    /** Blocks of a per-channel reduction over {@code channels * splits} parts, at most {@link LaunchGeometry#BLOCKS_PER_SM} per SM (grid-stride beyond). */
    public static int reductionBlocks(long channels, int splits, int multiprocessors) {
        if (channels <= 0) return 0;
        return (int) Math.min(channels * splits, (long) multiprocessors * LaunchGeometry.BLOCKS_PER_SM);
    }

    /** Elements a split part should at least read, so that its block's fixed cost stays small. */
    public static final long MIN_ELEMENTS_PER_SPLIT = 8L * MAX_REDUCTION_THREADS;
    /** Most blocks sharing one channel (the finish kernel adds this many partial sums per channel). */
    public static final int MAX_SPLITS = 1024;

    /**
     * Blocks per channel of a reduction over {@code count} elements in each of {@code channels} channels: enough for
     * about {@code 4 * multiprocessors} blocks in all (a full device at {@value #MAX_REDUCTION_THREADS} threads a
     * block), but no part under {@link #MIN_ELEMENTS_PER_SPLIT} elements; 1 when the channels alone fill the device.
     */
    public static int splits(long channels, long count, int multiprocessors) {
        if (channels <= 0 || count <= 0) return 1;
        long target = 4L * multiprocessors;
        long wanted = (target + channels - 1) / channels;
        long worthwhile = Math.max(1, count / MIN_ELEMENTS_PER_SPLIT);
        return (int) Math.max(1, Math.min(Math.min(wanted, worthwhile), MAX_SPLITS));
    }

    /** {@code JT_ROWS_THREADS} of {@code norm.cu}: the block size of the {@code [n, c]} ({@code s == 1}) reductions. */
    public static final int ROWS_THREADS = 256;
    /** Channels one block of the {@code [n, c]} reductions covers (one a lane). */
    public static final int ROW_TILE = 32;

    /**
     * Whether the reductions over {@code [n, c, s]} take the {@code [n, c]} kernels ({@code *_rows}: a warp reads 32
     * neighbouring channels of a row) rather than one channel per block, which would read with stride {@code c}.
     */
    public static boolean rows(long s) {
        return s == 1;
    }

    /** The reduction's groups of channels one block (or split part) covers: channels, or tiles of {@value #ROW_TILE} for rows. */
    public static long reductionGroups(long c, long s) {
        return rows(s) ? (c + ROW_TILE - 1) / ROW_TILE : c;
    }

    /** Threads of the reduction blocks over {@code [n, c, s]}. */
    public static int reductionThreads(long n, long s) {
        return rows(s) ? ROWS_THREADS : reductionThreads(n * s);
    }

    /** Splits of the reduction over {@code [n, c, s]}: {@link #splits} of its groups, a rows tile counting its 32 channels' elements. */
    public static int splits(long n, long c, long s, int multiprocessors) {
        return rows(s) ? splits(reductionGroups(c, s), n * ROW_TILE, multiprocessors) : splits(c, n * s, multiprocessors);
    }

    /** Doubles of the split reductions' workspace: two partial sums per channel and split (0 when not split). */
    public static long partials(long channels, int splits) {
        return splits == 1 ? 0 : 2 * channels * splits;
    }

    /** Blocks of an elementwise pass over {@code n} elements, {@link LaunchGeometry#THREADS} threads each. */
    public static int elementwiseBlocks(long n, int multiprocessors) {
        return LaunchGeometry.blocks(n, 1, multiprocessors);
    }

    /** The bytes of {@code jt::ChannelTensors} for up to four tensors (null entries or a shorter array: absent). */
    public static MemorySegment packChannels(Arena arena, Channel... channels) {
        if (channels.length > CHANNEL_TENSORS) {
            throw new IllegalArgumentException("jt::ChannelTensors holds at most " + CHANNEL_TENSORS + " tensors, got " + channels.length);
        }
        MemorySegment m = arena.allocate(CHANNEL_TENSORS_LAYOUT);
        m.fill((byte) 0);
        for (int i = 0; i < channels.length; i++) {
            Channel c = channels[i];
            if (c == null) continue;
            m.set(JAVA_LONG, 8L * i, c.address());
            m.set(JAVA_LONG, 8L * (CHANNEL_TENSORS + i), c.stride());
            m.set(JAVA_INT, 16L * CHANNEL_TENSORS + 4L * i, c.dtype().ordinal());
        }
        return m;
    }

    /**
     * {@code jt_norm_stats_T(const T* x, jt_i64 n, c, s, ChannelTensors {mean, var}, double* partial, int splits)}, and
     * {@code jt_norm_stats_finish_T} with the same parameters.
     */
    public static KernelArgs statsArgs(Arena arena, long x, long n, long c, long s, Channel mean, Channel var, long partial, int splits) {
        return new KernelArgs(arena).pointer(x).i64(n).i64(c).i64(s).struct(packChannels(arena, mean, var)).pointer(partial).i32(splits);
    }

    /** {@code jt_norm_apply_T(const T* x, T* out, jt_i64 n, c, s, ChannelTensors {mean, invstd, weight, bias})}. */
    public static KernelArgs applyArgs(Arena arena, long x, long out, long n, long c, long s, Channel mean, Channel invstd,
                                       Channel weight, Channel bias) {
        return new KernelArgs(arena).pointer(x).pointer(out).i64(n).i64(c).i64(s).struct(packChannels(arena, mean, invstd, weight, bias));
    }

    /**
     * {@code jt_norm_backward_sums_T(const T* grad, const T* x, jt_i64 n, c, s, ChannelTensors {mean, invstd, grad_weight,
     * grad_bias}, double* coef (0: none), const char* weight (0: none), jt_i64 weight_stride, int weight_dtype,
     * double* partial, int splits)}.
     */
    public static KernelArgs backwardSumsArgs(Arena arena, long grad, long x, long n, long c, long s, Channel mean, Channel invstd,
                                              Channel gradWeight, Channel gradBias, long coef, Channel weight, long partial, int splits) {
        KernelArgs a = new KernelArgs(arena).pointer(grad).pointer(x).i64(n).i64(c).i64(s);
        return finishParameters(arena, a, mean, invstd, gradWeight, gradBias, coef, weight).pointer(partial).i32(splits);
    }

    /**
     * {@code jt_norm_backward_finish(jt_i64 n, c, s, ChannelTensors {mean, invstd, grad_weight, grad_bias}, double* coef,
     * const char* weight, jt_i64 weight_stride, int weight_dtype, const double* partial, int splits)} (one entry for every dtype).
     */
    public static KernelArgs backwardFinishArgs(Arena arena, long n, long c, long s, Channel mean, Channel invstd, Channel gradWeight,
                                                Channel gradBias, long coef, Channel weight, long partial, int splits) {
        KernelArgs a = new KernelArgs(arena).i64(n).i64(c).i64(s);
        return finishParameters(arena, a, mean, invstd, gradWeight, gradBias, coef, weight).pointer(partial).i32(splits);
    }

    /** {@code jt_norm_stats_rows_T(const T* x, jt_i64 n, c, ChannelTensors {mean, var}, double* partial, int splits)}. */
    public static KernelArgs statsRowsArgs(Arena arena, long x, long n, long c, Channel mean, Channel var, long partial, int splits) {
        return new KernelArgs(arena).pointer(x).i64(n).i64(c).struct(packChannels(arena, mean, var)).pointer(partial).i32(splits);
    }

    /** {@code jt_norm_backward_sums_rows_T}: {@link #backwardSumsArgs} without {@code s}. */
    public static KernelArgs backwardSumsRowsArgs(Arena arena, long grad, long x, long n, long c, Channel mean, Channel invstd,
                                                  Channel gradWeight, Channel gradBias, long coef, Channel weight, long partial, int splits) {
        KernelArgs a = new KernelArgs(arena).pointer(grad).pointer(x).i64(n).i64(c);
        return finishParameters(arena, a, mean, invstd, gradWeight, gradBias, coef, weight).pointer(partial).i32(splits);
    }

    /** The entry of the backward's finish kernel. */
    public static final String BACKWARD_FINISH = "jt_norm_backward_finish";

    private static KernelArgs finishParameters(Arena arena, KernelArgs a, Channel mean, Channel invstd, Channel gradWeight,
                                               Channel gradBias, long coef, Channel weight) {
        return a.struct(packChannels(arena, mean, invstd, gradWeight, gradBias)).pointer(coef)
                .pointer(weight == null ? 0 : weight.address()).i64(weight == null ? 0 : weight.stride())
                .i32(weight == null ? DType.FLOAT32.ordinal() : weight.dtype().ordinal());
    }

    /**
     * {@code jt_norm_backward_input_T(const T* grad, const T* x, T* grad_in, jt_i64 n, c, s, ChannelTensors {mean, invstd,
     * weight}, const double* coef (0: evaluation, grad * invstd * weight))}.
     */
    public static KernelArgs backwardInputArgs(Arena arena, long grad, long x, long gradIn, long n, long c, long s, Channel mean,
                                               Channel invstd, Channel weight, long coef) {
        return new KernelArgs(arena).pointer(grad).pointer(x).pointer(gradIn).i64(n).i64(c).i64(s)
                .struct(packChannels(arena, mean, invstd, weight)).pointer(coef);
    }

    /**
     * The last parameter of the {@code jt_norm_relu_backward_*} entries, after their unmasked siblings' arguments:
     * {@code ChannelTensors {mean, invstd, weight, bias}}, from which the ReLU's input is recomputed.
     */
    public static KernelArgs reluArgs(Arena arena, KernelArgs args, Channel mean, Channel invstd, Channel weight, Channel bias) {
        return args.struct(packChannels(arena, mean, invstd, weight, bias));
    }

    /** Doubles of the training backward's coefficient workspace: (invstd * weight, k, mean(g)) per channel. */
    public static long coefficients(long channels) {
        return 3 * channels;
    }
}
