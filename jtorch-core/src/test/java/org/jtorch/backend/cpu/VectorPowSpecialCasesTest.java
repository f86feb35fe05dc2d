package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import org.jtorch.op.Fn;
import org.junit.jupiter.api.Test;

/**
 * pow's special cases are C's, as PyTorch's ({@code pow(1, NaN) = 1}, {@code pow(-1, inf) = 1}), in the scalar
 * reference and in the vector kernels both before and after C2 has compiled them: the intrinsic (SVML) gives C's
 * cases, the interpreted Vector API Java's. Each vector check runs enough iterations for the JIT to compile the loop
 * first (the device conformance suite once saw a difference only in JVMs where it had).
 */
class VectorPowSpecialCasesTest {
    private static final double NAN = Double.NaN, INF = Double.POSITIVE_INFINITY;
    private static final double[][] CASES = {{1, NAN}, {-1, INF}, {1, -INF}, {-1, -INF}, {1, INF}, {NAN, 0}, {2, 10},
            {0.5, NAN}, {1, 3}, {-1, NAN}, {0, -INF}, {-0.0, -1}};
    /** torch.pow of CASES in float32 and float64, PyTorch 1.13. */
    private static final double[] TORCH = {1, 1, 1, 1, 1, 1, 1024, NAN, 1, NAN, INF, -INF};

    @Test
    void scalarReferenceIsTorchs() {
        for (int i = 0; i < CASES.length; i++)
            assertEquals(TORCH[i], Fn.POW.apply(CASES[i][0], CASES[i][1], 0), 0, "pow(" + CASES[i][0] + ", " + CASES[i][1] + ")");
        assertEquals(1, Fn.POW_SCALAR.apply(1, NAN, 0), 0, "pow(1, NaN) with a scalar exponent");
        assertEquals(1, Fn.POW_SCALAR.apply(-1, -INF, 0), 0, "pow(-1, -inf) with a scalar exponent");
    }

    @Test
    void floatLanesMatchTheReferenceAfterCompilation() {
        float[] a = new float[FloatVector.SPECIES_PREFERRED.length()], b = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) CASES[i % CASES.length][0];
            b[i] = (float) CASES[i % CASES.length][1];
        }
        FloatVector va = FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, 0), vb = FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, b, 0);
        FloatVector first = VectorMath.pow(va, vb), r = null;
        for (int k = 0; k < 200_000; k++) r = VectorMath.pow(va, vb);
        for (int i = 0; i < a.length; i++) {
            float want = (float) Fn.POW.apply(a[i], b[i], 0);
            assertEquals(want, first.lane(i), Float.isNaN(want) ? 0 : Math.ulp(want), "first pow(" + a[i] + ", " + b[i] + ")");
            assertEquals(want, r.lane(i), Float.isNaN(want) ? 0 : Math.ulp(want), "pow(" + a[i] + ", " + b[i] + ")");
        }
    }

    @Test
    void doubleLanesMatchTheReferenceAfterCompilation() {
        double[] a = new double[DoubleVector.SPECIES_PREFERRED.length()], b = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            a[i] = CASES[(i + 3) % CASES.length][0];
            b[i] = CASES[(i + 3) % CASES.length][1];
        }
        DoubleVector va = DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, a, 0), vb = DoubleVector.fromArray(DoubleVector.SPECIES_PREFERRED, b, 0);
        DoubleVector first = VectorMathF64.pow(va, vb), r = null;
        for (int k = 0; k < 200_000; k++) r = VectorMathF64.pow(va, vb);
        for (int i = 0; i < a.length; i++) {
            double want = Fn.POW.apply(a[i], b[i], 0);
            assertEquals(want, first.lane(i), Double.isNaN(want) ? 0 : Math.ulp(want), "first pow(" + a[i] + ", " + b[i] + ")");
            assertEquals(want, r.lane(i), Double.isNaN(want) ? 0 : Math.ulp(want), "pow(" + a[i] + ", " + b[i] + ")");
        }
        // The scalar-exponent form's general branch too.
        DoubleVector ones = DoubleVector.broadcast(DoubleVector.SPECIES_PREFERRED, 1);
        DoubleVector nanExponent = DoubleVector.broadcast(DoubleVector.SPECIES_PREFERRED, Double.NaN);
        DoubleVector s = null;
        for (int k = 0; k < 200_000; k++) s = VectorMathF64.pow_scalar(ones, nanExponent);
        assertEquals(1, s.lane(0), 0, "pow_scalar(1, NaN)");
    }
}
