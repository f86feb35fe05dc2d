package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The CPU GEMM's dot-product path (m = n = 1 with unit strides: torch.dot, a row times a column, addmm of such
 * shapes) against a double-precision sum, over lengths that cover the vector loop's tails and the float32
 * blocks; alpha and beta as addmm applies them.
 */
class DotKernelTest {
    private static double reference(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) s += a[i] * b[i];
        return s;
    }

    @Test
    void dotMatchesADoubleSumOverTailsAndBlocks() {
        Torch.manualSeed(3);
        for (int n : new int[] {1, 7, 64, 2048 + 13, 65_536 + 5}) {
            for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
                Tensor a = Torch.randn(n).to(t);
                Tensor b = Torch.randn(n).to(t);
                double expected = reference(a.toDoubleArray(), b.toDoubleArray());
                double got = a.dot(b).item();
                double tolerance = t == DType.FLOAT32 ? 2e-6 * Math.sqrt(n) : 1e-12 * Math.sqrt(n);
                assertEquals(expected, got, tolerance * Math.max(1, Math.abs(expected)), t + " n=" + n);
            }
        }
    }

    @Test
    void addmmOfARowAndAColumnAppliesAlphaAndBeta() {
        Tensor row = Torch.tensor(new float[] {1, 2, 3}, 1, 3);
        Tensor col = Torch.tensor(new float[] {4, 5, 6}, 3, 1);
        Tensor input = Torch.tensor(new float[] {10}, 1, 1);
        assertEquals(0.5 * 10 + 2 * 32, Torch.addmm(input, row, col, 0.5, 2).item(), 0);
        assertEquals(32, row.matmul(col).item(), 0);
    }
}
