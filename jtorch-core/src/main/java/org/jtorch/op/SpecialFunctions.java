package org.jtorch.op;

/** Scalar special functions the JDK lacks, accurate to double precision. */
public final class SpecialFunctions {
    private SpecialFunctions() {}

    /**
     * The error function, to about 1e-15 relative: a Taylor series near zero and the continued
     * fraction of erfc (Lentz's method) in the tails.
     */
    public static double erf(double x) {
        if (x != x) return x;
        double ax = Math.abs(x);
        if (ax < 2.0) {
            // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
            double term = ax;
            double sum = ax;
            double x2 = ax * ax;
            for (int n = 1; n < 60; n++) {
                term *= -x2 / n;
                double add = term / (2 * n + 1);
                sum += add;
                if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
            }
            double r = 2.0 / Math.sqrt(Math.PI) * sum;
            return x < 0 ? -r : r;
        }
        if (ax > 6.0) return x < 0 ? -1.0 : 1.0;
        double r = 1.0 - erfcContinuedFraction(ax);
        return x < 0 ? -r : r;
    }

    /**
     * The complementary error function {@code 1 - erf(x)}, accurate in relative terms also in the right
     * tail, where {@code 1 - erf(x)} cancels (it underflows to 0 only past x = 26.5).
     */
    public static double erfc(double x) {
        if (x != x) return x;
        if (x >= 2.0) return erfcContinuedFraction(x);
        return 1.0 - erf(x);
    }

    /** erfc(x) for x >= 2 by the continued fraction erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...)))). */
    private static double erfcContinuedFraction(double x) {
        final double tiny = 1e-300;
        // Lentz's algorithm on f = x + a1/(x + a2/(x + ...)), a_n = n/2
        double f = x;
        double c = x;
        double d = 0;
        for (int n = 1; n < 200; n++) {
            double an = n * 0.5;
            d = x + an * d;
            if (Math.abs(d) < tiny) d = tiny;
            c = x + an / c;
            if (Math.abs(c) < tiny) c = tiny;
            d = 1.0 / d;
            double delta = c * d;
            f *= delta;
            if (Math.abs(delta - 1.0) < 1e-16) break;
        }
        return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
    }
}
