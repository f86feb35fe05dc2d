package org.jtorch.vision.transforms;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Properties of the random transforms (torchvision semantics): every output is one of the allowed
 * results, every allowed result occurs with the expected frequency, and a seeded generator makes
 * the draws reproducible.
 */
class RandomTransformsTest {

    /** A [c, h, w] float32 image whose pixels are all distinct (value = flat index + 1). */
    private static Tensor ramp(int c, int h, int w) {
        try (Tensor a = Torch.arange(1, 1 + c * h * w, 1L)) {
            return a.to(DType.FLOAT32).reshape(c, h, w);
        }
    }

    @Test
    void randomCropReturnsAWindowOfThePaddedImageAtEveryOffsetAboutEquallyOften() {
        Generator gen = new Generator(7);
        RandomCrop crop = new RandomCrop(new int[] {4}, new int[] {1}, false, 0, Pad.Mode.CONSTANT, gen);
        int[] counts = new int[9];   // (6 - 4 + 1)^2 offsets of a 4x4 image padded to 6x6
        try (Tensor img = ramp(2, 4, 4); Tensor padded = new Pad(1).apply(img)) {
            for (int n = 0; n < 1800; n++) {
                try (Tensor y = crop.apply(img)) {
                    assertArrayEquals(new long[] {2, 4, 4}, y.shape());
                    counts[offsetOf(padded, y)]++;
                }
            }
        }
        for (int c : counts) assertTrue(c > 140 && c < 260, "offset counts " + java.util.Arrays.toString(counts) + " should be about 200 each");
    }

    private static int offsetOf(Tensor padded, Tensor window) {
        float[] w = window.contiguous().toFloatArray();
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) {
                try (Tensor rows = padded.narrow(1, i, 4); Tensor cand = rows.narrow(2, j, 4); Tensor cc = cand.contiguous()) {
                    if (java.util.Arrays.equals(cc.toFloatArray(), w)) return i * 3 + j;
                }
            }
        }
        throw new AssertionError("the crop is not a window of the padded image");
    }

    @Test
    void randomCropIsReproducibleWithTheSameSeed() {
        try (Tensor img = ramp(3, 8, 8)) {
            RandomCrop a = new RandomCrop(5, 2).withGenerator(new Generator(123));
            RandomCrop b = new RandomCrop(5, 2).withGenerator(new Generator(123));
            for (int n = 0; n < 20; n++) {
                try (Tensor x = a.apply(img); Tensor y = b.apply(img)) {
                    assertArrayEquals(x.contiguous().toFloatArray(), y.contiguous().toFloatArray());
                }
            }
        }
    }

    @Test
    void randomCropOfTheFullSizeIsTheImage() {
        try (Tensor img = ramp(1, 3, 5); Tensor y = new RandomCrop(new int[] {3, 5}, null, false, 0, Pad.Mode.CONSTANT, new Generator(1)).apply(img)) {
            assertArrayEquals(img.toFloatArray(), y.contiguous().toFloatArray());
        }
    }

    @Test
    void randomCropPadsIfNeededAndRejectsTooLargeCrops() {
        try (Tensor img = ramp(1, 3, 3)) {
            RandomCrop padding = new RandomCrop(new int[] {5}, null, true, 0, Pad.Mode.CONSTANT, new Generator(1));
            try (Tensor y = padding.apply(img)) {
                assertArrayEquals(new long[] {1, 5, 5}, y.shape());
            }
            var e = assertThrows(IllegalArgumentException.class, () -> new RandomCrop(4).apply(img));
            assertTrue(e.getMessage().contains("RandomCrop") && e.getMessage().contains("larger"), e.getMessage());
        }
    }

    @Test
    void horizontalFlipWithProbabilityOneMirrorsAndZeroKeeps() {
        try (Tensor img = Torch.tensor(new float[] {1, 2, 3, 4, 5, 6}, 1, 2, 3);
             Tensor flipped = new RandomHorizontalFlip(1.0).apply(img);
             Tensor kept = new RandomHorizontalFlip(0.0).apply(img)) {
            assertArrayEquals(new float[] {3, 2, 1, 6, 5, 4}, flipped.toFloatArray());
            assertArrayEquals(img.toFloatArray(), kept.toFloatArray());
        }
    }

    @Test
    void horizontalFlipFlipsAboutHalfTheTimeAndWorksOnUint8() {
        Generator gen = new Generator(99);
        RandomHorizontalFlip flip = new RandomHorizontalFlip(0.5, gen);
        int flips = 0;
        try (Tensor f = Torch.tensor(new long[] {10, 20}, 1, 2); Tensor img = f.to(DType.UINT8)) {
            for (int n = 0; n < 2000; n++) {
                try (Tensor y = flip.apply(img)) {
                    assertEquals(DType.UINT8, y.dtype());
                    if (y.toLongArray()[0] == 20) flips++;
                }
            }
        }
        assertTrue(flips > 900 && flips < 1100, "flipped " + flips + " of 2000");
    }

    @Test
    void horizontalFlipRejectsProbabilitiesOutsideTheUnitInterval() {
        assertThrows(IllegalArgumentException.class, () -> new RandomHorizontalFlip(1.5));
    }

    @Test
    void composeAppliesInOrderAndLeavesTheInputOpen() {
        try (Tensor f = Torch.tensor(new long[] {0, 51, 102, 255}, 2, 2, 1); Tensor hwc = f.to(DType.UINT8)) {
            Compose t = new Compose(new ToTensor(), new Normalize(new double[] {0.5}, new double[] {0.5}), new Pad(1));
            try (Tensor y = t.apply(hwc)) {
                assertArrayEquals(new long[] {1, 4, 4}, y.shape());
                // (v / 255 - 0.5) / 0.5 inside a zero border
                float[] v = y.toFloatArray();
                assertEquals(-1f, v[5], 1e-6);
                assertEquals(-0.6f, v[6], 1e-6);
                assertEquals(-0.2f, v[9], 1e-6);
                assertEquals(1f, v[10], 1e-6);
                assertEquals(0f, v[0]);
            }
            assertEquals(255, hwc.toLongArray()[3]);
        }
    }
}
