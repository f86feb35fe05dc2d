package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorTanhF64} against {@code StrictMath.tanh}. StrictMath (fdlibm) is itself up to about 2 ulps from the
 * true tanh on (0.25, 1) (mpmath at 40 digits, 200,000 points: worst 2.05, mean 0.39), where VectorTanhF64 measured
 * 0.94 worst and 0.26 mean; so the bound here is 2 ulps from StrictMath, and the mean difference shows a systematic loss.
 */
class VectorTanhF64Test {
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;

    private static double[] tanh(double[] x) {
        int n = (x.length + DS.length() - 1) / DS.length() * DS.length();
        double[] in = java.util.Arrays.copyOf(x, n), out = new double[n];
        for (int i = 0; i < n; i += DS.length()) VectorTanhF64.tanh(DoubleVector.fromArray(DS, in, i)).intoArray(out, i);
        return java.util.Arrays.copyOf(out, x.length);
    }

    private static double ulps(double expected, double actual) {
        return expected == actual ? 0 : Math.abs(expected - actual) / Math.ulp(expected);
    }

    /** Uniform on (-4, 4), dense around the branch point 1, wide normals, and every binade down to 2^-80. */
    @Test
    void withinTwoUlpsOfStrictMathAndNoWorseOnAverage() {
        Random r = new Random(20);
        double[] x = new double[400_000];
        for (int i = 0; i < x.length; i++) {
            double v = switch (i % 4) {
                case 0 -> 8 * r.nextDouble() - 4;
                case 1 -> 0.9 + 0.2 * r.nextDouble();
                case 2 -> 8 * r.nextGaussian();
                default -> Math.scalb(1 + r.nextDouble(), -r.nextInt(80));
            };
            x[i] = r.nextBoolean() ? v : -v;
        }
        double[] y = tanh(x);
        double worst = 0, total = 0;
        for (int i = 0; i < x.length; i++) {
            double u = ulps(StrictMath.tanh(x[i]), y[i]);
            assertTrue(u <= 2, "tanh(" + x[i] + ") = " + y[i] + ", StrictMath " + StrictMath.tanh(x[i]) + ": " + u + " ulps");
            worst = Math.max(worst, u);
            total += u;
        }
        assertTrue(total / x.length < 0.25, "mean " + total / x.length + " ulps from StrictMath (worst " + worst + ")");
    }

    @Test
    void oddAndExactAtTheEdges() {
        double[] x = {0.0, -0.0, Double.MIN_VALUE, -Double.MIN_VALUE, 1e-300, -1e-300, 0x1p-30, Double.POSITIVE_INFINITY,
            Double.NEGATIVE_INFINITY, 19.5, -19.5, 22, 40, 1e300, -Double.MAX_VALUE, Double.NaN, 1.0, Math.nextDown(1.0)};
        double[] y = tanh(x);
        for (int i = 0; i < x.length; i++) {
            if (!Double.isNaN(x[i])) assertEquals(StrictMath.tanh(x[i]), y[i], Math.ulp(StrictMath.tanh(x[i])), "tanh(" + x[i] + ")");
            if (Math.abs(x[i]) < 0x1p-27 || Math.abs(x[i]) > 19.1 || Double.isNaN(x[i])) {
                assertEquals(Double.doubleToLongBits(StrictMath.tanh(x[i])), Double.doubleToLongBits(y[i]), "tanh(" + x[i] + ") bits");
            }
        }
        Random r = new Random(3);
        double[] v = new double[1024], minus = new double[1024];
        for (int i = 0; i < v.length; i++) minus[i] = -(v[i] = 6 * r.nextDouble());
        double[] a = tanh(v), b = tanh(minus);
        for (int i = 0; i < v.length; i++) assertEquals(-a[i], b[i], 0, "tanh(-x) = -tanh(x) at " + v[i]);
    }
}
