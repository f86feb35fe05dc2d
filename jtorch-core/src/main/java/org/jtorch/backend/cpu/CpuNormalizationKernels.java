package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU's {@link NormalizationKernels}.
 *
 * <p>Batch norm reads its input at most twice in each direction: forward computes the statistics in
 * one pass (sums shifted by the channel's first element, so that a large mean does not cancel the
 * variance) and applies {@code x * scale + shift} in a second; backward sums {@code g} and
 * {@code g * (x - mean)} per channel in one pass (on float32 planes up to {@value #SUM_BLOCK} elements, each image's
 * block of a thread's channels in turn) and writes the input gradient in a second. Float32
 * planes of at least one vector get Vector API loops whose f32 lane sums are flushed into doubles
 * every {@value #SUM_BLOCK} elements; float32 {@code [n, c]} inputs (one element per plane, BatchNorm1d)
 * run vectors across channels instead, and float32 planes shorter than a vector across each image's
 * {@code c * s} elements, folding lanes into channels. Contiguous bfloat16 planes of at least one vector run the
 * same plane loops converting in registers ({@link BatchNormBf16}); other contiguous 16-bit tensors run the float32
 * kernels on widened copies; every other case (float64, strided 16-bit) loads blocks into doubles with
 * {@link ElementIO}. Statistics are parallel over channels, elementwise passes
 * over the {@code n * c} planes; each channel's sums run in a fixed order, so results do not depend on
 * the thread count.
 */
final class CpuNormalizationKernels implements NormalizationKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per block of the generic path (double buffers stay in L1). */
    private static final int BLOCK = 256;
    /** Elements of a plane summed in f32 lanes before the partial sums join double totals. */
    private static final int SUM_BLOCK = 2048;
    /** Rows of a {@code [n, c]} block summed in f32 lanes before the partial sums join double totals. */
    private static final int ROW_FLUSH = 256;
    /** Minimum elements of work per thread before a kernel goes parallel. */
    private static final long GRAIN = 32_768;

    private static long grain(long workPerItem) {
        return Math.max(1, GRAIN / Math.max(1, workPerItem));
    }

    // ---------------------------------------------------------------- 16-bit floats through the float32 kernels

    /**
     * bf16 and f16 activations (autocast's convolutions return them) take the float32 kernels on float32 copies kept per
     * thread, results rounded once, as PyTorch's CPU kernels compute 16-bit batch norm in float: the per-element double
     * path they took before made a bf16 ResNet-20 step's batch norm 5.4x its float32 time (267 against 48 ms, one thread).
     * {@code -Djtorch.norm.widenHalf=false} turns it off. The copies are whole tensors kept per thread (fresh memory costs
     * a page fault per 4 KiB), so tensors above {@link #WIDEN_MAX_ELEMENTS} keep the double path rather than pin
     * gigabytes: the three kept buffers stay under 96 MiB a thread.
     */
    private static final boolean WIDEN_HALF = !"false".equals(System.getProperty("jtorch.norm.widenHalf"));
    private static final long WIDEN_MAX_ELEMENTS = 1L << 23;
    private static final int X = 0, GRAD = 1, OUT = 2;
    private static final ThreadLocal<CpuConvolutionKernels.Scratch[]> WIDE = ThreadLocal.withInitial(
            () -> new CpuConvolutionKernels.Scratch[] {new CpuConvolutionKernels.Scratch(), new CpuConvolutionKernels.Scratch(),
                    new CpuConvolutionKernels.Scratch()});
    /** Elements a thread converts at least. */
    private static final long CONVERT_GRAIN = 1 << 16;

    /**
     * Contiguous bfloat16 planes of at least one vector run {@link BatchNormBf16}'s loops, which widen and round in
     * registers (the same bits as the widening path, without its three whole-tensor conversion passes); {@code
     * -Djtorch.norm.bf16Planes=false} turns them off (then the widening path above serves bfloat16 too).
     */
    private static final boolean BF16_PLANES = !"false".equals(System.getProperty("jtorch.norm.bf16Planes"));

    /** Whether every operand (null where absent) is contiguous bfloat16 with planes of at least one vector. */
    private static boolean bf16Planes(long s, StridedView... operands) {
        if (!BF16_PLANES || s < FL) return false;
        for (StridedView t : operands) {
            if (t != null && (t.dtype() != DType.BFLOAT16 || !t.isContiguous() || t.numel() == 0)) return false;
        }
        return true;
    }

    private static boolean half(StridedView t) {
        return t != null && (t.dtype() == DType.BFLOAT16 || t.dtype() == DType.FLOAT16);
    }

    /** Whether {@code x}'s 16-bit operands take the float32 kernels: on, small enough to copy, and contiguous. */
    private static boolean widens(StridedView x, StridedView... others) {
        if (!WIDEN_HALF || x.numel() > WIDEN_MAX_ELEMENTS || !x.isContiguous()) return false;
        boolean anyHalf = half(x);
        for (StridedView t : others) {
            if (t == null) continue;
            if (!t.isContiguous()) return false;
            anyHalf |= half(t);
        }
        return anyHalf;
    }

    /** A contiguous float32 view of {@code t}'s shape in this thread's buffer {@code slot}, its contents undefined. */
    private static StridedView scratch(StridedView t, int slot) {
        MemorySegment seg = WIDE.get()[slot].get(Math.max(1, t.numel()) * Float.BYTES);
        return new StridedView(seg, 0, t.shape(), Shapes.contiguousStrides(t.shape()), DType.FLOAT32);
    }

    /** Contiguous half {@code t} widened to float32 in this thread's buffer {@code slot}. */
    private static StridedView widened(StridedView t, int slot) {
        StridedView wide = scratch(t, slot);
        convert(t, wide);
        return wide;
    }

    /** Contiguous {@code from} converted into contiguous {@code to} (16-bit and float32 either way), over the threads. */
    private static void convert(StridedView from, StridedView to) {
        long fs = from.dtype().byteSize(), ts = to.dtype().byteSize(), fb = base(from), tb = base(to);
        Parallel.forRange(from.numel(), CONVERT_GRAIN, (begin, end) -> HalfConversion.convert(from.dtype(), from.memory(),
                fb + begin * fs, to.dtype(), to.memory(), tb + begin * ts, end - begin));
    }

    private static boolean fastF32(StridedView x, long s) {
        return x.dtype() == DType.FLOAT32 && s >= FL;
    }

    /** Float32 {@code [n, c]} (one element per plane) with at least one vector of channels: vectors run across channels. */
    private static boolean rowsF32(StridedView x, long s, long c) {
        return x.dtype() == DType.FLOAT32 && s == 1 && c >= FL;
    }

    /**
     * Float32 planes shorter than a vector (2x2 and 1x2 maps: ResNet-18's last stage at 64 px) whose image rows
     * ({@code c * s} elements) hold one: the row kernels run over {@code [n, c * s]} with per-lane parameters (each
     * channel's repeated {@code s} times) and fold lanes into channels, where the per-plane loops would load 4-element
     * planes into double buffers one at a time.
     */
    private static boolean smallPlanesF32(StridedView x, long s, long c) {
        return x.dtype() == DType.FLOAT32 && s > 1 && s < FL && c * s >= FL && c * s <= Integer.MAX_VALUE;
    }

    /** Each channel's value repeated for the {@code s} lanes of its plane in an image row. */
    private static float[] lanes(double[] perChannel, int s) {
        float[] f = new float[perChannel.length * s];
        for (int i = 0; i < f.length; i++) f[i] = (float) perChannel[i / s];
        return f;
    }

    /** The per-lane sums of an image row added up per channel ({@code s} lanes each). */
    private static void foldLanes(double[] perLane, int s, double[] perChannel) {
        for (int ch = 0; ch < perChannel.length; ch++) {
            double t = 0;
            for (int q = 0; q < s; q++) t += perLane[ch * s + q];
            perChannel[ch] = t;
        }
    }

    /** Chunks of {@link #FL} channels, the last one possibly partial. */
    private static long chunks(long c) {
        return (c + FL - 1) / FL;
    }

    static float[] floats(double[] v) {
        float[] f = new float[v.length];
        for (int i = 0; i < v.length; i++) f[i] = (float) v[i];
        return f;
    }

    private static long base(StridedView t) {
        return t.offset() * t.dtype().byteSize();
    }

    /** A per-channel tensor's values as doubles ({@code fallback} everywhere when it is null). */
    static double[] channels(StridedView t, int c, double fallback) {
        double[] v = new double[c];
        if (t == null) {
            java.util.Arrays.fill(v, fallback);
            return v;
        }
        MemorySegment seg = t.memory();
        long es = t.dtype().byteSize();
        long stride = t.dim() == 0 ? 0 : t.stride(0) * es;
        long b = base(t);
        for (int i = 0; i < c; i++) v[i] = ElementCodec.getDouble(t.dtype(), seg, b + i * stride);
        return v;
    }

    static void storeChannels(StridedView t, double[] v) {
        if (t == null) return;
        MemorySegment seg = t.memory();
        long es = t.dtype().byteSize();
        long stride = t.stride(0) * es;
        long b = base(t);
        for (int i = 0; i < v.length; i++) ElementCodec.setDouble(t.dtype(), seg, b + i * stride, v[i]);
    }

    private static FloatVector ld(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    @Override
    public boolean fusesLayerNorm() {
        return true;
    }

    @Override
    public boolean layerNorm(StridedView x, long rows, long cols, StridedView weight, StridedView bias, double eps, StridedView out,
                             StridedView mean, StridedView rstd) {
        CpuLayerNormKernels.forward(x, rows, cols, weight, bias, eps, out, mean, rstd);
        return true;
    }

    @Override
    public boolean layerNormBackward(StridedView gradOut, StridedView x, long rows, long cols, StridedView mean, StridedView rstd,
                                     StridedView weight, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        CpuLayerNormKernels.backward(gradOut, x, rows, cols, mean, rstd, weight, gradInput, gradWeight, gradBias);
        return true;
    }

    // ---------------------------------------------------------------- statistics

    @Override
    public void batchNormStats(StridedView x, long n, long c, long s, StridedView mean, StridedView var) {
        if (bf16Planes(s, x)) {
            statsBf16(x, n, c, s, mean, var);
            return;
        }
        if (widens(x)) {
            batchNormStats(widened(x, X), n, c, s, mean, var);
            return;
        }
        int cc = Math.toIntExact(c);
        double[] m = new double[cc];
        double[] v = new double[cc];
        MemorySegment xs = x.memory();
        long xb = base(x);
        if (rowsF32(x, s, c)) {
            Parallel.forRange(chunks(c), grain(n * FL), (begin, end) -> {
                for (long k = begin; k < end; k++) rowStatsF32(xs, xb, n, cc, (int) k * FL, m, v);
            });
            storeChannels(mean, m);
            storeChannels(var, v);
            return;
        }
        if (smallPlanesF32(x, s, c)) {
            // Each lane's mean and variance over the n images, then a channel's from its s lanes' (equal counts): the
            // mean of the means, and the mean of the variances plus the variance of the means.
            int r = Math.toIntExact(c * s);
            int si = (int) s;
            double[] lm = new double[r];
            double[] lv = new double[r];
            Parallel.forRange(chunks(r), grain(n * FL), (begin, end) -> {
                for (long k = begin; k < end; k++) rowStatsF32(xs, xb, n, r, (int) k * FL, lm, lv);
            });
            for (int ch = 0; ch < cc; ch++) {
                double mu = 0;
                for (int q = 0; q < si; q++) mu += lm[ch * si + q];
                mu /= si;
                double var2 = 0;
                for (int q = 0; q < si; q++) {
                    double d = lm[ch * si + q] - mu;
                    var2 += lv[ch * si + q] + d * d;
                }
                m[ch] = n == 0 ? Double.NaN : mu;
                v[ch] = n == 0 ? Double.NaN : var2 / si;
            }
            storeChannels(mean, m);
            storeChannels(var, v);
            return;
        }
        boolean fast = fastF32(x, s);
        DType dt = x.dtype();
        Parallel.forRange(c, grain(n * s), (begin, end) -> {
            double[] buf = fast ? null : new double[BLOCK];
            for (long ch = begin; ch < end; ch++) {
                if (fast) statsF32(xs, xb, n, c, s, ch, m, v);
                else statsGeneric(dt, xs, xb, n, c, s, ch, buf, m, v);
            }
        });
        storeChannels(mean, m);
        storeChannels(var, v);
    }

    @Override
    public boolean blockMoments(StridedView block, double[] mean, double[] m2) {
        if (block.dtype() != DType.FLOAT32 || block.dim() != 3) {
            throw new IllegalArgumentException("blockMoments: expected a float32 [images, channels, pixels] block, got "
                    + block.dtype() + " of rank " + block.dim());
        }
        long images = block.shape()[0];
        long pixels = block.shape()[2];
        int channels = Math.toIntExact(block.shape()[1]);
        long[] st = block.strides();
        MemorySegment xs = block.memory();
        long xb = base(block);
        double count = (double) images * pixels;
        for (int ch = 0; ch < channels; ch++) {
            if (count == 0) {
                mean[ch] = 0;
                m2[ch] = 0;
                continue;
            }
            long channelBase = xb + ch * st[1] * 4;
            // Shifted by the block's first value of the channel, as batchNormStats shifts by the channel's first value:
            // the sum of squares then does not cancel for values far from zero.
            float k = xs.get(ElementIO.F32, channelBase);
            FloatVector acc = FloatVector.zero(FS);
            FloatVector acc2 = FloatVector.zero(FS);
            double sum = 0;
            double sq = 0;
            for (long i = 0; i < images; i++) {
                long off = channelBase + i * st[0] * 4;
                long j = 0;
                if (st[2] == 1) {
                    long upper = pixels - pixels % FL;
                    for (; j < upper; j += FL) {
                        FloatVector d = ld(xs, off + 4 * j).sub(k);
                        acc = acc.add(d);
                        acc2 = d.fma(d, acc2);
                    }
                }
                for (; j < pixels; j++) {
                    double d = xs.get(ElementIO.F32, off + 4 * j * st[2]) - k;
                    sum += d;
                    sq += d * d;
                }
            }
            sum += VectorF32.sumLanes(acc);
            sq += VectorF32.sumLanes(acc2);
            double shifted = sum / count;
            mean[ch] = k + shifted;
            m2[ch] = Math.max(0, sq - sum * shifted);
        }
        return true;
    }

    private static void statsBf16(StridedView x, long n, long c, long s, StridedView mean, StridedView var) {
        double[] m = new double[Math.toIntExact(c)];
        double[] v = new double[m.length];
        MemorySegment xs = x.memory();
        long xb = base(x);
        Parallel.forRange(c, grain(n * s), (begin, end) -> {
            double[] sums = new double[3];
            for (long ch = begin; ch < end; ch++) {
                BatchNormBf16.stats(xs, xb, n, c, s, ch, SUM_BLOCK, sums);
                finishStats(sums[0], sums[1], sums[2], (double) n * s, ch, m, v);
            }
        });
        storeChannels(mean, m);
        storeChannels(var, v);
    }

    private static void statsF32(MemorySegment xs, long xb, long n, long c, long s, long ch, double[] m, double[] v) {
        float k = xs.get(ElementIO.F32, xb + ch * s * 4);
        double sum = 0;
        double sq = 0;
        // Vector accumulators live across planes and are reduced once per SUM_BLOCK elements: reducing per plane
        // costs more than the plane itself for 8x8 feature maps. Two pairs: one add chain alone is latency-bound.
        FloatVector acc = FloatVector.zero(FS);
        FloatVector acc2 = FloatVector.zero(FS);
        FloatVector accB = FloatVector.zero(FS);
        FloatVector acc2B = FloatVector.zero(FS);
        float ts = 0;
        float tq = 0;
        long pending = 0;
        for (long i = 0; i < n; i++) {
            long off = xb + (i * c + ch) * s * 4;
            for (long j0 = 0; j0 < s; j0 += SUM_BLOCK) {
                long len = Math.min(SUM_BLOCK, s - j0);
                long upper = len - len % FL;
                long upper2 = len - len % (2 * FL);
                long o = off + j0 * 4;
                long j = 0;
                for (; j < upper2; j += 2 * FL) {
                    FloatVector d = ld(xs, o + 4 * j).sub(k);
                    FloatVector e = ld(xs, o + 4 * (j + FL)).sub(k);
                    acc = acc.add(d);
                    acc2 = d.fma(d, acc2);
                    accB = accB.add(e);
                    acc2B = e.fma(e, acc2B);
                }
                for (; j < upper; j += FL) {
                    FloatVector d = ld(xs, o + 4 * j).sub(k);
                    acc = acc.add(d);
                    acc2 = d.fma(d, acc2);
                }
                for (; j < len; j++) {
                    float d = xs.get(ElementIO.F32, o + 4 * j) - k;
                    ts += d;
                    tq += d * d;
                }
                pending += len;
                if (pending >= SUM_BLOCK) {
                    sum += VectorF32.sumLanes(acc.add(accB)) + (double) ts;
                    sq += VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq;
                    acc = FloatVector.zero(FS);
                    acc2 = FloatVector.zero(FS);
                    accB = FloatVector.zero(FS);
                    acc2B = FloatVector.zero(FS);
                    ts = 0;
                    tq = 0;
                    pending = 0;
                }
            }
        }
        sum += VectorF32.sumLanes(acc.add(accB)) + (double) ts;
        sq += VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq;
        finishStats(k, sum, sq, (double) n * s, ch, m, v);
    }

    private static void statsGeneric(DType dt, MemorySegment xs, long xb, long n, long c, long s, long ch, double[] buf,
                                     double[] m, double[] v) {
        long es = dt.byteSize();
        double k = ElementCodec.getDouble(dt, xs, xb + ch * s * es);
        double sum = 0;
        double sq = 0;
        for (long i = 0; i < n; i++) {
            long off = xb + (i * c + ch) * s * es;
            for (long j0 = 0; j0 < s; j0 += BLOCK) {
                int len = (int) Math.min(BLOCK, s - j0);
                ElementIO.load(dt, xs, off + j0 * es, es, len, buf);
                for (int j = 0; j < len; j++) {
                    double d = buf[j] - k;
                    sum += d;
                    sq += d * d;
                }
            }
        }
        finishStats(k, sum, sq, (double) n * s, ch, m, v);
    }

    /**
     * Statistics of channels {@code [c0, c0 + FL)} of a float32 {@code [n, c]} block: lanes are channels,
     * sums shifted by row 0 and flushed into doubles every {@value #ROW_FLUSH} rows. The last chunk
     * overlaps the previous one when {@code c % FL != 0} (it recomputes some channels, identically).
     */
    private static void rowStatsF32(MemorySegment xs, long xb, long n, int c, int c0, double[] m, double[] v) {
        int start = Math.min(c0, c - FL);
        FloatVector k = ld(xs, xb + 4L * start);
        double[] sum = new double[FL];
        double[] sq = new double[FL];
        float[] lane = new float[FL];
        for (long i0 = 0; i0 < n; i0 += ROW_FLUSH) {
            long end = Math.min(n, i0 + ROW_FLUSH);
            FloatVector acc = FloatVector.zero(FS);
            FloatVector acc2 = FloatVector.zero(FS);
            for (long i = i0; i < end; i++) {
                FloatVector d = ld(xs, xb + 4L * (i * c + start)).sub(k);
                acc = acc.add(d);
                acc2 = d.fma(d, acc2);
            }
            acc.intoArray(lane, 0);
            for (int l = 0; l < FL; l++) sum[l] += lane[l];
            acc2.intoArray(lane, 0);
            for (int l = 0; l < FL; l++) sq[l] += lane[l];
        }
        k.intoArray(lane, 0);
        for (int l = 0; l < FL; l++) finishStats(lane[l], sum[l], sq[l], n, start + l, m, v);
    }

    private static void finishStats(double k, double sum, double sq, double count, long ch, double[] m, double[] v) {
        if (count == 0) {
            m[(int) ch] = Double.NaN;
            v[(int) ch] = Double.NaN;
            return;
        }
        double d = sum / count;
        m[(int) ch] = k + d;
        v[(int) ch] = Math.max(0, sq / count - d * d);
    }

    // ---------------------------------------------------------------- running statistics and invstd

    /**
     * One host loop over the channels instead of the composition's nine kernel calls (each a region of the pool, 9-20 us
     * cold after the statistics pass: up to a fifth of the op at [128, 64, 8, 8]). It serves the running statistics whose
     * composition runs the generated float lanes ({@link CpuFormulaKernel}): float32 running and batch statistics (or both
     * float64), contiguous, a finite alpha; there {@code mul} and {@code add} round each product and sum to the dtype,
     * with no fused multiply-add, and take the factor {@code 1 - momentum} and the alpha rounded to it, as here. Other
     * operands (16-bit running statistics, mixed dtypes, strides, a NaN alpha, which the add kernel reads as its default)
     * keep the composition. {@code invstd} is float64 arithmetic whichever kernel runs it.
     */
    @Override
    public boolean batchNormUpdateStats(StridedView mean, StridedView var, StridedView runningMean, StridedView runningVar,
                                        double momentum, double meanAlpha, double varAlpha, double eps, StridedView invstd) {
        DType it = invstd.dtype();
        if (it != DType.FLOAT32 && it != DType.FLOAT64) return false;
        if (!hostMoves(runningMean, mean, meanAlpha) || !hostMoves(runningVar, var, varAlpha)) return false;
        int c = Math.toIntExact(invstd.numel());
        if (runningMean != null) moveTowards(runningMean, mean, momentum, meanAlpha, c);
        if (runningVar != null) moveTowards(runningVar, var, momentum, varAlpha, c);
        double[] v = channels(var, c, 0);
        for (int i = 0; i < c; i++) v[i] = 1 / Math.sqrt(v[i] + eps);
        storeChannels(invstd, v);
        return true;
    }

    /** Whether {@link #moveTowards} has the composition's bits for these operands (see {@link #batchNormUpdateStats}). */
    private static boolean hostMoves(StridedView running, StridedView batch, double alpha) {
        if (running == null) return true;
        DType t = running.dtype();
        return (t == DType.FLOAT32 || t == DType.FLOAT64) && batch.dtype() == t && unitStride(running) && unitStride(batch)
                && !Double.isNaN(alpha);
    }

    private static boolean unitStride(StridedView t) {
        return t.dim() == 1 && t.stride(0) == 1;
    }

    /** {@code running = running * (1 - momentum) + alpha * batch} in the operands' dtype, each step rounded to it. */
    private static void moveTowards(StridedView running, StridedView batch, double momentum, double alpha, int c) {
        MemorySegment rs = running.memory(), bs = batch.memory();
        long rb = base(running), bb = base(batch);
        if (running.dtype() == DType.FLOAT32) {
            float keep = (float) (1 - momentum), a = (float) alpha;
            for (int i = 0; i < c; i++) {
                float r = rs.get(ElementIO.F32, rb + 4L * i) * keep;
                rs.set(ElementIO.F32, rb + 4L * i, r + a * bs.get(ElementIO.F32, bb + 4L * i));
            }
        } else {
            double keep = 1 - momentum;
            for (int i = 0; i < c; i++) {
                double r = rs.get(ElementIO.F64, rb + 8L * i) * keep;
                rs.set(ElementIO.F64, rb + 8L * i, r + alpha * bs.get(ElementIO.F64, bb + 8L * i));
            }
        }
    }

    // ---------------------------------------------------------------- forward

    @Override
    public void batchNormApply(StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                               StridedView weight, StridedView bias,
                               StridedView out) {
        if (bf16Planes(s, x, out)) {
            applyBf16(x, n, c, s, mean, invstd, weight, bias, out);
            return;
        }
        if (widens(x, out)) {
            StridedView out32 = half(out) ? scratch(out, OUT) : out;
            batchNormApply(half(x) ? widened(x, X) : x, n, c, s, mean, invstd, weight, bias, out32);
            if (out32 != out) convert(out32, out);
            return;
        }
        int cc = Math.toIntExact(c);
        double[] m = channels(mean, cc, 0);
        double[] is = channels(invstd, cc, 1);
        double[] w = channels(weight, cc, 1);
        double[] b = channels(bias, cc, 0);
        // y = x * scale + shift with scale = invstd * weight and shift = bias - mean * scale (as PyTorch's CPU kernel) in
        // double; float32 subtracts the mean first.
        double[] scale = new double[cc];
        double[] shift = new double[cc];
        for (int i = 0; i < cc; i++) {
            scale[i] = is[i] * w[i];
            shift[i] = b[i] - m[i] * scale[i];
        }
        MemorySegment xs = x.memory();
        MemorySegment os = out.memory();
        long xb = base(x);
        long ob = base(out);
        DType xt = x.dtype();
        DType ot = out.dtype();
        if (rowsF32(x, s, c) && ot == DType.FLOAT32) {
            float[] mf = floats(m);
            float[] sf = floats(scale);
            float[] bf = floats(b);
            Parallel.forRange(n, grain(c), (begin, end) -> {
                for (long i = begin; i < end; i++) applyRowF32(xs, xb + 4 * i * c, os, ob + 4 * i * c, cc, mf, sf, bf);
            });
            return;
        }
        if (smallPlanesF32(x, s, c) && ot == DType.FLOAT32) {
            int si = (int) s;
            int r = cc * si;
            float[] mf = lanes(m, si);
            float[] sf = lanes(scale, si);
            float[] bf = lanes(b, si);
            Parallel.forRange(n, grain(r), (begin, end) -> {
                for (long i = begin; i < end; i++) applyRowF32(xs, xb + 4 * i * r, os, ob + 4 * i * r, r, mf, sf, bf);
            });
            return;
        }
        boolean fast = fastF32(x, s) && ot == DType.FLOAT32;
        Parallel.forRange(n * c, grain(s), (begin, end) -> {
            double[] buf = fast ? null : new double[BLOCK];
            for (long p = begin; p < end; p++) {
                int ch = (int) (p % c);
                if (fast) {
                    applyF32(xs, xb + p * s * 4, os, ob + p * s * 4, s, (float) m[ch], (float) scale[ch], (float) b[ch]);
                } else {
                    long xes = xt.byteSize();
                    long oes = ot.byteSize();
                    for (long j0 = 0; j0 < s; j0 += BLOCK) {
                        int len = (int) Math.min(BLOCK, s - j0);
                        ElementIO.load(xt, xs, xb + (p * s + j0) * xes, xes, len, buf);
                        for (int j = 0; j < len; j++) buf[j] = buf[j] * scale[ch] + shift[ch];
                        ElementIO.store(ot, os, ob + (p * s + j0) * oes, oes, len, buf);
                    }
                }
            }
        });
    }

    /** The float32 planes' {@code applyF32} on bfloat16 planes: the same float parameters. */
    private static void applyBf16(StridedView x, long n, long c, long s, StridedView mean, StridedView invstd, StridedView weight,
                                  StridedView bias, StridedView out) {
        int cc = Math.toIntExact(c);
        double[] m = channels(mean, cc, 0);
        double[] is = channels(invstd, cc, 1);
        double[] w = channels(weight, cc, 1);
        double[] b = channels(bias, cc, 0);
        MemorySegment xs = x.memory();
        MemorySegment os = out.memory();
        long xb = base(x);
        long ob = base(out);
        Parallel.forRange(n * c, grain(s), (begin, end) -> {
            for (long p = begin; p < end; p++) {
                int ch = (int) (p % c);
                BatchNormBf16.apply(xs, xb + p * s * 2, os, ob + p * s * 2, s, (float) m[ch], (float) (is[ch] * w[ch]), (float) b[ch]);
            }
        });
    }

    /** {@code (x - mean) * scale + bias}: subtracting first keeps float32 exact when the mean is large against the spread. */
    private static void applyF32(MemorySegment xs, long xo, MemorySegment os, long oo, long len, float mean, float scale,
                                 float bias) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) ld(xs, xo + 4 * j).sub(mean).fma(scale, bias).intoMemorySegment(os, oo + 4 * j, LE);
        for (; j < len; j++) os.set(ElementIO.F32, oo + 4 * j, Math.fma(xs.get(ElementIO.F32, xo + 4 * j) - mean, scale, bias));
    }

    private static void applyRowF32(MemorySegment xs, long xo, MemorySegment os, long oo, int c, float[] m, float[] scale,
                                    float[] bias) {
        int upper = c - c % FL;
        int j = 0;
        for (; j < upper; j += FL) {
            ld(xs, xo + 4L * j).sub(FloatVector.fromArray(FS, m, j)).fma(FloatVector.fromArray(FS, scale, j), FloatVector.fromArray(FS, bias, j))
                    .intoMemorySegment(os, oo + 4L * j, LE);
        }
        for (; j < c; j++) os.set(ElementIO.F32, oo + 4L * j, Math.fma(xs.get(ElementIO.F32, xo + 4L * j) - m[j], scale[j], bias[j]));
    }

    // ---------------------------------------------------------------- backward

    @Override
    public void batchNormBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean,
                                  StridedView invstd, StridedView weight,
                                  boolean train, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        boolean bf16 = bf16Planes(s, x, gradOut, gradInput);
        if (!bf16 && widens(x, gradOut, gradInput)) {
            StridedView gradInput32 = half(gradInput) ? scratch(gradInput, OUT) : gradInput;
            batchNormBackward(half(gradOut) ? widened(gradOut, GRAD) : gradOut, half(x) ? widened(x, X) : x, n, c, s, mean, invstd,
                    weight, train, gradInput32, gradWeight, gradBias);
            if (gradInput32 != gradInput) convert(gradInput32, gradInput);
            return;
        }
        int cc = Math.toIntExact(c);
        double[] m = channels(mean, cc, 0);
        double[] is = channels(invstd, cc, 1);
        double[] w = channels(weight, cc, 1);
        double[] sumG = new double[cc];
        double[] sumGXmu = new double[cc];
        MemorySegment gs = gradOut.memory();
        MemorySegment xs = x.memory();
        long gb = base(gradOut);
        long xb = base(x);
        DType gt = gradOut.dtype();
        DType xt = x.dtype();
        boolean fast = fastF32(x, s) && gt == DType.FLOAT32;
        double count = (double) n * s;
        boolean needSums = gradWeight != null || gradBias != null || (train && gradInput != null);
        boolean rows = rowsF32(x, s, c) && gt == DType.FLOAT32;
        boolean small = smallPlanesF32(x, s, c) && gt == DType.FLOAT32;
        if (needSums && bf16) {
            Parallel.forRange(c, grain(2 * n * s), (begin, end) -> {
                double[] sums = new double[2];
                for (long ch = begin; ch < end; ch++) {
                    BatchNormBf16.sums(gs, gb, xs, xb, n, c, s, ch, (float) m[(int) ch], SUM_BLOCK, sums);
                    sumG[(int) ch] = sums[0];
                    sumGXmu[(int) ch] = sums[1];
                }
            });
        } else if (needSums && small) {
            int si = (int) s;
            int r = cc * si;
            double[] meanLanes = new double[r];
            for (int i = 0; i < r; i++) meanLanes[i] = (float) m[i / si];
            double[] lg = new double[r];
            double[] lgx = new double[r];
            Parallel.forRange(chunks(r), grain(2 * n * FL), (begin, end) -> {
                for (long k = begin; k < end; k++) rowSumsF32(gs, gb, xs, xb, n, r, (int) k * FL, meanLanes, lg, lgx);
            });
            foldLanes(lg, si, sumG);
            foldLanes(lgx, si, sumGXmu);
        } else if (needSums && rows) {
            Parallel.forRange(chunks(c), grain(2 * n * FL), (begin, end) -> {
                for (long k = begin; k < end; k++) rowSumsF32(gs, gb, xs, xb, n, cc, (int) k * FL, m, sumG, sumGXmu);
            });
        } else if (needSums && fast && s <= SUM_BLOCK) {
            Parallel.forRange(c, grain(2 * n * s), (begin, end) -> imageMajorSumsF32(gs, gb, xs, xb, n, c, s, (int) begin, (int) end, m,
                    sumG, sumGXmu));
        } else if (needSums) {
            Parallel.forRange(c, grain(2 * n * s), (begin, end) -> {
                double[] gbuf = fast ? null : new double[BLOCK];
                double[] xbuf = fast ? null : new double[BLOCK];
                for (long ch = begin; ch < end; ch++) {
                    int k = (int) ch;
                    if (fast) sumsF32(gs, gb, xs, xb, n, c, s, ch, (float) m[k], sumG, sumGXmu);
                    else sumsGeneric(gt, gs, gb, xt, xs, xb, n, c, s, ch, m[k], gbuf, xbuf, sumG, sumGXmu);
                }
            });
        }
        if (gradBias != null) storeChannels(gradBias, sumG);
        if (gradWeight != null) {
            double[] gw = new double[cc];
            for (int i = 0; i < cc; i++) gw[i] = sumGXmu[i] * is[i];
            storeChannels(gradWeight, gw);
        }
        if (gradInput == null) return;
        // gradInput = (g - (x - mean) * k - meanG) * a with a = invstd * weight; in eval k = meanG = 0.
        double[] a = new double[cc];
        double[] kk = new double[cc];
        double[] mg = new double[cc];
        for (int i = 0; i < cc; i++) {
            a[i] = is[i] * w[i];
            if (train && count > 0) {
                kk[i] = sumGXmu[i] / count * is[i] * is[i];
                mg[i] = sumG[i] / count;
            }
        }
        if (bf16) gradInputBf16(gradOut, x, n, c, s, m, a, kk, mg, train, gradInput);
        else gradInput(gradOut, x, n, c, s, m, a, kk, mg, train, gradInput);
    }

    /** {@link #gradInput}'s float32 plane loops on bfloat16 planes. */
    private static void gradInputBf16(StridedView gradOut, StridedView x, long n, long c, long s, double[] m, double[] a, double[] kk,
                                      double[] mg, boolean train, StridedView gradInput) {
        MemorySegment gs = gradOut.memory();
        MemorySegment xs = x.memory();
        MemorySegment ds = gradInput.memory();
        long gb = base(gradOut);
        long xb = base(x);
        long db = base(gradInput);
        Parallel.forRange(n * c, grain(s), (begin, end) -> {
            for (long p = begin; p < end; p++) {
                int ch = (int) (p % c);
                long o = p * s * 2;
                if (train) {
                    BatchNormBf16.gradInputTrain(gs, gb + o, xs, xb + o, ds, db + o, s, (float) m[ch], (float) kk[ch], (float) mg[ch],
                            (float) a[ch]);
                } else {
                    BatchNormBf16.scale(gs, gb + o, ds, db + o, s, (float) a[ch]);
                }
            }
        });
    }

    /** {@code batch_norm_backward_elemt}'s pass: the coefficients {@code (a, k, meanG)} are the rows of {@code coef}. */
    @Override
    public void batchNormGradInput(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView coef,
                                   StridedView gradInput) {
        int cc = Math.toIntExact(c);
        double[] a = new double[cc];
        double[] kk = new double[cc];
        double[] mg = new double[cc];
        MemorySegment cs = coef.memory();
        long cb = base(coef);
        for (int i = 0; i < cc; i++) {
            a[i] = cs.get(ElementIO.F64, cb + 8L * (3 * i));
            kk[i] = cs.get(ElementIO.F64, cb + 8L * (3 * i + 1));
            mg[i] = cs.get(ElementIO.F64, cb + 8L * (3 * i + 2));
        }
        gradInput(gradOut, x, n, c, s, channels(mean, cc, 0), a, kk, mg, true, gradInput);
    }

    /**
     * {@code gradInput = (g - (x - mean) * k - meanG) * a} per channel over contiguous {@code [n, c, s]} blocks ({@code g * a}
     * without {@code train}).
     */
    private static void gradInput(StridedView gradOut, StridedView x, long n, long c, long s, double[] m, double[] a, double[] kk,
                                  double[] mg, boolean train, StridedView gradInput) {
        int cc = Math.toIntExact(c);
        MemorySegment gs = gradOut.memory();
        MemorySegment xs = x.memory();
        long gb = base(gradOut);
        long xb = base(x);
        DType gt = gradOut.dtype();
        DType xt = x.dtype();
        boolean fast = fastF32(x, s) && gt == DType.FLOAT32;
        boolean rows = rowsF32(x, s, c) && gt == DType.FLOAT32;
        boolean small = smallPlanesF32(x, s, c) && gt == DType.FLOAT32;
        MemorySegment ds = gradInput.memory();
        long db = base(gradInput);
        DType dt = gradInput.dtype();
        if (rows && dt == DType.FLOAT32) {
            float[] mf = floats(m);
            float[] kf = floats(kk);
            float[] gf = floats(mg);
            float[] af = floats(a);
            Parallel.forRange(n, grain(2 * c), (begin, end) -> {
                for (long i = begin; i < end; i++) gradInputRowF32(gs, gb + 4 * i * c, xs, xb + 4 * i * c, ds, db + 4 * i * c, cc, mf, kf, gf, af);
            });
            return;
        }
        if (small && dt == DType.FLOAT32) {
            int si = (int) s;
            int r = cc * si;
            float[] mf = lanes(m, si);
            float[] kf = lanes(kk, si);
            float[] gf = lanes(mg, si);
            float[] af = lanes(a, si);
            Parallel.forRange(n, grain(2 * r), (begin, end) -> {
                for (long i = begin; i < end; i++) gradInputRowF32(gs, gb + 4 * i * r, xs, xb + 4 * i * r, ds, db + 4 * i * r, r, mf, kf, gf, af);
            });
            return;
        }
        boolean fastOut = fast && dt == DType.FLOAT32;
        Parallel.forRange(n * c, grain(s), (begin, end) -> {
            double[] gbuf = fastOut ? null : new double[BLOCK];
            double[] xbuf = fastOut ? null : new double[BLOCK];
            for (long p = begin; p < end; p++) {
                int ch = (int) (p % c);
                if (fastOut) {
                    if (train) {
                        gradInputTrainF32(gs, gb + p * s * 4, xs, xb + p * s * 4, ds, db + p * s * 4, s, (float) m[ch],
                                (float) kk[ch], (float) mg[ch], (float) a[ch]);
                    } else {
                        scaleF32(gs, gb + p * s * 4, ds, db + p * s * 4, s, (float) a[ch]);
                    }
                } else {
                    long ges = gt.byteSize();
                    long xes = xt.byteSize();
                    long des = dt.byteSize();
                    for (long j0 = 0; j0 < s; j0 += BLOCK) {
                        int len = (int) Math.min(BLOCK, s - j0);
                        ElementIO.load(gt, gs, gb + (p * s + j0) * ges, ges, len, gbuf);
                        if (train) {
                            ElementIO.load(xt, xs, xb + (p * s + j0) * xes, xes, len, xbuf);
                            for (int j = 0; j < len; j++) gbuf[j] = (gbuf[j] - (xbuf[j] - m[ch]) * kk[ch] - mg[ch]) * a[ch];
                        } else {
                            for (int j = 0; j < len; j++) gbuf[j] *= a[ch];
                        }
                        ElementIO.store(dt, ds, db + (p * s + j0) * des, des, len, gbuf);
                    }
                }
            }
        });
    }

    @Override
    public boolean batchNormReluBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                                         StridedView weight, StridedView bias, StridedView gradInput, StridedView gradWeight,
                                         StridedView gradBias) {
        if (!CpuBatchNormReluBackward.fits(gradOut, x, n, c, s, gradInput)) return false;
        CpuBatchNormReluBackward.run(gradOut, x, n, c, s, mean, invstd, weight, bias, gradInput, gradWeight, gradBias);
        return true;
    }

    @Override
    public boolean batchNormAddReluBackward(StridedView gradOut, StridedView x, StridedView residual, long n, long c, long s, StridedView mean,
                                            StridedView invstd, StridedView weight, StridedView bias, StridedView masked,
                                            StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        if (!CpuBatchNormReluBackward.fitsJoin(gradOut, x, residual, masked, n, c, s, gradInput)) return false;
        CpuBatchNormReluBackward.run(gradOut, x, residual, masked, n, c, s, mean, invstd, weight, bias, gradInput, gradWeight, gradBias);
        return true;
    }

    /** As {@link #statsF32}: accumulators across planes, reduced once per {@value #SUM_BLOCK} elements. */
    private static void sumsF32(MemorySegment gs, long gb, MemorySegment xs, long xb, long n, long c, long s, long ch,
                                float mean, double[] sumG, double[] sumGXmu) {
        double sg = 0;
        double sgx = 0;
        FloatVector acc = FloatVector.zero(FS);
        FloatVector acc2 = FloatVector.zero(FS);
        FloatVector accB = FloatVector.zero(FS);
        FloatVector acc2B = FloatVector.zero(FS);
        float ts = 0;
        float tq = 0;
        long pending = 0;
        for (long i = 0; i < n; i++) {
            long plane = (i * c + ch) * s * 4;
            for (long j0 = 0; j0 < s; j0 += SUM_BLOCK) {
                long len = Math.min(SUM_BLOCK, s - j0);
                long upper = len - len % FL;
                long upper2 = len - len % (2 * FL);
                long go = gb + plane + j0 * 4;
                long xo = xb + plane + j0 * 4;
                long j = 0;
                for (; j < upper2; j += 2 * FL) {
                    FloatVector g = ld(gs, go + 4 * j);
                    FloatVector h = ld(gs, go + 4 * (j + FL));
                    acc = acc.add(g);
                    acc2 = g.fma(ld(xs, xo + 4 * j).sub(mean), acc2);
                    accB = accB.add(h);
                    acc2B = h.fma(ld(xs, xo + 4 * (j + FL)).sub(mean), acc2B);
                }
                for (; j < upper; j += FL) {
                    FloatVector g = ld(gs, go + 4 * j);
                    acc = acc.add(g);
                    acc2 = g.fma(ld(xs, xo + 4 * j).sub(mean), acc2);
                }
                for (; j < len; j++) {
                    float g = gs.get(ElementIO.F32, go + 4 * j);
                    ts += g;
                    tq += g * (xs.get(ElementIO.F32, xo + 4 * j) - mean);
                }
                pending += len;
                if (pending >= SUM_BLOCK) {
                    sg += VectorF32.sumLanes(acc.add(accB)) + (double) ts;
                    sgx += VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq;
                    acc = FloatVector.zero(FS);
                    acc2 = FloatVector.zero(FS);
                    accB = FloatVector.zero(FS);
                    acc2B = FloatVector.zero(FS);
                    ts = 0;
                    tq = 0;
                    pending = 0;
                }
            }
        }
        sg += VectorF32.sumLanes(acc.add(accB)) + (double) ts;
        sgx += VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq;
        sumG[(int) ch] = sg;
        sumGXmu[(int) ch] = sgx;
    }

    /**
     * {@link #sumsF32} of channels {@code [c0, c1)} for planes of at most {@value #SUM_BLOCK} elements, walking each image's
     * contiguous block of those channels in turn (one stream) instead of each channel's planes an image apart: at 8x8 a
     * channel's planes are 256 bytes 16 KiB apart. Each channel's accumulators wait in arrays between its planes, and take
     * the same operations in the same order as {@link #sumsF32}'s, so the sums are the same bits.
     */
    private static void imageMajorSumsF32(MemorySegment gs, long gb, MemorySegment xs, long xb, long n, long c, long s, int c0, int c1,
                                          double[] mean, double[] sumG, double[] sumGXmu) {
        int channels = c1 - c0;
        float[] acc = new float[channels * FL];
        float[] acc2 = new float[channels * FL];
        float[] accB = new float[channels * FL];
        float[] acc2B = new float[channels * FL];
        float[] ts = new float[channels];
        float[] tq = new float[channels];
        double[] sg = new double[channels];
        double[] sgx = new double[channels];
        long upper = s - s % FL;
        long upper2 = s - s % (2 * FL);
        long pending = 0;
        for (long i = 0; i < n; i++) {
            for (int k = 0; k < channels; k++) {
                float mu = (float) mean[c0 + k];
                long go = gb + (i * c + c0 + k) * s * 4;
                long xo = xb + (i * c + c0 + k) * s * 4;
                FloatVector a = FloatVector.fromArray(FS, acc, k * FL);
                FloatVector a2 = FloatVector.fromArray(FS, acc2, k * FL);
                FloatVector b = FloatVector.fromArray(FS, accB, k * FL);
                FloatVector b2 = FloatVector.fromArray(FS, acc2B, k * FL);
                long j = 0;
                for (; j < upper2; j += 2 * FL) {
                    FloatVector g = ld(gs, go + 4 * j);
                    FloatVector h = ld(gs, go + 4 * (j + FL));
                    a = a.add(g);
                    a2 = g.fma(ld(xs, xo + 4 * j).sub(mu), a2);
                    b = b.add(h);
                    b2 = h.fma(ld(xs, xo + 4 * (j + FL)).sub(mu), b2);
                }
                for (; j < upper; j += FL) {
                    FloatVector g = ld(gs, go + 4 * j);
                    a = a.add(g);
                    a2 = g.fma(ld(xs, xo + 4 * j).sub(mu), a2);
                }
                for (; j < s; j++) {
                    float g = gs.get(ElementIO.F32, go + 4 * j);
                    ts[k] += g;
                    tq[k] += g * (xs.get(ElementIO.F32, xo + 4 * j) - mu);
                }
                a.intoArray(acc, k * FL);
                a2.intoArray(acc2, k * FL);
                b.intoArray(accB, k * FL);
                b2.intoArray(acc2B, k * FL);
            }
            pending += s;
            if (pending >= SUM_BLOCK) {
                flushSums(channels, acc, accB, ts, sg);
                flushSums(channels, acc2, acc2B, tq, sgx);
                pending = 0;
            }
        }
        flushSums(channels, acc, accB, ts, sg);
        flushSums(channels, acc2, acc2B, tq, sgx);
        System.arraycopy(sg, 0, sumG, c0, channels);
        System.arraycopy(sgx, 0, sumGXmu, c0, channels);
    }

    /** Each channel's two vector accumulators and scalar tail added into its double total, as {@link #sumsF32} flushes; then zeroed. */
    private static void flushSums(int channels, float[] acc, float[] accB, float[] tail, double[] total) {
        for (int k = 0; k < channels; k++) {
            total[k] += VectorF32.sumLanes(FloatVector.fromArray(FS, acc, k * FL).add(FloatVector.fromArray(FS, accB, k * FL))) + (double) tail[k];
        }
        java.util.Arrays.fill(acc, 0);
        java.util.Arrays.fill(accB, 0);
        java.util.Arrays.fill(tail, 0);
    }

    /** {@link #sumsF32} for channels {@code [c0, c0 + FL)} of a float32 {@code [n, c]} block (lanes are channels). */
    private static void rowSumsF32(MemorySegment gs, long gb, MemorySegment xs, long xb, long n, int c, int c0, double[] mean,
                                   double[] sumG, double[] sumGXmu) {
        int start = Math.min(c0, c - FL);
        float[] lane = new float[FL];
        for (int l = 0; l < FL; l++) lane[l] = (float) mean[start + l];
        FloatVector mv = FloatVector.fromArray(FS, lane, 0);
        double[] sg = new double[FL];
        double[] sgx = new double[FL];
        for (long i0 = 0; i0 < n; i0 += ROW_FLUSH) {
            long end = Math.min(n, i0 + ROW_FLUSH);
            FloatVector acc = FloatVector.zero(FS);
            FloatVector acc2 = FloatVector.zero(FS);
            for (long i = i0; i < end; i++) {
                FloatVector g = ld(gs, gb + 4L * (i * c + start));
                acc = acc.add(g);
                acc2 = g.fma(ld(xs, xb + 4L * (i * c + start)).sub(mv), acc2);
            }
            acc.intoArray(lane, 0);
            for (int l = 0; l < FL; l++) sg[l] += lane[l];
            acc2.intoArray(lane, 0);
            for (int l = 0; l < FL; l++) sgx[l] += lane[l];
        }
        for (int l = 0; l < FL; l++) {
            sumG[start + l] = sg[l];
            sumGXmu[start + l] = sgx[l];
        }
    }

    private static void gradInputRowF32(MemorySegment gs, long go, MemorySegment xs, long xo, MemorySegment ds, long dO, int c,
                                        float[] mean, float[] k, float[] meanG, float[] a) {
        int upper = c - c % FL;
        int j = 0;
        for (; j < upper; j += FL) {
            FloatVector proj = ld(xs, xo + 4L * j).sub(FloatVector.fromArray(FS, mean, j)).mul(FloatVector.fromArray(FS, k, j));
            ld(gs, go + 4L * j).sub(proj).sub(FloatVector.fromArray(FS, meanG, j)).mul(FloatVector.fromArray(FS, a, j))
                    .intoMemorySegment(ds, dO + 4L * j, LE);
        }
        for (; j < c; j++) {
            float proj = (xs.get(ElementIO.F32, xo + 4L * j) - mean[j]) * k[j];
            ds.set(ElementIO.F32, dO + 4L * j, (gs.get(ElementIO.F32, go + 4L * j) - proj - meanG[j]) * a[j]);
        }
    }

    private static void sumsGeneric(DType gt, MemorySegment gs, long gb, DType xt, MemorySegment xs, long xb, long n, long c,
                                    long s, long ch, double mean, double[] gbuf, double[] xbuf, double[] sumG, double[] sumGXmu) {
        long ges = gt.byteSize();
        long xes = xt.byteSize();
        double sg = 0;
        double sgx = 0;
        for (long i = 0; i < n; i++) {
            long plane = (i * c + ch) * s;
            for (long j0 = 0; j0 < s; j0 += BLOCK) {
                int len = (int) Math.min(BLOCK, s - j0);
                ElementIO.load(gt, gs, gb + (plane + j0) * ges, ges, len, gbuf);
                ElementIO.load(xt, xs, xb + (plane + j0) * xes, xes, len, xbuf);
                for (int j = 0; j < len; j++) {
                    sg += gbuf[j];
                    sgx += gbuf[j] * (xbuf[j] - mean);
                }
            }
        }
        sumG[(int) ch] = sg;
        sumGXmu[(int) ch] = sgx;
    }

    private static void gradInputTrainF32(MemorySegment gs, long go, MemorySegment xs, long xo, MemorySegment ds, long dO,
                                          long len, float mean, float k, float meanG, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector proj = ld(xs, xo + 4 * j).sub(mean).mul(k);
            ld(gs, go + 4 * j).sub(proj).sub(meanG).mul(a).intoMemorySegment(ds, dO + 4 * j, LE);
        }
        for (; j < len; j++) {
            float proj = (xs.get(ElementIO.F32, xo + 4 * j) - mean) * k;
            ds.set(ElementIO.F32, dO + 4 * j, (gs.get(ElementIO.F32, go + 4 * j) - proj - meanG) * a);
        }
    }

    private static void scaleF32(MemorySegment gs, long go, MemorySegment ds, long dO, long len, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) ld(gs, go + 4 * j).mul(a).intoMemorySegment(ds, dO + 4 * j, LE);
        for (; j < len; j++) ds.set(ElementIO.F32, dO + 4 * j, gs.get(ElementIO.F32, go + 4 * j) * a);
    }
}
