package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * {@code where} and {@code masked_fill} on the blend path ({@link SelectRows}: same dtypes, contiguous rows or a
 * broadcast element) give, element for element, what the condition picks: every dtype of 2, 4 and 8 bytes, lengths
 * around the vector widths, broadcast sources, a broadcast condition, and in place.
 */
class SelectRowsTest {
    private static final DType[] TYPES = {DType.FLOAT32, DType.FLOAT64, DType.INT32, DType.INT64, DType.BFLOAT16, DType.FLOAT16, DType.INT16};
    private static final int[] LENGTHS = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000, 1024, 1025, 2100}; // past 1024: rows run in pieces

    private static Tensor values(int n, DType t, Generator g) {
        return Torch.randn(new long[] {n}, DType.FLOAT64, org.jtorch.types.Device.cpu(), g).mul(50.0).to(t);
    }

    @Test
    void whereTakesEachElementFromTheSideItsConditionNames() {
        Generator g = new Generator(7);
        for (DType t : TYPES) {
            for (int n : LENGTHS) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor cond = Torch.rand(new long[] {n}, DType.FLOAT32, org.jtorch.types.Device.cpu(), g).lt(0.5);
                    Tensor a = values(n, t, g), b = values(n, t, g);
                    double[] c = cond.to(DType.FLOAT64).toDoubleArray(), x = a.toDoubleArray(), y = b.toDoubleArray();
                    double[] got = Torch.where(cond, a, b).toDoubleArray();
                    double[] filled = b.maskedFill(cond, -3.0).toDoubleArray();
                    double[] scalarA = Torch.where(cond, a.narrow(0, 0, 1), b).toDoubleArray();
                    double[] scalarB = Torch.where(cond, a, b.narrow(0, 1 % n, 1)).toDoubleArray();
                    double[] scalars = Torch.where(cond, a.narrow(0, 0, 1), b.narrow(0, n - 1, 1)).toDoubleArray();
                    for (int i = 0; i < n; i++) {
                        String at = t + " n=" + n + " element " + i;
                        assertEquals(c[i] != 0 ? x[i] : y[i], got[i], 0, at);
                        assertEquals(c[i] != 0 ? -3.0 : y[i], filled[i], 0, at);
                        assertEquals(c[i] != 0 ? x[0] : y[i], scalarA[i], 0, at);
                        assertEquals(c[i] != 0 ? x[i] : y[1 % n], scalarB[i], 0, at);
                        assertEquals(c[i] != 0 ? x[0] : y[n - 1], scalars[i], 0, at);
                    }
                    b.maskedFill_(cond, 2.0);
                    double[] inPlace = b.toDoubleArray();
                    for (int i = 0; i < n; i++) assertEquals(c[i] != 0 ? 2.0 : y[i], inPlace[i], 0, t + " in place, element " + i);
                }
            }
        }
    }

    /** A causal mask [L, L] broadcast over [B, L, L], as attention fills its scores. */
    @Test
    void aBroadcastConditionFillsEveryBatch() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor scores = Torch.randn(3, 37, 37);
            Tensor future = Torch.ones(37, 37).triu(1).gt(0);
            float[] got = scores.maskedFill(future, Double.NEGATIVE_INFINITY).toFloatArray();
            float[] x = scores.toFloatArray();
            for (int b = 0; b < 3; b++) {
                for (int i = 0; i < 37; i++) {
                    for (int j = 0; j < 37; j++) {
                        int k = (b * 37 + i) * 37 + j;
                        assertEquals(j > i ? Float.NEGATIVE_INFINITY : x[k], got[k], 0, "score " + b + "," + i + "," + j);
                    }
                }
            }
        }
    }
}
