package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

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
 *
 * <p>The constants are vectors in static final fields and the Horner steps one chain, so that each method's bytecode
 * stays small enough for C2 to inline it into a kernel's loop: written with a broadcast at each step, the double form
 * was not inlined and boxed its vectors at every call (7x slower; docs/BENCHMARKS.md). Vectors of the preferred
 * species only.
 */
final class VectorExp {
    private VectorExp() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;

    /** 1.5 * 2^23: adding it rounds a float below 2^22 in magnitude to an integer, held in the low mantissa bits. */
    private static final float ROUNDER_F = 12582912f;
    private static final int ROUNDER_F_BITS = Float.floatToRawIntBits(ROUNDER_F);
    /** exp is 0 in float below -104 (the smallest subnormal is 2^-149 = e^-103.28) and infinite above 89. */
    private static final FloatVector LOW_F = f(-104f), HIGH_F = f(89f), LOG2E_F = f(1.44269504088896341f), ROUND_F = f(ROUNDER_F);
    /** ln 2 split so that {@code n * LN2_HI} is exact for the n that occur (|n| < 2^8), negated. */
    private static final FloatVector MINUS_LN2_HI_F = f(-0.693359375f), MINUS_LN2_LO_F = f(2.12194440e-4f);
    /** 1/7! down to 1/0!. */
    private static final FloatVector F7 = f(1f / 5040f), F6 = f(1f / 720f), F5 = f(1f / 120f), F4 = f(1f / 24f), F3 = f(1f / 6f),
            F2 = f(0.5f), F1 = f(1f);

    /** 1.5 * 2^52. */
    private static final double ROUNDER_D = 6755399441055744.0;
    private static final long ROUNDER_D_BITS = Double.doubleToRawLongBits(ROUNDER_D);
    /** exp is 0 in double below -746 (2^-1074 = e^-744.44) and infinite above 710. */
    private static final DoubleVector LOW_D = d(-746), HIGH_D = d(710), LOG2E_D = d(1.4426950408889634), ROUND_D = d(ROUNDER_D);
    /** fdlibm's split of ln 2 (the high part has 32 significant bits: n * LN2_HI exact for |n| < 2^21), negated. */
    private static final DoubleVector MINUS_LN2_HI_D = d(-6.93147180369123816490e-01), MINUS_LN2_LO_D = d(-1.90821492927058770002e-10);
    /** 1/13! down to 1/0!. */
    private static final DoubleVector D13 = d(1.0 / 6227020800.0), D12 = d(1.0 / 479001600.0), D11 = d(1.0 / 39916800.0),
            D10 = d(1.0 / 3628800.0), D9 = d(1.0 / 362880.0), D8 = d(1.0 / 40320.0), D7 = d(1.0 / 5040.0), D6 = d(1.0 / 720.0),
            D5 = d(1.0 / 120.0), D4 = d(1.0 / 24.0), D3 = d(1.0 / 6.0), D2 = d(0.5), D1 = d(1.0);

    private static FloatVector f(float v) {
        return FloatVector.broadcast(FS, v);
    }

    private static DoubleVector d(double v) {
        return DoubleVector.broadcast(DS, v);
    }

    /** {@code e^x} lane by lane, within an ulp. */
    static FloatVector exp(FloatVector x) {
        FloatVector c = x.max(LOW_F).min(HIGH_F);
        FloatVector t = c.fma(LOG2E_F, ROUND_F);
        FloatVector n = t.sub(ROUND_F);
        FloatVector r = n.fma(MINUS_LN2_LO_F, n.fma(MINUS_LN2_HI_F, c));
        FloatVector p = r.fma(F7, F6).fma(r, F5).fma(r, F4).fma(r, F3).fma(r, F2).fma(r, F1).fma(r, F1);
        // 2^n as 2^h * 2^(n - h), h = n >> 1: both factors normal for n in [-150, 129], the product rounded once.
        IntVector ni = t.reinterpretAsInts().sub(ROUNDER_F_BITS);
        IntVector h = ni.lanewise(VectorOperators.ASHR, 1);
        FloatVector e = p.mul(h.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats())
                .mul(ni.sub(h).add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
        // x != x: NaN, without test(IS_NAN)'s bit cast.
        return e.blend(x, x.compare(VectorOperators.NE, x));
    }

    /** {@code e^x} lane by lane, within two ulps. */
    static DoubleVector exp(DoubleVector x) {
        DoubleVector c = x.max(LOW_D).min(HIGH_D);
        DoubleVector t = c.fma(LOG2E_D, ROUND_D);
        DoubleVector n = t.sub(ROUND_D);
        DoubleVector r = n.fma(MINUS_LN2_LO_D, n.fma(MINUS_LN2_HI_D, c));
        DoubleVector p = r.fma(D13, D12).fma(r, D11).fma(r, D10).fma(r, D9).fma(r, D8).fma(r, D7).fma(r, D6).fma(r, D5).fma(r, D4)
                .fma(r, D3).fma(r, D2).fma(r, D1).fma(r, D1);
        LongVector ni = t.reinterpretAsLongs().sub(ROUNDER_D_BITS);
        LongVector h = ni.lanewise(VectorOperators.ASHR, 1);
        DoubleVector e = p.mul(h.add(1023).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles())
                .mul(ni.sub(h).add(1023).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());
        return e.blend(x, x.compare(VectorOperators.NE, x));
    }
}
