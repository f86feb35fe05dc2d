package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels' vector sin and cos under {@code -Djtorch.cpu.deterministicMath=true}, in float and double lanes, with
 * the same bits whether the kernel runs interpreted or compiled: the JDK's {@code lanewise(SIN/COS)} call Intel's SVML
 * in C2's code and {@link Math#sin} per lane in the fallback, which differ in the last bit for some inputs.
 *
 * <p>Cody and Waite's reduction {@code r = x - n pi/2}, n the nearest integer to {@code x 2/pi}, with pi/2 in four
 * parts subtracted by fused multiply-adds: the first two parts are short, so that the first
 * two steps are exact. Then Cephes' minimax polynomials on
 * {@code [-pi/4, pi/4]} ({@code sinf.c}/{@code sin.c}), sin or cos of r by the quadrant {@code n mod 4}, and the sign
 * flipped in quadrants 2 and 3. A vector with a lane outside the reduction's range ({@code |x| > 2^16} in float, {@code
 * 2^20} in double), an infinity or NaN takes {@link StrictMath} in those lanes (fdlibm's exact reduction; float through
 * double): the other lanes keep the polynomial's bits. Within 2 ulps of {@code StrictMath} ({@code VectorTrigTest}).
 *
 * <p>Each function is one method of Vector API calls, no helper below it: C2 decides a helper's inlining when the parse
 * reaches it, and a helper reached late in a large kernel is refused (NodeCountInliningCutoff; docs/BENCHMARKS.md,
 * issue 20, eighteenth session). Vectors of the preferred species only.
 */
final class VectorTrig {
    private VectorTrig() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;

    // ---------------------------------------------------------------- float

    /** 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits (n mod 4 in the low two). */
    private static final FloatVector ROUND_F = f(0x1.8p23f), TWO_OVER_PI_F = f(0.636619772367581343f);
    /**
     * pi/2 = 1.5703125 (8 bits) + 4.8375130e-4 (11 bits) + 7.5497894e-8 (rounded down) + 5.390303e-15, negated: n times
     * each of the first two is exact, and their steps are exact; the last two are rounded once each.
     */
    private static final FloatVector MINUS_PIO2_1_F = f(-1.5703125f), MINUS_PIO2_2_F = f(-4.837512969970703125e-4f),
            MINUS_PIO2_3_F = f(-7.5497894e-8f), MINUS_PIO2_4_F = f(-5.390303e-15f);
    /** Cephes' sinf: {@code sin r = r + r z (S1 + z (S2 + z S3))}, z = r^2. */
    private static final FloatVector S1_F = f(-1.6666654611e-1f), S2_F = f(8.3321608736e-3f), S3_F = f(-1.9515295891e-4f);
    /** Cephes' cosf: {@code cos r = 1 - z/2 + z^2 (C1 + z (C2 + z C3))}. */
    private static final FloatVector C1_F = f(4.166664568298827e-2f), C2_F = f(-1.388731625493765e-3f), C3_F = f(2.443315711809948e-5f);
    private static final FloatVector ONE_F = f(1f), MINUS_HALF_F = f(-0.5f);
    /** The largest |x| the reduction serves (n below 2^15: n * 1.5703125 exact). */
    private static final FloatVector RANGE_F = f(0x1p16f);

    private static FloatVector f(float v) {
        return FloatVector.broadcast(FS, v);
    }

    static FloatVector sin(FloatVector x) {
        return sinCos(x, 0);
    }

    static FloatVector cos(FloatVector x) {
        return sinCos(x, 1);
    }

    /** sin(x) for {@code quarter} 0, cos(x) = sin(x + pi/2) for 1. */
    private static FloatVector sinCos(FloatVector x, int quarter) {
        FloatVector t = x.fma(TWO_OVER_PI_F, ROUND_F);
        FloatVector n = t.sub(ROUND_F);
        FloatVector r = n.fma(MINUS_PIO2_2_F, n.fma(MINUS_PIO2_1_F, x));
        r = n.fma(MINUS_PIO2_4_F, n.fma(MINUS_PIO2_3_F, r));
        FloatVector z = r.mul(r);
        FloatVector s = r.mul(z).fma(z.fma(S3_F, S2_F).fma(z, S1_F), r);
        FloatVector c = z.mul(z).fma(z.fma(C3_F, C2_F).fma(z, C1_F), z.fma(MINUS_HALF_F, ONE_F));
        IntVector q = t.reinterpretAsInts().add(quarter);
        FloatVector v = s.blend(c, q.and(1).compare(VectorOperators.NE, 0).cast(FS));
        v = v.reinterpretAsInts().lanewise(VectorOperators.XOR, q.and(2).lanewise(VectorOperators.LSHL, 30)).reinterpretAsFloats();
        // sin(-0) = -0: the polynomial's r z P is +0 there (-0 times +0 times a negative), and +0 + -0 is +0.
        if (quarter == 0) v = v.blend(x, x.compare(VectorOperators.EQ, 0f));
        if (!x.abs().compare(VectorOperators.LE, RANGE_F).allTrue()) return strictLanes(x, v, quarter);
        return v;
    }

    /** {@code v} with StrictMath's value in the lanes outside the reduction's range, infinities and NaN. */
    private static FloatVector strictLanes(FloatVector x, FloatVector v, int quarter) {
        float[] xs = x.toArray(), vs = v.toArray();
        for (int i = 0; i < xs.length; i++) {
            if (!(Math.abs(xs[i]) <= 0x1p16f)) vs[i] = (float) (quarter == 0 ? StrictMath.sin(xs[i]) : StrictMath.cos(xs[i]));
        }
        return FloatVector.fromArray(FS, vs, 0);
    }

    // ---------------------------------------------------------------- double

    private static final DoubleVector ROUND_D = d(0x1.8p52), TWO_OVER_PI_D = d(0.63661977236758134308);
    /** Cephes' pi/2 in three parts (23, 21 and 49 bits) and the rest, negated. */
    private static final DoubleVector MINUS_PIO2_1_D = d(-1.57079625129699707031), MINUS_PIO2_2_D = d(-7.54978941586159635335e-8),
            MINUS_PIO2_3_D = d(-5.39030285815811905290e-15), MINUS_PIO2_4_D = d(-8.4784276603688996e-32);
    /** Cephes' sin.c: {@code sin r = r + r z P(z)}, P of degree 5. */
    private static final DoubleVector S1_D = d(-1.66666666666666307295e-1), S2_D = d(8.33333333332211858878e-3),
            S3_D = d(-1.98412698295895385996e-4), S4_D = d(2.75573136213857245213e-6), S5_D = d(-2.50507477628578072866e-8),
            S6_D = d(1.58962301576546568060e-10);
    /** {@code cos r = 1 - z/2 + z^2 Q(z)}. */
    private static final DoubleVector C1_D = d(4.16666666666665929218e-2), C2_D = d(-1.38888888888730564116e-3),
            C3_D = d(2.48015872888517045348e-5), C4_D = d(-2.75573141792967388112e-7), C5_D = d(2.08757008419747316778e-9),
            C6_D = d(-1.13585365213876817300e-11);
    private static final DoubleVector ONE_D = d(1), MINUS_HALF_D = d(-0.5), RANGE_D = d(0x1p20);

    private static DoubleVector d(double v) {
        return DoubleVector.broadcast(DS, v);
    }

    static DoubleVector sin(DoubleVector x) {
        return sinCos(x, 0);
    }

    static DoubleVector cos(DoubleVector x) {
        return sinCos(x, 1);
    }

    private static DoubleVector sinCos(DoubleVector x, int quarter) {
        DoubleVector t = x.fma(TWO_OVER_PI_D, ROUND_D);
        DoubleVector n = t.sub(ROUND_D);
        DoubleVector r = n.fma(MINUS_PIO2_2_D, n.fma(MINUS_PIO2_1_D, x));
        r = n.fma(MINUS_PIO2_4_D, n.fma(MINUS_PIO2_3_D, r));
        DoubleVector z = r.mul(r);
        DoubleVector s = r.mul(z).fma(z.fma(S6_D, S5_D).fma(z, S4_D).fma(z, S3_D).fma(z, S2_D).fma(z, S1_D), r);
        DoubleVector c = z.mul(z).fma(z.fma(C6_D, C5_D).fma(z, C4_D).fma(z, C3_D).fma(z, C2_D).fma(z, C1_D), z.fma(MINUS_HALF_D, ONE_D));
        LongVector q = t.reinterpretAsLongs().add(quarter);
        DoubleVector v = s.blend(c, q.and(1).compare(VectorOperators.NE, 0).cast(DS));
        v = v.reinterpretAsLongs().lanewise(VectorOperators.XOR, q.and(2).lanewise(VectorOperators.LSHL, 62)).reinterpretAsDoubles();
        if (quarter == 0) v = v.blend(x, x.compare(VectorOperators.EQ, 0));
        if (!x.abs().compare(VectorOperators.LE, RANGE_D).allTrue()) return strictLanes(x, v, quarter);
        return v;
    }

    private static DoubleVector strictLanes(DoubleVector x, DoubleVector v, int quarter) {
        double[] xs = x.toArray(), vs = v.toArray();
        for (int i = 0; i < xs.length; i++) {
            if (!(Math.abs(xs[i]) <= 0x1p20)) vs[i] = quarter == 0 ? StrictMath.sin(xs[i]) : StrictMath.cos(xs[i]);
        }
        return DoubleVector.fromArray(DS, vs, 0);
    }
}
