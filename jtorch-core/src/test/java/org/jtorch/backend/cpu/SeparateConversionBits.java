package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.types.DType;

/** The bf16 kernels' tests' check: a result read in registers has the bits of the separate-conversion path's. */
final class SeparateConversionBits {
    private SeparateConversionBits() {}

    static void assertSameBits(Tensor expected, Tensor actual, String what) {
        assertEquals(expected.dtype(), actual.dtype(), what + " dtype");
        double[] e = expected.to(DType.FLOAT64).toDoubleArray();
        double[] a = actual.to(DType.FLOAT64).toDoubleArray();
        assertEquals(e.length, a.length, what);
        for (int i = 0; i < e.length; i++) {
            if (Double.doubleToLongBits(e[i]) != Double.doubleToLongBits(a[i])) {
                throw new AssertionError(what + " element " + i + " = " + a[i] + ", separate conversion " + e[i]);
            }
        }
    }
}
