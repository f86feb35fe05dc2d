package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** col2im's stride-2 row add, {@code out[2i] += src[i]}, whose vector path spreads 16 values over 32 lanes. */
class StridedRowAddTest {
    @Test
    void addsToEvenElementsAndLeavesTheOthersBitForBit() {
        for (int n : new int[] {1, 8, 15, 16, 17, 31, 32, 33, 50}) {
            float[] src = new float[n];
            for (int i = 0; i < n; i++) src[i] = 0.25f * i - 3f;
            float[] out = new float[2 * n + 40];
            for (int j = 0; j < out.length; j++) out[j] = j % 3 == 0 ? -0.0f : j * 1.5f - 7f;
            float[] expected = out.clone();
            for (int i = 0; i < n; i++) expected[2 + 2 * i] += src[i];
            CpuConvolutionKernels.addRowStride2F32(MemorySegment.ofArray(src), 0, MemorySegment.ofArray(out), 2 * Float.BYTES, n);
            for (int j = 0; j < out.length; j++) {
                assertEquals(Float.floatToRawIntBits(expected[j]), Float.floatToRawIntBits(out[j]), "n=" + n + ", element " + j);
            }
        }
    }
}
