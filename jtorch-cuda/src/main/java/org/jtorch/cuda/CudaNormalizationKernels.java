package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.Supplier;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.LayerNormPlan;
import org.jtorch.cuda.kernels.NormPlan;
import org.jtorch.cuda.kernels.NormPlan.Channel;
import org.jtorch.cuda.kernels.NormPlan.Kernel;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link NormalizationKernels} on a CUDA device: the batch-norm kernels of {@code norm.cu} (compiled whole,
 * as PTX through the disk cache) on the device's current stream. Statistics and the backward's sums are
 * per-channel reductions in double (one block a channel, or several with a finish launch adding their partial
 * sums when there are too few channels to fill the device: {@link NormPlan#splits}; {@code [n, c]} blocks take
 * kernels with one channel a lane, so that reads are coalesced); the forward apply and the input gradient are
 * elementwise passes. Per-channel tensors are read and written where they lie (any stride, any floating
 * dtype, converted in the kernel); nothing is copied to the host. The training backward keeps its
 * per-channel coefficients in a {@code 3c}-double device temporary between its two launches.
 *
 * <p>{@code x}, {@code gradOut}, {@code out} and {@code gradInput} must be contiguous and of one floating
 * dtype, as the front end makes them; anything else throws naming the method.
 */
final class CudaNormalizationKernels implements NormalizationKernels {
    private static final String FILE = "norm.cu";

    private final Supplier<CudaKernels> kernels;

    CudaNormalizationKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    /** The block tensors of one call: contiguous, of {@code x}'s dtype, on its device. */
    private static void checkBlocks(String op, StridedView x, StridedView... blocks) {
        for (StridedView t : blocks) {
            if (t == null) continue;
            if (!t.isContiguous() || t.dtype() != x.dtype() || !t.device().equals(x.device())) {
                throw new IllegalArgumentException(op + ": the CUDA kernels take contiguous [n, c, s] blocks of one dtype on one device,"
                        + " got " + t.dtype() + " " + java.util.Arrays.toString(t.shape()) + " strides "
                        + java.util.Arrays.toString(t.strides()) + " on " + t.device() + " next to " + x.dtype() + " on " + x.device());
            }
        }
    }

    /** A per-channel tensor as the kernels read it (null stays null). */
    private static Channel channel(String op, StridedView t, Device device) {
        if (t == null) return null;
        if (!t.device().equals(device) || !t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": per-channel tensors must be floating and on " + device + ", got " + t.dtype()
                    + " on " + t.device());
        }
        return new Channel(t.address(), t.dim() == 0 ? 0 : t.stride(0), t.dtype());
    }

    private static long addr(StridedView t) {
        return t == null ? 0 : t.address();
    }

    /** A reduction's blocks per channel (or per tile of channels, for {@code [n, c]} blocks) on {@code device}. */
    private int splits(Device device, long n, long c, long s) {
        return NormPlan.splits(n, c, s, kernels.get().multiprocessors(device));
    }

    /** The double workspace of a split reduction's partial sums, or null when channels are not split. */
    private static StridedView partials(Device device, long c, int splits) {
        long n = NormPlan.partials(c, splits);
        return n == 0 ? null : CudaKernels.scratch(device, new long[] {n}, DType.FLOAT64);
    }

    /** A reduction over {@code [n, c, s]}: one block per channel (or tile of channels) and split part. */
    private void perChannel(Device device, String entry, long n, long c, long s, int splits, KernelArgs args) {
        CudaKernels k = kernels.get();
        long stream = k.currentStream(device);
        int blocks = NormPlan.reductionBlocks(NormPlan.reductionGroups(c, s), splits, k.multiprocessors(device));
        k.launchRows(k.wholeFileFunction(device, FILE, entry), blocks, NormPlan.reductionThreads(n, s), stream, args);
    }

    private void elementwise(Device device, String entry, long elements, KernelArgs args) {
        CudaKernels k = kernels.get();
        long stream = k.currentStream(device);
        int blocks = NormPlan.elementwiseBlocks(elements, k.multiprocessors(device));
        k.launchRows(k.wholeFileFunction(device, FILE, entry), blocks, LaunchGeometry.THREADS, stream, args);
    }

    /** The synchronised batch norm's per-channel kernels between ranks ({@code syncbn.cu}). */
    private static final String SYNC_FILE = "syncbn.cu";

    /** {@code t}'s address, its stride of dimension {@code d} in bytes and its dtype code (a null tensor: 0, 0, float32). */
    private static KernelArgs operand(KernelArgs args, StridedView t, int... dims) {
        args.pointer(addr(t));
        for (int d : dims) args.i64(t == null ? 0 : t.strides()[d] * t.dtype().byteSize());
        return args.i32(t == null ? DType.FLOAT32.ordinal() : t.dtype().ordinal());
    }

    /** Every operand (nulls skipped) on {@code device}. */
    private static void onDevice(String op, Device device, StridedView... operands) {
        for (StridedView t : operands) {
            if (t != null && !t.device().equals(device)) {
                throw new IllegalArgumentException(op + ": every operand must be on " + device + ", got one on " + t.device());
            }
        }
    }

    /** One thread a channel, grid-stride. */
    private void perChannelThreads(Device device, String entry, long c, KernelArgs args) {
        CudaKernels k = kernels.get();
        k.launchRows(k.wholeFileFunction(device, SYNC_FILE, entry), LaunchGeometry.blocks(c, 1, k.multiprocessors(device)),
                LaunchGeometry.THREADS, k.currentStream(device), args);
    }

    @Override
    public boolean syncBatchNormGather(StridedView mean, StridedView invstd, StridedView counts, StridedView runningMean,
                                       StridedView runningVar, double momentum, double eps, StridedView meanOut, StridedView invstdOut) {
        Device device = mean.device();
        onDevice("batch_norm_gather_stats_with_counts", device, invstd, counts, runningMean, runningVar, meanOut, invstdOut);
        long c = mean.size(1);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena);
            operand(args, mean, 0, 1);
            operand(args, invstd, 0, 1);
            operand(args, counts, 0);
            operand(args, runningMean, 0);
            operand(args, runningVar, 0);
            operand(args, meanOut, 0);
            operand(args, invstdOut, 0);
            args.i64(mean.size(0)).i64(c).f64(momentum).f64(eps);
            perChannelThreads(device, "jt_sync_bn_gather", c, args);
        }
        return true;
    }

    @Override
    public boolean syncBatchNormCoefficients(StridedView invstd, StridedView weight, StridedView sumDy, StridedView sumDyXmu,
                                             StridedView counts, StridedView coef) {
        Device device = invstd.device();
        onDevice("batch_norm_backward_elemt", device, weight, sumDy, sumDyXmu, counts, coef);
        long c = invstd.size(0);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena);
            operand(args, invstd, 0);
            operand(args, weight, 0);
            operand(args, sumDy, 0);
            operand(args, sumDyXmu, 0);
            operand(args, counts, 0);
            args.pointer(coef.address()).i64(counts.size(0)).i64(c);
            perChannelThreads(device, "jt_sync_bn_coefficients", c, args);
        }
        return true;
    }

    @Override
    public void batchNormStats(StridedView x, long n, long c, long s, StridedView mean, StridedView var) {
        String op = "batchNormStats";
        boolean rows = NormPlan.rows(s);
        String entry = NormPlan.entry(rows ? Kernel.STATS_ROWS : Kernel.STATS, op, x.dtype());
        checkBlocks(op, x);
        Device d = x.device();
        int splits = splits(d, n, c, s);
        StridedView partial = partials(d, c, splits);
        try (Arena arena = Arena.ofConfined()) {
            Channel m = channel(op, mean, d), v = channel(op, var, d);
            perChannel(d, entry, n, c, s, splits, rows
                    ? NormPlan.statsRowsArgs(arena, addr(x), n, c, m, v, addr(partial), splits)
                    : NormPlan.statsArgs(arena, addr(x), n, c, s, m, v, addr(partial), splits));
            if (partial != null) {
                elementwise(d, NormPlan.entry(Kernel.STATS_FINISH, op, x.dtype()), c,
                        NormPlan.statsArgs(arena, addr(x), n, c, s, m, v, addr(partial), splits));
            }
        } finally {
            CudaKernels.free(partial);
        }
    }

    @Override
    public void batchNormApply(StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                               StridedView weight, StridedView bias, StridedView out) {
        String op = "batchNormApply";
        String entry = NormPlan.entry(Kernel.APPLY, op, x.dtype());
        checkBlocks(op, x, out);
        Device d = x.device();
        try (Arena arena = Arena.ofConfined()) {
            elementwise(d, entry, n * c * s, NormPlan.applyArgs(arena, addr(x), addr(out), n, c, s, channel(op, mean, d),
                    channel(op, invstd, d), channel(op, weight, d), channel(op, bias, d)));
        }
    }

    @Override
    public void batchNormBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean,
                                  StridedView invstd, StridedView weight,
                                  boolean train, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        backward("batchNormBackward", gradOut, x, n, c, s, mean, invstd, weight, null, false, train, gradInput, gradWeight, gradBias);
    }

    /** {@code norm.cu}'s training input-gradient pass, its coefficients read from {@code coef} rather than written by the sums. */
    @Override
    public void batchNormGradInput(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView coef,
                                   StridedView gradInput) {
        String op = "batchNormGradInput";
        checkBlocks(op, x, gradOut, gradInput);
        Device d = x.device();
        if (!coef.isContiguous() || coef.dtype() != DType.FLOAT64 || !coef.device().equals(d) || coef.numel() != NormPlan.coefficients(c)) {
            throw new IllegalArgumentException(op + ": expected contiguous float64 coefficients [" + c + ", 3] on " + d + ", got "
                    + coef.dtype() + " " + java.util.Arrays.toString(coef.shape()) + " on " + coef.device());
        }
        try (Arena arena = Arena.ofConfined()) {
            elementwise(d, NormPlan.entry(Kernel.BACKWARD_INPUT, op, x.dtype()), n * c * s, NormPlan.backwardInputArgs(arena, addr(gradOut),
                    addr(x), addr(gradInput), n, c, s, channel(op, mean, d), null, null, addr(coef)));
        }
    }

    /** The masked kernels of {@code norm.cu}: the ReLU's input recomputed from {@code x} as each pass reads the gradient. */
    @Override
    public boolean batchNormReluBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                                         StridedView weight, StridedView bias, StridedView gradInput, StridedView gradWeight,
                                         StridedView gradBias) {
        backward("batchNormReluBackward", gradOut, x, n, c, s, mean, invstd, weight, bias, true, true, gradInput, gradWeight, gradBias);
        return true;
    }

    private void backward(String op, StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                          StridedView weight, StridedView bias, boolean relu, boolean train, StridedView gradInput, StridedView gradWeight,
                          StridedView gradBias) {
        boolean rows = NormPlan.rows(s);
        String sums = NormPlan.entry(relu ? rows ? Kernel.RELU_BACKWARD_SUMS_ROWS : Kernel.RELU_BACKWARD_SUMS
                : rows ? Kernel.BACKWARD_SUMS_ROWS : Kernel.BACKWARD_SUMS, op, x.dtype());
        String input = NormPlan.entry(relu ? Kernel.RELU_BACKWARD_INPUT : Kernel.BACKWARD_INPUT, op, x.dtype());
        checkBlocks(op, x, gradOut, gradInput);
        Device d = x.device();
        boolean needSums = gradWeight != null || gradBias != null || (train && gradInput != null);
        int splits = needSums ? splits(d, n, c, s) : 1;
        // Training's input gradient needs the channel sums: they travel as coefficients in a device temporary.
        StridedView coef = train && gradInput != null ? CudaKernels.scratch(d, new long[] {NormPlan.coefficients(c)},
                DType.FLOAT64) : null;
        StridedView partial = needSums ? partials(d, c, splits) : null;
        try (Arena arena = Arena.ofConfined()) {
            Channel m = channel(op, mean, d);
            Channel is = channel(op, invstd, d);
            Channel w = channel(op, weight, d);
            Channel gw = channel(op, gradWeight, d);
            Channel gb = channel(op, gradBias, d);
            Channel b = relu ? channel(op, bias, d) : null;
            if (needSums) {
                KernelArgs args = rows
                        ? NormPlan.backwardSumsRowsArgs(arena, addr(gradOut), addr(x), n, c, m, is, gw, gb, addr(coef), w, addr(partial), splits)
                        : NormPlan.backwardSumsArgs(arena, addr(gradOut), addr(x), n, c, s, m, is, gw, gb, addr(coef), w, addr(partial), splits);
                perChannel(d, sums, n, c, s, splits, relu ? NormPlan.reluArgs(arena, args, m, is, w, b) : args);
                if (partial != null) {
                    elementwise(d, NormPlan.BACKWARD_FINISH, c,
                            NormPlan.backwardFinishArgs(arena, n, c, s, m, is, gw, gb, addr(coef), w, addr(partial), splits));
                }
            }
            if (gradInput != null) {
                KernelArgs args = NormPlan.backwardInputArgs(arena, addr(gradOut), addr(x), addr(gradInput), n, c, s, m, is, w, addr(coef));
                elementwise(d, input, n * c * s, relu ? NormPlan.reluArgs(arena, args, m, is, w, b) : args);
            }
        } finally {
            CudaKernels.free(coef, partial);
        }
    }

    // ---------------------------------------------------------------- layer norm (layernorm.cu)

    private static final String LAYER_NORM_FILE = "layernorm.cu";

    @Override
    public boolean fusesLayerNorm() {
        return true;
    }

    /** 16-bit rows are read and written by the kernels themselves, computing in float32 (PyTorch's CUDA kernels). */
    @Override
    public DType layerNormBlockType(DType input, DType statistics) {
        return (input == DType.FLOAT16 || input == DType.BFLOAT16) && statistics == DType.FLOAT32 ? input : statistics;
    }

    /** Blocks of {@code t}, statistics of {@link LayerNormPlan#statistics}, all contiguous on one device. */
    private static void checkLayerNorm(String op, DType t, StridedView x, StridedView[] blocks, StridedView... statistics) {
        for (StridedView v : blocks) {
            if (v != null && (!v.isContiguous() || v.dtype() != t || !v.device().equals(x.device()))) {
                throw new IllegalArgumentException(op + ": the CUDA kernels take contiguous [rows, cols] blocks of one dtype on one device, got "
                        + v.dtype() + " " + java.util.Arrays.toString(v.shape()) + " strides " + java.util.Arrays.toString(v.strides())
                        + " on " + v.device() + " next to " + t + " on " + x.device());
            }
        }
        DType s = LayerNormPlan.statistics(t);
        for (StridedView v : statistics) {
            if (!v.isContiguous() || v.dtype() != s || !v.device().equals(x.device())) {
                throw new IllegalArgumentException(op + ": the statistics of " + t + " rows must be contiguous " + s + " on " + x.device()
                        + ", got " + v.dtype() + " strides " + java.util.Arrays.toString(v.strides()) + " on " + v.device());
            }
        }
    }

    private void launch(Device device, String entry, int blocks, int threads, KernelArgs args) {
        CudaKernels k = kernels.get();
        k.launchRows(k.wholeFileFunction(device, LAYER_NORM_FILE, entry), blocks, threads, k.currentStream(device), args);
    }

    /** One launch: a block normalises a row ({@code layernorm.cuh}). */
    @Override
    public boolean layerNorm(StridedView x, long rows, long cols, StridedView weight, StridedView bias, double eps, StridedView out,
                             StridedView mean, StridedView rstd) {
        String op = "layer_norm";
        DType t = x.dtype();
        checkLayerNorm(op, t, x, new StridedView[] {x, weight, bias, out}, mean, rstd);
        Device d = x.device();
        if (rows * cols == 0) return true;
        try (Arena arena = Arena.ofConfined()) {
            launch(d, LayerNormPlan.entry(LayerNormPlan.Kernel.FORWARD, op, t), LayerNormPlan.rowBlocks(rows, kernels.get().multiprocessors(d)),
                    LayerNormPlan.rowThreads(cols), LayerNormPlan.forwardArgs(arena, addr(x), addr(weight), addr(bias), addr(out), addr(mean),
                            addr(rstd), rows, cols, eps));
        }
        return true;
    }

    /**
     * The input gradient (one launch, a block a row), then the weight and bias gradients as column sums over parts of rows
     * (one launch, and a second adding the parts in order where there are several): no atomics, so the same bits every run.
     */
    @Override
    public boolean layerNormBackward(StridedView gradOut, StridedView x, long rows, long cols, StridedView mean, StridedView rstd,
                                     StridedView weight, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        String op = "layer_norm_backward";
        DType t = x.dtype();
        checkLayerNorm(op, t, x, new StridedView[] {gradOut, x, weight, gradInput, gradWeight, gradBias}, mean, rstd);
        Device d = x.device();
        if (rows * cols == 0) return true;
        int sms = kernels.get().multiprocessors(d);
        try (Arena arena = Arena.ofConfined()) {
            if (gradInput != null) {
                launch(d, LayerNormPlan.entry(LayerNormPlan.Kernel.BACKWARD_INPUT, op, t), LayerNormPlan.rowBlocks(rows, sms),
                        LayerNormPlan.rowThreads(cols), LayerNormPlan.backwardInputArgs(arena, addr(gradOut), addr(x), addr(mean), addr(rstd),
                                addr(weight), addr(gradInput), rows, cols));
            }
            if (gradWeight == null && gradBias == null) return true;
            int parts = LayerNormPlan.parts(rows);
            long partials = LayerNormPlan.partials(cols, parts);
            StridedView partial = partials == 0 ? null : CudaKernels.scratch(d, new long[] {partials}, DType.FLOAT64);
            try {
                launch(d, LayerNormPlan.entry(LayerNormPlan.Kernel.BACKWARD_COLUMNS, op, t), LayerNormPlan.columnBlocks(cols, parts, sms),
                        LayerNormPlan.COLUMN_THREADS, LayerNormPlan.backwardColumnsArgs(arena, addr(gradOut), addr(x), addr(mean), addr(rstd),
                                addr(gradWeight), addr(gradBias), addr(partial), rows, cols));
                if (partial != null) {
                    launch(d, LayerNormPlan.entry(LayerNormPlan.Kernel.BACKWARD_FINISH, op, t), NormPlan.elementwiseBlocks(cols, sms),
                            LaunchGeometry.THREADS, LayerNormPlan.backwardFinishArgs(arena, addr(gradWeight), addr(gradBias), addr(partial),
                                    cols, parts));
                }
            } finally {
                CudaKernels.free(partial);
            }
        }
        return true;
    }

    @Override
    public String toString() {
        return "CUDA NormalizationKernels (norm.cu: batch-norm statistics, apply, backward, backward through a ReLU; layernorm.cu: layer norm"
                + " forward and backward)";
    }
}
