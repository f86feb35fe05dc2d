package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels' vector log and log1p, in float and double lanes, with the same bits whether the kernel runs
 * interpreted, C1-compiled or C2-compiled. The JDK's {@code lanewise(LOG)} and {@code lanewise(LOG1P)} do not have
 * that property: C2 calls Intel's SVML and the fallback calls {@link Math#log} per lane, which differ in the last bit
 * for some inputs (float64 log1p: 2,169 of 65,536 in (0, 100); docs/BENCHMARKS.md, the sixteenth session's detlog
 * section). Here every step is an IEEE add, multiply, divide, fused multiply-add, comparison or integer operation,
 * which the Vector API defines lane by lane exactly.
 *
 * <p>fdlibm's method ({@code e_log.c}, {@code s_log1p.c} and their float versions): {@code x = 2^k (1 + f)} with
 * {@code 1 + f} in {@code [sqrt(2)/2, sqrt(2))}, {@code s = f / (2 + f)}, {@code log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))}
 * with fdlibm's minimax R (error under 2^-34 for float, 2^-58 for double), and {@code k ln 2} in two parts. log1p
 * reduces {@code 1 + x} and adds the rounding error of that sum, {@code c / (1 + x)}. Float within 0.8 ulp of the exact
 * value, double within 1 ulp of {@code StrictMath} ({@code VectorLogTest}). Subnormal inputs are scaled by
 * a power of two first; NaN, infinities, zeros and negative arguments give C's results (as {@link Math#log}).
 *
 * <p>The constants are vectors in static final fields and each method a short chain of vector calls, so that C2
 * inlines it into a kernel's loop (docs/BENCHMARKS.md: the lead's exponential, not inlined, boxed its vectors at every
 * call). Vectors of the preferred species only.
 */
final class VectorLog {
    private VectorLog() {}

    /**
     * Whether the kernels use these rather than the JDK's {@code lanewise(LOG)} and {@code lanewise(LOG1P)}: the same
     * switch as {@link VectorExp#DETERMINISTIC} ({@code -Djtorch.cpu.deterministicMath=true}), off by default. log and
     * log1p alone are level with the JDK's in both widths, and BCE; softplus ({@link #log1pExp}) is level in float32 and
     * 1.2x slower in float64 (docs/BENCHMARKS.md, issue 20, nineteenth session).
     */
    static final boolean ENABLED = VectorExp.DETERMINISTIC;

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;

    // ---------------------------------------------------------------- float

    /** The smallest normal float; below it the argument is scaled by 2^25 first. */
    private static final FloatVector MIN_NORMAL_F = f(Float.MIN_NORMAL), TWO25_F = f(0x1p25f), MINUS25_F = f(-25f);
    /** Moves 1 + f's range from [1, 2) to [sqrt(2)/2, sqrt(2)): bits(1) - bits(sqrt(2)/2). */
    private static final IntVector SQRT_HALF_SHIFT_F = IntVector.broadcast(IS, 0x3f800000 - 0x3f3504f3),
            MANTISSA_F = IntVector.broadcast(IS, 0x007fffff), SQRT_HALF_BITS_F = IntVector.broadcast(IS, 0x3f3504f3);
    /** A biased exponent e plus bits(1.5 * 2^23) - 127, reinterpreted, minus 1.5 * 2^23, is e - 127 as a float, exactly. */
    private static final IntVector K_BIAS_F = IntVector.broadcast(IS, Float.floatToRawIntBits(0x1.8p23f) - 127);
    private static final FloatVector ROUND_F = f(0x1.8p23f);
    private static final FloatVector ONE_F = f(1f), TWO_F = f(2f), HALF_F = f(0.5f);
    /** fdlibm's e_logf.c: ln 2 in two parts (k * LN2_HI exact) and R(z) = Lg1 z + ... + Lg4 z^4, |error| < 2^-34.2. */
    private static final FloatVector LN2_HI_F = f(6.9313812256e-01f), LN2_LO_F = f(9.0580006145e-06f);
    private static final FloatVector LG1_F = f(0xaaaaaa.0p-24f), LG2_F = f(0xccce13.0p-25f), LG3_F = f(0x91e9ee.0p-25f),
            LG4_F = f(0xf89e26.0p-26f);
    private static final FloatVector ZERO_F = f(0f), MINUS_ONE_F = f(-1f), INF_F = f(Float.POSITIVE_INFINITY),
            MINUS_INF_F = f(Float.NEGATIVE_INFINITY), NAN_F = f(Float.NaN);

    private static FloatVector f(float v) {
        return FloatVector.broadcast(FS, v);
    }

    /**
     * {@code log(x)} lane by lane, within an ulp. Where every lane is a positive normal finite number (nearly always)
     * without the subnormal scaling and the special values' blends: half the Vector API calls, which C2 counts against
     * its inlining budget (docs/BENCHMARKS.md, issue 20, seventeenth session); the same bits as {@link #wideLog}.
     */
    static FloatVector log(FloatVector x) {
        if (!x.compare(VectorOperators.GE, MIN_NORMAL_F).and(x.compare(VectorOperators.LT, INF_F)).allTrue()) return wideLog(x);
        IntVector ix = x.reinterpretAsInts().add(SQRT_HALF_SHIFT_F);
        FloatVector k = ix.lanewise(VectorOperators.LSHR, 23).add(K_BIAS_F).reinterpretAsFloats().sub(ROUND_F);
        FloatVector f = ix.and(MANTISSA_F).add(SQRT_HALF_BITS_F).reinterpretAsFloats().sub(ONE_F);
        return log1pReduced(f, ZERO_F, k);
    }

    /** {@link #log} for any lanes. */
    private static FloatVector wideLog(FloatVector x) {
        VectorMask<Float> subnormal = x.compare(VectorOperators.LT, MIN_NORMAL_F);
        IntVector ix = x.blend(x.mul(TWO25_F), subnormal).reinterpretAsInts().add(SQRT_HALF_SHIFT_F);
        IntVector kBits = ix.lanewise(VectorOperators.LSHR, 23).add(K_BIAS_F);
        FloatVector k = kBits.reinterpretAsFloats().sub(ROUND_F);
        k = k.blend(k.add(MINUS25_F), subnormal);
        FloatVector f = ix.and(MANTISSA_F).add(SQRT_HALF_BITS_F).reinterpretAsFloats().sub(ONE_F);
        FloatVector r = log1pReduced(f, ZERO_F, k);
        // NaN and +inf give themselves, 0 gives -inf, a negative argument NaN.
        return r.blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, INF_F)))
                .blend(MINUS_INF_F, x.compare(VectorOperators.EQ, ZERO_F))
                .blend(NAN_F, x.compare(VectorOperators.LT, ZERO_F));
    }

    /**
     * {@code log(1 + x)} lane by lane, within an ulp; where every lane is finite and above -1, only the zeros' blend
     * (for -0) of the special values' (as {@link #log}).
     */
    static FloatVector log1p(FloatVector x) {
        if (!x.compare(VectorOperators.GT, MINUS_ONE_F).and(x.compare(VectorOperators.LT, INF_F)).allTrue()) return wideLog1p(x);
        return log1pFinite(x).blend(x, x.compare(VectorOperators.EQ, ZERO_F));
    }

    private static FloatVector wideLog1p(FloatVector x) {
        FloatVector r = log1pFinite(x);
        // Zeros give themselves (the sign kept), as do NaN and +inf; -1 gives -inf, below it NaN. Tiny arguments need no
        // blend (f = x, and the polynomial's terms vanish): a range test here made the generated kernels 3x slower.
        return r.blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, INF_F)).or(x.compare(VectorOperators.EQ, ZERO_F)))
                .blend(MINUS_INF_F, x.compare(VectorOperators.EQ, MINUS_ONE_F))
                .blend(NAN_F, x.compare(VectorOperators.LT, MINUS_ONE_F));
    }

    /** {@code log(1 + x)} for x finite above -1, but -0 (which gives +0). */
    private static FloatVector log1pFinite(FloatVector x) {
        FloatVector u = x.add(ONE_F);
        IntVector iu = u.reinterpretAsInts().add(SQRT_HALF_SHIFT_F);
        FloatVector k = iu.lanewise(VectorOperators.LSHR, 23).add(K_BIAS_F).reinterpretAsFloats().sub(ROUND_F);
        // 1 + x rounded lost c (exactly, the larger of 1 and x first: Fast2Sum); log(1 + x) = log(u) + c / u, for every
        // k (k = 0 included: f = u - 1 is exact there, and tiny x give c / u = x). Fewer steps than fdlibm's cases (its
        // k < 2 test, c = 0 for k = 0 and from k = 25 on): C2's inlining budget (see log).
        FloatVector c = x.max(ONE_F).sub(u).add(x.min(ONE_F)).div(u);
        FloatVector f = iu.and(MANTISSA_F).add(SQRT_HALF_BITS_F).reinterpretAsFloats().sub(ONE_F);
        // log1pReduced written out (the same steps): a call here came after most of log1p's nodes, and in a kernel
        // that had already parsed an exp (softplus) C2 refused it at its node-count cutoff and boxed the vectors.
        FloatVector s = f.div(f.add(TWO_F));
        FloatVector z = s.mul(s);
        FloatVector r = z.fma(LG4_F, LG3_F).fma(z, LG2_F).fma(z, LG1_F).mul(z);
        FloatVector hfsq = f.mul(f).mul(HALF_F);
        return k.fma(LN2_HI_F, s.fma(hfsq.add(r), k.fma(LN2_LO_F, c)).sub(hfsq).add(f));
    }

    /** {@code k ln 2 + log(1 + f) + c}, for {@code 1 + f} in {@code [sqrt(2)/2, sqrt(2))}. */
    private static FloatVector log1pReduced(FloatVector f, FloatVector c, FloatVector k) {
        FloatVector s = f.div(f.add(TWO_F));
        FloatVector z = s.mul(s);
        FloatVector r = z.fma(LG4_F, LG3_F).fma(z, LG2_F).fma(z, LG1_F).mul(z);
        FloatVector hfsq = f.mul(f).mul(HALF_F);
        return k.fma(LN2_HI_F, s.fma(hfsq.add(r), k.fma(LN2_LO_F, c)).sub(hfsq).add(f));
    }

    /** sqrt(2) - 1: from here on log1p's argument e is reduced to (e - 1) / 2, with k = 1. */
    private static final FloatVector SQRT2_M1_F = f(0.41421357f);

    /**
     * {@code log(1 + e^v)} (softplus's core) as {@code max(v, 0) + log1p(e^-|v|)}: log1p's argument e is in
     * {@code [0, 1]} (or NaN), so that log1p needs no range checks, no subnormal scaling and no rounding of {@code 1 + e}:
     * {@code e} itself, or {@code (e - 1) / 2} with k = 1 from sqrt(2) - 1 on (its rounding error c exact, as
     * {@link #log1pFinite}'s), is in fdlibm's reduced range. Within 2 ulps of the exact value in float and of StrictMath's
     * {@code max(v, 0) + log1p(exp(-|v|))} in double ({@code VectorLogTest}: exp's error, log1p's and the sum's); about half of the Vector API calls of {@code log1p(exp(v))}. The generated kernels call it
     * for {@code log1p(exp(v))} under the deterministic switch ({@code PointwiseCodegen}).
     */
    static FloatVector log1pExp(FloatVector v) {
        FloatVector e = VectorExp.exactExp(v.abs().neg());
        VectorMask<Float> upper = e.compare(VectorOperators.GE, SQRT2_M1_F);
        FloatVector d = e.sub(ONE_F);
        FloatVector f = e.blend(d.mul(HALF_F), upper);
        FloatVector k = ZERO_F.blend(ONE_F, upper);
        // e - (d + 1): what e - 1 lost, halved with it; log(1 + f + c) = log(1 + f) + c / (1 + f).
        FloatVector c = e.sub(d.add(ONE_F)).mul(HALF_F).div(f.add(ONE_F)).blend(ZERO_F, upper.not());
        FloatVector s = f.div(f.add(TWO_F));
        FloatVector z = s.mul(s);
        FloatVector r = z.fma(LG4_F, LG3_F).fma(z, LG2_F).fma(z, LG1_F).mul(z);
        FloatVector hfsq = f.mul(f).mul(HALF_F);
        FloatVector y = k.fma(LN2_HI_F, s.fma(hfsq.add(r), k.fma(LN2_LO_F, c)).sub(hfsq).add(f)).add(v.max(ZERO_F));
        // NaN as it came: through the arithmetic its bits would depend on the fallback's operand order (Math.fma's).
        return y.blend(v, v.compare(VectorOperators.NE, v));
    }

    // ---------------------------------------------------------------- double

    private static final DoubleVector MIN_NORMAL_D = d(Double.MIN_NORMAL), TWO54_D = d(0x1p54), MINUS54_D = d(-54);
    private static final LongVector SQRT_HALF_SHIFT_D = LongVector.broadcast(LS, (0x3ff00000L - 0x3fe6a09eL) << 32),
            MANTISSA_D = LongVector.broadcast(LS, 0x000fffffffffffffL), SQRT_HALF_BITS_D = LongVector.broadcast(LS, 0x3fe6a09eL << 32);
    private static final LongVector K_BIAS_D = LongVector.broadcast(LS, Double.doubleToRawLongBits(0x1.8p52) - 1023);
    private static final DoubleVector ROUND_D = d(0x1.8p52);
    private static final DoubleVector ONE_D = d(1), TWO_D = d(2), HALF_D = d(0.5);
    /** fdlibm's e_log.c: ln 2 in two parts and R(z) = Lg1 z + ... + Lg7 z^7, |error| < 2^-58.45. */
    private static final DoubleVector LN2_HI_D = d(6.93147180369123816490e-01), LN2_LO_D = d(1.90821492927058770002e-10);
    private static final DoubleVector LG1_D = d(6.666666666666735130e-01), LG2_D = d(3.999999999940941908e-01),
            LG3_D = d(2.857142874366239149e-01), LG4_D = d(2.222219843214978396e-01), LG5_D = d(1.818357216161805012e-01),
            LG6_D = d(1.531383769920937332e-01), LG7_D = d(1.479819860511658591e-01);
    private static final DoubleVector ZERO_D = d(0), MINUS_ONE_D = d(-1), INF_D = d(Double.POSITIVE_INFINITY),
            MINUS_INF_D = d(Double.NEGATIVE_INFINITY), NAN_D = d(Double.NaN);

    private static DoubleVector d(double v) {
        return DoubleVector.broadcast(DS, v);
    }

    /** {@code log(x)} lane by lane, within an ulp; the float form's fast path. */
    static DoubleVector log(DoubleVector x) {
        if (!x.compare(VectorOperators.GE, MIN_NORMAL_D).and(x.compare(VectorOperators.LT, INF_D)).allTrue()) return wideLog(x);
        LongVector ix = x.reinterpretAsLongs().add(SQRT_HALF_SHIFT_D);
        DoubleVector k = ix.lanewise(VectorOperators.LSHR, 52).add(K_BIAS_D).reinterpretAsDoubles().sub(ROUND_D);
        DoubleVector f = ix.and(MANTISSA_D).add(SQRT_HALF_BITS_D).reinterpretAsDoubles().sub(ONE_D);
        return log1pReduced(f, ZERO_D, k);
    }

    private static DoubleVector wideLog(DoubleVector x) {
        VectorMask<Double> subnormal = x.compare(VectorOperators.LT, MIN_NORMAL_D);
        LongVector ix = x.blend(x.mul(TWO54_D), subnormal).reinterpretAsLongs().add(SQRT_HALF_SHIFT_D);
        LongVector kBits = ix.lanewise(VectorOperators.LSHR, 52).add(K_BIAS_D);
        DoubleVector k = kBits.reinterpretAsDoubles().sub(ROUND_D);
        k = k.blend(k.add(MINUS54_D), subnormal);
        DoubleVector f = ix.and(MANTISSA_D).add(SQRT_HALF_BITS_D).reinterpretAsDoubles().sub(ONE_D);
        DoubleVector r = log1pReduced(f, ZERO_D, k);
        return r.blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, INF_D)))
                .blend(MINUS_INF_D, x.compare(VectorOperators.EQ, ZERO_D))
                .blend(NAN_D, x.compare(VectorOperators.LT, ZERO_D));
    }

    /** {@code log(1 + x)} lane by lane, within an ulp; the float form's fast path. */
    static DoubleVector log1p(DoubleVector x) {
        if (!x.compare(VectorOperators.GT, MINUS_ONE_D).and(x.compare(VectorOperators.LT, INF_D)).allTrue()) return wideLog1p(x);
        return log1pFinite(x).blend(x, x.compare(VectorOperators.EQ, ZERO_D));
    }

    private static DoubleVector wideLog1p(DoubleVector x) {
        return log1pFinite(x)
                .blend(x, x.compare(VectorOperators.NE, x).or(x.compare(VectorOperators.EQ, INF_D)).or(x.compare(VectorOperators.EQ, ZERO_D)))
                .blend(MINUS_INF_D, x.compare(VectorOperators.EQ, MINUS_ONE_D))
                .blend(NAN_D, x.compare(VectorOperators.LT, MINUS_ONE_D));
    }

    private static DoubleVector log1pFinite(DoubleVector x) {
        DoubleVector u = x.add(ONE_D);
        LongVector iu = u.reinterpretAsLongs().add(SQRT_HALF_SHIFT_D);
        DoubleVector k = iu.lanewise(VectorOperators.LSHR, 52).add(K_BIAS_D).reinterpretAsDoubles().sub(ROUND_D);
        DoubleVector c = x.max(ONE_D).sub(u).add(x.min(ONE_D)).div(u);
        DoubleVector f = iu.and(MANTISSA_D).add(SQRT_HALF_BITS_D).reinterpretAsDoubles().sub(ONE_D);
        // log1pReduced written out, as in the float form (float64 softplus: the call was refused at C2's cutoff).
        DoubleVector s = f.div(f.add(TWO_D));
        DoubleVector z = s.mul(s);
        DoubleVector r = z.fma(LG7_D, LG6_D).fma(z, LG5_D).fma(z, LG4_D).fma(z, LG3_D).fma(z, LG2_D).fma(z, LG1_D).mul(z);
        DoubleVector hfsq = f.mul(f).mul(HALF_D);
        return k.fma(LN2_HI_D, s.fma(hfsq.add(r), k.fma(LN2_LO_D, c)).sub(hfsq).add(f));
    }

    private static DoubleVector log1pReduced(DoubleVector f, DoubleVector c, DoubleVector k) {
        DoubleVector s = f.div(f.add(TWO_D));
        DoubleVector z = s.mul(s);
        DoubleVector r = z.fma(LG7_D, LG6_D).fma(z, LG5_D).fma(z, LG4_D).fma(z, LG3_D).fma(z, LG2_D).fma(z, LG1_D).mul(z);
        DoubleVector hfsq = f.mul(f).mul(HALF_D);
        return k.fma(LN2_HI_D, s.fma(hfsq.add(r), k.fma(LN2_LO_D, c)).sub(hfsq).add(f));
    }

    private static final DoubleVector SQRT2_M1_D = d(0.41421356237309503);

    /** {@link #log1pExp(FloatVector)} in double lanes. */
    static DoubleVector log1pExp(DoubleVector v) {
        DoubleVector e = VectorExp.exactExp(v.abs().neg());
        VectorMask<Double> upper = e.compare(VectorOperators.GE, SQRT2_M1_D);
        DoubleVector d = e.sub(ONE_D);
        DoubleVector f = e.blend(d.mul(HALF_D), upper);
        DoubleVector k = ZERO_D.blend(ONE_D, upper);
        DoubleVector c = e.sub(d.add(ONE_D)).mul(HALF_D).div(f.add(ONE_D)).blend(ZERO_D, upper.not());
        DoubleVector s = f.div(f.add(TWO_D));
        DoubleVector z = s.mul(s);
        DoubleVector r = z.fma(LG7_D, LG6_D).fma(z, LG5_D).fma(z, LG4_D).fma(z, LG3_D).fma(z, LG2_D).fma(z, LG1_D).mul(z);
        DoubleVector hfsq = f.mul(f).mul(HALF_D);
        DoubleVector y = k.fma(LN2_HI_D, s.fma(hfsq.add(r), k.fma(LN2_LO_D, c)).sub(hfsq).add(f)).add(v.max(ZERO_D));
        return y.blend(v, v.compare(VectorOperators.NE, v));
    }
}
