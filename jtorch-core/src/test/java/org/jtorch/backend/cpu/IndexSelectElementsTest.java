package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * {@code index_select} along the last dimension (one element per index) picks the right element for every element size,
 * through both of its paths: element by element, and a whole row backwards as vectors ({@link ReverseCopy}, flip).
 */
class IndexSelectElementsTest {
    /** Checks {@code x.indexSelect(last, idx)} against the picks read one by one from x's values. */
    private static void assertPicks(Tensor x, long[] picks, String what) {
        long size = x.size(-1);
        int rows = (int) (x.numel() / size);
        Tensor idx = Torch.tensor(picks, picks.length);
        double[] got = x.indexSelect(x.dim() - 1, idx).to(DType.FLOAT64).toDoubleArray();
        double[] all = x.contiguous().to(DType.FLOAT64).toDoubleArray();
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < picks.length; i++) {
                assertEquals(all[(int) (r * size + picks[i])], got[r * picks.length + i], 0, what + " row " + r + " pick " + i);
            }
        }
    }

    @Test
    void reversalsRollsAndRandomPicksMatchThePicksOnOddSizes() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(5);
        DType[] types = {DType.FLOAT32, DType.FLOAT64, DType.INT32, DType.INT64, DType.INT16, DType.UINT8};
        for (DType t : types) {
            for (int size : new int[] {1, 3, 15, 16, 17, 33, 64, 100, 513}) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor x = Torch.randn(3, 5, size).mul(1000).to(t);
                    long[] reversed = new long[size], rolled = new long[size], random = new long[size + 7], subset = new long[Math.max(1, size / 3)];
                    for (int i = 0; i < size; i++) {
                        reversed[i] = size - 1 - i;
                        rolled[i] = (i + size - 3 % size) % size;
                    }
                    for (int i = 0; i < random.length; i++) random[i] = rnd.nextInt(size);
                    for (int i = 0; i < subset.length; i++) subset[i] = rnd.nextInt(size);
                    String what = t + " size " + size;
                    assertPicks(x, reversed, what + " reversed");
                    assertPicks(x, rolled, what + " rolled");
                    assertPicks(x, random, what + " random");
                    assertPicks(x, subset, what + " subset");
                    assertPicks(x.narrow(1, 1, 3), reversed, what + " reversed, rows of a narrowed view");
                    assertEquals(x.to(DType.FLOAT64).flip(2).flip(2).sub(x.to(DType.FLOAT64)).abs().sum().item(), 0, 0, what + " flip twice");
                }
            }
        }
    }

    @Test
    void float64NaNPayloadsMoveUnchanged() {
        double[] v = new double[40];
        for (int i = 0; i < v.length; i++) v[i] = Double.longBitsToDouble(0x7ff8000000000000L | (i + 1));
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.tensor(v, DType.FLOAT64, 2, 20);
            double[] got = x.flip(1).toDoubleArray();
            for (int r = 0; r < 2; r++) {
                for (int i = 0; i < 20; i++) {
                    assertEquals(Double.doubleToRawLongBits(v[r * 20 + 19 - i]), Double.doubleToRawLongBits(got[r * 20 + i]), "element " + i);
                }
            }
        }
    }

    @Test
    void lastDimensionSelectsEachElementForEveryElementSize() {
        DType[] types = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT16, DType.BFLOAT16, DType.UINT8, DType.BOOL};
        long[] picks = {4, 0, 6, 6, 1, 3, 2, 5, 0};
        for (DType t : types) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = Torch.arange(0, 3 * 7, 1, DType.INT64, org.jtorch.types.Device.cpu()).remainder(t == DType.BOOL ? 2 : 100).to(t).view(3, 7);
                Tensor idx = Torch.tensor(picks, picks.length);
                double[] got = x.indexSelect(1, idx).to(DType.FLOAT64).toDoubleArray();
                double[] all = x.to(DType.FLOAT64).toDoubleArray();
                for (int r = 0; r < 3; r++) {
                    for (int i = 0; i < picks.length; i++) {
                        assertEquals(all[r * 7 + (int) picks[i]], got[r * picks.length + i], 0, t + " row " + r + " pick " + i);
                    }
                }
            }
        }
    }
}
