package org.jtorch.backend.cpu;

import java.math.BigDecimal;
import java.math.MathContext;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code erf} and the exact GELU (through erfc) over float64 lanes, within 2 and 8 ulps (the tests sweep them against
 * an exact reference), as {@link VectorErf} does for float32; the generated float64 rows call them
 * ({@link VectorMathF64}).
 *
 * <p>Below |x| = 1/2, erf's Taylor series {@code x P(x^2)} (15 terms). From 1/2 on, {@code erfc(a) = exp(-a^2) R(a)}
 * with {@code a^2 = hi + lo} split exactly (an FMA; GELU multiplies {@code x/2 R} before the exponential, which is
 * subnormal in the far tail), and R by one of eight Chebyshev pieces of 16 terms: seven
 * intervals of width 1/2 over [1/2, 4), then {@code R(a) = H(s) / a} in {@code s = 16 / a^2} for a past 4 (H is flat
 * there; erfc underflows past 27). Each lane picks its piece's coefficients with one in-register permute per term
 * (eight pieces, eight double lanes), so a vector costs one polynomial whatever its lanes' spread; with fewer than
 * eight lanes the vector form is not offered ({@link #SUPPORTED}) and the reference serves. The coefficients are
 * computed once at class initialisation from R at the Chebyshev nodes, evaluated exactly enough in BigDecimal
 * (the series of erf, or erfc's continued fraction past 6), fitted twice (the second fit to the residual of the
 * first, which removes the rounding of the first's sums): there is no table to trust.
 */
final class VectorErfF64 {
    private VectorErfF64() {}

    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int PIECES = 8;
    /** Whether the vector form is offered: one permute picks a lane's piece only with eight lanes. */
    static final boolean SUPPORTED = DS.length() == PIECES;

    private static final double SPLIT = 0.5;
    /** Where the tail piece, in s = 16 / a^2, takes over. */
    private static final double TAIL = 4;
    private static final int TERMS = 16;
    private static final double[] SMALL = taylor(15);
    // R's exact values (before the coefficients, which are fitted to them at initialisation).
    private static final MathContext MC = new MathContext(80);
    private static final BigDecimal PI = new BigDecimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798");
    private static final BigDecimal SQRT_PI = PI.sqrt(MC);
    /** Per Chebyshev index k, lane j: the coefficient of piece j. */
    private static final DoubleVector[] COEFFICIENTS = SUPPORTED ? coefficients() : null;

    static DoubleVector erf(DoubleVector x) {
        DoubleVector a = x.abs();
        DoubleVector r = small(x);
        VectorMask<Double> big = a.compare(VectorOperators.GE, SPLIT);
        if (big.anyTrue()) {
            // Past 6, erfc is below half an ulp of 1: 1 - erfc rounds to 1. NaN stays NaN through the polynomial.
            DoubleVector six = a.min(6.0);
            DoubleVector hi = six.mul(six);
            DoubleVector one = DoubleVector.broadcast(DS, 1).sub(expPart(hi, six.fma(six, hi.neg())).mul(rPart(hi, six)));
            r = r.blend(one.blend(one.neg(), x.compare(VectorOperators.LT, 0)), big);
        }
        return r;
    }

    private static final double MINUS_RSQRT2 = -Math.sqrt(0.5);

    /** {@code x/2 erfc(-x / sqrt 2)}, the square of {@code x / sqrt 2} from x's exact square halved (as {@link VectorErf#gelu}). */
    static DoubleVector gelu(DoubleVector x) {
        DoubleVector x2 = x.mul(x);
        DoubleVector hi = x2.mul(0.5);
        DoubleVector lo = x.fma(x, x2.neg()).mul(0.5);
        DoubleVector t = x.mul(MINUS_RSQRT2);
        DoubleVector a = t.abs();
        VectorMask<Double> big = a.compare(VectorOperators.GE, SPLIT);
        DoubleVector erfc = DoubleVector.broadcast(DS, 1).sub(small(t));
        DoubleVector half = x.mul(0.5);
        if (!big.anyTrue()) return half.mul(erfc);
        DoubleVector e = expPart(hi, lo);
        DoubleVector r = rPart(hi, a);
        // In the negative tail exp(-a^2) may be subnormal: x/2 R is formed first, so that only the result rounds there.
        DoubleVector tail = half.mul(r).mul(e);
        DoubleVector head = half.mul(DoubleVector.broadcast(DS, 2).sub(r.mul(e)));
        return half.mul(erfc).blend(head.blend(tail, t.compare(VectorOperators.GE, 0)), big);
    }

    /** {@code x P(x^2)} with the Taylor coefficients. */
    private static DoubleVector small(DoubleVector x) {
        DoubleVector x2 = x.mul(x);
        DoubleVector p = DoubleVector.broadcast(DS, SMALL[SMALL.length - 1]);
        for (int k = SMALL.length - 2; k >= 0; k--) p = p.fma(x2, DoubleVector.broadcast(DS, SMALL[k]));
        return p.mul(x);
    }

    /**
     * {@code exp(-a^2)} with {@code a^2 = hi + lo} exactly: {@code exp(-lo)} taken as {@code 1 - lo}; past a^2 = 800
     * (exp underflows) lo is dropped (NaN for an infinite a).
     */
    private static DoubleVector expPart(DoubleVector hi, DoubleVector lo) {
        DoubleVector small = lo.blend(0, hi.compare(VectorOperators.GT, 800.0));
        return hi.neg().lanewise(VectorOperators.EXP).mul(DoubleVector.broadcast(DS, 1).sub(small));
    }

    /** {@code R(a) = erfc(a) exp(a^2)} for a >= 1/2, {@code hi} = a^2 rounded. */
    private static DoubleVector rPart(DoubleVector hi, DoubleVector a) {
        VectorMask<Double> tail = a.compare(VectorOperators.GE, TAIL);
        // The piece: the number of interval starts past 1/2 that a reaches (0 for NaN, whose lanes stay NaN through u).
        DoubleVector piece = DoubleVector.zero(DS);
        for (int j = 1; j < PIECES; j++) piece = piece.add(1.0, a.compare(VectorOperators.GE, SPLIT + 0.5 * j));
        VectorShuffle<Double> pick = piece.toShuffle();
        // u in [-1, 1]: 4a - (3 + 2j) over piece j's interval [1/2 + j/2, 1 + j/2], 32 / a^2 - 1 in the tail.
        DoubleVector u = a.mul(4).sub(piece.mul(2).add(3)).blend(DoubleVector.broadcast(DS, 32).div(hi).sub(1), tail);
        // Clenshaw's recurrence on the Chebyshev series (the monomial form of 16 terms would cancel).
        DoubleVector u2 = u.add(u);
        DoubleVector b1 = DoubleVector.zero(DS);
        DoubleVector b2 = DoubleVector.zero(DS);
        for (int k = TERMS - 1; k >= 1; k--) {
            DoubleVector b = u2.fma(b1, COEFFICIENTS[k].rearrange(pick)).sub(b2);
            b2 = b1;
            b1 = b;
        }
        DoubleVector r = u.fma(b1, COEFFICIENTS[0].rearrange(pick)).sub(b2);
        return r.blend(r.div(a), tail);
    }

    // ---------------------------------------------------------------- coefficients, computed once

    private static double[] taylor(int terms) {
        double[] c = new double[terms];
        double factorial = 1;
        for (int n = 0; n < terms; n++) {
            if (n > 0) factorial *= n;
            c[n] = 2 / Math.sqrt(Math.PI) * (n % 2 == 0 ? 1 : -1) / (factorial * (2 * n + 1));
        }
        return c;
    }

    private static DoubleVector[] coefficients() {
        double[][] pieces = new double[PIECES][];
        for (int j = 0; j < PIECES - 1; j++) {
            double lo = SPLIT + 0.5 * j;
            pieces[j] = fit(u -> r(lo + 0.25 * (u + 1)), TERMS);
        }
        // H(s) = a R(a) with a = 4 / sqrt(s), s = (u + 1) / 2 in (0, 1]; at s = 0, a R(a) -> 1 / sqrt(pi).
        pieces[PIECES - 1] = fit(u -> {
            double s = (u + 1) / 2;
            if (s == 0) return 1 / Math.sqrt(Math.PI);
            double a = TAIL / Math.sqrt(s);
            return a * r(a);
        }, TERMS);
        DoubleVector[] c = new DoubleVector[TERMS];
        double[] lanes = new double[PIECES];
        for (int k = 0; k < TERMS; k++) {
            for (int j = 0; j < PIECES; j++) lanes[j] = pieces[j][k];
            c[k] = DoubleVector.fromArray(DS, lanes, 0);
        }
        return c;
    }

    /**
     * The Chebyshev coefficients of {@code g} on [-1, 1] from its values at {@code n} Chebyshev nodes, fitted twice:
     * the second fit, to the first's residual at the nodes, removes the rounding of the first's sums (about 20 ulps
     * of R over 16 terms, against 2 after).
     */
    private static double[] fit(java.util.function.DoubleUnaryOperator g, int n) {
        double[] node = new double[n];
        double[] f = new double[n];
        for (int j = 0; j < n; j++) {
            node[j] = Math.cos(Math.PI * (j + 0.5) / n);
            f[j] = g.applyAsDouble(node[j]);
        }
        double[] c = chebyshev(f);
        double[] residual = new double[n];
        for (int j = 0; j < n; j++) residual[j] = f[j] - clenshaw(c, node[j]);
        double[] d = chebyshev(residual);
        for (int k = 0; k < n; k++) c[k] += d[k];
        return c;
    }

    private static double[] chebyshev(double[] f) {
        int n = f.length;
        double[] c = new double[n];
        for (int k = 0; k < n; k++) {
            double s = 0;
            // The angle reduced exactly (k (2j + 1) mod 4n, in units of pi / 2n): a large rounded angle would cost ulps.
            for (int j = 0; j < n; j++) s += f[j] * Math.cos(Math.PI * ((k * (2 * j + 1)) % (4 * n)) / (2 * n));
            c[k] = s * (k == 0 ? 1.0 : 2.0) / n;
        }
        return c;
    }

    private static double clenshaw(double[] c, double u) {
        double b1 = 0;
        double b2 = 0;
        for (int k = c.length - 1; k >= 1; k--) {
            double b = 2 * u * b1 - b2 + c[k];
            b2 = b1;
            b1 = b;
        }
        return u * b1 - b2 + c[0];
    }

    /**
     * {@code R(a) = erfc(a) exp(a^2)} to double precision: by erf's Taylor series and exp's in 80 digits below 6 (the
     * terms reach e^36, 16 digits above the result), by erfc's continued fraction
     * {@code 1 / (sqrt(pi) (a + (1/2) / (a + 1 / (a + (3/2) / ...))))}, 400 terms deep, from 6 on.
     */
    static double r(double a) {
        BigDecimal x = new BigDecimal(a);
        if (a >= 6) {
            BigDecimal f = x;
            BigDecimal half = new BigDecimal("0.5");
            for (int n = 400; n >= 1; n--) f = x.add(half.multiply(BigDecimal.valueOf(n)).divide(f, MC), MC);
            return BigDecimal.ONE.divide(SQRT_PI.multiply(f, MC), MC).doubleValue();
        }
        BigDecimal x2 = x.multiply(x, MC);
        BigDecimal tiny = BigDecimal.ONE.movePointLeft(70);
        BigDecimal term = x;
        BigDecimal sum = x;
        for (int n = 1; term.abs().compareTo(tiny) > 0; n++) {
            term = term.multiply(x2, MC).divide(BigDecimal.valueOf(-n), MC);
            sum = sum.add(term.divide(BigDecimal.valueOf(2L * n + 1), MC), MC);
        }
        BigDecimal erfc = BigDecimal.ONE.subtract(sum.multiply(BigDecimal.valueOf(2), MC).divide(SQRT_PI, MC), MC);
        BigDecimal exp = BigDecimal.ONE;
        term = BigDecimal.ONE;
        for (int n = 1; term.compareTo(tiny) > 0; n++) {
            term = term.multiply(x2, MC).divide(BigDecimal.valueOf(n), MC);
            exp = exp.add(term, MC);
        }
        return erfc.multiply(exp, MC).doubleValue();
    }
}
