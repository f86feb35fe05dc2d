package org.jtorch.backend;

import org.jtorch.op.KernelRegistry;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the declared batch norm ({@link NormalizationOps#NATIVE_BATCH_NORM}, its backward and its statistics) for one backend,
 * from its {@link NormalizationKernels} over a contiguous input ({@code [n, c, s]}). The running statistics are updated
 * with the backend's own {@code mul} and {@code add} kernels, as {@code running.mul_(1 - momentum).add_(batch, momentum)}
 * computes them, and {@code 1 / sqrt(var + eps)} in float64 by its {@code add} and {@code rsqrt} kernels, rounded once:
 * the results are those of the tensor ops they replace, bit for bit. A backend may compute batch norm's running statistics
 * and {@code invstd} in one kernel of its own with those bits ({@link NormalizationKernels#batchNormUpdateStats}: the
 * CPU's host loop, nine small kernel calls fewer a call).
 */
public final class NormalizationOpKernels {
    private NormalizationOpKernels() {}

    private static final int TRAINING = 0, MOMENTUM = 1, EPS = 2;
    static void register(Backend backend) {
        registerLayerNorm(backend);
        registerSync(backend);
        Device.Type type = backend.deviceType();
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_BATCH_NORM.kernel(), (outs, in, g) -> {
            StridedView out = outs[0], mean = outs[1], inv = outs[2];
            long n = in[0].size(0), c = in[0].size(1), s = in[0].numel() / Math.max(1, n * c);
            NormalizationKernels k = backend.normalization();
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView x = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                StridedView var = scratch.allocate(out.device(), new long[] {c}, mean.dtype());
                StridedView runningMean = null, runningVar = null;
                double momentum = 0, varAlpha = 0;
                if (g[TRAINING] != 0) {
                    k.batchNormStats(x, n, c, s, mean, var);
                    runningMean = in[3];
                    runningVar = in[4];
                    momentum = g[MOMENTUM];
                    long count = n * s;
                    double unbias = count > 1 ? (double) count / (count - 1) : Double.NaN;
                    varAlpha = momentum * unbias;
                } else {
                    backend.copy(in[3], mean);
                    backend.copy(in[4], var);
                }
                if (!k.batchNormUpdateStats(mean, var, runningMean, runningVar, momentum, momentum, varAlpha, g[EPS], inv)) {
                    if (runningMean != null) moveTowards(backend, scratch, runningMean, mean, momentum, momentum);
                    if (runningVar != null) moveTowards(backend, scratch, runningVar, var, momentum, varAlpha);
                    inverseStd(backend, scratch, var, g[EPS], inv);
                }
                k.batchNormApply(x, n, c, s, mean, inv, in[1], in[2], out);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.BATCH_NORM_MEAN_VAR.kernel(), (outs, in, g) -> {
            long n = in[0].size(0), c = in[0].size(1), s = in[0].numel() / Math.max(1, n * c);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                backend.normalization().batchNormStats(scratch.operand(in[0], in[0].dtype(), in[0].shape()), n, c, s, outs[0], outs[1]);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_BATCH_NORM_BACKWARD.kernel(), (outs, in, g) -> {
            long n = in[1].size(0), c = in[1].size(1), s = in[1].numel() / Math.max(1, n * c);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView go = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                StridedView x = scratch.operand(in[1], in[1].dtype(), in[1].shape());
                backend.normalization().batchNormBackward(go, x, n, c, s, in[3], in[4], in[2], g[TRAINING] != 0, outs[0], outs[1],
                        outs[2]);
            }
        });
    }

    /**
     * The kernels of the declared layer norm ({@link NormalizationOps#NATIVE_LAYER_NORM} and its backward): the operands as
     * contiguous {@code [rows, cols]} blocks of the dtype the backend's fused kernels take
     * ({@link NormalizationKernels#layerNormBlockType}: the statistics' dtype, float32 or float64, on the CPU; the input's own
     * on CUDA), the statistics of their own dtype, then the backend's fused kernels.
     * A backend without them registers none: the dispatcher runs the op's decomposition
     * ({@link NormalizationOps#LAYER_NORM_COMPOSITE}, batch norm of the rows then the affine) there.
     */
    private static void registerLayerNorm(Backend backend) {
        if (!backend.normalization().fusesLayerNorm()) return;
        Device.Type type = backend.deviceType();
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_LAYER_NORM.kernel(), (outs, in, g) -> {
            long cols = trailing(in[0], (int) g[0]), rows = in[0].numel() / Math.max(1, cols);
            DType ct = blockType(backend, outs[1].dtype(), in[0], in[1], in[2], outs[0]);
            if (in[0].numel() == 0) {
                // no elements to normalise: PyTorch's statistics of an empty row are NaN
                backend.fill(outs[1], Double.NaN, 0);
                backend.fill(outs[2], Double.NaN, 0);
                return;
            }
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                long[] block = {rows, cols};
                StridedView x = scratch.operand(in[0], ct, block);
                StridedView w = in[1] == null ? null : scratch.operand(in[1], ct, new long[] {cols});
                StridedView b = in[2] == null ? null : scratch.operand(in[2], ct, new long[] {cols});
                StridedView r = scratch.result(outs[0], ct);
                StridedView y = r.view(block), mean = outs[1].view(rows), rstd = outs[2].view(rows);
                NormalizationKernels k = backend.normalization();
                if (!k.layerNorm(x, rows, cols, w, b, g[1], y, mean, rstd)) throw new IllegalStateException("layer_norm: no fused kernel");
                scratch.finish(r, outs[0]);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_LAYER_NORM_BACKWARD.kernel(), (outs, in, g) -> {
            long cols = trailing(in[1], (int) g[0]), rows = in[1].numel() / Math.max(1, cols);
            DType ct = blockType(backend, in[2].dtype(), in[0], in[1], in[4], outs[0], outs[1], outs[2]);
            if (in[1].numel() == 0) {
                for (int j = 1; j < 3; j++) backend.fill(outs[j], 0, 0);
                return;
            }
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                long[] block = {rows, cols}, column = {cols};
                StridedView go = scratch.operand(in[0], ct, block);
                StridedView x = scratch.operand(in[1], ct, block);
                DType st = in[2].dtype();
                StridedView mean = scratch.operand(in[2], st, new long[] {rows}), rstd = scratch.operand(in[3], st, new long[] {rows});
                StridedView w = in[4] == null ? null : scratch.operand(in[4], ct, column);
                StridedView[] r = new StridedView[3];
                for (int j = 0; j < 3; j++) r[j] = scratch.result(outs[j], ct);
                StridedView gi = r[0].view(block), gw = r[1].view(column), gb = r[2].view(column);
                NormalizationKernels k = backend.normalization();
                if (!k.layerNormBackward(go, x, rows, cols, mean, rstd, w, gi, gw, gb)) {
                    throw new IllegalStateException("layer_norm_backward: no fused kernel");
                }
                for (int j = 0; j < 3; j++) scratch.finish(r[j], outs[j]);
            }
        });
    }

    /**
     * The kernels of the synchronised batch norm's parts (PyTorch's {@code batch_norm_stats}, {@code _gather_stats_with_counts},
     * {@code _elemt}, {@code _backward_reduce}, {@code _backward_elemt}), from the backend's batch norm kernels over contiguous
     * {@code [n, c, s]} blocks. The per-channel arithmetic between ranks (the merge of their statistics, the input
     * gradient's coefficients from the summed sums) runs on the tensors' device in float64: one kernel of the backend's where
     * it has one ({@link NormalizationKernels#syncBatchNormGather}, {@link NormalizationKernels#syncBatchNormCoefficients}:
     * CUDA), else one pointwise kernel per step and rank over {@code [c]} vectors, in the order a host loop in double would
     * take (the same bits either way): nothing waits for the device.
     */
    private static void registerSync(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.registerMulti(type, NormalizationOps.BATCH_NORM_STATS.kernel(), (outs, in, g) -> {
            long n = in[0].size(0), c = in[0].size(1), s = in[0].numel() / Math.max(1, n * c);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView x = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                // the variance kept in float64, so that invstd is rounded once
                StridedView var = scratch.allocate(x.device(), new long[] {c}, DType.FLOAT64);
                backend.normalization().batchNormStats(x, n, c, s, outs[0], var);
                inverseStd(backend, scratch, var, g[0], outs[1]);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS.kernel(), (outs, in, g) -> {
            int ranks = (int) in[1].size(0);
            long[] shape = {in[1].size(1)};
            double momentum = g[0], eps = g[1];
            Device device = in[1].device();
            if (backend.normalization().syncBatchNormGather(in[1], in[2], in[5], in[3], in[4], momentum, eps, outs[0], outs[1])) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView total = zeros(backend, scratch, device, shape), weighted = zeros(backend, scratch, device, shape);
                StridedView m2 = zeros(backend, scratch, device, shape), mean = scratch.allocate(device, shape, DType.FLOAT64);
                StridedView t = scratch.allocate(device, shape, DType.FLOAT64), d = scratch.allocate(device, shape, DType.FLOAT64);
                StridedView e = scratch.allocate(device, shape, DType.FLOAT64);
                for (int r = 0; r < ranks; r++) {
                    StridedView n = count(in[5], r, shape);
                    add(backend, total, total, n);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, t, n, row(in[1], r), 0);
                    add(backend, weighted, weighted, t);
                }
                pointwise(backend, PointwiseOps.DIV, DType.FLOAT64, mean, weighted, total, 0);
                // Chan's merge: m2 += n (1 / invstd^2 - eps) + n (mean_r - mean)^2 per rank. A rank without rows has zero
                // statistics and count; its invstd raised to TINY keeps 1 / invstd^2 finite, so that its count's zero
                // removes it (0 * inf would be NaN).
                StridedView tiny = scalar(backend, scratch, DType.FLOAT64, TINY, t), epsilon = scalar(backend, scratch, DType.FLOAT64, eps, t);
                for (int r = 0; r < ranks; r++) {
                    StridedView n = count(in[5], r, shape), meanR = row(in[1], r);
                    pointwise(backend, PointwiseOps.MAXIMUM, DType.FLOAT64, t, row(in[2], r), tiny, 0);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, t, t, t, 0);
                    pointwise(backend, PointwiseOps.RECIPROCAL, DType.FLOAT64, t, t, null, 0);
                    pointwise(backend, PointwiseOps.SUB, DType.FLOAT64, t, t, epsilon, 1);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, t, n, t, 0);
                    pointwise(backend, PointwiseOps.SUB, DType.FLOAT64, e, meanR, mean, 1);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, d, n, e, 0);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, d, d, e, 0);
                    add(backend, t, t, d);
                    add(backend, m2, m2, t);
                }
                backend.copy(mean, outs[0]);
                pointwise(backend, PointwiseOps.DIV, DType.FLOAT64, t, m2, total, 0);
                add(backend, t, t, epsilon);
                pointwise(backend, PointwiseOps.RSQRT, DType.FLOAT64, t, t, null, 0);
                backend.copy(t, outs[1]);
                if (in[3] != null) moveTowards(backend, scratch, in[3], mean, momentum, momentum);
                if (in[4] != null) {
                    // the unbiased variance m2 / (total - 1), NaN where total <= 1: the divisor plus 0 * log(divisor), which
                    // is NaN at and below zero and 0 above
                    pointwise(backend, PointwiseOps.SUB, DType.FLOAT64, d, total, scalar(backend, scratch, DType.FLOAT64, 1, t), 1);
                    pointwise(backend, PointwiseOps.LOG, DType.FLOAT64, e, d, null, 0);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, e, e, scalar(backend, scratch, DType.FLOAT64, 0, t), 0);
                    add(backend, d, d, e);
                    pointwise(backend, PointwiseOps.DIV, DType.FLOAT64, t, m2, d, 0);
                    moveTowards(backend, scratch, in[4], t, momentum, momentum);
                }
            }
        });
        KernelRegistry.register(type, NormalizationOps.BATCH_NORM_ELEMT.kernel(), (out, in, g) -> {
            long n = in[0].size(0), c = in[0].size(1), s = in[0].numel() / Math.max(1, n * c);
            if (in[0].numel() == 0) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView x = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                backend.normalization().batchNormApply(x, n, c, s, in[3], in[4], in[1], in[2], out);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.BATCH_NORM_BACKWARD_REDUCE.kernel(), (outs, in, g) -> {
            long n = in[1].size(0), c = in[1].size(1), s = in[1].numel() / Math.max(1, n * c);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView go = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                StridedView x = scratch.operand(in[1], in[1].dtype(), in[1].shape());
                Device device = x.device();
                long[] shape = {c};
                StridedView sumDy = scratch.allocate(device, shape, DType.FLOAT64), sumDyXmu = scratch.allocate(device, shape, DType.FLOAT64);
                // an evaluation-mode backward with invstd 1 and no input gradient: its weight gradient is sum(g * (x - mean))
                StridedView ones = scalar(backend, scratch, DType.FLOAT64, 1.0, in[2]);
                backend.normalization().batchNormBackward(go, x, n, c, s, in[2], ones, null, false, null, sumDyXmu, sumDy);
                backend.copy(sumDy, outs[0]);
                backend.copy(sumDyXmu, outs[1]);
                pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, outs[2], sumDyXmu, in[3], 0);
                backend.copy(sumDy, outs[3]);
            }
        });
        KernelRegistry.register(type, NormalizationOps.BATCH_NORM_BACKWARD_ELEMT.kernel(), (out, in, g) -> {
            long n = in[1].size(0), c = in[1].size(1), s = in[1].numel() / Math.max(1, n * c);
            if (in[1].numel() == 0) return;
            Device device = in[1].device();
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                long[] shape = {c};
                // per channel: invstd * weight, sum_dy_xmu / n * invstd^2 and sum_dy / n, side by side
                StridedView coef = scratch.allocate(device, new long[] {3 * c}, DType.FLOAT64);
                if (!backend.normalization().syncBatchNormCoefficients(in[3], in[4], in[5], in[6], in[7], coef.view(c, 3))) {
                    StridedView total = zeros(backend, scratch, device, shape);
                    for (int r = 0; r < in[7].numel(); r++) add(backend, total, total, count(in[7], r, shape));
                    StridedView scale = coefficient(coef, 0, c), centred = coefficient(coef, 1, c), shift = coefficient(coef, 2, c);
                    StridedView invstd = in[3];
                    if (in[4] == null) backend.copy(invstd, scale);
                    else pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, scale, invstd, in[4], 0);
                    pointwise(backend, PointwiseOps.DIV, DType.FLOAT64, centred, in[6], total, 0);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, centred, centred, invstd, 0);
                    pointwise(backend, PointwiseOps.MUL, DType.FLOAT64, centred, centred, invstd, 0);
                    pointwise(backend, PointwiseOps.DIV, DType.FLOAT64, shift, in[5], total, 0);
                }
                StridedView go = scratch.operand(in[0], in[1].dtype(), in[0].shape());
                StridedView x = scratch.operand(in[1], in[1].dtype(), in[1].shape());
                backend.normalization().batchNormGradInput(go, x, n, c, s, in[2], coef.view(c, 3), out);
            }
        });
    }

    /** A positive floor for invstd whose reciprocal square is finite in float64 (see the gather). */
    private static final double TINY = 1e-150;

    /** A float64 vector of {@code shape} on {@code device}, zeroed. */
    private static StridedView zeros(Backend backend, ConvolutionOpKernels.Scratch scratch, Device device, long[] shape) {
        StridedView z = scratch.allocate(device, shape, DType.FLOAT64);
        backend.fill(z, 0, 0);
        return z;
    }

    /** {@code out = a + b} in float64 by the backend's add kernel. */
    private static void add(Backend backend, StridedView out, StridedView a, StridedView b) {
        pointwise(backend, PointwiseOps.ADD, DType.FLOAT64, out, a, b, 1);
    }

    /** Row {@code r} of the {@code [ranks, c]} matrix {@code m}, as a {@code [c]} view. */
    private static StridedView row(StridedView m, int r) {
        return m.restrided(new long[] {m.size(1)}, new long[] {m.strides()[1]}, m.offset() + r * m.strides()[0]);
    }

    /** Element {@code r} of the vector {@code counts}, broadcast to {@code shape}. */
    private static StridedView count(StridedView counts, int r, long[] shape) {
        return counts.restrided(shape, new long[] {0}, counts.offset() + r * counts.strides()[0]);
    }

    /** Coefficient {@code j} of each channel in the {@code [c, 3]} block {@code coef}, as a {@code [c]} view. */
    private static StridedView coefficient(StridedView coef, int j, long c) {
        return coef.restrided(new long[] {c}, new long[] {3}, coef.offset() + j);
    }

    /**
     * The dtype of layer norm's blocks: the backend's choice ({@link NormalizationKernels#layerNormBlockType}) where every
     * operand and result (nulls skipped) is of one dtype, else the statistics' (mixed dtypes compute there and round once).
     */
    private static DType blockType(Backend backend, DType statistics, StridedView... operands) {
        DType common = null;
        for (StridedView v : operands) {
            if (v == null) continue;
            if (common != null && v.dtype() != common) return statistics;
            common = v.dtype();
        }
        return common == null ? statistics : backend.normalization().layerNormBlockType(common, statistics);
    }

    /** The product of the last {@code k} dimensions of {@code x}. */
    private static long trailing(StridedView x, int k) {
        long n = 1;
        for (int d = x.dim() - k; d < x.dim(); d++) n *= x.size(d);
        return n;
    }

    /**
     * {@code out = 1 / sqrt(var + eps)} computed in float64 and rounded once, by the backend's {@code add} and {@code rsqrt}
     * kernels: {@code var.to(float64).add(eps).rsqrt().to(out.dtype)}, each step correctly rounded.
     */
    private static void inverseStd(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView var, double eps, StridedView out) {
        Device device = var.device();
        StridedView v = scratch.allocate(device, var.shape(), DType.FLOAT64);
        backend.copy(var, v);
        pointwise(backend, PointwiseOps.ADD, DType.FLOAT64, v, v, scalar(backend, scratch, DType.FLOAT64, eps, v), 1);
        pointwise(backend, PointwiseOps.RSQRT, DType.FLOAT64, v, v, null, 0);
        backend.copy(v, out);
    }

    /**
     * {@code running = running * (1 - momentum) + alpha * batch} in place, by the backend's {@code mul} kernel (the factor a
     * one-element operand, as a wrapped number: float32 for a half-precision {@code running}) and its {@code add} kernel
     * with {@code alpha}, in the dtypes {@code running.mul_(1 - momentum).add_(batch, alpha)} computes in.
     */
    private static void moveTowards(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView running, StridedView batch,
                                    double momentum, double alpha) {
        DType r = running.dtype();
        // as a wrapped number: a half-precision op computes in float32 with the scalar unrounded
        DType factor = r == DType.FLOAT16 || r == DType.BFLOAT16 ? DType.FLOAT32 : r;
        pointwise(backend, PointwiseOps.MUL, r, running, running, scalar(backend, scratch, factor, 1 - momentum, running), 0);
        DType b = batch.dtype();
        DType compute = r == b ? r : r == DType.FLOAT64 || b == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        pointwise(backend, PointwiseOps.ADD, compute, running, running, batch, alpha);
    }

    /** A one-element operand holding {@code value} in {@code dtype} (a wrapped number), broadcast to {@code like}'s shape. */
    private static StridedView scalar(Backend backend, ConvolutionOpKernels.Scratch scratch, DType dtype, double value, StridedView like) {
        StridedView s = scratch.allocate(like.device(), new long[0], dtype);
        backend.fill(s, value, 0);
        return s.restrided(like.shape(), new long[like.dim()], s.offset());
    }

    /** {@code out = op(a, b; p0)} by the backend's kernel of pointwise {@code op}, computing in {@code compute}. */
    private static void pointwise(Backend backend, OpDef op, DType compute, StridedView out, StridedView a, StridedView b, double p0) {
        KernelRegistry.pointwise(op, backend.deviceType()).run(out.device().index(), compute, out, a, b, p0, 0);
    }
}
