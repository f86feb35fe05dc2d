package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.SpecialFunctions;

/**
 * {@code erf} and the exact GELU (through erfc) over float32 rows in the Vector API, within 3 and 6 ulps of the
 * exact values, GELU's derivative within 5 ulps of its larger term (the tests sweep them against
 * {@link SpecialFunctions}, which is accurate to double precision). PyTorch's float GELU computes {@code 1 + erf},
 * which cancels in the negative tail: 1.13 and 2.13 give -1.596e-7 at x = -5.3555 (exact -2.285e-7) and 0 at x = -8
 * (exact -4.98e-15).
 *
 * <p>erf: below |x| = 1/2, its Taylor series {@code x P(x^2)} (8 terms: the truncation is under a tenth of an ulp);
 * from 1/2 on, {@code 1 - erfc(a)} with {@code erfc(a) = exp(-a^2) R(a)}, R smooth and slowly varying, by a
 * polynomial of degree 14 on [1/2, 4] (past 4, erf is 1 in float). {@code a^2} is split exactly into {@code hi +
 * lo} (an FMA), so that {@code exp(-a^2)} keeps its relative accuracy where a^2 is large.
 *
 * <p>GELU is {@code x Phi(x)}, {@code Phi(-|x|) = erfc(a) / 2}, {@code a = |x| / sqrt 2}, which stays accurate in the
 * negative tail where {@code 1 + erf} would cancel, and {@code Phi(|x|) = 1 - Phi(-|x|)} does not cancel: one
 * branch for every lane. There {@code erfc(a) = exp(-a^2) t S(t)} with {@code t = 1 / (1 + a/2)}: S is smooth in t
 * over the whole range (degree 10), where a polynomial in a needed degree 16 on [0, 4] and a second piece beyond;
 * and the exponential is this class's own, inline (see {@link #scaledExpOfMinusHalfSquare}). All coefficients are
 * Chebyshev fits computed once at class initialisation from {@link SpecialFunctions#erfc} and {@link Math#exp}, so
 * there is no table to trust.
 *
 * <p>One loop per function, with the polynomials in small helpers that C2 inlines (see {@link VectorF32}: a
 * vector that escapes a call C2 does not inline is boxed).
 */
final class VectorErf {
    private VectorErf() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    /** Where erf's series hands over to {@code 1 - exp(-a^2) R(a)}. */
    private static final float SPLIT = 0.5f;
    /** erf(x) = x * sum_n SMALL[n] x^(2n) for |x| < 1/2: 2/sqrt(pi) (-1)^n / (n! (2n + 1)). */
    private static final float[] SMALL = taylor(8);
    /** R(a) = erfc(a) exp(a^2) on [1/2, 4], in u = (2a - 4.5) / 3.5. */
    private static final float[] NEAR = fit(SPLIT, 4, 14);

    static void erf(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) erf(FloatVector.fromMemorySegment(FS, xs, xo + 4 * i, LE)).intoMemorySegment(os, oo + 4 * i, LE);
    }

    static FloatVector erf(FloatVector x) {
        FloatVector a = x.abs();
        FloatVector r = small(x);
        VectorMask<Float> big = a.compare(VectorOperators.GE, SPLIT);
        if (big.anyTrue()) {
            // Past 4, erf is 1 in float (1 - erfc(4) = 1 - 1.5e-8): the near polynomial at 4 says so.
            FloatVector four = a.min(4f);
            FloatVector hi = four.mul(four);
            FloatVector one = FloatVector.broadcast(FS, 1f).sub(tail(hi, four.fma(four, hi.neg()), four, NEAR, SPLIT, 4));
            r = r.blend(one.blend(one.neg(), x.compare(VectorOperators.LT, 0f)), big);
        }
        return r;
    }

    /**
     * {@code x/2 (1 + erf(x / sqrt 2)) = x/2 erfc(-x / sqrt 2)}, PyTorch's {@code gelu(approximate='none')}. The
     * square of {@code x / sqrt 2} is taken from x's exact square halved: rounding {@code x / sqrt 2} first would
     * cost {@code 2 t^2} rounding errors of relative accuracy in the tail (150 ulps at x = -12).
     */
    static void gelu(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) gelu(FloatVector.fromMemorySegment(FS, xs, xo + 4 * i, LE)).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static final float MINUS_RSQRT2 = (float) -Math.sqrt(0.5);

    static FloatVector gelu(FloatVector x) {
        // Phi(x) = 1 - Phi(-|x|) for x > 0 does not cancel (Phi(-|x|) <= 1/2); Phi(-|x|) = erfc(a) / 2, a = |x| / sqrt 2.
        FloatVector ax = x.abs();
        FloatVector lower = lowerTail(ax, scaledExpOfMinusHalfSquare(ax));
        // x < 0: x Phi(-|x|) 2^64 2^-64, so that a subnormal result is rounded once (by the last product)
        VectorMask<Float> positive = x.compare(VectorOperators.GT, V_ZERO);
        FloatVector cdf = lower.blend(V_ONE.sub(lower.mul(V_EXP_UNSCALE)), positive);
        return x.mul(cdf).mul(V_EXP_UNSCALE.blend(V_ONE, positive));
    }

    /**
     * GELU's derivative times the gradient, {@code g (Phi(x) + x phi(x))} (ATen's {@code gelu_backward}): the density
     * {@code phi(x) = exp(-x^2/2) / sqrt(2 pi)} is the exponential that {@code Phi(-|x|) = exp(-x^2/2) R(a) / 2} needs,
     * so one exponential and one polynomial serve both (the forward's cost). {@code x phi(x)} takes the unclamped x, so
     * that it is NaN at infinite x as ATen's {@code x * exp(-x^2/2)}.
     */
    static FloatVector geluBackward(FloatVector g, FloatVector x) {
        FloatVector ax = x.abs();
        FloatVector e = scaledExpOfMinusHalfSquare(ax);
        FloatVector lower = lowerTail(ax, e).mul(V_EXP_UNSCALE);
        FloatVector cdf = lower.blend(V_ONE.sub(lower), x.compare(VectorOperators.GT, V_ZERO));
        return g.mul(x.mul(e).fma(V_RSQRT_2PI_UNSCALED, cdf));
    }

    // ---------------------------------------------------------------- GELU's Phi(-|x|), all inline

    /**
     * Past |x| = 15 GELU is x (or 0 below -15: Phi(-15) = 3.7e-51) and the density is 0 (below 1e-48): the exponential
     * is 0 there (so that {@code x phi(x)} and {@code x Phi(x)} are NaN at infinite x, as ATen's), and its argument is
     * clamped there to keep its scale in range. NaN passes through.
     */
    private static final float GELU_LIMIT = 15f;
    /** t = 1 / (1 + T_SLOPE a) maps a in [0, 15 / sqrt 2] onto [T_MIN, 1]. */
    private static final double T_SLOPE = 0.5;
    private static final double T_MIN = 1 / (1 + T_SLOPE * 10.61);
    /** The polynomial's variable is t - T_CENTRE: a centred variable keeps its terms from cancelling at either end. */
    private static final double T_CENTRE = (1 + T_MIN) / 2 + 0.08;
    /**
     * {@code R(a) / (2t)} with R(a) = erfc(a) exp(a^2), in t - T_CENTRE. R ~ 1 / (a sqrt pi) at large a, which no polynomial in a follows over [0, 10.6] (hence
     * degree 16 on [0, 4] and a far piece before); R / t is smooth in t, and degree 10 fits it within 5e-9 relative
     * (Chebyshev, computed once from {@link SpecialFunctions#erfc}).
     */
    private static final float[] RATIO = fitInT(10);

    /**
     * {@code 2^64 Phi(-|x|) = 2^64 erfc(a) / 2 = 2^64 exp(-a^2) t (R / 2t)}, from the scaled {@code exp(-x^2/2)} and
     * {@code |x|}: kept scaled, so that the caller's last product is the one rounding into subnormals.
     */
    private static FloatVector lowerTail(FloatVector ax, FloatVector scaledExp) {
        FloatVector t = V_ONE.div(ax.fma(V_T_SLOPE, V_ONE));
        FloatVector v = t.sub(V_T_CENTRE);
        // Horner written out over constant vectors: C2 parses each broadcast as a chain of calls, and the nodes of a
        // formula's parse count against its inlining cutoff (NodeCountInliningCutoff) in the generated row kernels
        FloatVector p = R10.fma(v, R9).fma(v, R8).fma(v, R7).fma(v, R6).fma(v, R5).fma(v, R4).fma(v, R3).fma(v, R2).fma(v, R1).fma(v, R0);
        return scaledExp.mul(t).mul(p);
    }

    private static final FloatVector V_ZERO = FloatVector.zero(FS);
    private static final FloatVector V_ONE = FloatVector.broadcast(FS, 1f);
    private static final FloatVector V_T_SLOPE = FloatVector.broadcast(FS, (float) (T_SLOPE * Math.sqrt(0.5)));
    private static final FloatVector V_T_CENTRE = FloatVector.broadcast(FS, (float) T_CENTRE);
    private static final FloatVector R0 = coefficient(RATIO, 0), R1 = coefficient(RATIO, 1), R2 = coefficient(RATIO, 2),
            R3 = coefficient(RATIO, 3), R4 = coefficient(RATIO, 4), R5 = coefficient(RATIO, 5), R6 = coefficient(RATIO, 6),
            R7 = coefficient(RATIO, 7), R8 = coefficient(RATIO, 8), R9 = coefficient(RATIO, 9), R10 = coefficient(RATIO, 10);

    /** {@code c[k]} in every lane; {@code c} must have exactly the degree written out at its use. */
    private static FloatVector coefficient(float[] c, int k) {
        return FloatVector.broadcast(FS, c[k]);
    }

    /** 2^64: the scaled exponential's factor, so that its scale 2^(n + 64) stays a normal float down to exp(-113). */
    private static final double EXP_SCALE = 0x1p64;
    private static final float EXP_UNSCALE = 0x1p-64f;
    private static final float RSQRT_2PI_UNSCALED = (float) (1 / Math.sqrt(2 * Math.PI) / EXP_SCALE);

    /** Adding 1.5 * 2^23 rounds a float below 2^22 in magnitude to an integer, which lands in the low mantissa bits. */
    private static final float ROUNDER = 0x1.8p23f;
    private static final int ROUNDER_BITS = Float.floatToRawIntBits(ROUNDER);
    private static final float LOG2E = (float) (1 / Math.log(2));
    private static final float LN2_HI = (float) Math.log(2);
    private static final float LN2_LO = (float) (Math.log(2) - LN2_HI);
    /** e^r on |r| <= ln 2 / 2 (Chebyshev, degree 6: 2e-9 relative), as monomials in r. */
    private static final float[] EXP_R = fitExp(6);
    private static final FloatVector E0 = coefficient(EXP_R, 0), E1 = coefficient(EXP_R, 1), E2 = coefficient(EXP_R, 2),
            E3 = coefficient(EXP_R, 3), E4 = coefficient(EXP_R, 4), E5 = coefficient(EXP_R, 5), E6 = coefficient(EXP_R, 6);
    private static final FloatVector V_EXP_UNSCALE = FloatVector.broadcast(FS, EXP_UNSCALE);
    private static final FloatVector V_RSQRT_2PI_UNSCALED = FloatVector.broadcast(FS, RSQRT_2PI_UNSCALED);
    private static final FloatVector V_LIMIT = FloatVector.broadcast(FS, GELU_LIMIT);
    private static final FloatVector V_MINUS_HALF = FloatVector.broadcast(FS, -0.5f);
    private static final FloatVector V_LOG2E = FloatVector.broadcast(FS, LOG2E);
    private static final FloatVector V_ROUNDER = FloatVector.broadcast(FS, ROUNDER);
    private static final FloatVector V_MINUS_LN2_HI = FloatVector.broadcast(FS, -LN2_HI);
    private static final FloatVector V_MINUS_LN2_LO = FloatVector.broadcast(FS, -LN2_LO);
    private static final IntVector V_EXPONENT_BIAS = IntVector.broadcast(FS.withLanes(int.class), ROUNDER_BITS - 127 - 64);

    /**
     * {@code 2^64 exp(-x^2/2)} for {@code |x|} in [0, 15] (0 past 15), without the JDK's vector exp: that one is a call into
     * libjsvml whose speed depended on the stack's position (0.18 or 0.33-0.44 ms over the same 393,216 floats in one
     * JVM at different call depths, docs/BENCHMARKS.md, issue 20, fifteenth session), and the call makes C2 spill the
     * live vectors around it. {@code x^2/2 = hi + lo} exactly (x/2 is exact), and lo joins the reduced argument, so the
     * result keeps its relative accuracy where x^2/2 is large. As {@code 2^n e^r}: the scale {@code 2^(n + 64)} is a
     * normal float for every n here (n >= -163), and the one product that leaves the normal range is GELU's last, so a
     * subnormal result is rounded once.
     */
    private static FloatVector scaledExpOfMinusHalfSquare(FloatVector abs) {
        FloatVector ax = abs.min(V_LIMIT);
        FloatVector minusHalf = ax.mul(V_MINUS_HALF);
        FloatVector y = minusHalf.mul(ax);
        FloatVector yLo = minusHalf.fma(ax, y.neg());
        FloatVector k = y.fma(V_LOG2E, V_ROUNDER);
        FloatVector n = k.sub(V_ROUNDER);
        FloatVector r = n.fma(V_MINUS_LN2_HI, y).add(n.mul(V_MINUS_LN2_LO).add(yLo));
        FloatVector p = E6.fma(r, E5).fma(r, E4).fma(r, E3).fma(r, E2).fma(r, E1).fma(r, E0);
        IntVector biased = (IntVector) k.viewAsIntegralLanes();
        FloatVector scale = (FloatVector) biased.sub(V_EXPONENT_BIAS).lanewise(VectorOperators.LSHL, 23).viewAsFloatingLanes();
        return p.mul(scale).blend(V_ZERO, abs.compare(VectorOperators.GT, V_LIMIT));
    }

    /** {@code x P(x^2)} with the Taylor coefficients. */
    private static FloatVector small(FloatVector x) {
        FloatVector x2 = x.mul(x);
        FloatVector p = FloatVector.broadcast(FS, SMALL[SMALL.length - 1]);
        for (int k = SMALL.length - 2; k >= 0; k--) p = p.fma(x2, FloatVector.broadcast(FS, SMALL[k]));
        return p.mul(x);
    }

    /**
     * {@code exp(-a^2) R(a)} with {@code a^2 = hi + lo} exactly and R's polynomial {@code c}, fitted on
     * {@code [from, to]}, evaluated at {@code a} (held inside that range). {@code exp(-lo)} is taken as
     * {@code 1 - lo} (|lo| is half an ulp of hi); past a^2 = 100, where exp(-a^2) underflows, lo is dropped (it is
     * NaN for an infinite a).
     */
    private static FloatVector tail(FloatVector hi, FloatVector lo, FloatVector a, float[] c, float from, float to) {
        FloatVector small = lo.blend(0f, hi.compare(VectorOperators.GT, 100f));
        FloatVector e = VectorExp.exp(hi.neg()).mul(FloatVector.broadcast(FS, 1f).sub(small));
        FloatVector u = a.mul(2f / (to - from)).sub((from + to) / (to - from));
        FloatVector p = FloatVector.broadcast(FS, c[c.length - 1]);
        for (int k = c.length - 2; k >= 0; k--) p = p.fma(u, FloatVector.broadcast(FS, c[k]));
        return e.mul(p);
    }

    // ---------------------------------------------------------------- coefficients, computed once

    private static float[] taylor(int terms) {
        float[] c = new float[terms];
        double factorial = 1;
        for (int n = 0; n < terms; n++) {
            if (n > 0) factorial *= n;
            c[n] = (float) (2 / Math.sqrt(Math.PI) * (n % 2 == 0 ? 1 : -1) / (factorial * (2 * n + 1)));
        }
        return c;
    }

    /**
     * The Chebyshev interpolant of degree {@code degree} of {@code R(a) = erfc(a) exp(a^2)} on {@code [lo, hi]}, as
     * monomial coefficients in {@code u = (2a - lo - hi) / (hi - lo)}.
     */
    private static float[] fit(double lo, double hi, int degree) {
        return toFloats(chebyshev(u -> {
            double a = (u * (hi - lo) + hi + lo) / 2;
            return SpecialFunctions.erfc(a) * Math.exp(a * a);
        }, degree));
    }

    /**
     * {@link #RATIO}: {@code R(a) / (2t)} at {@code t = (u (1 - T_MIN) + 1 + T_MIN) / 2}, {@code a = (1/t - 1) /
     * T_SLOPE}, fitted in u and rewritten in {@code v = t - T_CENTRE} (u = s v + d).
     */
    private static float[] fitInT(int degree) {
        double[] inU = chebyshev(u -> {
            double t = (u * (1 - T_MIN) + 1 + T_MIN) / 2;
            double a = (1 / t - 1) / T_SLOPE;
            return SpecialFunctions.erfc(a) * Math.exp(a * a) / (2 * t);
        }, degree);
        double s = 2 / (1 - T_MIN);
        double d = s * T_CENTRE - (1 + T_MIN) / (1 - T_MIN);
        double[] inV = new double[inU.length];
        double[] power = {1}; // (s v + d)^k, low order first
        for (int k = 0; k < inU.length; k++) {
            for (int i = 0; i < power.length; i++) inV[i] += inU[k] * power[i];
            double[] next = new double[power.length + 1];
            for (int i = 0; i < power.length; i++) {
                next[i] += d * power[i];
                next[i + 1] += s * power[i];
            }
            power = next;
        }
        return toFloats(inV);
    }

    /** {@link #EXP_R}: e^r on |r| <= ln 2 / 2, the monomials in u = r / (ln 2 / 2) rescaled to monomials in r. */
    private static float[] fitExp(int degree) {
        double h = Math.log(2) / 2;
        double[] c = chebyshev(u -> Math.exp(u * h), degree);
        for (int i = 1; i < c.length; i++) c[i] /= Math.pow(h, i);
        return toFloats(c);
    }

    private static float[] toFloats(double[] c) {
        float[] f = new float[c.length];
        for (int i = 0; i < c.length; i++) f[i] = (float) c[i];
        return f;
    }

    /** The Chebyshev interpolant of degree {@code degree} of {@code f} on [-1, 1], as monomial coefficients in u. */
    private static double[] chebyshev(java.util.function.DoubleUnaryOperator fn, int degree) {
        int n = degree + 1;
        double[] f = new double[n];
        for (int j = 0; j < n; j++) f[j] = fn.applyAsDouble(Math.cos(Math.PI * (j + 0.5) / n));
        double[] cheb = new double[n];
        for (int k = 0; k < n; k++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += f[j] * Math.cos(Math.PI * k * (j + 0.5) / n);
            cheb[k] = s * (k == 0 ? 1.0 : 2.0) / n;
        }
        // sum_k cheb[k] T_k(u) in monomials: T_0 = 1, T_1 = u, T_{k+1} = 2u T_k - T_{k-1}.
        double[] mono = new double[n];
        double[] prev = new double[n];
        double[] cur = new double[n];
        prev[0] = 1;
        cur[1] = 1;
        mono[0] += cheb[0];
        for (int i = 0; i < n; i++) mono[i] += cheb[1] * cur[i];
        for (int k = 2; k < n; k++) {
            double[] next = new double[n];
            for (int i = 0; i < n; i++) next[i] = (i > 0 ? 2 * cur[i - 1] : 0) - prev[i];
            for (int i = 0; i < n; i++) mono[i] += cheb[k] * next[i];
            prev = cur;
            cur = next;
        }
        return mono;
    }
}
