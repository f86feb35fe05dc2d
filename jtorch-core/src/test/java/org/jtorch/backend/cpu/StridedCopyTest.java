package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/**
 * Copies of strided views of 4-byte elements, which take a direct path (and, for every other element, a
 * vector gather): row lengths on both sides of 16, the last rows of the storage (where the gather's second
 * load would pass its end), int32 as well as float32, and a strided destination.
 */
class StridedCopyTest {
    @Test
    void everyOtherElementOfEachRow() {
        for (int width : new int[] {2, 16, 31, 32, 33, 64, 70}) {
            for (DType dtype : new DType[] {DType.FLOAT32, DType.INT32}) {
                try (Tensor x = Torch.arange(0, 5L * width, 1).to(dtype).reshape(5, width);
                     Tensor view = x.slice(1, 0, width, 2);
                     Tensor y = view.contiguous()) {
                    long[] got = y.to(DType.INT64).toLongArray();
                    int cols = (width + 1) / 2;
                    assertEquals(5 * cols, got.length);
                    for (int r = 0; r < 5; r++) {
                        for (int c = 0; c < cols; c++) assertEquals((long) r * width + 2L * c, got[r * cols + c], dtype + " width " + width);
                    }
                }
            }
        }
    }

    @Test
    void intoAStridedDestinationBitForBit() {
        float[] values = {Float.intBitsToFloat(0x7fc00123), -0.0f, 1.5f, Float.NEGATIVE_INFINITY, 3f, Float.MIN_VALUE};
        try (Tensor src = Torch.tensor(values, 6); Tensor dst = Torch.zeros(12); Tensor view = dst.slice(0, 1, 12, 2)) {
            view.copy_(src);
            float[] out = dst.toFloatArray();
            for (int i = 0; i < 6; i++) {
                assertEquals(Float.floatToRawIntBits(values[i]), Float.floatToRawIntBits(out[2 * i + 1]), "element " + i);
                assertEquals(0, Float.floatToRawIntBits(out[2 * i]), "untouched element " + i);
            }
        }
    }
}
