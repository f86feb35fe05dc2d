package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels' vector exponential (and expm1, and float tanh), in float and double lanes, with the same bits whether
 * the kernel runs interpreted, C1-compiled or C2-compiled. The JDK's {@code lanewise(EXP)} does not have that
 * property: C2 calls Intel's SVML and the fallback calls {@link Math#exp} per lane, which differ in the last bit for
 * about 1% of float and 5% of double inputs, so a training run's results depended on when the compiler threads got to
 * each kernel (docs/BENCHMARKS.md, the fifteenth session's lead section). Here every step is an IEEE add, multiply,
 * fused multiply-add, comparison or integer operation, which the Vector API defines lane by lane exactly.
 *
 * <p>{@code exp(x) = 2^n e^r} with {@code n = round(x log2 e)}, {@code |r| <= ln2 / 2} (ln 2 split in two so that
 * {@code n ln2} is exact), {@code e^r} by its Taylor polynomial (degree 7 for float, truncation under 0.1 ulp; degree 13
 * for double, under 0.02 ulp), and {@code 2^n} applied as one power of two where every lane's is normal (the fast path) and
 * as two otherwise, so that a result in the subnormal range is rounded once and one past the largest finite value is
 * infinity. Inputs are clamped to where the result
 * is 0 or infinity beyond; NaN is returned as it came.
 *
 * <p>The constants are vectors in static final fields and the Horner steps one chain, so that each method's bytecode
 * stays small enough for C2 to inline it into a kernel's loop: written with a broadcast at each step, the double form
 * was not inlined and boxed its vectors at every call (7x slower; docs/BENCHMARKS.md). Vectors of the preferred
 * species only.
 */
final class VectorExp {
    private VectorExp() {}

    /**
     * {@code -Djtorch.cpu.deterministicMath=true} makes the kernels' exp, expm1 and tanh this class's exact forms; by
     * default they are the JDK's {@code lanewise(EXP / EXPM1 / TANH)}, whose bits depend on when C2 compiled each
     * kernel. Off while some kernels are slower with the exact forms (float64 pow 17-31x: scalar; float32 pow 5x for
     * positive bases, faster than the JDK's for negative ones; float64 softplus 1.2x; exp, expm1, sigmoid, sin, cos and
     * float32 softplus are level or faster: docs/BENCHMARKS.md, issue 20, nineteenth session). A constant to
     * C2, which drops the branch not taken, so this class's bit casts run only when the switch is on (NativeOperandsTest).
     */
    static final boolean DETERMINISTIC = Boolean.getBoolean("jtorch.cpu.deterministicMath");

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
    /**
     * The fast paths' rounder, 1.5 * 2^23 + 127: the bits of {@code x log2e + ROUND_BIASED_F}, rounded to an integer,
     * shifted left by 23 are those of {@code 2^n} (the rounder's own bits shift out).
     */
    private static final FloatVector ROUND_BIASED_F = f(ROUNDER_F + 127);
    /** Up to |x| = 87, {@code 2^n} (|n| <= 126) is one normal power of two: one scaling multiply, rounded once as the two. */
    private static final FloatVector ONE_SCALE_F = f(87f);
    /** Up to |x| = 16 expm1's n is at most 23: {@code 2^n - 1} exact, 2^n normal. */
    private static final FloatVector EXPM1_FAST_F = f(16f);
    /** expm1 is -1 in float below -17.4; clamped at -26, 2^n stays normal. */
    private static final FloatVector LOW_M1_F = f(-26f), TWO_F = f(2f), LN2_F = f(0.6931472f);
    /** 2^-n's bits are these less 2^n's (exponent fields summing to 254). */
    private static final IntVector INV_BITS_F = IntVector.broadcast(IntVector.SPECIES_PREFERRED, 254 << 23);
    /** 1/10! to 1/8!: expm1's and tanh's longer polynomial. */
    private static final FloatVector F10 = f(1f / 3628800f), F9 = f(1f / 362880f), F8 = f(1f / 40320f);
    /** tanh is 1 in float from 9.01 on: |x| capped at 10 keeps e^2|x| finite. */
    private static final FloatVector TANH_CAP_F = f(10f), MINUS_TANH_CAP_F = f(-10f);

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
    /** 1.5 * 2^52 + 1023, |x| up to 708 and up to 36 for expm1 (n at most 52): the float form's fast paths' constants. */
    private static final DoubleVector ROUND_BIASED_D = d(ROUNDER_D + 1023), ONE_SCALE_D = d(708), EXPM1_FAST_D = d(36);
    /** expm1 is -1 in double below -37.5; clamped at -40, 2^n stays normal. */
    private static final DoubleVector LOW_M1_D = d(-40), LN2_D = d(0.6931471805599453);
    private static final LongVector INV_BITS_D = LongVector.broadcast(LongVector.SPECIES_PREFERRED, 2046L << 52);
    /** 1/16! to 1/14!: expm1's longer polynomial. */
    private static final DoubleVector D16 = d(1.0 / 20922789888000.0), D15 = d(1.0 / 1307674368000.0), D14 = d(1.0 / 87178291200.0);

    private static FloatVector f(float v) {
        return FloatVector.broadcast(FS, v);
    }

    private static DoubleVector d(double v) {
        return DoubleVector.broadcast(DS, v);
    }

    // The kernels' entries: the exact forms below with the switch on, the JDK's otherwise.

    static FloatVector exp(FloatVector x) {
        return DETERMINISTIC ? exactExp(x) : x.lanewise(VectorOperators.EXP);
    }

    static DoubleVector exp(DoubleVector x) {
        return DETERMINISTIC ? exactExp(x) : x.lanewise(VectorOperators.EXP);
    }

    static FloatVector expm1(FloatVector x) {
        return DETERMINISTIC ? exactExpm1(x) : x.lanewise(VectorOperators.EXPM1);
    }

    static DoubleVector expm1(DoubleVector x) {
        return DETERMINISTIC ? exactExpm1(x) : x.lanewise(VectorOperators.EXPM1);
    }

    static FloatVector tanh(FloatVector x) {
        return DETERMINISTIC ? exactTanh(x) : x.lanewise(VectorOperators.TANH);
    }

    /**
     * {@code e^x} lane by lane, within an ulp. Where every lane's 2^n is one normal power of two (no NaN, |x| <= 87:
     * nearly always) one multiply scales, without the clamp, the two-factor scaling and the NaN blend: half the
     * Vector API calls, which C2 counts against its inlining budget (NodeCountInliningCutoff: softplus's kernel, exp
     * and log1p together, boxed its vectors; docs/BENCHMARKS.md, issue 20, seventeenth session). The same bits as
     * {@link #wideExp}, which serves a vector with any other lane.
     */
    static FloatVector exactExp(FloatVector x) {
        if (!x.abs().compare(VectorOperators.LE, ONE_SCALE_F).allTrue()) return wideExp(x);
        FloatVector t = x.fma(LOG2E_F, ROUND_BIASED_F);
        FloatVector n = t.sub(ROUND_BIASED_F);
        FloatVector r = n.fma(MINUS_LN2_LO_F, n.fma(MINUS_LN2_HI_F, x));
        FloatVector p = r.fma(F7, F6).fma(r, F5).fma(r, F4).fma(r, F3).fma(r, F2).fma(r, F1).fma(r, F1);
        return p.mul(t.reinterpretAsInts().lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
    }

    /** {@link #exactExp} for any lanes: clamped, 2^n as two factors (subnormal and infinite results), NaN kept. */
    private static FloatVector wideExp(FloatVector x) {
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

    /** {@code e^x} lane by lane, within two ulps; the float form's fast path for |x| <= 708. */
    static DoubleVector exactExp(DoubleVector x) {
        if (!x.abs().compare(VectorOperators.LE, ONE_SCALE_D).allTrue()) return wideExp(x);
        DoubleVector t = x.fma(LOG2E_D, ROUND_BIASED_D);
        DoubleVector n = t.sub(ROUND_BIASED_D);
        DoubleVector r = n.fma(MINUS_LN2_LO_D, n.fma(MINUS_LN2_HI_D, x));
        DoubleVector p = r.fma(D13, D12).fma(r, D11).fma(r, D10).fma(r, D9).fma(r, D8).fma(r, D7).fma(r, D6).fma(r, D5).fma(r, D4)
                .fma(r, D3).fma(r, D2).fma(r, D1).fma(r, D1);
        return p.mul(t.reinterpretAsLongs().lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());
    }

    private static DoubleVector wideExp(DoubleVector x) {
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

    /**
     * {@code e^x - 1} lane by lane, within an ulp: {@code 2^n p + (2^n - 1)} in one fused multiply-add, with
     * {@code p = e^r - 1 = r + r^2 q(r)}, so that no 1 is added to a small value and taken off again. n is 0 for
     * {@code |x| < ln 2} (the polynomial of degree 10 for {@code |r| < ln 2}, truncation under 0.01 ulp), so that
     * {@code 2 p + 1} never cancels (n = 1 with r < 0). {@code 2^n - 1} is exact up to n = 24; past that it rounds to
     * {@code 2^n}, and the 1 is taken from p instead (as {@code 2^-n}). The largest n, 128, takes a second factor of
     * 2. Zeros keep their sign, NaN stays NaN. For |x| <= 16 in every lane (n <= 23) the steps that only larger n need
     * are left out, as in {@link #exactExp}: the same bits.
     */
    static FloatVector exactExpm1(FloatVector x) {
        FloatVector a = x.abs();
        if (!a.compare(VectorOperators.LE, EXPM1_FAST_F).allTrue()) return wideExpm1(x);
        FloatVector t = x.fma(LOG2E_F, ROUND_BIASED_F).blend(ROUND_BIASED_F, a.compare(VectorOperators.LT, LN2_F));
        FloatVector n = t.sub(ROUND_BIASED_F);
        FloatVector r = n.fma(MINUS_LN2_LO_F, n.fma(MINUS_LN2_HI_F, x));
        FloatVector scale = t.reinterpretAsInts().lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector p = r.mul(r).fma(r.fma(F10, F9).fma(r, F8).fma(r, F7).fma(r, F6).fma(r, F5).fma(r, F4).fma(r, F3).fma(r, F2), r);
        return scale.fma(p, scale.sub(F1)).blend(x, x.compare(VectorOperators.EQ, 0f));
    }

    private static FloatVector wideExpm1(FloatVector x) {
        FloatVector c = x.max(LOW_M1_F).min(HIGH_F);
        FloatVector t = c.fma(LOG2E_F, ROUND_F).blend(ROUND_F, c.abs().compare(VectorOperators.LT, LN2_F));
        FloatVector n = t.sub(ROUND_F);
        FloatVector r = n.fma(MINUS_LN2_LO_F, n.fma(MINUS_LN2_HI_F, c));
        IntVector ni = t.reinterpretAsInts().sub(ROUNDER_F_BITS);
        IntVector normal = ni.min(127);
        IntVector scaleBits = normal.add(127).lanewise(VectorOperators.LSHL, 23);
        FloatVector scale = scaleBits.reinterpretAsFloats();
        FloatVector less1 = scale.sub(F1);
        // (2^n - 1) - less1 exactly: 0 up to n = 24, -1 past it, put into p as -2^-n (2^-n's exponent field 254 minus 2^n's).
        FloatVector lost = scale.sub(less1).sub(F1);
        FloatVector p = r.mul(r).fma(r.fma(F10, F9).fma(r, F8).fma(r, F7).fma(r, F6).fma(r, F5).fma(r, F4).fma(r, F3).fma(r, F2), r)
                .add(lost.mul(INV_BITS_F.sub(scaleBits).reinterpretAsFloats()));
        FloatVector e = scale.fma(p, less1).mul(ni.sub(normal).add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats());
        return e.blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, 0f)));
    }

    /**
     * {@code e^x - 1} lane by lane, within two ulps; the float form's steps (2^n - 1 exact up to n = 53), the polynomial
     * of degree 16, and its fast path for |x| <= 36 (n <= 52).
     */
    static DoubleVector exactExpm1(DoubleVector x) {
        DoubleVector a = x.abs();
        if (!a.compare(VectorOperators.LE, EXPM1_FAST_D).allTrue()) return wideExpm1(x);
        DoubleVector t = x.fma(LOG2E_D, ROUND_BIASED_D).blend(ROUND_BIASED_D, a.compare(VectorOperators.LT, LN2_D));
        DoubleVector n = t.sub(ROUND_BIASED_D);
        DoubleVector r = n.fma(MINUS_LN2_LO_D, n.fma(MINUS_LN2_HI_D, x));
        DoubleVector scale = t.reinterpretAsLongs().lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles();
        return scale.fma(expm1Polynomial(r), scale.sub(D1)).blend(x, x.compare(VectorOperators.EQ, 0));
    }

    private static DoubleVector wideExpm1(DoubleVector x) {
        DoubleVector c = x.max(LOW_M1_D).min(HIGH_D);
        DoubleVector t = c.fma(LOG2E_D, ROUND_D).blend(ROUND_D, c.abs().compare(VectorOperators.LT, LN2_D));
        DoubleVector n = t.sub(ROUND_D);
        DoubleVector r = n.fma(MINUS_LN2_LO_D, n.fma(MINUS_LN2_HI_D, c));
        LongVector ni = t.reinterpretAsLongs().sub(ROUNDER_D_BITS);
        LongVector normal = ni.min(1023);
        LongVector scaleBits = normal.add(1023).lanewise(VectorOperators.LSHL, 52);
        DoubleVector scale = scaleBits.reinterpretAsDoubles();
        DoubleVector less1 = scale.sub(D1);
        DoubleVector p = expm1Polynomial(r).add(scale.sub(less1).sub(D1).mul(INV_BITS_D.sub(scaleBits).reinterpretAsDoubles()));
        DoubleVector e = scale.fma(p, less1).mul(ni.sub(normal).add(1023).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());
        return e.blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, 0)));
    }

    /** {@code e^r - 1} for {@code |r| < ln 2}, apart from expm1 to keep each method's bytecode under C2's FreqInlineSize (325). */
    private static DoubleVector expm1Polynomial(DoubleVector r) {
        return r.mul(r).fma(r.fma(D16, D15).fma(r, D14).fma(r, D13).fma(r, D12).fma(r, D11).fma(r, D10).fma(r, D9).fma(r, D8).fma(r, D7)
                .fma(r, D6).fma(r, D5).fma(r, D4).fma(r, D3).fma(r, D2), r);
    }

    /**
     * {@code tanh(x)} lane by lane, within 2.5 ulps (the JDK's bound for {@code Math.tanh}; the worst found is at small
     * arguments, where the denominator's rounding near 2 counts fully): {@code (e^y - 1) / (e^y + 1)} for {@code y = 2x},
     * x clamped to [-10, 10] (tanh is +-1 in float from 9.01 on), numerator and denominator each one fused
     * multiply-add from {@code 2^n} and {@code p = e^r - 1} as in {@link #exactExpm1} (small arguments keep their
     * accuracy: no {@code 1 - 2/(e^y + 1)} cancellation; the polynomial of degree 9, truncation under 0.1 ulp for
     * {@code |r| < ln 2}). From n = 24 on {@code 2^n + 1} is inexact and the numerator is the denominator less 2
     * instead. Signed y rather than |x| with x's sign put back, the polynomial one degree shorter and 2^n from one
     * shift: 31 Vector API calls instead of 37, which C2 counts against its inlining budget (the LSTM cell's state
     * loop boxed its vectors; docs/BENCHMARKS.md, issue 20, seventeenth session). Written out rather than calling
     * expm1: one call level less for C2's inlining.
     */
    static FloatVector exactTanh(FloatVector x) {
        FloatVector y = x.max(MINUS_TANH_CAP_F).min(TANH_CAP_F);
        y = y.add(y);
        FloatVector t = y.fma(LOG2E_F, ROUND_BIASED_F).blend(ROUND_BIASED_F, y.abs().compare(VectorOperators.LT, LN2_F));
        FloatVector n = t.sub(ROUND_BIASED_F);
        FloatVector r = n.fma(MINUS_LN2_LO_F, n.fma(MINUS_LN2_HI_F, y));
        FloatVector p = r.mul(r).fma(r.fma(F9, F8).fma(r, F7).fma(r, F6).fma(r, F5).fma(r, F4).fma(r, F3).fma(r, F2), r);
        FloatVector scale = t.reinterpretAsInts().lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector den = scale.fma(p, scale.add(F1));
        FloatVector num = scale.fma(p, scale.sub(F1)).blend(den.sub(TWO_F), n.compare(VectorOperators.GT, 23f));
        // -0 gives -0 (r is +0 there).
        return num.div(den).blend(x, x.compare(VectorOperators.EQ, 0f));
    }
}
