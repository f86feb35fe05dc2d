package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ValueCheckKernels;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The CPU's loops of {@link ValueCheckKernels}: binary cross entropy with its range check in the same pass (each vector
 * of inputs is checked as it is loaded, so a bad one stops the loop before its loss is used), and the check of
 * bernoulli's probabilities. Vector API loops with one masked step for the tail, over the threads in chunks; the
 * logarithms are {@link VectorMath}'s and {@link VectorMathF64}'s, and each step rounds as the composition of
 * pointwise kernels did ({@code (t - 1) * max(log1p(-x), -100) - t * max(log(x), -100)}, times the weight), so the
 * losses are that composition's, bit for bit.
 */
final class CpuValueCheckKernels {
    private CpuValueCheckKernels() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per thread before a loop goes parallel (two logarithms an element). */
    private static final long GRAIN = 16_384;
    private static final long NONE = Long.MAX_VALUE;

    static void register() {
        ValueCheckKernels.registerBinaryCrossEntropy(Device.Type.CPU, CpuValueCheckKernels::binaryCrossEntropy);
        ValueCheckKernels.registerUnitInterval(Device.Type.CPU, CpuValueCheckKernels::unitInterval);
    }

    private static long base(StridedView v) {
        return v.offset() * v.dtype().byteSize();
    }

    private static void binaryCrossEntropy(StridedView out, StridedView x, StridedView t, StridedView w, LongFunction<RuntimeException> outOfRange) {
        long n = out.numel();
        boolean f32 = out.dtype() == DType.FLOAT32;
        // The first bad position over the chunks: the lowest, whichever thread finds it.
        AtomicLong firstBad = new AtomicLong(NONE);
        Parallel.forRange(n, GRAIN, (from, to) -> {
            long bad = f32 ? bceF32(out, x, t, w, from, to) : bceF64(out, x, t, w, from, to);
            if (bad != NONE) firstBad.accumulateAndGet(bad, Math::min);
        });
        if (firstBad.get() != NONE) throw outOfRange.apply(firstBad.get());
    }

    /**
     * Elements per block of the two passes below. The loss's two logarithms run in separate loops over a block (in L1)
     * rather than in one loop body: with jtorch's own log and log1p ({@code -Djtorch.cpu.deterministicMath=true}) one
     * body took more than C2's node budget for inlining (each Vector API call parses to about 400 nodes,
     * NodeCountInliningCutoff 18,000), and the refused calls boxed their vectors at every step: BCE 2.7x slower
     * (docs/BENCHMARKS.md, issue 20, seventeenth session). The masked tails are methods of their own for the same reason.
     */
    private static final long BLOCK = 1024;

    /** Losses of elements [from, to); returns the first position there whose input is outside [0, 1] (then stops), else {@link #NONE}. */
    private static long bceF32(StridedView out, StridedView x, StridedView t, StridedView w, long from, long to) {
        for (long b = from; b < to; b += BLOCK) {
            long end = Math.min(to, b + BLOCK), good = bceLogF32(out, x, t, b, end);
            bceLog1mF32(out, x, t, w, b, good);
            if (good < end) return firstBadF32(x, good, to);
        }
        return NONE;
    }

    /**
     * {@code out = t * max(log(x), -100)} over [from, to) up to the first vector with an input outside [0, 1] or NaN
     * (which fails both comparisons): returns where that vector starts (nothing written from there), else {@code to}.
     */
    private static long bceLogF32(StridedView out, StridedView x, StridedView t, long from, long to) {
        long i = from;
        for (; i + FS.length() <= to; i += FS.length()) if (!bceLogStepF32(out, x, t, i, null)) return i;
        return i < to && !bceLogTailF32(out, x, t, i, to) ? i : to;
    }

    private static boolean bceLogTailF32(StridedView out, StridedView x, StridedView t, long i, long to) {
        return bceLogStepF32(out, x, t, i, FS.indexInRange(i, to));
    }

    /** One vector at {@code i} (the lanes of {@code m} in the tail, all where it is null). */
    private static boolean bceLogStepF32(StridedView out, StridedView x, StridedView t, long i, VectorMask<Float> m) {
        FloatVector xv = loadF32(x, i, m);
        VectorMask<Float> good = xv.compare(VectorOperators.GE, 0f).and(xv.compare(VectorOperators.LE, 1f));
        if (m != null) good = good.or(m.not());
        if (!good.allTrue()) return false;
        storeF32(out, i, m, loadF32(t, i, m).mul(VectorMath.log(xv).max(-100f)));
        return true;
    }

    /** {@code out = (t - 1) * max(log1p(-x), -100) - out}, times the weight: the loss, from the first pass's term. */
    private static void bceLog1mF32(StridedView out, StridedView x, StridedView t, StridedView w, long from, long to) {
        long i = from;
        // The whole vectors without the masked loads' and stores' branches, and the rows' segments and byte offsets read
        // before the loop: with jtorch's log1p (-Djtorch.cpu.deterministicMath=true) a call in the loop body after it
        // (base) passed C2's node-count cutoff and was refused.
        MemorySegment xs = x.memory(), ts = t.memory(), os = out.memory(), ws = w == null ? null : w.memory();
        long xb = base(x), tb = base(t), ob = base(out), wb = w == null ? 0 : base(w);
        for (; i + FS.length() <= to; i += FS.length()) {
            FloatVector log1mX = VectorMath.log1p(FloatVector.fromMemorySegment(FS, xs, xb + 4 * i, LE).neg()).max(-100f);
            FloatVector loss = FloatVector.fromMemorySegment(FS, ts, tb + 4 * i, LE).sub(1f).mul(log1mX)
                    .sub(FloatVector.fromMemorySegment(FS, os, ob + 4 * i, LE));
            (ws == null ? loss : loss.mul(FloatVector.fromMemorySegment(FS, ws, wb + 4 * i, LE))).intoMemorySegment(os, ob + 4 * i, LE);
        }
        if (i < to) bceLog1mTailF32(out, x, t, w, i, to);
    }

    private static void bceLog1mTailF32(StridedView out, StridedView x, StridedView t, StridedView w, long i, long to) {
        bceLog1mStepF32(out, x, t, w, i, FS.indexInRange(i, to));
    }

    private static void bceLog1mStepF32(StridedView out, StridedView x, StridedView t, StridedView w, long i, VectorMask<Float> m) {
        FloatVector log1mX = VectorMath.log1p(loadF32(x, i, m).neg()).max(-100f);
        FloatVector loss = loadF32(t, i, m).sub(1f).mul(log1mX).sub(loadF32(out, i, m));
        storeF32(out, i, m, w == null ? loss : loss.mul(loadF32(w, i, m)));
    }

    private static FloatVector loadF32(StridedView v, long i, VectorMask<Float> m) {
        return m == null ? FloatVector.fromMemorySegment(FS, v.memory(), base(v) + 4 * i, LE)
                : FloatVector.fromMemorySegment(FS, v.memory(), base(v) + 4 * i, LE, m);
    }

    private static void storeF32(StridedView v, long i, VectorMask<Float> m, FloatVector value) {
        if (m == null) value.intoMemorySegment(v.memory(), base(v) + 4 * i, LE);
        else value.intoMemorySegment(v.memory(), base(v) + 4 * i, LE, m);
    }

    private static long bceF64(StridedView out, StridedView x, StridedView t, StridedView w, long from, long to) {
        for (long b = from; b < to; b += BLOCK) {
            long end = Math.min(to, b + BLOCK), good = bceLogF64(out, x, t, b, end);
            bceLog1mF64(out, x, t, w, b, good);
            if (good < end) return firstBadF64(x, good, to);
        }
        return NONE;
    }

    private static long bceLogF64(StridedView out, StridedView x, StridedView t, long from, long to) {
        long i = from;
        for (; i + DS.length() <= to; i += DS.length()) if (!bceLogStepF64(out, x, t, i, null)) return i;
        return i < to && !bceLogTailF64(out, x, t, i, to) ? i : to;
    }

    private static boolean bceLogTailF64(StridedView out, StridedView x, StridedView t, long i, long to) {
        return bceLogStepF64(out, x, t, i, DS.indexInRange(i, to));
    }

    private static boolean bceLogStepF64(StridedView out, StridedView x, StridedView t, long i, VectorMask<Double> m) {
        DoubleVector xv = loadF64(x, i, m);
        VectorMask<Double> good = xv.compare(VectorOperators.GE, 0).and(xv.compare(VectorOperators.LE, 1));
        if (m != null) good = good.or(m.not());
        if (!good.allTrue()) return false;
        storeF64(out, i, m, loadF64(t, i, m).mul(VectorMathF64.log(xv).max(-100)));
        return true;
    }

    private static void bceLog1mF64(StridedView out, StridedView x, StridedView t, StridedView w, long from, long to) {
        long i = from;
        MemorySegment xs = x.memory(), ts = t.memory(), os = out.memory(), ws = w == null ? null : w.memory();
        long xb = base(x), tb = base(t), ob = base(out), wb = w == null ? 0 : base(w);
        for (; i + DS.length() <= to; i += DS.length()) {
            DoubleVector log1mX = VectorMathF64.log1p(DoubleVector.fromMemorySegment(DS, xs, xb + 8 * i, LE).neg()).max(-100);
            DoubleVector loss = DoubleVector.fromMemorySegment(DS, ts, tb + 8 * i, LE).sub(1).mul(log1mX)
                    .sub(DoubleVector.fromMemorySegment(DS, os, ob + 8 * i, LE));
            (ws == null ? loss : loss.mul(DoubleVector.fromMemorySegment(DS, ws, wb + 8 * i, LE))).intoMemorySegment(os, ob + 8 * i, LE);
        }
        if (i < to) bceLog1mTailF64(out, x, t, w, i, to);
    }

    private static void bceLog1mTailF64(StridedView out, StridedView x, StridedView t, StridedView w, long i, long to) {
        bceLog1mStepF64(out, x, t, w, i, DS.indexInRange(i, to));
    }

    private static void bceLog1mStepF64(StridedView out, StridedView x, StridedView t, StridedView w, long i, VectorMask<Double> m) {
        DoubleVector log1mX = VectorMathF64.log1p(loadF64(x, i, m).neg()).max(-100);
        DoubleVector loss = loadF64(t, i, m).sub(1).mul(log1mX).sub(loadF64(out, i, m));
        storeF64(out, i, m, w == null ? loss : loss.mul(loadF64(w, i, m)));
    }

    private static DoubleVector loadF64(StridedView v, long i, VectorMask<Double> m) {
        return m == null ? DoubleVector.fromMemorySegment(DS, v.memory(), base(v) + 8 * i, LE)
                : DoubleVector.fromMemorySegment(DS, v.memory(), base(v) + 8 * i, LE, m);
    }

    private static void storeF64(StridedView v, long i, VectorMask<Double> m, DoubleVector value) {
        if (m == null) value.intoMemorySegment(v.memory(), base(v) + 8 * i, LE);
        else value.intoMemorySegment(v.memory(), base(v) + 8 * i, LE, m);
    }

    /** The first element of {@code v} in [from, to) outside [0, 1] or NaN, else {@link #NONE}: element by element (a bad vector was seen). */
    private static long firstBadF32(StridedView v, long from, long to) {
        for (long i = from; i < to; i++) {
            float e = v.memory().get(ElementIO.F32, base(v) + 4 * i);
            if (!(e >= 0 && e <= 1)) return i;
        }
        return NONE;
    }

    private static long firstBadF64(StridedView v, long from, long to) {
        for (long i = from; i < to; i++) {
            double e = v.memory().get(ElementIO.F64, base(v) + 8 * i);
            if (!(e >= 0 && e <= 1)) return i;
        }
        return NONE;
    }

    private static void unitInterval(StridedView p, LongFunction<RuntimeException> outOfRange) {
        long n = p.numel();
        boolean f32 = p.dtype() == DType.FLOAT32;
        AtomicLong firstBad = new AtomicLong(NONE);
        Parallel.forRange(n, 4 * GRAIN, (from, to) -> {
            long bad = f32 ? outsideF32(p, from, to) : outsideF64(p, from, to);
            if (bad != NONE) firstBad.accumulateAndGet(bad, Math::min);
        });
        if (firstBad.get() != NONE) throw outOfRange.apply(firstBad.get());
    }

    private static long outsideF32(StridedView p, long from, long to) {
        for (long i = from; i < to; i += FS.length()) {
            VectorMask<Float> m = FS.indexInRange(i, to);
            FloatVector v = FloatVector.fromMemorySegment(FS, p.memory(), base(p) + 4 * i, LE, m);
            if (!v.compare(VectorOperators.GE, 0f).and(v.compare(VectorOperators.LE, 1f)).or(m.not()).allTrue()) return firstBadF32(p, i, to);
        }
        return NONE;
    }

    private static long outsideF64(StridedView p, long from, long to) {
        for (long i = from; i < to; i += DS.length()) {
            VectorMask<Double> m = DS.indexInRange(i, to);
            DoubleVector v = DoubleVector.fromMemorySegment(DS, p.memory(), base(p) + 8 * i, LE, m);
            if (!v.compare(VectorOperators.GE, 0).and(v.compare(VectorOperators.LE, 1)).or(m.not()).allTrue()) return firstBadF64(p, i, to);
        }
        return NONE;
    }
}
