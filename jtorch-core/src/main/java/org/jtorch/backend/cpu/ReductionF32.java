package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API reductions of contiguous float32 runs, the building blocks of {@link CpuReductionKernels}' fast
 * paths. Every method reads its run once, from the front, with several independent accumulators, and allocates
 * nothing.
 *
 * <p>Sums are cascaded, as PyTorch's {@code cascade_sum}: within a {@value #BLOCK_VECTORS}-vector block each lane
 * adds 16 elements in f32; a chunk of {@value #CHUNK_BLOCKS} blocks adds its block sums lane by lane in f32; the
 * chunk's lanes then join a double total. Every f32 partial therefore sums at most 16 terms at each of its three
 * levels, which bounds the rounding error by about 40 ulps of the sum of magnitudes (typically a few ulps of the
 * result), independent of the length.
 */
final class ReductionF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> IS = VectorSpecies.of(int.class, FS.vectorShape());
    static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Vectors per block: four accumulators, sixteen loads each. */
    private static final int BLOCK_VECTORS = 64;
    static final int BLOCK = BLOCK_VECTORS * FL;
    private static final int CHUNK_BLOCKS = 16;
    /** Elements per cascade chunk (16K floats at 16 lanes: 64 KiB, resident in L2 for a second pass). */
    static final int CHUNK = CHUNK_BLOCKS * BLOCK;

    /** What a sum adds: the elements, their magnitudes (the 1-norm) or their squares (the 2-norm). */
    enum Term { VALUE, ABS, SQUARE }

    private ReductionF32() {}

    private static FloatVector load(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    private static FloatVector term(FloatVector x, Term t) {
        return switch (t) {
            case VALUE -> x;
            case ABS -> x.abs();
            case SQUARE -> x.mul(x);
        };
    }

    /**
     * Runs up to this long ({@value}) are summed by {@link #shortSum}. A kernel that only ever sees short runs (a loss's
     * mean over a batch of 64, a sum along a dim of 10) reaches C2 only after hundreds to thousands of calls, and until
     * then each Vector API operation is a boxed object and a call chain: the sums of [64, 10] along dim 1 took 0.35-0.92
     * ms a call over the first hundred calls against 0.06-0.08 ms this way. Compiled by C2 the scalar form costs 12-17 ns
     * more a run of 4-10 floats and less from 16 on (docs/BENCHMARKS.md, issue 20, branch warmup3).
     */
    static final int SHORT_SUM = 64;

    /**
     * Column sums of the reduced rows of {@code g} ({@code g.numRed} of them), {@code width} contiguous floats each,
     * row {@code k} at byte offset {@code off + g.redOffset(k)}, into {@code width} floats at {@code outOff}. Each
     * column adds its rows in order into an f32 partial that joins the column's f32 total every {@code flush} rows:
     * the order of {@link CpuReductionKernels}' strip of partials, kept bit for bit, with four vectors of columns held
     * in registers over all the rows (the strip's partials were loaded and stored once a row).
     */
    static void columnSums(MemorySegment s, long off, ReductionLayout g, int flush, int width, MemorySegment out, long outOff) {
        long rows = g.numRed;
        int j = 0;
        for (; j + 4 * FL <= width; j += 4 * FL) {
            FloatVector t0 = FloatVector.zero(FS), t1 = t0, t2 = t0, t3 = t0;
            long col = off + 4L * j;
            for (long k0 = 0; k0 < rows; k0 += flush) {
                long k1 = Math.min(rows, k0 + flush);
                FloatVector p0 = FloatVector.zero(FS), p1 = p0, p2 = p0, p3 = p0;
                for (long k = k0; k < k1; k++) {
                    long at = col + g.redOffset(k);
                    p0 = p0.add(load(s, at));
                    p1 = p1.add(load(s, at + 4L * FL));
                    p2 = p2.add(load(s, at + 8L * FL));
                    p3 = p3.add(load(s, at + 12L * FL));
                }
                t0 = t0.add(p0);
                t1 = t1.add(p1);
                t2 = t2.add(p2);
                t3 = t3.add(p3);
            }
            long o = outOff + 4L * j;
            t0.intoMemorySegment(out, o, LE);
            t1.intoMemorySegment(out, o + 4L * FL, LE);
            t2.intoMemorySegment(out, o + 8L * FL, LE);
            t3.intoMemorySegment(out, o + 12L * FL, LE);
        }
        for (; j + FL <= width; j += FL) {
            FloatVector t = FloatVector.zero(FS);
            long col = off + 4L * j;
            for (long k0 = 0; k0 < rows; k0 += flush) {
                long k1 = Math.min(rows, k0 + flush);
                FloatVector p = FloatVector.zero(FS);
                for (long k = k0; k < k1; k++) p = p.add(load(s, col + g.redOffset(k)));
                t = t.add(p);
            }
            t.intoMemorySegment(out, outOff + 4L * j, LE);
        }
        for (; j < width; j++) {
            float t = 0;
            long col = off + 4L * j;
            for (long k0 = 0; k0 < rows; k0 += flush) {
                long k1 = Math.min(rows, k0 + flush);
                float p = 0;
                for (long k = k0; k < k1; k++) p += s.get(ElementIO.F32, col + g.redOffset(k));
                t += p;
            }
            out.set(ElementIO.F32, outOff + 4L * j, t);
        }
    }

    /** Sum of {@code term(x)} over {@code n} contiguous floats at byte offset {@code off}, cascaded (see the class). */
    static double sum(MemorySegment s, long off, long n, Term t) {
        return n <= SHORT_SUM ? shortSum(s, off, (int) n, t) : vectorSum(s, off, n, t);
    }

    /** {@link #sum}'s vector form, for any {@code n}. */
    static double vectorSum(MemorySegment s, long off, long n, Term t) {
        double total = 0;
        for (long i = 0; i < n; i += CHUNK) {
            total += chunkSum(s, off + 4 * i, (int) Math.min(CHUNK, n - i), t);
        }
        return total;
    }

    /** Sum of one chunk ({@code n <= CHUNK}), in f32: blocks, then the blocks' sums, then the lanes. */
    private static float chunkSum(MemorySegment s, long off, int n, Term t) {
        FloatVector blocks = FloatVector.zero(FS);
        int i = 0;
        for (; i + BLOCK <= n; i += BLOCK) blocks = blocks.add(blockSum(s, off + 4L * i, t));
        FloatVector rest = FloatVector.zero(FS);
        for (; i + FL <= n; i += FL) rest = rest.add(term(load(s, off + 4L * i), t));
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            rest = rest.add(term(FloatVector.fromMemorySegment(FS, s, off + 4L * i, LE, m), t));
        }
        return VectorF32.sumLanes(blocks.add(rest));
    }

    /**
     * {@link #chunkSum} of {@code n <= SHORT_SUM < BLOCK} floats in scalar code, lane by lane: each lane adds the same
     * terms in the same order as the vector form's accumulator, and the lanes are folded in {@link VectorF32#sumLanes}'
     * order, so the result has the same bits.
     */
    static float shortSum(MemorySegment s, long off, int n, Term t) {
        float[] lanes = new float[FL];
        switch (t) {
            case VALUE -> {
                for (int i = 0; i < n; i++) lanes[i & (FL - 1)] += s.get(ElementIO.F32, off + 4L * i);
            }
            case ABS -> {
                for (int i = 0; i < n; i++) lanes[i & (FL - 1)] += Math.abs(s.get(ElementIO.F32, off + 4L * i));
            }
            case SQUARE -> {
                for (int i = 0; i < n; i++) {
                    float x = s.get(ElementIO.F32, off + 4L * i);
                    lanes[i & (FL - 1)] += x * x;
                }
            }
        }
        return VectorF32.sumLanes(lanes);
    }

    private static FloatVector blockSum(MemorySegment s, long off, Term t) {
        FloatVector a0 = FloatVector.zero(FS), a1 = a0, a2 = a0, a3 = a0;
        long step = 4L * FS.vectorByteSize();
        for (long b = off, end = off + 4L * BLOCK; b < end; b += step) {
            a0 = a0.add(term(load(s, b), t));
            a1 = a1.add(term(load(s, b + FS.vectorByteSize()), t));
            a2 = a2.add(term(load(s, b + 2L * FS.vectorByteSize()), t));
            a3 = a3.add(term(load(s, b + 3L * FS.vectorByteSize()), t));
        }
        return a0.add(a1).add(a2.add(a3));
    }

    /**
     * Maximum (or minimum) of {@code n >= 1} contiguous floats; NaN propagates, as {@link Math#max}. A run shorter than
     * the vector loop's step takes scalar comparisons only: the vector form there broadcasts and reduces the first
     * element and then compares every element in scalar code, and those two vector operations are boxed objects until
     * C2 compiles it.
     */
    static float extremum(MemorySegment s, long off, long n, boolean max) {
        if (n >= 2L * FL) return vectorExtremum(s, off, n, max);
        float r = s.get(ElementIO.F32, off);
        for (long i = 0; i < n; i++) {
            float x = s.get(ElementIO.F32, off + 4 * i);
            r = max ? Math.max(r, x) : Math.min(r, x);
        }
        return r;
    }

    /** {@link #extremum}'s vector form, for any {@code n >= 1}. */
    static float vectorExtremum(MemorySegment s, long off, long n, boolean max) {
        // This shape of loop (two accumulators, nothing else under a flag) measured fast; a variant with four
        // accumulators and an abs() under a second flag ran at half the speed (C2, Zen 4).
        float first = s.get(ElementIO.F32, off);
        FloatVector a0 = FloatVector.broadcast(FS, first);
        FloatVector a1 = a0;
        long i = 0;
        for (long upper = n - 2L * FL; i <= upper; i += 2L * FL) {
            FloatVector x0 = load(s, off + i * 4);
            FloatVector x1 = load(s, off + (i + FL) * 4);
            a0 = max ? a0.max(x0) : a0.min(x0);
            a1 = max ? a1.max(x1) : a1.min(x1);
        }
        FloatVector a = max ? a0.max(a1) : a0.min(a1);
        float r = a.reduceLanes(max ? VectorOperators.MAX : VectorOperators.MIN);
        for (; i < n; i++) {
            float x = s.get(ElementIO.F32, off + i * 4);
            r = max ? Math.max(r, x) : Math.min(r, x);
        }
        return r;
    }

    /** {@link #extremum} of {@code x[from, from + n)}, {@code n >= 1}: the same comparisons in the same order. */
    static float extremum(float[] x, int from, int n, boolean max) {
        float r = x[from];
        for (int i = from; i < from + n; i++) r = max ? Math.max(r, x[i]) : Math.min(r, x[i]);
        return r;
    }

    /**
     * Index of the maximum (or minimum) of {@code n >= 1} contiguous floats, {@code n < 2^31}: the first
     * occurrence on ties; the first NaN beats every number. Each lane keeps its best value and the index it came
     * from (strict comparisons keep a lane's first occurrence); the lanes are then compared in index order.
     */
    static long argExtremum(MemorySegment s, long off, long n, boolean max, float[] bestValue) {
        int i = 0;
        int whole = (int) (n - n % FL);
        float best;
        long bestIndex;
        if (whole > 0) {
            FloatVector bv = load(s, off);
            IntVector lanes = IntVector.zero(IS).addIndex(1);
            IntVector bi = lanes;
            for (i = FL; i < whole; i += FL) {
                FloatVector x = load(s, off + 4L * i);
                VectorMask<Float> better = max ? x.compare(VectorOperators.GT, bv) : x.compare(VectorOperators.LT, bv);
                better = better.or(x.compare(VectorOperators.NE, x).andNot(bv.compare(VectorOperators.NE, bv)));
                bv = bv.blend(x, better);
                bi = bi.blend(lanes.add(i), better.cast(IS));
            }
            best = bv.lane(0);
            bestIndex = bi.lane(0);
            for (int l = 1; l < FL; l++) {
                float x = bv.lane(l);
                long xi = bi.lane(l);
                if (better(x, best, max) || (same(x, best) && xi < bestIndex)) {
                    best = x;
                    bestIndex = xi;
                }
            }
        } else {
            best = s.get(ElementIO.F32, off);
            bestIndex = 0;
            i = 1;
        }
        for (; i < n; i++) {
            float x = s.get(ElementIO.F32, off + 4L * i);
            if (better(x, best, max)) {
                best = x;
                bestIndex = i;
            }
        }
        bestValue[0] = best;
        return bestIndex;
    }

    /** Receives one line's winner: its line number (row-major over the other dimensions), index and value. */
    @FunctionalInterface
    interface ArgSink {
        void accept(long line, long index, float value);
    }

    /** Output columns per work item of {@link #argExtremumColumns}: 8 KiB runs of each input row. */
    private static final int STRIP = 2048;

    /**
     * Arg-reductions along the middle dimension of contiguous {@code [outer, length, inner]} floats, {@code inner > 1}:
     * each work item owns a strip of columns and walks the rows in memory order, keeping each column's best value
     * and index in L1-resident arrays (strict comparisons keep the first occurrence; the first NaN wins).
     */
    static void argExtremumColumns(boolean max, MemorySegment s, long off, long outer, int length, long inner, ArgSink sink) {
        int strip = (int) Math.min(STRIP, Math.max(FL, (inner / Parallel.numThreads() + FL - 1) / FL * FL));
        long strips = (inner + strip - 1) / strip;
        Parallel.forRange(outer * strips, Math.max(1, 32_768 / ((long) length * strip)), (begin, end) -> {
            float[] best = new float[strip];
            int[] index = new int[strip];
            for (long item = begin; item < end; item++) {
                long o = item / strips;
                long j0 = (item % strips) * strip;
                int width = (int) Math.min(strip, inner - j0);
                long base = off + 4 * (o * length * inner + j0);
                MemorySegment.copy(s, ElementIO.F32, base, best, 0, width);
                java.util.Arrays.fill(index, 0, width, 0);
                int whole = width - width % FL;
                for (int k = 1; k < length; k++) {
                    long row = base + 4L * k * inner;
                    IntVector vk = IntVector.broadcast(IS, k);
                    for (int j = 0; j < whole; j += FL) {
                        FloatVector x = load(s, row + 4L * j);
                        FloatVector b = FloatVector.fromArray(FS, best, j);
                        VectorMask<Float> better = max ? x.compare(VectorOperators.GT, b) : x.compare(VectorOperators.LT, b);
                        better = better.or(x.compare(VectorOperators.NE, x).andNot(b.compare(VectorOperators.NE, b)));
                        b.blend(x, better).intoArray(best, j);
                        IntVector.fromArray(IS, index, j).blend(vk, better.cast(IS)).intoArray(index, j);
                    }
                    for (int j = whole; j < width; j++) {
                        float x = s.get(ElementIO.F32, row + 4L * j);
                        if (better(x, best[j], max)) {
                            best[j] = x;
                            index[j] = k;
                        }
                    }
                }
                for (int j = 0; j < width; j++) sink.accept(o * inner + j0 + j, index[j], best[j]);
            }
        });
    }

    /** Whether {@code x} replaces {@code best} when it comes later: strictly better, or the first NaN. */
    static boolean better(float x, float best, boolean max) {
        return (max ? x > best : x < best) || (x != x && best == best);
    }

    private static boolean same(float x, float best) {
        return x == best || (x != x && best != best);
    }

    /**
     * Adds the count, mean and sum of squared deviations of {@code n} contiguous floats into {@code acc}
     * ({@code [count, mean, m2]}, doubles). A chunk at a time: its mean from a first pass, then its squared
     * deviations from a second pass while the chunk is still in cache (the residual sum of deviations corrects the
     * mean's rounding, as the two-pass algorithm), merged into the running moments by Chan's formula.
     */
    static void moments(MemorySegment s, long off, long n, double[] acc) {
        for (long i = 0; i < n; i += CHUNK) {
            int len = (int) Math.min(CHUNK, n - i);
            long o = off + 4 * i;
            float mean = (float) (chunkSum(s, o, len, Term.VALUE) / (double) len);
            FloatVector vm = FloatVector.broadcast(FS, mean);
            // Cascaded as the sums: two accumulators per block, the blocks' partials added lane by lane.
            FloatVector dm = FloatVector.zero(FS), qm = dm;
            int j = 0;
            for (; j + BLOCK <= len; j += BLOCK) {
                FloatVector d0 = FloatVector.zero(FS), d1 = d0, q0 = d0, q1 = d0;
                for (int k = j; k < j + BLOCK; k += 2 * FL) {
                    FloatVector x0 = load(s, o + 4L * k).sub(vm), x1 = load(s, o + 4L * (k + FL)).sub(vm);
                    d0 = d0.add(x0);
                    d1 = d1.add(x1);
                    q0 = x0.fma(x0, q0);
                    q1 = x1.fma(x1, q1);
                }
                dm = dm.add(d0.add(d1));
                qm = qm.add(q0.add(q1));
            }
            for (; j + FL <= len; j += FL) {
                FloatVector x = load(s, o + 4L * j).sub(vm);
                dm = dm.add(x);
                qm = x.fma(x, qm);
            }
            double sd = VectorF32.sumLanes(dm);
            double m2 = VectorF32.sumLanes(qm);
            for (; j < len; j++) {
                double d = s.get(ElementIO.F32, o + 4L * j) - mean;
                sd += d;
                m2 += d * d;
            }
            merge(acc, len, mean + sd / len, m2 - sd * sd / len);
        }
    }

    /** Chan et al.'s update: merges {@code (count, mean, m2)} of a part into the running {@code acc}. */
    static void merge(double[] acc, double count, double mean, double m2) {
        double n = acc[0] + count;
        if (n == 0) return;
        double delta = mean - acc[1];
        acc[2] += m2 + delta * delta * acc[0] * count / n;
        acc[1] += delta * count / n;
        acc[0] = n;
    }
}
