package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.BinaryOperator;
import java.util.function.DoubleUnaryOperator;
import java.util.function.UnaryOperator;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.ChildJvm;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorTrig} (sin, cos) and {@link VectorPow} (pow): sin and cos within 2 ulps of {@link StrictMath} over the
 * reduction's range (the floats and doubles nearest the multiples of pi/2 included) and StrictMath's bits outside it
 * (huge arguments, infinities, NaN), signed zeros kept; double pow StrictMath's bits, {@code Math.pow}'s special cases
 * included (float pow: {@link VectorPowTest}); the same bits interpreted as compiled, and the kernels' sin, cos and pow under
 * {@code -Djtorch.cpu.deterministicMath=true} the same in an interpreted JVM as in a compiled one.
 */
class VectorTrigTest {
    private static final int FL = FloatVector.SPECIES_PREFERRED.length(), DL = DoubleVector.SPECIES_PREFERRED.length();

    /** Every {@code stride}th float bit pattern of (0, 2^17], both signs, the floats around k pi/2 up to 2^16, and specials. */
    static float[] floatInputs(int stride) {
        List<Float> xs = new java.util.ArrayList<>();
        for (int bits = Float.floatToRawIntBits(0x1p17f); bits > 0; bits -= stride) {
            xs.add(Float.intBitsToFloat(bits));
            xs.add(-Float.intBitsToFloat(bits));
        }
        for (int k = 1; k * Math.PI / 2 < 0x1p16; k += 1 + k / 4096) {
            float near = (float) (k * Math.PI / 2);
            xs.addAll(List.of(near, Math.nextUp(near), Math.nextDown(near), -near));
        }
        for (float f : new float[] {0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, 1e-20f, 0x1p16f, Math.nextUp(0x1p16f), 1e6f, -1e6f,
            1e20f, 3.4e38f, -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN}) xs.add(f);
        while (xs.size() % FL != 0) xs.add(1f);
        float[] a = new float[xs.size()];
        for (int i = 0; i < a.length; i++) a[i] = xs.get(i);
        return a;
    }

    static double[] doubleInputs(int count) {
        java.util.Random r = new java.util.Random(11);
        List<Double> xs = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) xs.add((r.nextDouble() * 2 - 1) * (i % 3 == 0 ? 0x1p21 : i % 3 == 1 ? 10 : 1e-3));
        for (int k = 1; k * Math.PI / 2 < 0x1p20; k += 1 + k / 512) {
            double near = k * Math.PI / 2;
            xs.addAll(List.of(near, Math.nextUp(near), Math.nextDown(near), -near));
        }
        for (double d : new double[] {0, -0.0, Double.MIN_VALUE, 1e-300, 0x1p20, Math.nextUp(0x1p20), 1e22, -1e300, Double.MAX_VALUE,
            Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN}) xs.add(d);
        while (xs.size() % DL != 0) xs.add(1.0);
        return xs.stream().mapToDouble(Double::doubleValue).toArray();
    }

    static float[] apply(float[] a, UnaryOperator<FloatVector> f) {
        float[] o = new float[a.length];
        for (int i = 0; i < a.length; i += FL) f.apply(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    static double[] apply(double[] a, UnaryOperator<DoubleVector> f) {
        double[] o = new double[a.length];
        for (int i = 0; i < a.length; i += DL) f.apply(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, i)).intoArray(o, i);
        return o;
    }

    /**
     * Float {@code f} within {@code ulps} of StrictMath's double value ({@link VectorExpTest#assertWithinUlpsF}: zeros
     * and NaN exact), StrictMath's float bits outside the reduction's range ({@code |x| > 2^16}, infinities).
     */
    private static void assertFloat(String name, UnaryOperator<FloatVector> f, DoubleUnaryOperator strict, double ulps) {
        float[] a = floatInputs(257);
        VectorExpTest.assertWithinUlpsF(name, a, f, strict, ulps);
        float[] got = apply(a, f);
        for (int i = 0; i < a.length; i++) {
            if (Math.abs(a[i]) <= 0x1p16f) continue;
            assertEquals(Float.floatToRawIntBits((float) strict.applyAsDouble(a[i])), Float.floatToRawIntBits(got[i]), name + " at x = " + a[i]);
        }
    }

    private static void assertDouble(String name, UnaryOperator<DoubleVector> f, DoubleUnaryOperator strict, double ulps) {
        double[] a = doubleInputs(300_000);
        VectorExpTest.assertWithinUlpsD(name, a, f, strict, ulps);
        double[] got = apply(a, f);
        for (int i = 0; i < a.length; i++) {
            if (Math.abs(a[i]) <= 0x1p20) continue;
            assertEquals(Double.doubleToRawLongBits(strict.applyAsDouble(a[i])), Double.doubleToRawLongBits(got[i]), name + " at x = " + a[i]);
        }
    }

    @Test
    void floatSinAndCosAreWithinTwoUlpsOfStrictMath() {
        assertFloat("sin", VectorTrig::sin, StrictMath::sin, 2);
        assertFloat("cos", VectorTrig::cos, StrictMath::cos, 2);
    }

    @Test
    void doubleSinAndCosAreWithinTwoUlpsOfStrictMath() {
        assertDouble("sin", VectorTrig::sin, StrictMath::sin, 2);
        assertDouble("cos", VectorTrig::cos, StrictMath::cos, 2);
    }

    /** The arguments of Math.pow's special cases (zeros, ones, infinities, NaN, odd and even integers, non-integers). */
    private static final double[] POW_SPECIAL = {0, -0.0, 1, -1, 2, -2, 3, -3, 0.5, -0.5, 2.5, -2.5, 1e10, -1e10, 1e-10,
        Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, 0x1p53 + 2, -(0x1p53 + 2), 1e300, -1e300, 1.0000001, 0.9999999};

    @Test
    void powIsStrictMathsWithItsSpecialCases() {
        int n = POW_SPECIAL.length * POW_SPECIAL.length;
        int padded = (n + FL * DL - 1) / (FL * DL) * (FL * DL);
        double[] x = new double[padded], y = new double[padded];
        java.util.Random r = new java.util.Random(3);
        for (int i = 0; i < padded; i++) {
            x[i] = i < n ? POW_SPECIAL[i / POW_SPECIAL.length] : r.nextDouble() * 100;
            y[i] = i < n ? POW_SPECIAL[i % POW_SPECIAL.length] : r.nextDouble() * 20 - 10;
        }
        double[] gotD = pairs(x, y, VectorPow::pow);
        float[] xf = new float[padded], yf = new float[padded];
        for (int i = 0; i < padded; i++) {
            xf[i] = (float) x[i];
            yf[i] = (float) y[i];
        }
        // The float form's grid, within half an ulp of StrictMath's double, zeros, infinities and NaN exact.
        VectorPowTest.worstUlps(xf, yf);
        for (int i = 0; i < padded; i++) {
            assertEquals(Double.doubleToRawLongBits(StrictMath.pow(x[i], y[i])), Double.doubleToRawLongBits(gotD[i]), "pow(" + x[i] + ", " + y[i] + ")");
        }
        // A few of Math.pow's special cases spelled out.
        assertEquals(1.0, pairs(new double[] {Double.NaN}, new double[] {0}, VectorPow::pow)[0]);
        assertTrue(Double.isNaN(pairs(new double[] {1}, new double[] {Double.NaN}, VectorPow::pow)[0]));
        assertEquals(Double.NEGATIVE_INFINITY, pairs(new double[] {-0.0}, new double[] {-3}, VectorPow::pow)[0]);
        assertTrue(Double.isNaN(pairs(new double[] {-2}, new double[] {0.5}, VectorPow::pow)[0]));
    }

    private static double[] pairs(double[] x, double[] y, BinaryOperator<DoubleVector> f) {
        int len = (x.length + DL - 1) / DL * DL;
        double[] xs = java.util.Arrays.copyOf(x, len), ys = java.util.Arrays.copyOf(y, len), o = new double[len];
        for (int i = 0; i < len; i += DL) {
            f.apply(DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, xs, i), DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, ys, i))
                    .intoArray(o, i);
        }
        return o;
    }

    private static long digest() {
        float[] f = floatInputs(100_003);
        double[] d = doubleInputs(20_000);
        long h = 17;
        for (float v : apply(f, VectorTrig::sin)) h = h * 31 + Float.floatToRawIntBits(v);
        for (float v : apply(f, VectorTrig::cos)) h = h * 31 + Float.floatToRawIntBits(v);
        for (double v : apply(d, VectorTrig::sin)) h = h * 31 + Double.doubleToRawLongBits(v);
        for (double v : apply(d, VectorTrig::cos)) h = h * 31 + Double.doubleToRawLongBits(v);
        return h;
    }

    /** An interpreted JVM (the Vector API's per-lane fallback) and this one, compiled, give the same bits. */
    @Test
    void theSameBitsInterpretedAndCompiled() throws Exception {
        for (int i = 0; i < 300; i++) digest(); // compiled by C2 by now
        assertEquals(Long.toString(digest()), ChildJvm.lastLine(List.of("-Xint"), DigestMain.class));
    }

    /** The child JVM's side of {@link #theSameBitsInterpretedAndCompiled}. */
    public static final class DigestMain {
        public static void main(String[] args) {
            System.out.println(digest());
        }
    }

    /** The sin, cos, pow, softplus and mish kernels under the switch: a compiled child and an interpreted one give the same bits. */
    @Test
    void theKernelsUnderTheSwitchGiveTheSameBitsInterpretedAndCompiled() throws Exception {
        String on = "-Djtorch.cpu.deterministicMath=true";
        String compiled = ChildJvm.lastLine(List.of(on), KernelMain.class, "200");
        String interpreted = ChildJvm.lastLine(List.of("-Xint", on), KernelMain.class, "0");
        assertEquals(compiled, interpreted);
    }

    /** {@code main(warmups)}: the hash of sin, cos, pow, softplus and mish of float32 and float64 tensors, after that many warm-up runs. */
    public static final class KernelMain {
        public static void main(String[] args) {
            for (int i = 0, n = Integer.parseInt(args[0]); i < n; i++) kernels();
            System.out.println(kernels());
        }

        static long kernels() {
            long h = 17;
            for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
                Generator gen = new Generator(5);
                Tensor x = Torch.randn(new long[] {4099}, dtype, org.jtorch.types.Device.cpu(), gen).mul(30);
                Tensor p = Torch.rand(new long[] {4099}, dtype, org.jtorch.types.Device.cpu(), gen).mul(3);
                for (Tensor t : new Tensor[] {x.sin(), x.cos(), p.pow(x.div(10)), p.pow(2.5), x.softplus(), x.softplus(2, 20), x.mish(),
                    x.div(10).pow(x.div(10).round())}) {
                    for (double v : t.to(DType.FLOAT64).toDoubleArray()) h = h * 31 + Double.doubleToRawLongBits(v);
                }
            }
            return h;
        }
    }
}
