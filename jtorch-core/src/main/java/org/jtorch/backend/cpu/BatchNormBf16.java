package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;

/**
 * Batch norm's float32 plane loops ({@link CpuNormalizationKernels}' {@code statsF32}, {@code applyF32},
 * {@code sumsF32}, {@code gradInputTrainF32}, {@code scaleF32}) reading bfloat16 planes and writing bfloat16 results,
 * widened and rounded in registers: the same float32 operations in the same order on the same float values, so the
 * results are bit for bit those of widening into float32 copies, running the float32 loops and rounding the result
 * once, without the three whole-tensor conversion passes and with half the bytes read and written. Offsets are in
 * bytes; {@code len} and {@code s} count elements.
 */
final class BatchNormBf16 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Short> SS = HalfConversion.halfSpecies();
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private BatchNormBf16() {}

    private static FloatVector ld(MemorySegment s, long off) {
        return HalfConversion.bf16ToFloat(ShortVector.fromMemorySegment(SS, s, off, LE));
    }

    private static void st(FloatVector v, MemorySegment s, long off) {
        HalfConversion.floatToBf16(v).intoMemorySegment(s, off, LE);
    }

    private static float get(MemorySegment s, long off) {
        return ElementCodec.bf16ToFloat(s.get(I16, off));
    }

    private static void set(MemorySegment s, long off, float v) {
        s.set(I16, off, ElementCodec.floatToBf16(v));
    }

    /** The shift {@code k} and the shifted sums of channel {@code ch}, as {@code statsF32}; {@code out = {k, sum, sq}}. */
    static void stats(MemorySegment xs, long xb, long n, long c, long s, long ch, int sumBlock, double[] out) {
        float k = get(xs, xb + ch * s * 2);
        double sum = 0;
        double sq = 0;
        FloatVector acc = FloatVector.zero(FS);
        FloatVector acc2 = FloatVector.zero(FS);
        FloatVector accB = FloatVector.zero(FS);
        FloatVector acc2B = FloatVector.zero(FS);
        float ts = 0;
        float tq = 0;
        long pending = 0;
        for (long i = 0; i < n; i++) {
            long off = xb + (i * c + ch) * s * 2;
            for (long j0 = 0; j0 < s; j0 += sumBlock) {
                long len = Math.min(sumBlock, s - j0);
                long upper = len - len % FL;
                long upper2 = len - len % (2 * FL);
                long o = off + j0 * 2;
                long j = 0;
                for (; j < upper2; j += 2 * FL) {
                    FloatVector d = ld(xs, o + 2 * j).sub(k);
                    FloatVector e = ld(xs, o + 2 * (j + FL)).sub(k);
                    acc = acc.add(d);
                    acc2 = d.fma(d, acc2);
                    accB = accB.add(e);
                    acc2B = e.fma(e, acc2B);
                }
                for (; j < upper; j += FL) {
                    FloatVector d = ld(xs, o + 2 * j).sub(k);
                    acc = acc.add(d);
                    acc2 = d.fma(d, acc2);
                }
                for (; j < len; j++) {
                    float d = get(xs, o + 2 * j) - k;
                    ts += d;
                    tq += d * d;
                }
                pending += len;
                if (pending >= sumBlock) {
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
        out[0] = k;
        out[1] = sum + (VectorF32.sumLanes(acc.add(accB)) + (double) ts);
        out[2] = sq + (VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq);
    }

    /** {@code (x - mean) * scale + bias} of one plane, rounded to bfloat16. */
    static void apply(MemorySegment xs, long xo, MemorySegment os, long oo, long len, float mean, float scale, float bias) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) st(ld(xs, xo + 2 * j).sub(mean).fma(scale, bias), os, oo + 2 * j);
        for (; j < len; j++) set(os, oo + 2 * j, Math.fma(get(xs, xo + 2 * j) - mean, scale, bias));
    }

    /** Channel {@code ch}'s sums of {@code g} and {@code g * (x - mean)}, as {@code sumsF32}; {@code out = {sumG, sumGXmu}}. */
    static void sums(MemorySegment gs, long gb, MemorySegment xs, long xb, long n, long c, long s, long ch, float mean,
                     int sumBlock, double[] out) {
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
            long plane = (i * c + ch) * s * 2;
            for (long j0 = 0; j0 < s; j0 += sumBlock) {
                long len = Math.min(sumBlock, s - j0);
                long upper = len - len % FL;
                long upper2 = len - len % (2 * FL);
                long go = gb + plane + j0 * 2;
                long xo = xb + plane + j0 * 2;
                long j = 0;
                for (; j < upper2; j += 2 * FL) {
                    FloatVector g = ld(gs, go + 2 * j);
                    FloatVector h = ld(gs, go + 2 * (j + FL));
                    acc = acc.add(g);
                    acc2 = g.fma(ld(xs, xo + 2 * j).sub(mean), acc2);
                    accB = accB.add(h);
                    acc2B = h.fma(ld(xs, xo + 2 * (j + FL)).sub(mean), acc2B);
                }
                for (; j < upper; j += FL) {
                    FloatVector g = ld(gs, go + 2 * j);
                    acc = acc.add(g);
                    acc2 = g.fma(ld(xs, xo + 2 * j).sub(mean), acc2);
                }
                for (; j < len; j++) {
                    float g = get(gs, go + 2 * j);
                    ts += g;
                    tq += g * (get(xs, xo + 2 * j) - mean);
                }
                pending += len;
                if (pending >= sumBlock) {
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
        out[0] = sg + (VectorF32.sumLanes(acc.add(accB)) + (double) ts);
        out[1] = sgx + (VectorF32.sumLanes(acc2.add(acc2B)) + (double) tq);
    }

    /** {@code (g - (x - mean) * k - meanG) * a} of one plane, rounded to bfloat16. */
    static void gradInputTrain(MemorySegment gs, long go, MemorySegment xs, long xo, MemorySegment ds, long dO, long len,
                               float mean, float k, float meanG, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector proj = ld(xs, xo + 2 * j).sub(mean).mul(k);
            st(ld(gs, go + 2 * j).sub(proj).sub(meanG).mul(a), ds, dO + 2 * j);
        }
        for (; j < len; j++) {
            float proj = (get(xs, xo + 2 * j) - mean) * k;
            set(ds, dO + 2 * j, (get(gs, go + 2 * j) - proj - meanG) * a);
        }
    }

    /** {@code g * a} of one plane (eval mode's input gradient), rounded to bfloat16. */
    static void scale(MemorySegment gs, long go, MemorySegment ds, long dO, long len, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) st(ld(gs, go + 2 * j).mul(a), ds, dO + 2 * j);
        for (; j < len; j++) set(ds, dO + 2 * j, get(gs, go + 2 * j) * a);
    }
}
