package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.op.Fn;
import org.junit.jupiter.api.Test;

/**
 * The vector pow keeps {@link Fn#POW}'s special cases (Java's {@code Math.pow}) after C2 has compiled it: the
 * intrinsic (SVML) returns C's {@code pow(1, NaN) = 1} and {@code pow(-1, inf) = 1}. Each check runs enough
 * iterations for the JIT to compile the loop first (the device conformance suite saw 1.0 only in JVMs where it had).
 */
class VectorPowSpecialCasesTest {
    private static final double[][] CASES = {{1, Double.NaN}, {-1, Double.POSITIVE_INFINITY}, {1, Double.NEGATIVE_INFINITY},
            {-1, Double.NEGATIVE_INFINITY}, {1, Double.POSITIVE_INFINITY}, {Double.NaN, 0}, {2, 10}, {0.5, Double.NaN}, {1, 3}};

    @Test
    void floatLanesMatchMathPowAfterCompilation() {
        float[] a = new float[FloatVector.SPECIES_PREFERRED.length()], b = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) CASES[i % CASES.length][0];
            b[i] = (float) CASES[i % CASES.length][1];
        }
        FloatVector va = FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, 0), vb = FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, b, 0);
        FloatVector r = null;
        for (int k = 0; k < 200_000; k++) r = VectorMath.pow(va, vb);
        for (int i = 0; i < a.length; i++) {
            float want = (float) Fn.POW.apply(a[i], b[i], 0);
            assertEquals(want, r.lane(i), Float.isNaN(want) ? 0 : Math.ulp(want), "pow(" + a[i] + ", " + b[i] + ")");
        }
    }

    @Test
    void doubleLanesMatchMathPowAfterCompilation() {
        double[] a = new double[DoubleVector.SPECIES_PREFERRED.length()], b = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = CASES[(i + 3) % CASES.length][0];
            b[i] = CASES[(i + 3) % CASES.length][1];
        }
        DoubleVector va = DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, 0), vb = DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, b, 0);
        DoubleVector r = null;
        for (int k = 0; k < 200_000; k++) r = VectorMathF64.pow(va, vb);
        for (int i = 0; i < a.length; i++) {
            double want = Fn.POW.apply(a[i], b[i], 0);
            assertEquals(want, r.lane(i), Double.isNaN(want) ? 0 : Math.ulp(want), "pow(" + a[i] + ", " + b[i] + ")");
        }
        // The scalar-exponent form's general branch too.
        DoubleVector ones = DoubleVector.broadcast(DoubleVector.SPECIES_PREFERRED, 1);
        DoubleVector nanExponent = DoubleVector.broadcast(DoubleVector.SPECIES_PREFERRED, Double.NaN);
        DoubleVector s = null;
        for (int k = 0; k < 200_000; k++) s = VectorMathF64.pow_scalar(ones, nanExponent);
        assertEquals(Double.NaN, s.lane(0), 0, "pow_scalar(1, NaN)");
    }
}
