package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Copies of strided views of 4-byte elements, which take a direct path (and, for every other element, a
 * vector gather): row lengths on both sides of 16, the last rows of the storage (where the gather's second
 * load would pass its end), int32 as well as float32, and a strided destination (every other place: the gradient of
 * such a view, which spreads 16 elements at a time under a mask).
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

    /**
     * Rows into every other place of a destination's rows, at the even and at the odd places: each element's bits
     * land at its place, and the places between keep theirs (a NaN payload that a read-modify-write through float
     * arithmetic, or a store of the whole vector, would change). Row lengths on both sides of 16 and 32, and the
     * storage's last row, where the masked stores of the last 16 would pass its end.
     */
    @Test
    void intoEveryOtherPlaceOfEachRowLeavingThePlacesBetween() {
        int keep = 0x7fc0_0abc;
        for (int width : new int[] {1, 15, 16, 17, 31, 32, 33, 48, 70}) {
            for (int start : new int[] {0, 1}) {
                for (DType dtype : new DType[] {DType.FLOAT32, DType.INT32}) {
                    int rows = 5, places = 2 * width;
                    int[] srcBits = new int[rows * width];
                    for (int i = 0; i < srcBits.length; i++) {
                        srcBits[i] = i % 7 == 3 ? 0x8000_0000 : i % 11 == 5 ? 0x7fc0_0000 + i : Float.floatToRawIntBits(i * 0.37f - 9f);
                    }
                    try (org.jtorch.memory.MemoryScope scope = new org.jtorch.memory.MemoryScope()) {
                        Tensor src = bits(srcBits, dtype).reshape(rows, width);
                        int[] before = new int[rows * places];
                        java.util.Arrays.fill(before, keep);
                        Tensor dst = bits(before, dtype).reshape(rows, places);
                        dst.slice(1, start, places, 2).copy_(src);
                        int[] got = rawBits(dst, dtype);
                        for (int r = 0; r < rows; r++) {
                            for (int c = 0; c < places; c++) {
                                boolean written = c >= start && (c - start) % 2 == 0;
                                int want = written ? srcBits[r * width + (c - start) / 2] : keep;
                                assertEquals(want, got[r * places + c], dtype + " width " + width + " start " + start + " at " + r + "," + c);
                            }
                        }
                    }
                }
            }
        }
    }

    /** x[:, :, ::2, ::2]'s gradient at ResNet-20's 16 -> 32 shortcut: g at the even rows' even places, zero elsewhere. */
    @Test
    void gradientOfTheShortcutSubsamplingPlacesEachElement() {
        try (org.jtorch.memory.MemoryScope scope = new org.jtorch.memory.MemoryScope()) {
            Tensor x = Torch.randn(3, 16, 32, 32).requiresGrad_(true);
            Tensor g = Torch.randn(3, 16, 16, 16);
            x.slice(2, 0, 32, 2).slice(3, 0, 32, 2).backward(g);
            float[] got = x.grad().toFloatArray(), want = g.toFloatArray();
            for (int p = 0; p < 3 * 16; p++) {
                for (int h = 0; h < 32; h++) {
                    for (int w = 0; w < 32; w++) {
                        float expected = h % 2 == 0 && w % 2 == 0 ? want[(p * 16 + h / 2) * 16 + w / 2] : 0f;
                        assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(got[(p * 32 + h) * 32 + w]),
                                "plane " + p + " at " + h + "," + w);
                    }
                }
            }
        }
    }

    private static Tensor bits(int[] bits, DType dtype) {
        if (dtype == DType.INT32) return Torch.tensor(bits, bits.length);
        float[] values = new float[bits.length];
        for (int i = 0; i < bits.length; i++) values[i] = Float.intBitsToFloat(bits[i]);
        return Torch.tensor(values, values.length);
    }

    private static int[] rawBits(Tensor t, DType dtype) {
        if (dtype == DType.INT32) return t.contiguous().toIntArray();
        float[] values = t.contiguous().toFloatArray();
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) bits[i] = Float.floatToRawIntBits(values[i]);
        return bits;
    }

    /**
     * Short contiguous rows into a padded destination (pad's interior, cat of narrow blocks), the rows walked plane by
     * plane: row lengths around one and four vectors, every element size, leading dimensions that end mid-plane.
     */
    @Test
    void shortRowsIntoTheInteriorOfALargerTensor() {
        DType[] types = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT16, DType.UINT8, DType.BOOL};
        for (DType dtype : types) {
            for (int width : new int[] {1, 3, 16, 17, 63, 64, 65, 200, 257, 513, 1023, 1100}) {
                try (org.jtorch.memory.MemoryScope scope = new org.jtorch.memory.MemoryScope()) {
                    Tensor src = Torch.arange(0, 3L * 5 * width, 1).remainder(251).to(dtype).reshape(3, 5, width);
                    Tensor dst = Torch.full(new long[] {3, 7, width + 3}, 7.0, dtype, org.jtorch.types.Device.cpu());
                    dst.narrow(1, 1, 5).narrow(2, 2, width).copy_(src);
                    double[] got = dst.to(DType.FLOAT64).toDoubleArray();
                    double[] want = src.to(DType.FLOAT64).toDoubleArray();
                    double fill = dtype == DType.BOOL ? 1 : 7;
                    for (int b = 0; b < 3; b++) {
                        for (int r = 0; r < 7; r++) {
                            for (int c = 0; c < width + 3; c++) {
                                boolean inside = r >= 1 && r < 6 && c >= 2 && c < width + 2;
                                double expected = inside ? want[(b * 5 + r - 1) * width + c - 2] : fill;
                                assertEquals(expected, got[(b * 7 + r) * (width + 3) + c], 0, dtype + " width " + width + " at " + b + "," + r + "," + c);
                            }
                        }
                    }
                }
            }
        }
    }
}
