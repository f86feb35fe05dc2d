package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.SpecialFunctions;

/**
 * {@code erf} and the exact GELU (through erfc) over float32 rows in the Vector API, within 3 and 6 ulps of the
 * exact values (the tests sweep them against {@link SpecialFunctions}, which is accurate to double precision).
 * PyTorch's float GELU computes {@code 1 + erf}, which cancels in the negative tail: 1.13 and 2.13 give
 * -1.596e-7 at x = -5.3555 (exact -2.285e-7) and 0 at x = -8 (exact -4.98e-15).
 *
 * <p>Two pieces cover the line. Below |x| = 1/2, erf's Taylor series {@code x P(x^2)} (8 terms: the truncation
 * is under a tenth of an ulp). From 1/2 on, {@code erfc(a) = exp(-a^2) R(a)} with R smooth and slowly varying,
 * approximated by polynomials of degree 14 on [1/2, 4] and 12 on [4, 10] (past 10, erfc underflows float). Their
 * coefficients are Chebyshev fits computed once at class initialisation from {@link SpecialFunctions#erfc},
 * so there is no table to trust. {@code a^2} is split exactly into {@code hi + lo} (an FMA), so that
 * {@code exp(-a^2)} keeps its relative accuracy where a^2 is large. erf is {@code 1 - erfc} there, which does
 * not cancel (erfc is below 1/2). GELU is {@code x/2 erfc(-x/sqrt 2)}, which
 * stays accurate in the negative tail where {@code 1 + erf} would cancel; it needs erfc only, which one
 * polynomial of R on [0, 4] serves (erfc(-a) = 2 - erfc(a) does not cancel), so GELU evaluates one branch.
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
    /** R(a) on [4, 10], in u = (2a - 14) / 6. */
    private static final float[] FAR = fit(4, 10, 12);
    /** R(a) on [0, 4]: erfc over the whole near range in one branch (GELU needs erfc only, never a small erf). */
    private static final float[] WHOLE = fit(0, 4, 16);

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
        FloatVector x2 = x.mul(x);
        FloatVector hi = x2.mul(0.5f);
        FloatVector lo = x.fma(x, x2.neg()).mul(0.5f);
        FloatVector t = x.mul(MINUS_RSQRT2);
        FloatVector a = t.abs();
        // erfc(a) = exp(-a^2) R(a) on [0, 4] in one polynomial; erfc(-a) = 2 - erfc(a) does not cancel.
        FloatVector e = tail(hi, lo, a.min(4f), WHOLE, 0, 4);
        VectorMask<Float> far = a.compare(VectorOperators.GT, 4f);
        if (far.anyTrue()) e = e.blend(tail(hi, lo, a.min(10f), FAR, 4, 10), far);
        FloatVector erfc = e.blend(FloatVector.broadcast(FS, 2f).sub(e), t.compare(VectorOperators.LT, 0f));
        return x.mul(0.5f).mul(erfc);
    }

    private static final float RSQRT_2PI = (float) (1 / Math.sqrt(2 * Math.PI));

    /**
     * GELU's derivative times the gradient, {@code g (Phi(x) + x phi(x))} (ATen's {@code gelu_backward}): the density
     * {@code phi(x) = exp(-x^2/2) / sqrt(2 pi)} is the exponential that {@code Phi(x) = erfc(-x / sqrt 2) / 2 =
     * exp(-x^2/2) R(a) / 2} needs, so one exponential and one polynomial serve both (the forward's cost).
     */
    static FloatVector geluBackward(FloatVector g, FloatVector x) {
        // x/2 is exact, so hi + lo = x^2 / 2 exactly.
        FloatVector half = x.mul(0.5f);
        FloatVector hi = half.mul(x);
        FloatVector lo = half.fma(x, hi.neg());
        FloatVector a = x.abs().mul(-MINUS_RSQRT2);
        // exp(-x^2/2) and R(a) on [0, 4] written out here rather than through tail's helpers: C2 inlines a kernel's
        // calls only so deep and so large, and a call it does not inline boxes its vectors (the forward ran at half speed).
        FloatVector small = lo.blend(0f, hi.compare(VectorOperators.GT, 100f));
        FloatVector e = VectorExp.exp(hi.neg()).mul(FloatVector.broadcast(FS, 1f).sub(small));
        FloatVector u = a.min(4f).mul(0.5f).sub(1f);
        FloatVector r = FloatVector.broadcast(FS, WHOLE[WHOLE.length - 1]);
        for (int k = WHOLE.length - 2; k >= 0; k--) r = r.fma(u, FloatVector.broadcast(FS, WHOLE[k]));
        VectorMask<Float> far = a.compare(VectorOperators.GT, 4f);
        // Past a = 4 (rare in practice) the far polynomial, in a call of its own on the cold path.
        if (far.anyTrue()) r = r.blend(farR(a.min(10f)), far);
        // Phi(-|x|) = exp(-x^2/2) R(a) / 2; Phi(|x|) = 1 - Phi(-|x|) does not cancel (Phi(-|x|) <= 1/2).
        FloatVector lower = e.mul(r).mul(0.5f);
        FloatVector cdf = lower.blend(FloatVector.broadcast(FS, 1f).sub(lower), x.compare(VectorOperators.GT, 0f));
        return g.mul(x.mul(e).fma(FloatVector.broadcast(FS, RSQRT_2PI), cdf));
    }

    /** R(a) on [4, 10] (the far polynomial). */
    private static FloatVector farR(FloatVector a) {
        FloatVector u = a.mul(2f / 6).sub(14f / 6);
        FloatVector p = FloatVector.broadcast(FS, FAR[FAR.length - 1]);
        for (int k = FAR.length - 2; k >= 0; k--) p = p.fma(u, FloatVector.broadcast(FS, FAR[k]));
        return p;
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
        int n = degree + 1;
        double[] f = new double[n];
        for (int j = 0; j < n; j++) {
            double u = Math.cos(Math.PI * (j + 0.5) / n);
            double a = (u * (hi - lo) + hi + lo) / 2;
            f[j] = SpecialFunctions.erfc(a) * Math.exp(a * a);
        }
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
        float[] c = new float[n];
        for (int i = 0; i < n; i++) c[i] = (float) mono[i];
        return c;
    }
}
