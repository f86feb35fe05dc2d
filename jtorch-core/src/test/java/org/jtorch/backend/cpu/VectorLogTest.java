package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.DoubleUnaryOperator;
import java.util.function.UnaryOperator;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorLog}: log and log1p within an ulp over dense sweeps of their domains (subnormals, the edges of the
 * reduction, 1 and -1, NaN, the infinities, zeros of both signs and negative arguments included), and the same bits in
 * an interpreted JVM as in a compiled one, which the JDK's {@code lanewise(LOG)} and {@code lanewise(LOG1P)} do not
 * give.
 */
class VectorLogTest {
    private static final int FL = FloatVector.SPECIES_PREFERRED.length(), DL = DoubleVector.SPECIES_PREFERRED.length();
    private static final float[] FLOAT_SPECIALS = {0f, -0f, 1f, -1f, 2f, 0.5f, 0.70710677f, 0.7071068f, 1.4142135f, 1.4142137f,
        -0.29289323f, 0.41421357f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, Float.MAX_VALUE, -Float.MAX_VALUE,
        Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, 1e-8f, -1e-8f, 0x1p-24f, -0x1p-24f, 0x1.8p-24f,
        -0.99999994f, -2f, 3.4e4f, 0x1p25f, 0x1p24f};
    private static final double[] DOUBLE_SPECIALS = {0, -0.0, 1, -1, 2, 0.5, 0.7071067811865475, 0.7071067811865476,
        1.4142135623730951, -0.2928932188134524, 0.41421356237309515, Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL,
        Double.MAX_VALUE, -Double.MAX_VALUE, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, 1e-17, -1e-17,
        0x1p-53, -0x1p-53, -0.9999999999999999, -2, 0x1p54, 0x1p53, 1e300};

    /** Every {@code stride}th float bit pattern, positive and negative, densely around 1 and -1, and the special values. */
    static float[] floatInputs(int stride) {
        int sweep = 0x7f800000 / stride + 1, near = 400_000 / (stride / 64 + 1) + 1;
        float[] a = new float[2 * sweep + 2 * near + FLOAT_SPECIALS.length + FL];
        int n = 0;
        for (long bits = 0; bits < 0x7f800000L; bits += stride) {
            a[n++] = Float.intBitsToFloat((int) bits);
            a[n++] = -Float.intBitsToFloat((int) bits);
        }
        // Around 1 and -1, where log and log1p lose most to cancellation.
        for (int i = -200_000; i <= 200_000 && n + 2 <= 2 * sweep + 2 * near; i += stride / 64 + 1) {
            a[n++] = 1f + i * (Math.ulp(1f) / 2);
            a[n++] = -1f + Math.abs(i) * (Math.ulp(1f) / 2);
        }
        for (float f : FLOAT_SPECIALS) a[n++] = f;
        while (n % FL != 0) a[n++] = 1f;
        return java.util.Arrays.copyOf(a, n);
    }

    /** Log-uniform magnitudes over the whole double range, both signs, more near 0 and -1, and the special values. */
    static double[] doubleInputs(int count) {
        java.util.Random r = new java.util.Random(11);
        double[] a = new double[count + DOUBLE_SPECIALS.length + DL - 1 - (count + DOUBLE_SPECIALS.length - 1) % DL];
        for (int i = 0; i < count; i++) {
            a[i] = switch (i % 4) {
                case 0 -> Math.scalb(1 + r.nextDouble(), r.nextInt(2046) - 1074);
                case 1 -> -Math.scalb(1 + r.nextDouble(), r.nextInt(1100) - 1074);
                case 2 -> (r.nextDouble() * 2 - 1) * 0.5;
                default -> r.nextDouble() * 4 - 1.5;
            };
        }
        System.arraycopy(DOUBLE_SPECIALS, 0, a, count, DOUBLE_SPECIALS.length);
        for (int i = count + DOUBLE_SPECIALS.length; i < a.length; i++) a[i] = 1;
        return a;
    }

    static float[] apply(UnaryOperator<FloatVector> fn, float[] a) {
        float[] o = new float[a.length];
        for (int i = 0; i < a.length; i += FL) fn.apply(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    static double[] apply(UnaryOperator<DoubleVector> fn, double[] a) {
        double[] o = new double[a.length];
        for (int i = 0; i < a.length; i += DL) fn.apply(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    /** Ulps between {@code got} and the exact value {@code want} (given in double), in float ulps of the rounded value. */
    private static double ulpsF(float got, double want) {
        if (Double.isNaN(want)) return Float.isNaN(got) ? 0 : Double.POSITIVE_INFINITY;
        float rounded = (float) want;
        if (Float.isInfinite(rounded)) return got == rounded ? 0 : Double.POSITIVE_INFINITY;
        if (rounded == 0) return Float.floatToRawIntBits(got) == Float.floatToRawIntBits(rounded) ? 0 : Double.POSITIVE_INFINITY;
        return Math.abs(got - want) / Math.ulp(rounded);
    }

    private static double ulpsD(double got, double want) {
        if (Double.isNaN(want)) return Double.isNaN(got) ? 0 : Double.POSITIVE_INFINITY;
        if (Double.isInfinite(want) || want == 0)
            return Double.doubleToRawLongBits(got) == Double.doubleToRawLongBits(want) ? 0 : Double.POSITIVE_INFINITY;
        return Math.abs(got - want) / Math.ulp(want);
    }

    private static void assertFloatWithinAnUlp(String name, UnaryOperator<FloatVector> fn, DoubleUnaryOperator exact) {
        assertFloatWithin(name, fn, exact, 1.0);
    }

    private static void assertFloatWithin(String name, UnaryOperator<FloatVector> fn, DoubleUnaryOperator exact, double ulps) {
        float[] a = floatInputs(257), got = apply(fn, a);
        double worst = 0;
        float at = 0;
        for (int i = 0; i < a.length; i++) {
            double u = ulpsF(got[i], exact.applyAsDouble(a[i]));
            if (u > worst || Double.isNaN(u)) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= ulps, name + ": worst " + worst + " ulps at x = " + at + " (" + a.length + " inputs)");
    }

    private static void assertDoubleWithinAnUlp(String name, UnaryOperator<DoubleVector> fn, DoubleUnaryOperator strict) {
        assertDoubleWithin(name, fn, strict, 1.0);
    }

    private static void assertDoubleWithin(String name, UnaryOperator<DoubleVector> fn, DoubleUnaryOperator strict, double ulps) {
        double[] a = doubleInputs(2_000_000), got = apply(fn, a);
        double worst = 0, at = 0;
        for (int i = 0; i < a.length; i++) {
            double u = ulpsD(got[i], strict.applyAsDouble(a[i]));
            if (u > worst || Double.isNaN(u)) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= ulps, name + ": worst " + worst + " ulps at x = " + at + " (" + a.length + " inputs)");
    }

    /** Float references: the double functions, exact to far below a float ulp. */
    @Test
    void floatLogIsWithinAnUlp() {
        assertFloatWithinAnUlp("log", VectorLog::log, Math::log);
    }

    @Test
    void floatLog1pIsWithinAnUlp() {
        assertFloatWithinAnUlp("log1p", VectorLog::log1p, Math::log1p);
    }

    /** Double references: StrictMath's (fdlibm, under an ulp from the exact value). */
    @Test
    void doubleLogIsWithinAnUlpOfStrictMath() {
        assertDoubleWithinAnUlp("log", VectorLog::log, StrictMath::log);
    }

    @Test
    void doubleLog1pIsWithinAnUlpOfStrictMath() {
        assertDoubleWithinAnUlp("log1p", VectorLog::log1p, StrictMath::log1p);
    }

    /** {@code log(1 + e^v) = max(v, 0) + log1p(e^-|v|)}, the reference in double (far below a float ulp from the exact value). */
    private static double log1pExp(double v) {
        return Math.max(v, 0) + StrictMath.log1p(StrictMath.exp(-Math.abs(v)));
    }

    /** Within two ulps: exp's error (under an ulp of e^-|v|), log1p's and the sum's rounding (measured worst 1.49). */
    @Test
    void floatLog1pExpIsWithinTwoUlps() {
        assertFloatWithin("log1pExp", VectorLog::log1pExp, VectorLogTest::log1pExp, 2.0);
    }

    /** Within two ulps: the double reference has its exp's and log1p's roundings (each under an ulp) on top. */
    @Test
    void doubleLog1pExpIsWithinTwoUlpsOfStrictMaths() {
        assertDoubleWithin("log1pExp", VectorLog::log1pExp, VectorLogTest::log1pExp, 2.0);
    }

    /** C's special values, signs of zero included, as {@link Math#log} and {@link Math#log1p}. */
    /**
     * The fast paths (every lane positive, normal and finite for log, finite above -1 for log1p) give the wide forms'
     * bits, so the sweeps above (whose vectors mix signs, and so mostly take the wide forms) vouch for them too: a NaN in
     * each vector's lane 0 sends it down the wide form.
     */
    @Test
    void fastPathsGiveTheWideFormsBits() {
        float[] all = floatInputs(257), logIn = all.clone(), log1pIn = all.clone();
        for (int i = 0; i < all.length; i++) {
            logIn[i] = Math.abs(all[i]) >= Float.MIN_NORMAL && all[i] != Float.POSITIVE_INFINITY && all[i] != Float.NEGATIVE_INFINITY ? Math.abs(all[i]) : 1f;
            log1pIn[i] = all[i] > -1f && all[i] < Float.POSITIVE_INFINITY ? all[i] : 0.5f;
        }
        assertFastIsWideF(VectorLog::log, logIn);
        assertFastIsWideF(VectorLog::log1p, log1pIn);
        double[] d = doubleInputs(400_000), dLog = d.clone(), dLog1p = d.clone();
        for (int i = 0; i < d.length; i++) {
            dLog[i] = Math.abs(d[i]) >= Double.MIN_NORMAL && !Double.isInfinite(d[i]) ? Math.abs(d[i]) : 1;
            dLog1p[i] = d[i] > -1 && d[i] < Double.POSITIVE_INFINITY ? d[i] : 0.5;
        }
        assertFastIsWideD(VectorLog::log, dLog);
        assertFastIsWideD(VectorLog::log1p, dLog1p);
    }

    private static void assertFastIsWideF(UnaryOperator<FloatVector> fn, float[] a) {
        float[] w = a.clone();
        for (int i = 0; i < w.length; i += FL) w[i] = Float.NaN;
        float[] fast = apply(fn, a), wide = apply(fn, w);
        for (int i = 0; i < a.length; i++) {
            if (i % FL != 0) assertEquals(Float.floatToRawIntBits(wide[i]), Float.floatToRawIntBits(fast[i]), "x = " + a[i]);
        }
    }

    private static void assertFastIsWideD(UnaryOperator<DoubleVector> fn, double[] a) {
        double[] w = a.clone();
        for (int i = 0; i < w.length; i += DL) w[i] = Double.NaN;
        double[] fast = apply(fn, a), wide = apply(fn, w);
        for (int i = 0; i < a.length; i++) {
            if (i % DL != 0) assertEquals(Double.doubleToRawLongBits(wide[i]), Double.doubleToRawLongBits(fast[i]), "x = " + a[i]);
        }
    }

    @Test
    void specialValuesAreCs() {
        float[] f = new float[FLOAT_SPECIALS.length + FL - 1 - (FLOAT_SPECIALS.length - 1) % FL];
        java.util.Arrays.fill(f, 1f);
        System.arraycopy(FLOAT_SPECIALS, 0, f, 0, FLOAT_SPECIALS.length);
        float[] log = apply(VectorLog::log, f), log1p = apply(VectorLog::log1p, f);
        for (int i = 0; i < FLOAT_SPECIALS.length; i++) {
            float x = f[i];
            if (x == 0 || Float.isNaN(x) || Float.isInfinite(x) || x < 0 || Math.abs(x) < 0x1p-24f || x == 1) {
                assertEquals((float) Math.log(x), log[i], "log(" + x + ")");
            }
            if (x == 0 || Float.isNaN(x) || Float.isInfinite(x) || x <= -1 || Math.abs(x) < 0x1p-24f) {
                assertEquals((float) Math.log1p(x), log1p[i], "log1p(" + x + ")");
            }
        }
        double[] d = new double[DOUBLE_SPECIALS.length + DL - 1 - (DOUBLE_SPECIALS.length - 1) % DL];
        java.util.Arrays.fill(d, 1);
        System.arraycopy(DOUBLE_SPECIALS, 0, d, 0, DOUBLE_SPECIALS.length);
        double[] logD = apply(VectorLog::log, d), log1pD = apply(VectorLog::log1p, d);
        for (int i = 0; i < DOUBLE_SPECIALS.length; i++) {
            double x = d[i];
            if (x == 0 || Double.isNaN(x) || Double.isInfinite(x) || x < 0 || x == 1) assertEquals(Math.log(x), logD[i], "log(" + x + ")");
            if (x == 0 || Double.isNaN(x) || Double.isInfinite(x) || x <= -1 || Math.abs(x) < 0x1p-53)
                assertEquals(Math.log1p(x), log1pD[i], "log1p(" + x + ")");
        }
    }

    /** A hash of every output bit over a sample small enough for an interpreted JVM: log, log1p and log1pExp, float and double. */
    static long digest() {
        float[] f = floatInputs(40_009);
        double[] d = doubleInputs(20_000);
        long h = 1;
        for (float v : apply(VectorLog::log, f)) h = 31 * h + Float.floatToRawIntBits(v);
        for (float v : apply(VectorLog::log1p, f)) h = 31 * h + Float.floatToRawIntBits(v);
        for (double v : apply(VectorLog::log, d)) h = 31 * h + Double.doubleToRawLongBits(v);
        for (double v : apply(VectorLog::log1p, d)) h = 31 * h + Double.doubleToRawLongBits(v);
        for (float v : apply(VectorLog::log1pExp, f)) h = 31 * h + Float.floatToRawIntBits(v);
        for (double v : apply(VectorLog::log1pExp, d)) h = 31 * h + Double.doubleToRawLongBits(v);
        return h;
    }

    /** An interpreted JVM (the Vector API's per-lane fallback) and this one, compiled, give the same bits. */
    @Test
    void theSameBitsInterpretedAndCompiled() throws Exception {
        for (int i = 0; i < 300; i++) digest();  // compiled by C2 by now
        long compiled = digest();
        assertEquals(Long.toString(compiled), ChildJvm.lastLine(List.of("-Xint"), DigestMain.class));
    }

    /** The child JVM's side of {@link #theSameBitsInterpretedAndCompiled}. */
    public static final class DigestMain {
        public static void main(String[] args) {
            System.out.println(digest());
        }
    }
}
