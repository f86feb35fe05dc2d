package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorExp}: within an ulp or two of the correctly rounded exponential over the whole range (subnormal
 * results, the overflow edge, NaN and the infinities included), and the same bits in an interpreted JVM as in a
 * compiled one, which the JDK's {@code lanewise(EXP)} does not give.
 */
class VectorExpTest {
    private static final int FL = FloatVector.SPECIES_PREFERRED.length(), DL = DoubleVector.SPECIES_PREFERRED.length();

    static float[] floatInputs() {
        return floatInputs(1021);
    }

    /** Every {@code stride}th float bit pattern of [-104, 89] (2.2 million at 1021) plus the edges and specials. */
    static float[] floatInputs(int stride) {
        List<Float> xs = new java.util.ArrayList<>();
        for (int bits = Float.floatToRawIntBits(89f); bits > 0; bits -= stride) xs.add(Float.intBitsToFloat(bits));
        for (int bits = Float.floatToRawIntBits(-0f); bits <= Float.floatToRawIntBits(-104f); bits += stride) xs.add(Float.intBitsToFloat(bits));
        for (float f : new float[] {0f, -0f, 88.72283f, 88.72284f, -87.33654f, -103.27893f, -103.972f, -150f, 1000f, -1000f,
            Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, Float.MIN_VALUE, -Float.MIN_VALUE, 1e-8f, -1e-8f}) xs.add(f);
        while (xs.size() % FL != 0) xs.add(1f);
        float[] a = new float[xs.size()];
        for (int i = 0; i < a.length; i++) a[i] = xs.get(i);
        return a;
    }

    static double[] doubleInputs() {
        return doubleInputs(200_000);
    }

    static double[] doubleInputs(int count) {
        java.util.Random r = new java.util.Random(7);
        double[] a = new double[count];
        for (int i = 0; i < a.length; i++) a[i] = (r.nextDouble() * 2 - 1) * (i % 3 == 0 ? 750 : i % 3 == 1 ? 20 : 1e-3);
        double[] special = {0, -0.0, 709.782712893384, 709.7827128933841, -708.3964185322641, -745.1332191019411, -745.14, 800, -800,
            Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, Double.MIN_VALUE, 1e-300};
        System.arraycopy(special, 0, a, 0, special.length);
        return a;
    }

    static float[] expAll(float[] a) {
        float[] o = new float[a.length];
        for (int i = 0; i < a.length; i += FL) VectorExp.exp(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    static double[] expAll(double[] a) {
        double[] o = new double[a.length];
        for (int i = 0; i < a.length; i += DL) VectorExp.exp(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    /** Ulps between {@code got} and the exact value {@code want} (given in higher precision), in units of got's type. */
    private static double ulpsF(float got, double want) {
        if (Double.isNaN(want)) return Float.isNaN(got) ? 0 : Double.POSITIVE_INFINITY;
        float rounded = (float) want;
        if (Float.isInfinite(rounded) || rounded == 0) return got == rounded ? 0 : Math.abs(got - want) / Math.ulp(Float.MIN_NORMAL);
        return Math.abs(got - want) / Math.ulp(rounded);
    }

    @Test
    void floatIsWithinAnUlpOfTheExactExponential() {
        float[] a = floatInputs(), e = expAll(a);
        double worst = 0;
        float at = 0;
        for (int i = 0; i < a.length; i++) {
            double want = Math.exp(a[i]); // double's exp: exact to far below a float ulp
            double u = ulpsF(e[i], want);
            if (u > worst) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= 1.0, "worst " + worst + " ulps at x = " + at);
        assertEquals(Float.POSITIVE_INFINITY, e[indexOf(a, Float.POSITIVE_INFINITY)]);
        assertEquals(0f, e[indexOf(a, Float.NEGATIVE_INFINITY)]);
        assertTrue(Float.isNaN(e[indexOf(a, Float.NaN)]));
        assertEquals(Float.POSITIVE_INFINITY, e[indexOf(a, 88.72284f)]);
        assertEquals((float) Math.exp(88.72283f), e[indexOf(a, 88.72283f)]);
        assertEquals((float) Math.exp(-103.27893f), e[indexOf(a, -103.27893f)], "the smallest subnormal");
        assertEquals(1f, e[indexOf(a, -0f)]);
    }

    @Test
    void doubleIsWithinTwoUlpsOfStrictMath() {
        double[] a = doubleInputs(), e = expAll(a);
        double worst = 0, at = 0;
        for (int i = 0; i < a.length; i++) {
            double want = StrictMath.exp(a[i]); // fdlibm: under an ulp from the exact value
            if (Double.isNaN(want)) {
                assertTrue(Double.isNaN(e[i]));
                continue;
            }
            double u = want == 0 || Double.isInfinite(want) ? (e[i] == want ? 0 : Double.POSITIVE_INFINITY)
                    : Math.abs(e[i] - want) / Math.ulp(want);
            if (u > worst) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= 2.0, "worst " + worst + " ulps at x = " + at);
    }

    private static int indexOf(float[] a, float x) {
        for (int i = 0; i < a.length; i++) if (Float.floatToRawIntBits(a[i]) == Float.floatToRawIntBits(x)) return i;
        throw new AssertionError(x + " not among the inputs");
    }

    /** A hash of every output bit over a sample small enough for an interpreted JVM, float then double. */
    static long digest() {
        long h = 1;
        for (float f : expAll(floatInputs(100_003))) h = 31 * h + Float.floatToRawIntBits(f);
        for (double d : expAll(doubleInputs(20_000))) h = 31 * h + Double.doubleToRawLongBits(d);
        return h;
    }

    /** An interpreted JVM (the Vector API's per-lane fallback) and this one, compiled, give the same bits. */
    @Test
    void theSameBitsInterpretedAndCompiled() throws Exception {
        float[] f = floatInputs(100_003);
        double[] d = doubleInputs(20_000);
        for (int i = 0; i < 2000; i++) {  // compiled by C2 by now
            expAll(f);
            expAll(d);
        }
        long compiled = digest();
        Process child = ChildJvm.command(null, List.of("-Xint"), DigestMain.class).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(0, child.waitFor(), output);
        assertEquals(Long.toString(compiled), output.strip().lines().reduce((x, y) -> y).orElse(""), output);
    }

    /** The child JVM's side of {@link #theSameBitsInterpretedAndCompiled}. */
    public static final class DigestMain {
        public static void main(String[] args) {
            System.out.println(digest());
        }
    }
}
