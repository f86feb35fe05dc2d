package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** {@code index_select} along the last dimension (one element per index) picks the right element for every element size. */
class IndexSelectElementsTest {
    @Test
    void lastDimensionSelectsEachElementForEveryElementSize() {
        DType[] types = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT16, DType.BFLOAT16, DType.UINT8, DType.BOOL};
        long[] picks = {4, 0, 6, 6, 1, 3, 2, 5, 0};
        for (DType t : types) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = Torch.arange(0, 3 * 7, 1, DType.INT64, org.jtorch.Device.cpu()).remainder(t == DType.BOOL ? 2 : 100).to(t).view(3, 7);
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
