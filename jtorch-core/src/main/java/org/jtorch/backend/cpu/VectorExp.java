package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The kernels' vector exponential, in float and double lanes, with the same bits whether the kernel runs interpreted,
 * C1-compiled or C2-compiled. The JDK's {@code lanewise(EXP)} does not have that property: C2 calls Intel's SVML and
 * the fallback calls {@link Math#exp} per lane, which differ in the last bit for about 1% of float and 5% of double
 * inputs, so a training run's results depended on when the compiler threads got to each kernel (docs/BENCHMARKS.md,
 * the fifteenth session's lead section). Here every step is an IEEE add, multiply, fused multiply-add, comparison or
 * integer operation, which the Vector API defines lane by lane exactly.
 *
 * <p>{@code exp(x) = 2^n e^r} with {@code n = round(x log2 e)}, {@code |r| <= ln2 / 2} (ln 2 split in two so that
 * {@code n ln2} is exact), {@code e^r} by its Taylor polynomial (degree 7 for float, truncation under 0.1 ulp; degree 13
 * for double, under 0.02 ulp), and {@code 2^n} applied as two exact powers of two, so that a result in the subnormal
 * range is rounded once and one past the largest finite value is infinity. Inputs are clamped to where the result
 * is 0 or infinity beyond; NaN is returned as it came.
 */
final class VectorExp {
    private VectorExp() {}

    private static final float LOG2E_F = 1.44269504088896341f;
    private static final float LN2_HI_F = 0.693359375f;
    private static final float LN2_LO_F = -2.12194440e-4f;
    /** 1.5 * 2^23: adding it rounds a float below 2^22 in magnitude to an integer, held in the low mantissa bits. */
    private static final float ROUNDER_F = 12582912f;
    /** exp is 0 in float below (the smallest subnormal is 2^-149 = e^-103.28) and infinite above. */
    private static final float LOW_F = -104f, HIGH_F = 89f;

    private static final double LOG2E_D = 1.4426950408889634;
    /** fdlibm's split of ln 2: the high part has 32 significant bits, so n * LN2_HI_D is exact for |n| < 2^21. */
    private static final double LN2_HI_D = 6.93147180369123816490e-01;
    private static final double LN2_LO_D = 1.90821492927058770002e-10;
    /** 1.5 * 2^52. */
    private static final double ROUNDER_D = 6755399441055744.0;
    /** exp is 0 in double below (2^-1074 = e^-744.44) and infinite above. */
    private static final double LOW_D = -746, HIGH_D = 710;

    /** {@code e^x} lane by lane, within about an ulp. */
    static FloatVector exp(FloatVector x) {
        FloatVector c = x.max(LOW_F).min(HIGH_F);
        FloatVector t = c.fma(LOG2E_F, ROUNDER_F);
        FloatVector n = t.sub(ROUNDER_F);
        FloatVector r = n.fma(FloatVector.broadcast(x.species(), -LN2_HI_F), c);
        r = n.fma(FloatVector.broadcast(x.species(), -LN2_LO_F), r);
        FloatVector p = r.fma(1f / 5040f, 1f / 720f);
        p = p.fma(r, FloatVector.broadcast(x.species(), 1f / 120f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 1f / 24f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 1f / 6f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 0.5f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 1f));
        p = p.fma(r, FloatVector.broadcast(x.species(), 1f));
        // 2^n as 2^h * 2^(n - h), h = n >> 1: both factors normal for n in [-150, 129], the product rounded once.
        IntVector ni = t.reinterpretAsInts().sub(Float.floatToRawIntBits(ROUNDER_F));
        IntVector h = ni.lanewise(VectorOperators.ASHR, 1);
        FloatVector s1 = h.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector s2 = ni.sub(h).add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector e = p.mul(s1).mul(s2);
        // x != x: NaN, without test(IS_NAN)'s bit cast.
        return e.blend(x, x.compare(VectorOperators.NE, x));
    }

    /** {@code e^x} lane by lane, within about an ulp. */
    static DoubleVector exp(DoubleVector x) {
        DoubleVector c = x.max(LOW_D).min(HIGH_D);
        DoubleVector t = c.fma(LOG2E_D, ROUNDER_D);
        DoubleVector n = t.sub(ROUNDER_D);
        DoubleVector r = n.fma(DoubleVector.broadcast(x.species(), -LN2_HI_D), c);
        r = n.fma(DoubleVector.broadcast(x.species(), -LN2_LO_D), r);
        // 1/13! .. 1/0!, Horner (written out: a loop would hold vectors across iterations outside C2)
        DoubleVector p = r.fma(1.0 / 6227020800.0, 1.0 / 479001600.0);
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 39916800.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 3628800.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 362880.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 40320.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 5040.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 720.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 120.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 24.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0 / 6.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 0.5));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0));
        p = p.fma(r, DoubleVector.broadcast(x.species(), 1.0));
        LongVector ni = t.reinterpretAsLongs().sub(Double.doubleToRawLongBits(ROUNDER_D));
        LongVector h = ni.lanewise(VectorOperators.ASHR, 1);
        DoubleVector s1 = h.add(1023).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles();
        DoubleVector s2 = ni.sub(h).add(1023).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles();
        DoubleVector e = p.mul(s1).mul(s2);
        return e.blend(x, x.compare(VectorOperators.NE, x));
    }

}
