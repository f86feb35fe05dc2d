package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Float32 softmax and log-softmax in the Vector API, along the last dimension (contiguous rows) and along an inner
 * dimension of a contiguous tensor ({@code [outer, length, inner]}, the dimension of stride {@code inner}).
 *
 * <p>Rows: the maximum, then {@code exp(x - max)} stored with its sum, then a scale; a row up to some 64K floats
 * stays in L1 or L2 between the passes, so memory sees one read and one write, as a copy. Inner dimensions: the
 * same three passes over a tile one vector wide and {@code length} deep, parallel over tiles.
 *
 * <p>The exponential is {@link #expNonPositive}: softmax only ever takes exp of {@code x - max <= 0}, where a
 * short polynomial is exact to about an ulp (the tests sweep it against {@link Math#exp}) and about three times
 * faster than the general vector exp.
 */
final class SoftmaxF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> IS = VectorSpecies.of(int.class, FS.vectorShape());
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    private static final float LOG2E = 1.44269504088896341f;
    /** ln 2 split so that {@code n * LN2_HI} is exact for the n that occur (|n| < 2^8). */
    private static final float LN2_HI = 0.693359375f;
    private static final float LN2_LO = -2.12194440e-4f;
    /** 1.5 * 2^23: adding it rounds a float below 2^22 in magnitude to an integer, held in the low mantissa bits. */
    private static final float ROUNDER = 12582912f;
    /** 1.5 * 2^23 + 127: rounded with it, t's bits shifted left by 23 are those of 2^n (the rounder's own shift out). */
    private static final float ROUNDER_BIASED = ROUNDER + 127;
    /** Below this, exp(x) is under the smallest normal float; softmax flushes it to 0 (an error under 1.2e-38). */
    private static final float UNDERFLOW = -87.33654f;

    private SoftmaxF32() {}

    /**
     * {@code exp(x)} for {@code x <= 0} (NaN gives NaN): {@code 2^n e^r} with {@code n = round(x log2 e)},
     * {@code |r| <= ln2 / 2} and e^r by its Taylor polynomial of degree 7 (truncation error 5e-9, a tenth of an ulp).
     * Results below the smallest normal float are 0; {@code -inf} gives 0.
     *
     * <p>2^n is {@code t}'s bits shifted into the exponent field ({@code t} rounded with {@link #ROUNDER_BIASED}), and
     * one multiply scales: n is at least -126 wherever x is not flushed (there r > 0, so e^r > 1), so 2^n is normal,
     * the product exact and NaN carried through, with the bits of adding n to p's exponent field, which took three
     * more vector operations on the two ports that run 512-bit work on Intel (docs/BENCHMARKS.md, issue 22, exp26).
     * These bit casts stay (NativeOperandsTest): run outside C2, each stores and reloads through a heap segment, but
     * 2^n built from integer conversions instead made softmax 1.2-2.9x slower compiled (BENCHMARKS, warmup6).
     */
    static FloatVector expNonPositive(FloatVector x) {
        FloatVector t = x.fma(LOG2E, ROUNDER_BIASED);
        FloatVector n = t.sub(ROUNDER_BIASED);
        FloatVector r = n.fma(FloatVector.broadcast(FS, -LN2_HI), x);
        r = n.fma(FloatVector.broadcast(FS, -LN2_LO), r);
        FloatVector p = FloatVector.broadcast(FS, 1f / 5040f);
        p = p.fma(r, FloatVector.broadcast(FS, 1f / 720f));
        p = p.fma(r, FloatVector.broadcast(FS, 1f / 120f));
        p = p.fma(r, FloatVector.broadcast(FS, 1f / 24f));
        p = p.fma(r, FloatVector.broadcast(FS, 1f / 6f));
        p = p.fma(r, FloatVector.broadcast(FS, 0.5f));
        p = p.fma(r, FloatVector.broadcast(FS, 1f));
        p = p.fma(r, FloatVector.broadcast(FS, 1f));
        FloatVector e = p.mul(t.reinterpretAsInts().lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
        return e.blend(0f, x.compare(VectorOperators.LT, UNDERFLOW));
    }

    private static FloatVector load(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    // ---------------------------------------------------------------- rows

    /**
     * Rows up to this long ({@value}) take {@link #shortRow}. Their vector form is one masked vector per pass, all fixed
     * cost, and a kernel that only sees such rows (log-softmax over 10 classes) runs that code boxed, an object and a
     * call chain per Vector API operation, until C2 compiles it hundreds to thousands of calls later: [64, 10] took 2-3
     * ms a call over the first hundred calls against 0.08-0.11 ms this way. Compiled by C2 the scalar form costs what the
     * vector form does on rows of 4-10 floats and about 25 ns more on a row of 16; longer rows lose more
     * (docs/BENCHMARKS.md, issue 20, branch warmup3).
     */
    static final int SHORT_ROW = 16;

    /** Softmax (or log-softmax) of one contiguous row of {@code n >= 1} floats. */
    static void row(MemorySegment is, long io, MemorySegment os, long oo, int n, boolean log) {
        if (n <= SHORT_ROW) {
            shortRow(is, io, os, oo, n, log);
        } else {
            vectorRow(is, io, os, oo, n, log);
        }
    }

    /** {@link #row}'s vector form, for any {@code n >= 1}. */
    static void vectorRow(MemorySegment is, long io, MemorySegment os, long oo, int n, boolean log) {
        float max = ReductionF32.extremum(is, io, n, true);
        if (log) {
            shift(is, io, os, oo, n, max + (float) Math.log(vectorExpSum(is, io, n, max)));
        } else {
            scale(os, oo, n, 1f / expStoreSum(is, io, os, oo, n, max));
        }
    }

    /** sum(exp(x - max)), also storing the exponentials. */
    private static float expStoreSum(MemorySegment is, long io, MemorySegment os, long oo, int n, float max) {
        FloatVector vmax = FloatVector.broadcast(FS, max);
        FloatVector a0 = FloatVector.zero(FS), a1 = a0;
        int i = 0;
        for (; i + 2 * FL <= n; i += 2 * FL) {
            FloatVector e0 = expNonPositive(load(is, io + 4L * i).sub(vmax));
            FloatVector e1 = expNonPositive(load(is, io + 4L * (i + FL)).sub(vmax));
            e0.intoMemorySegment(os, oo + 4L * i, LE);
            e1.intoMemorySegment(os, oo + 4L * (i + FL), LE);
            a0 = a0.add(e0);
            a1 = a1.add(e1);
        }
        if (i + FL <= n) {
            FloatVector e = expNonPositive(load(is, io + 4L * i).sub(vmax));
            e.intoMemorySegment(os, oo + 4L * i, LE);
            a0 = a0.add(e);
            i += FL;
        }
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector e = expNonPositive(FloatVector.fromMemorySegment(FS, is, io + 4L * i, LE, m).sub(vmax));
            e.intoMemorySegment(os, oo + 4L * i, LE, m);
            a1 = a1.add(FloatVector.zero(FS).blend(e, m));
        }
        return VectorF32.sumLanes(a0.add(a1));
    }

    /**
     * {@link #vectorRow} in scalar code: the same exponentials ({@link #expNonPositive(float)}), each added to the lane
     * and accumulator the vector form adds it to, the lanes folded as {@link VectorF32#sumLanes}; so the same bits.
     */
    static void shortRow(MemorySegment is, long io, MemorySegment os, long oo, int n, boolean log) {
        shortRows(is, io, os, oo, 1, n, log);
    }

    /** Floats per block of {@link #shortRows}: an L1-resident array. */
    private static final int SHORT_BLOCK = 2048;

    /**
     * {@link #shortRow} of {@code rows} contiguous rows of {@code n <= SHORT_ROW} floats. A block of rows is copied to an
     * array and back in one call each: element by element, a memory segment's accessors cost more than the arithmetic
     * until C2 compiles them, and a copy per row costs more than the row once it does.
     */
    static void shortRows(MemorySegment is, long io, MemorySegment os, long oo, long rows, int n, boolean log) {
        int perBlock = (int) Math.min(rows, Math.max(1, SHORT_BLOCK / n));
        float[] x = new float[perBlock * n];
        float[] lanes = new float[2 * FL];
        for (long r0 = 0; r0 < rows; r0 += perBlock) {
            int count = (int) Math.min(perBlock, rows - r0);
            long bytes = 4L * n * r0;
            MemorySegment.copy(is, ElementIO.F32, io + bytes, x, 0, count * n);
            for (int from = 0; from < count * n; from += n) {
                float max = ReductionF32.extremum(x, from, n, true);
                if (log) {
                    float shift = max + (float) Math.log(shortExpSum(x, from, n, max, false, lanes));
                    for (int i = from; i < from + n; i++) x[i] -= shift;
                } else {
                    float scale = 1f / shortExpSum(x, from, n, max, true, lanes);
                    for (int i = from; i < from + n; i++) x[i] *= scale;
                }
            }
            MemorySegment.copy(x, 0, os, ElementIO.F32, oo + bytes, count * n);
        }
    }

    /**
     * {@link #vectorExpSum} ({@code store} false) or {@link #expStoreSum} ({@code store} true, replacing the row by its
     * exponentials) of {@code x[from, from + n)} in scalar code, with {@code lanes} ({@code 2 FL} floats) for the two
     * accumulators. Vector pairs go to the first and second; of the remainder past the last pair, expSum adds its
     * first vector to the second accumulator and the rest to the first, expStoreSum a whole vector to the first and a
     * part vector to the second.
     */
    private static float shortExpSum(float[] x, int from, int n, float max, boolean store, float[] lanes) {
        if (n <= FL) return oneVectorExpSum(x, from, n, max, store, lanes);
        java.util.Arrays.fill(lanes, 0f);
        int pairs = n - n % (2 * FL);
        int rest = n - pairs;
        for (int i = 0; i < pairs; i++) {
            float e = expNonPositive(x[from + i] - max);
            if (store) x[from + i] = e;
            lanes[i & (2 * FL - 1)] += e;
        }
        // The remainder's first vector: the second accumulator's in expSum, and in expStoreSum unless it is whole.
        int firstAt = store && rest >= FL ? 0 : FL, restAt = FL - firstAt;
        for (int i = pairs; i < n; i++) {
            float e = expNonPositive(x[from + i] - max);
            if (store) x[from + i] = e;
            lanes[(i - pairs < FL ? firstAt : restAt) + (i & (FL - 1))] += e;
        }
        for (int l = 0; l < FL; l++) lanes[l] += lanes[FL + l];
        return VectorF32.sumLanes(lanes);
    }

    /**
     * {@link #shortExpSum} of a row of at most one vector: each exponential sits alone in lane i of one accumulator,
     * every other lane is +0, and adding +0 to a sum of exponentials (never -0) leaves its bits, so only the lanes
     * below {@code n} are folded, in {@link VectorF32#sumLanes}' pairs. Clearing and adding the zero lanes cost 0.7 us of
     * a compiled [64, 10] log-softmax's 5.5 us (docs/BENCHMARKS.md, issue 20, branch warmup4).
     */
    private static float oneVectorExpSum(float[] x, int from, int n, float max, boolean store, float[] lanes) {
        for (int i = 0; i < n; i++) {
            float e = expNonPositive(x[from + i] - max);
            if (store) x[from + i] = e;
            lanes[i] = e;
        }
        int len = n;
        for (int half = FL / 2; half >= 1; half /= 2) {
            for (int i = half; i < len; i++) lanes[i - half] += lanes[i];
            len = Math.min(len, half);
        }
        return lanes[0];
    }

    /** {@link #expNonPositive(FloatVector)} of one float, operation for operation, so with the same bits. */
    static float expNonPositive(float x) {
        float t = Math.fma(x, LOG2E, ROUNDER_BIASED);
        float n = t - ROUNDER_BIASED;
        float r = Math.fma(n, -LN2_HI, x);
        r = Math.fma(n, -LN2_LO, r);
        float p = 1f / 5040f;
        p = Math.fma(p, r, 1f / 720f);
        p = Math.fma(p, r, 1f / 120f);
        p = Math.fma(p, r, 1f / 24f);
        p = Math.fma(p, r, 1f / 6f);
        p = Math.fma(p, r, 0.5f);
        p = Math.fma(p, r, 1f);
        p = Math.fma(p, r, 1f);
        float e = p * Float.intBitsToFloat(Float.floatToRawIntBits(t) << 23);
        return x < UNDERFLOW ? 0f : e;
    }

    /** sum(exp(x - max)) without storing. */
    static float expSum(MemorySegment is, long io, int n, float max) {
        if (n > SHORT_ROW) return vectorExpSum(is, io, n, max);
        float[] x = new float[n];
        MemorySegment.copy(is, ElementIO.F32, io, x, 0, n);
        return shortExpSum(x, 0, n, max, false, new float[2 * FL]);
    }

    /** {@link #expSum}'s vector form. */
    static float vectorExpSum(MemorySegment is, long io, int n, float max) {
        FloatVector vmax = FloatVector.broadcast(FS, max);
        FloatVector a0 = FloatVector.zero(FS), a1 = a0;
        int i = 0;
        for (; i + 2 * FL <= n; i += 2 * FL) {
            a0 = a0.add(expNonPositive(load(is, io + 4L * i).sub(vmax)));
            a1 = a1.add(expNonPositive(load(is, io + 4L * (i + FL)).sub(vmax)));
        }
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector e = expNonPositive(FloatVector.fromMemorySegment(FS, is, io + 4L * i, LE, m).sub(vmax));
            a1 = a1.add(FloatVector.zero(FS).blend(e, m));
            i += FL;
        }
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector e = expNonPositive(FloatVector.fromMemorySegment(FS, is, io + 4L * i, LE, m).sub(vmax));
            a0 = a0.add(FloatVector.zero(FS).blend(e, m));
        }
        return VectorF32.sumLanes(a0.add(a1));
    }

    /** out = out * scale, in place. */
    private static void scale(MemorySegment os, long oo, int n, float scale) {
        int i = 0;
        for (; i + FL <= n; i += FL) load(os, oo + 4L * i).mul(scale).intoMemorySegment(os, oo + 4L * i, LE);
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector.fromMemorySegment(FS, os, oo + 4L * i, LE, m).mul(scale).intoMemorySegment(os, oo + 4L * i, LE, m);
        }
    }

    /** out = x - shift (log-softmax: shift = max + log(sum)). */
    private static void shift(MemorySegment is, long io, MemorySegment os, long oo, int n, float shift) {
        int i = 0;
        for (; i + FL <= n; i += FL) load(is, io + 4L * i).sub(shift).intoMemorySegment(os, oo + 4L * i, LE);
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector.fromMemorySegment(FS, is, io + 4L * i, LE, m).sub(shift).intoMemorySegment(os, oo + 4L * i, LE, m);
        }
    }

    // ---------------------------------------------------------------- inner dimensions

    /**
     * Softmax along the middle dimension of contiguous {@code [outer, length, inner]} input and output (byte offsets
     * {@code io}, {@code oo}): tiles of one vector of {@code inner} columns, parallel over (outer, tile).
     */
    static void inner(MemorySegment is, long io, MemorySegment os, long oo, long outer, int length, int inner, boolean log) {
        int tiles = (inner + FL - 1) / FL;
        long rowBytes = 4L * inner;
        long slab = rowBytes * length;
        Parallel.forRange(outer * tiles, Math.max(1, 32_768 / (3L * length * FL)), (begin, end) -> {
            for (long item = begin; item < end; item++) {
                long o = item / tiles;
                int j = (int) (item % tiles) * FL;
                VectorMask<Float> m = FS.indexInRange(j, inner);
                tile(is, io + o * slab + 4L * j, os, oo + o * slab + 4L * j, length, rowBytes, m, log);
            }
        });
    }

    private static void tile(MemorySegment is, long io, MemorySegment os, long oo, int length, long stride,
                             VectorMask<Float> m, boolean log) {
        FloatVector max = FloatVector.fromMemorySegment(FS, is, io, LE, m);
        for (int k = 1; k < length; k++) max = max.max(FloatVector.fromMemorySegment(FS, is, io + k * stride, LE, m));
        FloatVector sum = FloatVector.zero(FS);
        for (int k = 0; k < length; k++) {
            FloatVector e = expNonPositive(FloatVector.fromMemorySegment(FS, is, io + k * stride, LE, m).sub(max));
            if (!log) e.intoMemorySegment(os, oo + k * stride, LE, m);
            sum = sum.add(e);
        }
        if (log) {
            FloatVector shift = max.add(VectorMath.log(sum));
            for (int k = 0; k < length; k++) {
                FloatVector.fromMemorySegment(FS, is, io + k * stride, LE, m).sub(shift).intoMemorySegment(os, oo + k * stride, LE, m);
            }
        } else {
            FloatVector scale = FloatVector.broadcast(FS, 1f).div(sum);
            for (int k = 0; k < length; k++) {
                FloatVector.fromMemorySegment(FS, os, oo + k * stride, LE, m).mul(scale).intoMemorySegment(os, oo + k * stride, LE, m);
            }
        }
    }
}
