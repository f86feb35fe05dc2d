package org.jtorch.backend.cpu;

import java.math.BigDecimal;
import java.math.MathContext;

/**
 * The fit behind {@link VectorErfF64#PIECE_TABLE}, and R's exact values, for the tests: Chebyshev coefficients of
 * {@code R(a) = erfc(a) exp(a^2)} per piece, from R at the Chebyshev nodes in BigDecimal, fitted twice (the second
 * fit to the first's residual at the nodes removes the rounding of the first's sums: about 20 ulps of R over 16
 * terms, against 2 after).
 */
final class ErfF64Fit {
    private ErfF64Fit() {}

    private static final int PIECES = 8;
    private static final int TERMS = 16;
    private static final double SPLIT = 0.5;
    private static final double TAIL = 4;
    private static final MathContext MC = new MathContext(80);
    private static final BigDecimal PI = new BigDecimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798");
    private static final BigDecimal SQRT_PI = PI.sqrt(MC);

    /** The pieces' coefficients as {@link VectorErfF64#PIECE_TABLE} holds them, fitted afresh. */
    static double[][] pieces() {
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
        return pieces;
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
