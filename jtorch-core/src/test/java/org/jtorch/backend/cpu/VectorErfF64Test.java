package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.function.DoubleUnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.SpecialFunctions;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The float64 vector erf (within 2 ulps) and exact GELU (within 8: the largest seen is 7, in the negative tail, a sum of
 * the exponential's, R's and three products' roundings) against references exact to about an ulp, over a
 * sweep of both tails, the pieces' edges, tiny values and the special values, through {@code Tensor.erf}/{@code gelu}
 * on contiguous float64 rows (the generated loop, where eight double lanes offer the vector form).
 */
class VectorErfF64Test {
    private static final MathContext MC = new MathContext(60);

    private static double[] sweep() {
        int dense = 20_001;
        int logs = 600;
        int edges = 9 * 2 * 8;
        double[] x = new double[dense + 4 * logs + edges];
        for (int i = 0; i < dense; i++) x[i] = -40 + 80.0 * i / (dense - 1);
        for (int i = 0; i < logs; i++) {
            double m = Math.pow(10, -300 + 301.0 * i / logs);
            x[dense + 4 * i] = m;
            x[dense + 4 * i + 1] = -m;
            x[dense + 4 * i + 2] = Math.nextUp(m);
            x[dense + 4 * i + 3] = -Math.nextUp(m);
        }
        // Around each piece's edge, in erf's argument and GELU's (x = a sqrt 2).
        int at = dense + 4 * logs;
        for (int j = 0; j < 8; j++) {
            double edge = 0.5 + 0.5 * j;
            for (double e : new double[] {edge, edge * Math.sqrt(2)}) {
                for (double y : new double[] {Math.nextDown(e), e, Math.nextUp(e), Math.nextDown(-e), -e, Math.nextUp(-e), e + 1e-9,
                    e - 1e-9, -e + 1e-9}) {
                    x[at++] = y;
                }
            }
        }
        return x;
    }

    /** erf(a) for 0 <= a < 1/2 by its Taylor series in 60 digits. */
    private static double erfSeries(double a) {
        BigDecimal x = new BigDecimal(a);
        BigDecimal x2 = x.multiply(x, MC);
        BigDecimal term = x;
        BigDecimal sum = x;
        for (int n = 1; n < 60; n++) {
            term = term.multiply(x2, MC).divide(BigDecimal.valueOf(-n), MC);
            sum = sum.add(term.divide(BigDecimal.valueOf(2L * n + 1), MC), MC);
        }
        BigDecimal sqrtPi = new BigDecimal("3.14159265358979323846264338327950288419716939937510582097494459").sqrt(MC);
        return sum.multiply(BigDecimal.valueOf(2), MC).divide(sqrtPi, MC).doubleValue();
    }

    /**
     * erfc(a) for a >= 1/2 with {@code a^2 = hi + lo}: {@code exp(-hi) (1 - lo) R(a)}, R from BigDecimal
     * ({@link ErfF64Fit#r}), exp StrictMath's: about an ulp.
     */
    private static double erfcTail(double a, double hi, double lo) {
        return StrictMath.exp(-hi) * (1 - lo) * ErfF64Fit.r(a);
    }

    private static double exactErf(double x) {
        double a = Math.abs(x);
        if (Double.isNaN(x)) return x;
        double r = a < 0.5 ? erfSeries(a) : a > 6 ? 1 : 1 - erfcTail(a, a * a, Math.fma(a, a, -a * a));
        return Math.copySign(r, x);
    }

    private static double exactGelu(double x) {
        if (Double.isNaN(x) || Double.isInfinite(x)) return x > 0 ? x : Double.NaN;
        double t = -x / Math.sqrt(2);
        double a = Math.abs(t);
        double erfc;
        if (a < 0.5) {
            erfc = 1 - Math.copySign(erfSeries(a), t);
        } else {
            double hi = x * x * 0.5;
            double lo = Math.fma(x, x, -x * x) * 0.5;
            if (a > 40) return t < 0 ? x : -0.0;
            // x/2 R first: exp(-a^2) is subnormal in the far tail.
            if (t >= 0) return 0.5 * x * ErfF64Fit.r(a) * (StrictMath.exp(-hi) * (1 - lo));
            erfc = 2 - erfcTail(a, hi, lo);
        }
        return 0.5 * x * erfc;
    }

    private static double ulps(double got, double exact) {
        if (Double.isNaN(exact)) return Double.isNaN(got) ? 0 : Double.POSITIVE_INFINITY;
        if (got == exact) return 0;
        return Math.abs(got - exact) / Math.max(Math.ulp(exact), Double.MIN_VALUE);
    }

    private static void assertWithinUlps(String name, double maxUlps, double[] x, double[] got, DoubleUnaryOperator exact) {
        double worst = 0;
        double at = 0;
        for (int i = 0; i < x.length; i++) {
            double u = ulps(got[i], exact.applyAsDouble(x[i]));
            if (u > worst) {
                worst = u;
                at = x[i];
            }
        }
        assertTrue(worst <= maxUlps, name + ": " + worst + " ulps at x = " + at);
    }

    private static double[] apply(double[] x, boolean gelu) {
        try (Tensor t = Torch.tensor(x).to(DType.FLOAT64); Tensor r = gelu ? t.gelu() : t.erf()) {
            return r.toDoubleArray();
        }
    }

    @Test
    void erfIsWithinTwoUlps() {
        assumeTrue(VectorErfF64.SUPPORTED, "no eight-lane double vectors: the reference serves float64 erf");
        double[] x = sweep();
        assertWithinUlps("erf", 2, x, apply(x, false), VectorErfF64Test::exactErf);
    }

    @Test
    void exactGeluIsWithinEightUlpsIncludingTheNegativeTail() {
        assumeTrue(VectorErfF64.SUPPORTED, "no eight-lane double vectors: the reference serves float64 gelu");
        double[] x = sweep();
        assertWithinUlps("gelu", 8, x, apply(x, true), VectorErfF64Test::exactGelu);
    }

    /** The table is the fit of R's exact values (to the last bits a different cos or summation order could move). */
    @Test
    void theCoefficientTableIsTheFit() {
        double[][] fit = ErfF64Fit.pieces();
        for (int j = 0; j < fit.length; j++) {
            for (int k = 0; k < fit[j].length; k++) {
                assertEquals(fit[j][k], VectorErfF64.PIECE_TABLE[j][k], 4e-16 * Math.abs(fit[j][0]), "piece " + j + ", term " + k);
            }
        }
    }

    /** The double-precision scalar reference agrees to its own accuracy (about 1e-15 relative), a check of the check. */
    @Test
    void agreesWithTheScalarReference() {
        double[] x = sweep();
        double[] erf = apply(x, false);
        for (int i = 0; i < x.length; i += 7) {
            double expected = SpecialFunctions.erf(x[i]);
            assertEquals(expected, erf[i], 2e-15 * Math.max(Math.abs(expected), 1e-300), "erf(" + x[i] + ")");
        }
    }

    @Test
    void specialValues() {
        double[] x = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.0, -0.0, 6.0, -6.0, 30.0, -30.0, -38.0, -40.0,
            Double.MIN_VALUE, -Double.MIN_VALUE, Double.MAX_VALUE, -Double.MAX_VALUE};
        double[] erf = apply(x, false);
        double[] gelu = apply(x, true);
        assertTrue(Double.isNaN(erf[0]) && Double.isNaN(gelu[0]));
        assertEquals(1.0, erf[1]);
        assertEquals(-1.0, erf[2]);
        assertEquals(Double.POSITIVE_INFINITY, gelu[1]);
        assertTrue(Double.isNaN(gelu[2]), "gelu(-inf), as PyTorch");
        assertEquals(0.0, erf[3]);
        assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(erf[4]), "erf(-0) = -0");
        assertEquals(1.0, erf[7]);
        assertEquals(-1.0, erf[8]);
        assertEquals(30.0, gelu[7]);
        // PyTorch's 0.5 x (1 + erf) cancels to 0 at -30; the exact value is about -1.5e-196.
        assertTrue(ulps(gelu[8], exactGelu(-30)) <= 8 && gelu[8] < -1e-197, "gelu(-30) = " + gelu[8]);
        assertEquals(0.0, Math.abs(gelu[10]), 1e-320); // underflows
        assertEquals(Double.MAX_VALUE, gelu[13]);
        assertEquals(0.0, Math.abs(gelu[14]), "gelu(-max)");
    }
}
