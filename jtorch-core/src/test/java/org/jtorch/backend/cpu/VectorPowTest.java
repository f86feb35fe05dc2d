package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.Random;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorPow}'s float form: within half an ulp (and 10^-5) of {@link StrictMath#pow}'s double value, so
 * within an ulp of its float, over a grid of bases across the whole float range (both signs) against integer,
 * half-integer and random exponents, random pairs, and Math.pow's special arguments, whose zeros, infinities and NaN
 * must come out exactly (signs included). Its double form: StrictMath's bits over a grid of bases across the whole
 * double range against integer, half-integer, huge and special exponents, and random pairs (results near overflow and
 * underflow among them). Both: the same bits interpreted as compiled.
 */
class VectorPowTest {
    private static final int FL = FloatVector.SPECIES_PREFERRED.length(), DL = DoubleVector.SPECIES_PREFERRED.length();

    /** Exponents: the integers and halves to +-6, a third, tiny and huge ones, and Math.pow's special ones. */
    private static final float[] EXPONENTS = {0f, -0f, 1f, -1f, 2f, -2f, 3f, -3f, 4f, 5f, -5f, 6f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f,
        -2.5f, 1f / 3, -1f / 3, 0.1f, 1e-10f, -1e-10f, Float.MIN_VALUE, 1e5f, -1e5f, 16777215f, 0x1p24f, 0x1p31f + 256, 3e38f, -3e38f,
        Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN};

    /** Bases: every 65,537th float bit pattern of [0, inf], both signs, and Math.pow's special ones. */
    private static float[] bases() {
        List<Float> xs = new java.util.ArrayList<>();
        for (long bits = 0; bits <= Float.floatToRawIntBits(Float.POSITIVE_INFINITY); bits += 65_537) {
            xs.add(Float.intBitsToFloat((int) bits));
            xs.add(-Float.intBitsToFloat((int) bits));
        }
        for (float f : new float[] {0f, -0f, 1f, -1f, 2f, -2f, 0.5f, Math.nextUp(1f), Math.nextDown(1f), Float.MIN_VALUE,
            Float.MIN_NORMAL, Float.MAX_VALUE, -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN}) xs.add(f);
        float[] a = new float[xs.size()];
        for (int i = 0; i < a.length; i++) a[i] = xs.get(i);
        return a;
    }

    /** VectorPow.pow over the pairs (x[i], y[i]), padded to whole vectors. */
    static float[] pow(float[] x, float[] y) {
        int len = (x.length + FL - 1) / FL * FL;
        float[] xs = java.util.Arrays.copyOf(x, len), ys = java.util.Arrays.copyOf(y, len), o = new float[len];
        for (int i = 0; i < len; i += FL) {
            VectorPow.pow(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, xs, i), FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, ys, i))
                    .intoArray(o, i);
        }
        return java.util.Arrays.copyOf(o, x.length);
    }

    /**
     * The largest distance in float ulps from StrictMath's double value over the pairs; zeros, infinities and NaN must
     * match (float)StrictMath.pow exactly but for NaN's payload.
     */
    static double worstUlps(float[] x, float[] y) {
        float[] got = pow(x, y);
        double worst = 0;
        for (int i = 0; i < x.length; i++) {
            double want = StrictMath.pow(x[i], y[i]);
            float rounded = (float) want;
            String at = "pow(" + x[i] + ", " + y[i] + ") = " + got[i] + ", StrictMath " + want;
            if (Double.isNaN(want)) {
                assertTrue(Float.isNaN(got[i]), at);
            } else if (rounded == 0 || Float.isInfinite(rounded)) {
                // Within an ulp where the rounding decides between the largest finite float and infinity, or 0 and MIN_VALUE.
                int distance = Math.abs(Float.floatToRawIntBits(got[i]) - Float.floatToRawIntBits(rounded));
                if (Math.signum(got[i]) != Math.signum(rounded) && !(rounded == 0 && got[i] == 0) || distance > 1) fail(at);
                if (rounded == 0) assertEquals(Float.floatToRawIntBits(rounded) < 0, Float.floatToRawIntBits(got[i]) < 0, at);
                worst = Math.max(worst, distance == 0 ? 0 : 1);
            } else {
                double u = Math.abs(got[i] - want) / Math.ulp(rounded);
                if (u > 0.50001) fail(at + ": " + u + " ulps");
                worst = Math.max(worst, u);
            }
        }
        return worst;
    }

    @Test
    void floatIsWithinHalfAnUlpOfStrictMathAcrossTheRange() {
        float[] b = bases();
        float[] x = new float[b.length * EXPONENTS.length], y = new float[x.length];
        for (int i = 0; i < b.length; i++) {
            for (int j = 0; j < EXPONENTS.length; j++) {
                x[i * EXPONENTS.length + j] = b[i];
                y[i * EXPONENTS.length + j] = EXPONENTS[j];
            }
        }
        double worst = worstUlps(x, y);
        assertTrue(worst <= 0.50001, "worst " + worst);
    }

    @Test
    void floatIsWithinHalfAnUlpOfStrictMathOverRandomPairs() {
        Random r = new Random(7);
        int n = 400_000;
        float[] x = new float[n], y = new float[n];
        for (int i = 0; i < n; i++) {
            switch (i % 4) {
                case 0 -> { x[i] = r.nextFloat() * 10; y[i] = r.nextFloat() * 60 - 30; }
                case 1 -> { x[i] = (float) r.nextGaussian() * 3; y[i] = r.nextInt(41) - 20; }
                case 2 -> { x[i] = 1 + (float) r.nextGaussian() * 1e-4f; y[i] = (float) r.nextGaussian() * 1e6f; }
                default -> { x[i] = Float.intBitsToFloat(r.nextInt(0x7f800000)); y[i] = (float) r.nextGaussian(); }
            }
        }
        double worst = worstUlps(x, y);
        System.out.println("VectorPowTest random pairs: worst " + worst + " ulps");
        assertTrue(worst <= 0.50001, "worst " + worst);
    }

    @Test
    void mathPowsSpecialCasesSpelledOut() {
        float inf = Float.POSITIVE_INFINITY;
        float[][] cases = { // x, y, Math.pow
            {Float.NaN, 0f, 1f}, {Float.NaN, -0f, 1f}, {0f, 0f, 1f}, {-0f, 3f, -0f}, {-0f, 2f, 0f}, {-0f, -3f, -inf}, {-0f, -2f, inf},
            {0f, -0.5f, inf}, {-0f, 0.5f, 0f}, {0f, 1e-10f, 0f}, {-2f, 0.5f, Float.NaN}, {-2f, 3f, -8f}, {-2f, -3f, -0.125f},
            {-2f, 0x1p30f, inf}, {-0.5f, 0x1p31f + 256, 0f}, {-2f, 16777215f, -inf}, {2f, inf, inf}, {0.5f, inf, 0f},
            {-inf, 3f, -inf}, {-inf, -3f, -0f}, {-inf, 2f, inf}, {1f, Float.NaN, Float.NaN}, {Float.NaN, 1f, Float.NaN}, {3f, 1f, 3f},
            {Float.MIN_VALUE, 1f, Float.MIN_VALUE}, {Float.MAX_VALUE, 1f, Float.MAX_VALUE}, {10f, 39f, inf}, {10f, -46f, 0f}};
        float[] x = new float[cases.length], y = new float[cases.length];
        for (int i = 0; i < cases.length; i++) {
            x[i] = cases[i][0];
            y[i] = cases[i][1];
        }
        float[] got = pow(x, y);
        for (int i = 0; i < cases.length; i++) {
            String at = "pow(" + x[i] + ", " + y[i] + ")";
            if (Float.isNaN(cases[i][2])) assertTrue(Float.isNaN(got[i]), at + " = " + got[i]);
            else assertEquals(Float.floatToRawIntBits(cases[i][2]), Float.floatToRawIntBits(got[i]), at + " = " + got[i]);
        }
    }

    /**
     * Double exponents: integers and halves, thirds, tiny and huge ones, those around 2^31 (fdlibm's branch for huge
     * y) and 2^53, and Math.pow's special ones.
     */
    private static final double[] EXPONENTS_D = {0, -0.0, 1, -1, 2, -2, 3, -3, 4, 5, -5, 6, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1.0 / 3,
        -1.0 / 3, 0.1, 7.5, -0.75, 1e-10, -1e-10, Double.MIN_VALUE, 1e5, -1e5, 0x1p31 - 1, 0x1p31, 0x1p31 + 1, 0x1.00000ffffffffp31,
        Math.nextUp(0x1.00000ffffffffp31), 0x1p53 - 1, 0x1p53, 1e300, -1e300, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
        Double.NaN};

    /** VectorPow.pow over double pairs, padded to whole vectors. */
    static double[] pow(double[] x, double[] y) {
        int len = (x.length + DL - 1) / DL * DL;
        double[] xs = java.util.Arrays.copyOf(x, len), ys = java.util.Arrays.copyOf(y, len), o = new double[len];
        for (int i = 0; i < len; i += DL) {
            VectorPow.pow(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, xs, i), DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, ys, i))
                    .intoArray(o, i);
        }
        return java.util.Arrays.copyOf(o, x.length);
    }

    /** Every result has StrictMath.pow's bits (NaN's payload aside). */
    static void assertStrictMathsBits(double[] x, double[] y) {
        double[] got = pow(x, y);
        for (int i = 0; i < x.length; i++) {
            double want = StrictMath.pow(x[i], y[i]);
            if (Double.isNaN(want) ? !Double.isNaN(got[i]) : Double.doubleToRawLongBits(want) != Double.doubleToRawLongBits(got[i])) {
                fail("pow(" + x[i] + ", " + y[i] + ") = " + got[i] + ", StrictMath " + want);
            }
        }
    }

    @Test
    void doubleHasStrictMathsBitsAcrossTheRange() {
        List<Double> bases = new java.util.ArrayList<>();
        for (long bits = 0; bits <= Double.doubleToRawLongBits(Double.POSITIVE_INFINITY); bits += 0xd1b71758e219L) {
            bases.add(Double.longBitsToDouble(bits));
            bases.add(-Double.longBitsToDouble(bits));
        }
        for (double b : new double[] {0, -0.0, 1, -1, 2, -2, 0.5, 1.5, Math.sqrt(1.5), Math.sqrt(3), Math.nextUp(1.0), Math.nextDown(1.0),
            Double.MIN_VALUE, Double.MIN_NORMAL, Double.MAX_VALUE, -Double.MAX_VALUE, Double.POSITIVE_INFINITY,
            Double.NEGATIVE_INFINITY, Double.NaN}) bases.add(b);
        double[] x = new double[bases.size() * EXPONENTS_D.length], y = new double[x.length];
        for (int i = 0; i < bases.size(); i++) {
            for (int j = 0; j < EXPONENTS_D.length; j++) {
                x[i * EXPONENTS_D.length + j] = bases.get(i);
                y[i * EXPONENTS_D.length + j] = EXPONENTS_D[j];
            }
        }
        assertStrictMathsBits(x, y);
    }

    @Test
    void doubleHasStrictMathsBitsOverRandomPairs() {
        Random r = new Random(11);
        int n = 400_000;
        double[] x = new double[n], y = new double[n];
        for (int i = 0; i < n; i++) {
            switch (i % 5) {
                case 0 -> { x[i] = r.nextDouble() * 10; y[i] = r.nextDouble() * 200 - 100; }
                case 1 -> { x[i] = r.nextGaussian() * 3; y[i] = r.nextInt(81) - 40; }
                case 2 -> { x[i] = 1 + r.nextGaussian() * 1e-6; y[i] = r.nextGaussian() * 1e8; }
                case 3 -> { x[i] = Double.longBitsToDouble(r.nextLong(0x7ff0000000000000L)); y[i] = r.nextGaussian(); }
                // Results about 2^+-1000 to 2^+-1100: the overflow, underflow and subnormal edges.
                default -> {
                    x[i] = 2 + r.nextDouble();
                    y[i] = (1000 + r.nextDouble() * 100) / (Math.log(x[i]) / Math.log(2)) * (r.nextBoolean() ? 1 : -1);
                }
            }
        }
        assertStrictMathsBits(x, y);
    }

    private static long digest() {
        Random r = new Random(5);
        int n = 1 << 14;
        float[] x = new float[n], y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) r.nextGaussian() * 4;
            y[i] = i % 2 == 0 ? r.nextInt(9) - 4 : (float) r.nextGaussian() * 8;
        }
        long h = 17;
        for (float v : pow(x, y)) h = h * 31 + Float.floatToRawIntBits(v);
        double[] xd = new double[n], yd = new double[n];
        for (int i = 0; i < n; i++) {
            xd[i] = r.nextGaussian() * 4;
            yd[i] = i % 2 == 0 ? r.nextInt(9) - 4 : r.nextGaussian() * 8;
        }
        for (double v : pow(xd, yd)) h = h * 31 + Double.doubleToRawLongBits(v);
        return h;
    }

    /** An interpreted JVM (the Vector API's per-lane fallback) and this one, compiled, give the same bits. */
    @Test
    void theSameBitsInterpretedAndCompiled() throws Exception {
        for (int i = 0; i < 200; i++) digest(); // compiled by C2 by now
        assertEquals(Long.toString(digest()), ChildJvm.lastLine(List.of("-Xint"), DigestMain.class));
    }

    /** The child JVM's side of {@link #theSameBitsInterpretedAndCompiled}. */
    public static final class DigestMain {
        public static void main(String[] args) {
            System.out.println(digest());
        }
    }
}
