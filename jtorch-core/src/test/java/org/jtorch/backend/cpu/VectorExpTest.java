package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorExp}: exp, expm1 and tanh within an ulp or two of the correctly rounded values over the whole range
 * (subnormals, the overflow edges, signed zeros, NaN and the infinities included), and the same bits in an
 * interpreted JVM as in a compiled one, which the JDK's {@code lanewise(EXP / EXPM1 / TANH)} does not give.
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
        return apply(a, VectorExp::exactExp);
    }

    static double[] expAll(double[] a) {
        return apply(a, VectorExp::exactExp);
    }

    static float[] apply(float[] a, java.util.function.UnaryOperator<FloatVector> f) {
        float[] o = new float[a.length];
        for (int i = 0; i < a.length; i += FL) f.apply(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    static double[] apply(double[] a, java.util.function.UnaryOperator<DoubleVector> f) {
        double[] o = new double[a.length];
        for (int i = 0; i < a.length; i += DL) f.apply(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
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

    /** The worst ulps of {@code f} from {@code exact} (in double, far below a float ulp) over {@code a}; signed zeros and NaN exact. */
    static void assertWithinUlpsF(String name, float[] a, java.util.function.UnaryOperator<FloatVector> f,
            java.util.function.DoubleUnaryOperator exact, double ulps) {
        float[] got = apply(a, f);
        double worst = 0;
        float at = 0;
        for (int i = 0; i < a.length; i++) {
            double want = exact.applyAsDouble(a[i]);
            if ((float) want == 0 || Double.isNaN(want)) {
                assertEquals(Float.floatToRawIntBits((float) want), Float.floatToRawIntBits(got[i]), name + "(" + a[i] + ")");
                continue;
            }
            double u = ulpsF(got[i], want);
            if (u > worst) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= ulps, name + ": worst " + worst + " ulps at x = " + at);
    }

    static void assertWithinUlpsD(String name, double[] a, java.util.function.UnaryOperator<DoubleVector> f,
            java.util.function.DoubleUnaryOperator exact, double ulps) {
        double[] got = apply(a, f);
        double worst = 0, at = 0;
        for (int i = 0; i < a.length; i++) {
            double want = exact.applyAsDouble(a[i]);
            if (want == 0 || Double.isNaN(want) || Double.isInfinite(want)) {
                assertEquals(Double.doubleToRawLongBits(want), Double.doubleToRawLongBits(got[i]), name + "(" + a[i] + ")");
                continue;
            }
            double u = Math.abs(got[i] - want) / Math.ulp(want);
            if (u > worst) {
                worst = u;
                at = a[i];
            }
        }
        assertTrue(worst <= ulps, name + ": worst " + worst + " ulps at x = " + at);
    }

    @Test
    void floatExpm1IsWithinAnUlp() {
        assertWithinUlpsF("expm1", floatInputs(), VectorExp::exactExpm1, Math::expm1, 1.0);
        assertEdgesExact("expm1", VectorExp::exactExpm1, Math::expm1,
                88.72283f, 88.72284f, -17.4f, -26f, -27f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f, 1e-40f, -1e-40f);
    }

    @Test
    void floatTanhIsWithinTwoAndAHalfUlps() {
        assertWithinUlpsF("tanh", floatInputs(), VectorExp::exactTanh, Math::tanh, 2.5);
        assertEdgesExact("tanh", VectorExp::exactTanh, Math::tanh,
                9.1f, -9.1f, 1000f, -1000f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE);
    }

    /** {@code f} at each edge gives the correctly rounded value's bits (signed zeros, the saturated values, infinities). */
    private static void assertEdgesExact(String name, java.util.function.UnaryOperator<FloatVector> f,
            java.util.function.DoubleUnaryOperator exact, float... edges) {
        float[] got = apply(java.util.Arrays.copyOf(edges, FL * ((edges.length + FL - 1) / FL)), f);
        for (int i = 0; i < edges.length; i++) {
            assertEquals(Float.floatToRawIntBits((float) exact.applyAsDouble(edges[i])), Float.floatToRawIntBits(got[i]), name + "(" + edges[i] + ")");
        }
    }

    @Test
    void doubleExpm1IsWithinTwoUlpsOfStrictMath() {
        double[] a = doubleInputs();
        a[14] = -1e-300; // a negative tiny value: expm1 keeps it
        a[15] = 4.9e-324;
        assertWithinUlpsD("expm1", a, VectorExp::exactExpm1, StrictMath::expm1, 2.0);
    }

    /**
     * The fast paths (every lane in range: one scaling multiply, no clamps or blends) give the wide forms' bits: a NaN in
     * each vector's lane 0 sends it down the wide form, whose other lanes must equal the fast path's.
     */
    @Test
    void fastPathsGiveTheWideFormsBits() {
        float[] f = floatInputs(), fw = f.clone();
        for (int i = 0; i < fw.length; i += FL) fw[i] = Float.NaN;
        for (var fn : List.<java.util.function.UnaryOperator<FloatVector>>of(VectorExp::exactExp, VectorExp::exactExpm1, VectorExp::exactTanh)) {
            float[] fast = apply(f, fn), wide = apply(fw, fn);
            for (int i = 0; i < f.length; i++) {
                if (i % FL != 0) assertEquals(Float.floatToRawIntBits(wide[i]), Float.floatToRawIntBits(fast[i]), "x = " + f[i]);
            }
        }
        double[] d = doubleInputs(), dw = d.clone();
        for (int i = 0; i < dw.length; i += DL) dw[i] = Double.NaN;
        for (var fn : List.<java.util.function.UnaryOperator<DoubleVector>>of(VectorExp::exactExp, VectorExp::exactExpm1)) {
            double[] fast = apply(d, fn), wide = apply(dw, fn);
            for (int i = 0; i < d.length; i++) {
                if (i % DL != 0) assertEquals(Double.doubleToRawLongBits(wide[i]), Double.doubleToRawLongBits(fast[i]), "x = " + d[i]);
            }
        }
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
        for (float f : apply(floatInputs(100_003), VectorExp::exactExpm1)) h = 31 * h + Float.floatToRawIntBits(f);
        for (float f : apply(floatInputs(100_003), VectorExp::exactTanh)) h = 31 * h + Float.floatToRawIntBits(f);
        for (double d : apply(doubleInputs(20_000), VectorExp::exactExpm1)) h = 31 * h + Double.doubleToRawLongBits(d);
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
            apply(f, VectorExp::exactExpm1);
            apply(f, VectorExp::exactTanh);
            apply(d, VectorExp::exactExpm1);
        }
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
