package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/** Special functions against CPython 3's {@code math.erfc} (correctly rounded to about 1 ulp), relative error. */
class SpecialFunctionsTest {
    private static void assertRelative(double expected, double actual, double rtol, String what) {
        assertEquals(expected, actual, rtol * Math.abs(expected), what);
    }

    @Test
    void erfcKeepsItsRelativeAccuracyInTheRightTail() {
        double[][] cases = {
            {-1, 1.842700792949715}, {0.5, 0.4795001221869535}, {2, 0.004677734981047265}, {3, 2.2090496998585438e-05},
            {5, 1.5374597944280351e-12}, {10, 2.088487583762545e-45}, {20, 5.3958656116079005e-176},
        };
        for (double[] c : cases) assertRelative(c[1], SpecialFunctions.erfc(c[0]), 1e-13, "erfc(" + c[0] + ")");
        assertEquals(2.0, SpecialFunctions.erfc(-30), 0);
        assertEquals(0.0, SpecialFunctions.erfc(30), 0);
    }

    /** Exact GELU far left: 0.5 x erfc(-x / sqrt 2), CPython's math.erfc; 1 + erf(x / sqrt 2) gave 0 at x = -10. */
    @Test
    void exactGeluIsAccurateForLargeNegativeInputs() {
        double[][] cases = {{-5, -1.4332578593959731e-06}, {-8, -4.9767684594174555e-15}, {-10, -7.619853024160593e-23}};
        try (Tensor x = Torch.tensor(new double[] {-5, -8, -10}); Tensor y = x.gelu("none")) {
            double[] got = y.toDoubleArray();
            for (int i = 0; i < cases.length; i++) assertRelative(cases[i][1], got[i], 1e-12, "gelu(" + cases[i][0] + ")");
        }
    }
}
