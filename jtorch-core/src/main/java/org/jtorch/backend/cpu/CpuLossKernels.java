package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LossOps;
import org.jtorch.op.OpKernel;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The CPU's fused cross entropy ({@link LossOps#CROSS_ENTROPY_FUSED} and its backward) over the rows of {@code [N, C]} logits
 * whose rows are contiguous (the front end passes them so), float32 or float64. Forward reads a row twice while it sits in
 * L1 (its maximum, then the sum of exponentials) and keeps its log-sum-exp; backward writes each gradient row in one pass
 * from that log-sum-exp. float32 rows run Vector API loops (the exponential of {@link SoftmaxF32}); float64 rows plain
 * loops (gradcheck sizes, not a hot path). The row losses are summed in row order in double, so a reduced loss does not
 * depend on the thread count. The reduced MSE ({@link LossOps#MSE_LOSS_FUSED}) sums squared differences of contiguous
 * operands in one pass, and its backward writes {@code 2 g (x - t)} in one.
 */
final class CpuLossKernels {
    private CpuLossKernels() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements of work per thread before a kernel goes parallel. */
    private static final long GRAIN = 32_768;
    private static final int REDUCTION = 0, IGNORE = 1, SMOOTHING = 2;

    static void register() {
        KernelRegistry.registerMulti(Device.Type.CPU, LossOps.CROSS_ENTROPY_FUSED.kernel(), CpuLossKernels::forward, LossOps::crossEntropyFusedForm);
        KernelRegistry.register(Device.Type.CPU, LossOps.CROSS_ENTROPY_FUSED_BACKWARD.kernel(), (OpKernel) CpuLossKernels::backward);
        KernelRegistry.register(Device.Type.CPU, LossOps.MSE_LOSS_FUSED.kernel(), (OpKernel) CpuLossKernels::mse, LossOps::mseFusedForm);
        KernelRegistry.register(Device.Type.CPU, LossOps.MSE_LOSS_FUSED_BACKWARD.kernel(), (OpKernel) CpuLossKernels::mseBackward);
        KernelRegistry.registerMulti(Device.Type.CPU, LossOps.NLL_LOSS.kernel(), CpuLossKernels::nll, LossOps::nllFusedForm);
        KernelRegistry.register(Device.Type.CPU, LossOps.NLL_LOSS_BACKWARD.kernel(), (OpKernel) CpuLossKernels::nllBackward);
    }

    private static long base(StridedView t) {
        return t.offset() * t.dtype().byteSize();
    }

    private static void checkRows(String op, StridedView x) {
        if (x.size(1) > 1 && x.stride(1) != 1) {
            throw new IllegalArgumentException(op + ": expected logits with contiguous rows, got strides "
                    + java.util.Arrays.toString(x.strides()));
        }
    }

    /** The targets, checked against the class count (ignored ones kept as they are). */
    private static long[] targets(StridedView target, long classes, long ignore) {
        int n = Math.toIntExact(target.size(0));
        long[] t = new long[n];
        MemorySegment ts = target.memory();
        long tb = base(target), st = 8 * target.stride(0);
        for (int i = 0; i < n; i++) {
            long v = ts.get(ElementIO.I64, tb + i * st);
            if (v != ignore && (v < 0 || v >= classes)) {
                throw new IndexOutOfBoundsException("Target " + v + " is out of bounds (" + classes + " classes).");
            }
            t[i] = v;
        }
        return t;
    }

    /** The class weights as doubles (null without), and their sum in the last slot. */
    private static double[] weights(StridedView weight) {
        if (weight == null) return null;
        int c = Math.toIntExact(weight.size(0));
        double[] w = new double[c + 1];
        double[] values = new double[c];
        ElementIO.load(weight.dtype(), weight.memory(), base(weight), weight.stride(0) * weight.dtype().byteSize(), c, values);
        double sum = 0;
        for (int j = 0; j < c; j++) sum += (w[j] = values[j]);
        w[c] = sum;
        return w;
    }

    private static void forward(StridedView[] outs, StridedView[] in, double[] g) {
        StridedView x = in[0];
        checkRows("cross_entropy_fused", x);
        int rows = Math.toIntExact(x.size(0)), c = Math.toIntExact(x.size(1));
        long ignore = (long) g[IGNORE];
        double ls = g[SMOOTHING];
        long[] t = targets(in[1], c, ignore);
        double[] w = weights(in[2]);
        boolean f32 = x.dtype() == DType.FLOAT32;
        MemorySegment xs = x.memory(), lses = outs[1].memory();
        long xb = base(x), rs = x.stride(0) * x.dtype().byteSize(), lb = base(outs[1]);
        double[] loss = new double[rows];
        double[] kept = new double[rows];
        Parallel.forRange(rows, Math.max(1, GRAIN / Math.max(1, c)), (begin, end) -> {
            for (long r = begin; r < end; r++) {
                int i = (int) r;
                long xo = xb + i * rs;
                double shifted, logSum, sumShifted = 0;
                if (c == 0) {
                    shifted = logSum = Double.NaN;
                } else if (f32) {
                    float max = ReductionF32.extremum(xs, xo, c, true);
                    float logs = (float) Math.log(SoftmaxF32.expSum(xs, xo, c, max));
                    lses.set(ElementIO.F32, lb + 4L * i, max + logs);
                    logSum = logs;
                    shifted = t[i] == ignore ? 0 : xs.get(ElementIO.F32, xo + 4L * t[i]) - max;
                    if (ls > 0) sumShifted = weightedShiftedSum(xs, xo, c, max, w);
                } else {
                    double max = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < c; j++) max = Math.max(max, xs.get(ElementIO.F64, xo + 8L * j));
                    double s = 0;
                    for (int j = 0; j < c; j++) s += Math.exp(xs.get(ElementIO.F64, xo + 8L * j) - max);
                    logSum = Math.log(s);
                    lses.set(ElementIO.F64, lb + 8L * i, max + logSum);
                    shifted = t[i] == ignore ? 0 : xs.get(ElementIO.F64, xo + 8L * t[i]) - max;
                    if (ls > 0) {
                        for (int j = 0; j < c; j++) sumShifted += (w == null ? 1 : w[j]) * (xs.get(ElementIO.F64, xo + 8L * j) - max);
                    }
                }
                if (t[i] == ignore) continue;
                double wt = w == null ? 1 : w[(int) t[i]];
                // -log p_t = logSum - (x_t - max); the smoothed part -sum_j w_j log p_j = W logSum - sum_j w_j (x_j - max)
                double l = wt * (logSum - shifted);
                if (ls > 0) l = (1 - ls) * l + ls / c * ((w == null ? c : w[c]) * logSum - sumShifted);
                loss[i] = l;
                kept[i] = wt;
            }
        });
        double total = 0, totalWeight = 0;
        for (int i = 0; i < rows; i++) {
            total += loss[i];
            totalWeight += kept[i];
        }
        int reduction = (int) g[REDUCTION];
        StridedView out = outs[0];
        if (reduction == LossOps.NONE) {
            for (int i = 0; i < rows; i++) set(out, i, loss[i]);
        } else {
            set(out, 0, reduction == LossOps.SUM ? total : total / totalWeight);
        }
        set(outs[2], 0, totalWeight);
    }

    /** {@code sum_j w_j (x_j - max)} of one float32 row ({@code w} null: every weight 1), in double. */
    private static double weightedShiftedSum(MemorySegment xs, long xo, int c, float max, double[] w) {
        if (w != null) {
            double s = 0;
            for (int j = 0; j < c; j++) s += w[j] * (xs.get(ElementIO.F32, xo + 4L * j) - max);
            return s;
        }
        double s = 0;
        int j = 0;
        for (; j + FL <= c; j += FL) s += VectorF32.sumLanes(FloatVector.fromMemorySegment(FS, xs, xo + 4L * j, LE).sub(max));
        for (; j < c; j++) s += xs.get(ElementIO.F32, xo + 4L * j) - max;
        return s;
    }

    private static void set(StridedView v, long i, double value) {
        long off = base(v) + i * v.dtype().byteSize();
        if (v.dtype() == DType.FLOAT32) v.memory().set(ElementIO.F32, off, (float) value);
        else v.memory().set(ElementIO.F64, off, value);
    }

    private static double get(StridedView v, long i) {
        long off = (v.offset() + (v.dim() == 0 ? 0 : i * v.stride(0))) * v.dtype().byteSize();
        return v.dtype() == DType.FLOAT32 ? v.memory().get(ElementIO.F32, off) : v.memory().get(ElementIO.F64, off);
    }

    private static void backward(StridedView out, StridedView[] in, double[] g) {
        StridedView gradOut = in[0], x = in[1], lse = in[4];
        checkRows("cross_entropy_fused_backward", x);
        int rows = Math.toIntExact(x.size(0)), c = Math.toIntExact(x.size(1));
        long ignore = (long) g[IGNORE];
        double ls = g[SMOOTHING];
        int reduction = (int) g[REDUCTION];
        long[] t = targets(in[2], c, ignore);
        double[] w = weights(in[3]);
        float[] wf = null;
        if (w != null) {
            wf = new float[c];
            for (int j = 0; j < c; j++) wf[j] = (float) w[j];
        }
        float[] weightsF32 = wf;
        double scale = reduction == LossOps.MEAN ? 1 / get(in[5], 0) : 1;
        double reducedGrad = reduction == LossOps.NONE ? 0 : get(gradOut, 0);
        boolean f32 = x.dtype() == DType.FLOAT32;
        MemorySegment xs = x.memory(), os = out.memory();
        long es = x.dtype().byteSize(), xb = base(x), rs = x.stride(0) * es, ob = base(out), ors = (long) c * es;
        Parallel.forRange(rows, Math.max(1, GRAIN / Math.max(1, c)), (begin, end) -> {
            for (long r = begin; r < end; r++) {
                int i = (int) r;
                long xo = xb + i * rs, oo = ob + i * ors;
                boolean keep = t[i] != ignore;
                double gi = (reduction == LossOps.NONE ? get(gradOut, i) : reducedGrad) * scale;
                double wt = keep ? (w == null ? 1 : w[(int) t[i]]) : 0;
                // grad_j = a p_j - b w_j (b without weights: every w_j 1), then grad_t -= (1 - ls) w_t gi
                double a = keep ? gi * ((1 - ls) * wt + ls / c * (w == null ? c : w[c])) : 0;
                double b = keep ? gi * ls / c : 0;
                double m = get(lse, i);
                if (f32) {
                    rowF32(xs, xo, os, oo, c, (float) m, (float) a, (float) b, weightsF32);
                } else {
                    for (int j = 0; j < c; j++) {
                        double p = Math.exp(xs.get(ElementIO.F64, xo + 8L * j) - m);
                        os.set(ElementIO.F64, oo + 8L * j, a * p - b * (w == null ? 1 : w[j]));
                    }
                }
                if (keep) {
                    long to = oo + es * t[i];
                    double v = (f32 ? os.get(ElementIO.F32, to) : os.get(ElementIO.F64, to)) - (1 - ls) * wt * gi;
                    if (f32) os.set(ElementIO.F32, to, (float) v);
                    else os.set(ElementIO.F64, to, v);
                }
            }
        });
    }

    /** {@code out_j = a exp(x_j - lse) - b w_j} over one float32 row ({@code w} null: every weight 1). */
    private static void rowF32(MemorySegment xs, long xo, MemorySegment os, long oo, int c, float lse, float a, float b, float[] w) {
        FloatVector va = FloatVector.broadcast(FS, a), vb = FloatVector.broadcast(FS, -b);
        int j = 0;
        for (; j + FL <= c; j += FL) {
            FloatVector p = SoftmaxF32.expNonPositive(FloatVector.fromMemorySegment(FS, xs, xo + 4L * j, LE).sub(lse));
            FloatVector sb = w == null ? vb : vb.mul(FloatVector.fromArray(FS, w, j));
            p.fma(va, sb).intoMemorySegment(os, oo + 4L * j, LE);
        }
        if (j < c) {
            VectorMask<Float> mk = FS.indexInRange(j, c);
            FloatVector p = SoftmaxF32.expNonPositive(FloatVector.fromMemorySegment(FS, xs, xo + 4L * j, LE, mk).sub(lse));
            FloatVector sb = w == null ? vb : vb.mul(FloatVector.fromArray(FS, w, j, mk));
            p.fma(va, sb).intoMemorySegment(os, oo + 4L * j, LE, mk);
        }
    }

    // ---------------------------------------------------------------- mse

    /** Elements of one block of the squared-difference sum: f32 lanes within it, blocks joined in double. */
    private static final int SUM_BLOCK = 2048;

    /**
     * {@code sum((x - t)^2)} (over the count for the mean) of contiguous operands: blocks of {@value #SUM_BLOCK} elements
     * summed in f32 lanes and joined in double in block order, so the result does not depend on the thread count.
     */
    private static void mse(StridedView out, StridedView[] in, double[] g) {
        StridedView x = in[0], t = in[1];
        long n = x.numel();
        boolean f32 = x.dtype() == DType.FLOAT32;
        MemorySegment xs = x.memory(), ts = t.memory();
        long xb = base(x), tb = base(t);
        int blocks = Math.toIntExact((n + SUM_BLOCK - 1) / SUM_BLOCK);
        double[] partial = new double[blocks];
        Parallel.forRange(blocks, Math.max(1, GRAIN / SUM_BLOCK), (begin, end) -> {
            for (long b = begin; b < end; b++) {
                long from = b * SUM_BLOCK;
                int len = (int) Math.min(SUM_BLOCK, n - from);
                partial[(int) b] = f32 ? squaredF32(xs, xb + 4 * from, ts, tb + 4 * from, len)
                        : squaredF64(xs, xb + 8 * from, ts, tb + 8 * from, len);
            }
        });
        double sum = 0;
        for (double p : partial) sum += p;
        set(out, 0, (int) g[0] == LossOps.MEAN ? sum / n : sum);
    }

    private static double squaredF32(MemorySegment xs, long xo, MemorySegment ts, long to, int len) {
        FloatVector a = FloatVector.zero(FS), b = FloatVector.zero(FS);
        int j = 0;
        // two chains: one fma chain alone is latency-bound
        for (; j + 2 * FL <= len; j += 2 * FL) {
            FloatVector d0 = FloatVector.fromMemorySegment(FS, xs, xo + 4L * j, LE).sub(FloatVector.fromMemorySegment(FS, ts, to + 4L * j, LE));
            FloatVector d1 = FloatVector.fromMemorySegment(FS, xs, xo + 4L * (j + FL), LE)
                    .sub(FloatVector.fromMemorySegment(FS, ts, to + 4L * (j + FL), LE));
            a = d0.fma(d0, a);
            b = d1.fma(d1, b);
        }
        double s = VectorF32.sumLanes(a.add(b));
        for (; j < len; j++) {
            float d = xs.get(ElementIO.F32, xo + 4L * j) - ts.get(ElementIO.F32, to + 4L * j);
            s += d * d;
        }
        return s;
    }

    private static double squaredF64(MemorySegment xs, long xo, MemorySegment ts, long to, int len) {
        double s = 0;
        for (int j = 0; j < len; j++) {
            double d = xs.get(ElementIO.F64, xo + 8L * j) - ts.get(ElementIO.F64, to + 8L * j);
            s += d * d;
        }
        return s;
    }

    /** {@code out = c (x - t)} with {@code c = 2 grad_out} (over the count for the mean), contiguous operands. */
    private static void mseBackward(StridedView out, StridedView[] in, double[] g) {
        StridedView x = in[1], t = in[2];
        long n = x.numel();
        double c = 2 * get(in[0], 0) / ((int) g[0] == LossOps.MEAN ? n : 1);
        boolean f32 = x.dtype() == DType.FLOAT32;
        MemorySegment xs = x.memory(), ts = t.memory(), os = out.memory();
        long xb = base(x), tb = base(t), ob = base(out);
        Parallel.forRange(n, GRAIN, (begin, end) -> {
            long j = begin;
            if (f32) {
                FloatVector vc = FloatVector.broadcast(FS, (float) c);
                for (; j + FL <= end; j += FL) {
                    FloatVector.fromMemorySegment(FS, xs, xb + 4 * j, LE).sub(FloatVector.fromMemorySegment(FS, ts, tb + 4 * j, LE)).mul(vc)
                            .intoMemorySegment(os, ob + 4 * j, LE);
                }
                for (; j < end; j++) {
                    os.set(ElementIO.F32, ob + 4 * j, (float) c * (xs.get(ElementIO.F32, xb + 4 * j) - ts.get(ElementIO.F32, tb + 4 * j)));
                }
            } else {
                for (; j < end; j++) os.set(ElementIO.F64, ob + 8 * j, c * (xs.get(ElementIO.F64, xb + 8 * j) - ts.get(ElementIO.F64, tb + 8 * j)));
            }
        });
    }

    // ---------------------------------------------------------------- nll_loss

    private static final int NLL_REDUCTION = 0, NLL_IGNORE = 1;

    /**
     * A call's targets (checked, in order), class weights (null: every weight 1) and the geometry of its dense
     * {@code [N, C, S]} input: {@link #element} is the flat index of target {@code i}'s element.
     */
    private record NllTargets(long[] t, double[] w, int classes, long spatial, long ignore, int reduction) {
        static NllTargets of(StridedView x, StridedView target, StridedView weight, double[] g) {
            int c = Math.toIntExact(x.size(1));
            long n = x.size(0), spatial = n == 0 || c == 0 ? 1 : x.numel() / (n * c);
            long ignore = (long) g[NLL_IGNORE];
            return new NllTargets(targets(target.view(target.numel()), c, ignore), weights(weight), c, spatial, ignore,
                    (int) g[NLL_REDUCTION]);
        }

        double weight(long target) {
            return w == null ? 1 : w[(int) target];
        }

        long element(long i, long target) {
            return ((i / spatial) * classes + target) * spatial + i % spatial;
        }
    }

    /**
     * {@code nll_loss} of dense {@code [N, C, S]} log-probabilities ({@code S} the product of the trailing dimensions, 1 for
     * {@code [N, C]}) at dense {@code [N, S]} targets: one read per target, in target order; the sums (loss and kept weight)
     * in double in that order, so a reduced loss does not depend on the thread count and is rounded once.
     */
    private static void nll(StridedView[] outs, StridedView[] in, double[] g) {
        StridedView x = in[0];
        NllTargets nt = NllTargets.of(x, in[1], in[2], g);
        boolean f32 = x.dtype() == DType.FLOAT32;
        MemorySegment xs = x.memory();
        long es = x.dtype().byteSize(), xb = base(x);
        StridedView out = outs[0];
        int reduction = nt.reduction();
        double total = 0, totalWeight = 0;
        for (long i = 0; i < nt.t().length; i++) {
            long ti = nt.t()[(int) i];
            double l = 0, wt = 0;
            if (ti != nt.ignore()) {
                wt = nt.weight(ti);
                long at = xb + es * nt.element(i, ti);
                l = -wt * (f32 ? xs.get(ElementIO.F32, at) : xs.get(ElementIO.F64, at));
            }
            if (reduction == LossOps.NONE) set(out, i, l);
            total += l;
            totalWeight += wt;
        }
        if (reduction != LossOps.NONE) set(out, 0, reduction == LossOps.SUM ? total : total / totalWeight);
        set(outs[1], 0, totalWeight);
    }

    /**
     * The gradient of {@link #nll}: zero, then {@code -weight[t] grad_out} (over the total weight for the mean) at each kept
     * target; {@code grad_out} dense ({@code [N, S]} unreduced, one element reduced).
     */
    private static void nllBackward(StridedView out, StridedView[] in, double[] g) {
        StridedView gradOut = in[0], x = in[1];
        NllTargets nt = NllTargets.of(x, in[2], in[3], g);
        int reduction = nt.reduction();
        long count = nt.t().length;
        double scale = reduction == LossOps.MEAN ? 1 / get(in[4], 0) : 1;
        double reduced = reduction == LossOps.NONE ? 0 : get(gradOut, 0);
        StridedView perTarget = reduction == LossOps.NONE ? gradOut.view(count) : null;
        boolean f32 = x.dtype() == DType.FLOAT32;
        long es = x.dtype().byteSize(), ob = base(out);
        MemorySegment os = out.memory();
        os.asSlice(ob, out.numel() * es).fill((byte) 0);
        for (long i = 0; i < count; i++) {
            long ti = nt.t()[(int) i];
            if (ti == nt.ignore()) continue;
            double gi = perTarget != null ? get(perTarget, i) : reduced;
            double v = -nt.weight(ti) * gi * scale;
            long at = ob + es * nt.element(i, ti);
            if (f32) os.set(ElementIO.F32, at, (float) v);
            else os.set(ElementIO.F64, at, v);
        }
    }
}
