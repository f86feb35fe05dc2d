package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API reductions of contiguous float64 runs, {@link ReductionF32}'s counterparts: sums (of values, magnitudes
 * or squares) and extrema, each run read once with four independent accumulators. Sums are cascaded as the float32
 * ones: each lane adds 16 elements per block, a chunk adds its block sums lane by lane, and the chunks' sums join the
 * total; every partial sums at most 16 terms at each level.
 */
final class ReductionF64 {
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int DL = DS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final int BLOCK_VECTORS = 64;
    private static final int BLOCK = BLOCK_VECTORS * DL;
    private static final int CHUNK = 16 * BLOCK;

    private ReductionF64() {}

    private static DoubleVector load(MemorySegment s, long off) {
        return DoubleVector.fromMemorySegment(DS, s, off, LE);
    }

    private static DoubleVector term(DoubleVector x, ReductionF32.Term t) {
        return switch (t) {
            case VALUE -> x;
            case ABS -> x.abs();
            case SQUARE -> x.mul(x);
        };
    }

    /** Sum of {@code term(x)} over {@code n} contiguous doubles at byte offset {@code off}, cascaded. */
    static double sum(MemorySegment s, long off, long n, ReductionF32.Term t) {
        double total = 0;
        for (long i = 0; i < n; i += CHUNK) total += chunkSum(s, off + 8 * i, (int) Math.min(CHUNK, n - i), t);
        return total;
    }

    private static double chunkSum(MemorySegment s, long off, int n, ReductionF32.Term t) {
        DoubleVector blocks = DoubleVector.zero(DS);
        int i = 0;
        for (; i + BLOCK <= n; i += BLOCK) blocks = blocks.add(blockSum(s, off + 8L * i, t));
        DoubleVector rest = DoubleVector.zero(DS);
        for (; i + DL <= n; i += DL) rest = rest.add(term(load(s, off + 8L * i), t));
        if (i < n) {
            VectorMask<Double> m = DS.indexInRange(i, n);
            rest = rest.add(term(DoubleVector.fromMemorySegment(DS, s, off + 8L * i, LE, m), t));
        }
        return VectorF64.sumLanes(blocks.add(rest));
    }

    private static DoubleVector blockSum(MemorySegment s, long off, ReductionF32.Term t) {
        DoubleVector a0 = DoubleVector.zero(DS), a1 = a0, a2 = a0, a3 = a0;
        long step = 4L * DS.vectorByteSize();
        for (long b = off, end = off + 8L * BLOCK; b < end; b += step) {
            a0 = a0.add(term(load(s, b), t));
            a1 = a1.add(term(load(s, b + DS.vectorByteSize()), t));
            a2 = a2.add(term(load(s, b + 2L * DS.vectorByteSize()), t));
            a3 = a3.add(term(load(s, b + 3L * DS.vectorByteSize()), t));
        }
        return a0.add(a1).add(a2.add(a3));
    }

    /** Maximum (or minimum) of {@code n >= 1} contiguous doubles; NaN propagates, as {@link Math#max}. */
    static double extremum(MemorySegment s, long off, long n, boolean max) {
        DoubleVector a0 = DoubleVector.broadcast(DS, s.get(ElementIO.F64, off));
        DoubleVector a1 = a0;
        long i = 0;
        for (long upper = n - 2L * DL; i <= upper; i += 2L * DL) {
            DoubleVector x0 = load(s, off + i * 8);
            DoubleVector x1 = load(s, off + (i + DL) * 8);
            a0 = max ? a0.max(x0) : a0.min(x0);
            a1 = max ? a1.max(x1) : a1.min(x1);
        }
        DoubleVector a = max ? a0.max(a1) : a0.min(a1);
        double r = a.reduceLanes(max ? VectorOperators.MAX : VectorOperators.MIN);
        for (; i < n; i++) {
            double x = s.get(ElementIO.F64, off + i * 8);
            r = max ? Math.max(r, x) : Math.min(r, x);
        }
        return r;
    }

    private static final VectorSpecies<Long> LS = VectorSpecies.of(long.class, DS.vectorShape());

    /**
     * Index of the first maximum (or minimum) of {@code n >= 1} contiguous doubles, NaN counting as the largest (the
     * first NaN wins), as {@link ReductionF32#argExtremum}: each lane keeps its best value and index, the lanes'
     * winners are compared at the end (lowest index among equals).
     */
    static long argExtremum(MemorySegment s, long off, long n, boolean max, double[] bestValue) {
        long i = 0;
        long whole = n - n % DL;
        double best;
        long bestIndex;
        if (whole > 0) {
            DoubleVector bv = load(s, off);
            LongVector lanes = LongVector.zero(LS).addIndex(1);
            LongVector bi = lanes;
            for (i = DL; i < whole; i += DL) {
                DoubleVector x = load(s, off + 8L * i);
                VectorMask<Double> better = max ? x.compare(VectorOperators.GT, bv) : x.compare(VectorOperators.LT, bv);
                better = better.or(x.compare(VectorOperators.NE, x).andNot(bv.compare(VectorOperators.NE, bv)));
                bv = bv.blend(x, better);
                bi = bi.blend(lanes.add(i), better.cast(LS));
            }
            best = bv.lane(0);
            bestIndex = bi.lane(0);
            for (int l = 1; l < DL; l++) {
                double x = bv.lane(l);
                long xi = bi.lane(l);
                boolean same = x == best || (x != x && best != best);
                if (better(x, best, max) || (same && xi < bestIndex)) {
                    best = x;
                    bestIndex = xi;
                }
            }
        } else {
            best = s.get(ElementIO.F64, off);
            bestIndex = 0;
            i = 1;
        }
        for (; i < n; i++) {
            double x = s.get(ElementIO.F64, off + 8L * i);
            if (better(x, best, max)) {
                best = x;
                bestIndex = i;
            }
        }
        bestValue[0] = best;
        return bestIndex;
    }

    /** Whether {@code x} replaces {@code best} when it comes later: strictly better, or the first NaN. */
    private static boolean better(double x, double best, boolean max) {
        return (max ? x > best : x < best) || (x != x && best == best);
    }

    /**
     * Adds the count, mean and sum of squared deviations of {@code n} contiguous doubles into {@code acc}
     * ({@code [count, mean, m2]}), a chunk at a time as {@link ReductionF32#moments}: the chunk's mean from a first
     * pass, its deviations from a second while it is in cache, the residual sum of deviations correcting the mean.
     */
    static void moments(MemorySegment s, long off, long n, double[] acc) {
        for (long i = 0; i < n; i += CHUNK) {
            int len = (int) Math.min(CHUNK, n - i);
            long o = off + 8 * i;
            double mean = chunkSum(s, o, len, ReductionF32.Term.VALUE) / len;
            DoubleVector vm = DoubleVector.broadcast(DS, mean);
            DoubleVector d0 = DoubleVector.zero(DS), d1 = d0, q0 = d0, q1 = d0;
            int j = 0;
            for (; j + 2 * DL <= len; j += 2 * DL) {
                DoubleVector x0 = load(s, o + 8L * j).sub(vm), x1 = load(s, o + 8L * (j + DL)).sub(vm);
                d0 = d0.add(x0);
                d1 = d1.add(x1);
                q0 = x0.fma(x0, q0);
                q1 = x1.fma(x1, q1);
            }
            double sd = VectorF64.sumLanes(d0.add(d1));
            double m2 = VectorF64.sumLanes(q0.add(q1));
            for (; j < len; j++) {
                double d = s.get(ElementIO.F64, o + 8L * j) - mean;
                sd += d;
                m2 += d * d;
            }
            ReductionF32.merge(acc, len, mean + sd / len, m2 - sd * sd / len);
        }
    }

    /** Adds one row of {@code width} contiguous doubles at byte offset {@code off} into {@code total} (a column sum's step). */
    static void addRow(MemorySegment s, long off, int width, double[] total) {
        int whole = width - width % DL;
        int j = 0;
        for (; j < whole; j += DL) DoubleVector.fromArray(DS, total, j).add(load(s, off + 8L * j)).intoArray(total, j);
        for (; j < width; j++) total[j] += s.get(ElementIO.F64, off + 8L * j);
    }

    /**
     * Column sums of {@code rows} rows of {@code width} contiguous doubles, row r at byte {@code off + r * rowStride}, into
     * {@code width} doubles at byte {@code outOff}: each column added in row order from zero, as {@link #addRow} adds them,
     * with four vectors of columns held in registers over all the rows. Through a heap total (one load and store of it per
     * row and vector) time_sequence_prediction's bias gradients ({@code [97, 204]}) took 8.4 µs against PyTorch's 3.9.
     */
    static void columnSums(MemorySegment s, long off, long rowStride, long rows, int width, MemorySegment out, long outOff) {
        int j = 0;
        for (; j + 4 * DL <= width; j += 4 * DL) {
            DoubleVector s0 = DoubleVector.zero(DS), s1 = s0, s2 = s0, s3 = s0;
            long at = off + 8L * j;
            for (long r = 0; r < rows; r++, at += rowStride) {
                s0 = s0.add(load(s, at));
                s1 = s1.add(load(s, at + 8L * DL));
                s2 = s2.add(load(s, at + 16L * DL));
                s3 = s3.add(load(s, at + 24L * DL));
            }
            long o = outOff + 8L * j;
            s0.intoMemorySegment(out, o, LE);
            s1.intoMemorySegment(out, o + 8L * DL, LE);
            s2.intoMemorySegment(out, o + 16L * DL, LE);
            s3.intoMemorySegment(out, o + 24L * DL, LE);
        }
        for (; j + DL <= width; j += DL) {
            DoubleVector t = DoubleVector.zero(DS);
            long at = off + 8L * j;
            for (long r = 0; r < rows; r++, at += rowStride) t = t.add(load(s, at));
            t.intoMemorySegment(out, outOff + 8L * j, LE);
        }
        for (; j < width; j++) {
            double t = 0;
            long at = off + 8L * j;
            for (long r = 0; r < rows; r++, at += rowStride) t += s.get(ElementIO.F64, at);
            out.set(ElementIO.F64, outOff + 8L * j, t);
        }
    }

    /**
     * Softmax (or log-softmax) of one contiguous row of {@code n >= 1} doubles, with the generic path's formulas:
     * {@code exp(x - max) / sum} and {@code x - max - log(sum)}. A row whose maximum is infinite gives NaN, as there.
     */
    static void softmaxRow(MemorySegment is, long io, MemorySegment os, long oo, int n, boolean log) {
        double max = extremum(is, io, n, true);
        DoubleVector vmax = DoubleVector.broadcast(DS, max);
        DoubleVector a0 = DoubleVector.zero(DS), a1 = a0;
        int i = 0;
        if (VectorExp.DETERMINISTIC) {
            // One exact exponential per iteration, the two sums taking turns: with two calls in the loop body C2
            // stopped inlining the second (NodeCountInliningCutoff), which then boxed its vectors (3x slower). With
            // the JDK's exponential this loop ran 2x slower than the one below (the same sums in the same order).
            for (int pairs = n - n % (2 * DL); i < pairs; i += DL) {
                DoubleVector e = VectorExp.exactExp(load(is, io + 8L * i).sub(vmax));
                if (!log) e.intoMemorySegment(os, oo + 8L * i, LE);
                DoubleVector sum = a0.add(e);
                a0 = a1;
                a1 = sum;
            }
        } else {
            for (; i + 2 * DL <= n; i += 2 * DL) {
                DoubleVector e0 = load(is, io + 8L * i).sub(vmax).lanewise(VectorOperators.EXP);
                DoubleVector e1 = load(is, io + 8L * (i + DL)).sub(vmax).lanewise(VectorOperators.EXP);
                if (!log) {
                    e0.intoMemorySegment(os, oo + 8L * i, LE);
                    e1.intoMemorySegment(os, oo + 8L * (i + DL), LE);
                }
                a0 = a0.add(e0);
                a1 = a1.add(e1);
            }
        }
        double sum = VectorF64.sumLanes(a0.add(a1));
        for (; i < n; i++) {
            double e = Math.exp(is.get(ElementIO.F64, io + 8L * i) - max);
            if (!log) os.set(ElementIO.F64, oo + 8L * i, e);
            sum += e;
        }
        int whole = n - n % DL;
        if (log) {
            double logSum = Math.log(sum);
            int j = 0;
            for (; j < whole; j += DL) load(is, io + 8L * j).sub(max).sub(logSum).intoMemorySegment(os, oo + 8L * j, LE);
            for (; j < n; j++) os.set(ElementIO.F64, oo + 8L * j, is.get(ElementIO.F64, io + 8L * j) - max - logSum);
        } else {
            int j = 0;
            for (; j < whole; j += DL) load(os, oo + 8L * j).div(sum).intoMemorySegment(os, oo + 8L * j, LE);
            for (; j < n; j++) os.set(ElementIO.F64, oo + 8L * j, os.get(ElementIO.F64, oo + 8L * j) / sum);
        }
    }
}
