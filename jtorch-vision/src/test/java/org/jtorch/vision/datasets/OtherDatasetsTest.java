package org.jtorch.vision.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.jtorch.Tensor;
import org.jtorch.data.Sample;
import org.jtorch.types.DType;
import org.jtorch.vision.transforms.ToTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Digits (bundled), CIFAR-10 (binary batches written here) and ImageFolder (PNGs written here). */
class OtherDatasetsTest {
    @TempDir
    Path tmp;

    @Test
    void digitsHasSklearnsSizeScaleAndFirstSample() {
        Digits ds = new Digits();
        assertEquals(1797, ds.size());
        try (Sample s = ds.get(0); Tensor labels = ds.targets()) {
            assertArrayEquals(new long[] {8, 8, 1}, s.input().shape());
            assertEquals(DType.FLOAT32, s.input().dtype());
            // sklearn's load_digits().images[0][0] = [0, 0, 5, 13, 9, 1, 0, 0], target 0
            float[] px = s.input().toFloatArray();
            assertArrayEquals(new float[] {0, 0, 5 / 16f, 13 / 16f, 9 / 16f, 1 / 16f, 0, 0}, java.util.Arrays.copyOf(px, 8), 1e-7f);
            assertEquals(0, s.target().itemLong());
            long[] counts = new long[10];
            for (long y : labels.toLongArray()) counts[(int) y]++;
            assertArrayEquals(new long[] {178, 182, 177, 183, 181, 182, 181, 179, 174, 180}, counts);
        }
    }

    @Test
    void digitsSplitEveryFifthImageIntoTheTestPart() {
        Digits all = new Digits();
        Digits train = new Digits(true, null, null);
        Digits test = new Digits(false, null, null);
        assertEquals(1438, train.size());
        assertEquals(359, test.size());
        try (Sample t = test.get(1); Sample a = all.get(9); Sample r = train.get(4); Sample b = all.get(5)) {
            assertArrayEquals(a.input().toFloatArray(), t.input().toFloatArray());
            assertEquals(a.target().itemLong(), t.target().itemLong());
            assertArrayEquals(b.input().toFloatArray(), r.input().toFloatArray());
        }
    }

    @Test
    void digitsThroughToTensorAreChwWithoutRescaling() {
        Digits ds = new Digits(new ToTensor(), null);
        try (Sample s = ds.get(0)) {
            assertArrayEquals(new long[] {1, 8, 8}, s.input().shape());
            assertEquals(13 / 16f, s.input().toFloatArray()[3], 1e-7f);
        }
    }

    /** Record r of a batch: label, then R, G, B planes with pixel p of plane c = (r * 7 + c * 50 + p) mod 256. */
    private static void writeBatch(Path file, int firstRecord, int... labels) throws IOException {
        byte[] b = new byte[labels.length * 3073];
        for (int i = 0; i < labels.length; i++) {
            int r = firstRecord + i;
            b[i * 3073] = (byte) labels[i];
            for (int c = 0; c < 3; c++) for (int p = 0; p < 1024; p++) b[i * 3073 + 1 + c * 1024 + p] = (byte) (r * 7 + c * 50 + p);
        }
        Files.createDirectories(file.getParent());
        Files.write(file, b);
    }

    @Test
    void cifar10ReadsFiveTrainingBatchesAsHwcImages() throws IOException {
        Path dir = tmp.resolve("cifar-10-batches-bin");
        for (int k = 1; k <= 5; k++) writeBatch(dir.resolve("data_batch_" + k + ".bin"), 2 * (k - 1), k, 9 - k);
        writeBatch(dir.resolve("test_batch.bin"), 0, 3, 1, 4);
        CIFAR10 train = new CIFAR10(tmp, true, null, null);
        CIFAR10 test = new CIFAR10(dir, false, null, null);
        assertEquals(10, train.size());
        assertEquals(3, test.size());
        try (Sample s = train.get(5); Tensor targets = train.targets()) {   // batch 3, second record
            assertArrayEquals(new long[] {32, 32, 3}, s.input().shape());
            assertEquals(DType.UINT8, s.input().dtype());
            long[] px = s.input().toLongArray();
            int p = 2 * 32 + 3;   // row 2, column 3
            assertEquals((5 * 7 + p) & 0xff, px[p * 3]);
            assertEquals((5 * 7 + 50 + p) & 0xff, px[p * 3 + 1]);
            assertEquals((5 * 7 + 100 + p) & 0xff, px[p * 3 + 2]);
            assertEquals(6, s.target().itemLong());
            assertArrayEquals(new long[] {1, 8, 2, 7, 3, 6, 4, 5, 5, 4}, targets.toLongArray());
        }
        assertEquals("truck", test.classes().get(9));
    }

    @Test
    void cifar10ErrorsNameTheMissingFileAndBadSizes() throws IOException {
        var e = assertThrows(UncheckedIOException.class, () -> new CIFAR10(tmp, false, null, null));
        assertTrue(e.getMessage().contains("test_batch.bin") && e.getMessage().contains("cifar"), e.getMessage());
        Files.write(tmp.resolve("test_batch.bin"), new byte[3074]);
        var b = assertThrows(UncheckedIOException.class, () -> new CIFAR10(tmp, false, null, null));
        assertTrue(b.getMessage().contains("3073-byte records"), b.getMessage());
    }

    @Test
    void realCifar10HasTheKnownSizes() {
        assumeTrue(DataRoot.find("cifar10") != null, "CIFAR-10 not found in .data/cifar10 (binary version from https://www.cs.toronto.edu/~kriz/cifar.html)");
        assertEquals(50000, new CIFAR10(true).size());
        CIFAR10 test = new CIFAR10(false);
        assertEquals(10000, test.size());
        try (Sample s = test.get(0)) {
            assertEquals(3, s.target().itemLong());   // the first test image is a cat
        }
    }

    private static void png(Path file, int w, int h, int rgb, int type) throws IOException {
        BufferedImage img = new BufferedImage(w, h, type);
        for (int y = 0; y < h; y++) for (int x = 0; x < w; x++) img.setRGB(x, y, rgb + x);
        Files.createDirectories(file.getParent());
        ImageIO.write(img, "png", file.toFile());
    }

    @Test
    void imageFolderNumbersSortedClassFoldersAndReadsRgb() throws IOException {
        png(tmp.resolve("dog/b.png"), 3, 2, 0x102030, BufferedImage.TYPE_INT_RGB);
        png(tmp.resolve("dog/a.PNG"), 3, 2, 0x405060, BufferedImage.TYPE_INT_RGB);
        png(tmp.resolve("cat/x/deep.png"), 2, 2, 0x708090, BufferedImage.TYPE_INT_RGB);
        png(tmp.resolve("ant/grey.png"), 4, 1, 0x777777, BufferedImage.TYPE_BYTE_GRAY);
        Files.writeString(tmp.resolve("ant/notes.txt"), "not an image");
        ImageFolder ds = new ImageFolder(tmp);
        assertEquals(List.of("ant", "cat", "dog"), ds.classes());
        assertEquals(Map.of("ant", 0, "cat", 1, "dog", 2), ds.classToIdx());
        assertEquals(4, ds.size());
        assertEquals(tmp.resolve("dog/a.PNG"), ds.samples().get(2).path());
        try (Sample s = ds.get(2)) {
            assertArrayEquals(new long[] {2, 3, 3}, s.input().shape());
            assertEquals(DType.UINT8, s.input().dtype());
            long[] px = s.input().toLongArray();
            assertArrayEquals(new long[] {0x40, 0x50, 0x60, 0x40, 0x50, 0x61}, java.util.Arrays.copyOf(px, 6));
            assertEquals(2, s.target().itemLong());
        }
        try (Sample grey = ds.get(0)) {
            assertArrayEquals(new long[] {1, 4, 3}, grey.input().shape());
            long[] px = grey.input().toLongArray();
            assertEquals(px[0], px[1]);
            assertEquals(px[1], px[2]);
        }
    }

    @Test
    void imageFolderAppliesTransforms() throws IOException {
        png(tmp.resolve("a/1.png"), 2, 2, 0xff0000, BufferedImage.TYPE_INT_RGB);
        try (Sample s = new ImageFolder(tmp, new ToTensor(), null).get(0)) {
            assertArrayEquals(new long[] {3, 2, 2}, s.input().shape());
            assertEquals(1f, s.input().toFloatArray()[0]);
        }
    }

    @Test
    void imageFolderErrorsForMissingRootNoClassesAndEmptyClasses() throws IOException {
        assertThrows(UncheckedIOException.class, () -> new ImageFolder(tmp.resolve("missing")));
        var none = assertThrows(UncheckedIOException.class, () -> new ImageFolder(tmp));
        assertTrue(none.getMessage().contains("class folder"), none.getMessage());
        png(tmp.resolve("full/1.png"), 1, 1, 0, BufferedImage.TYPE_INT_RGB);
        Files.createDirectories(tmp.resolve("empty"));
        var empty = assertThrows(UncheckedIOException.class, () -> new ImageFolder(tmp));
        assertTrue(empty.getMessage().contains("empty") && empty.getMessage().contains(".png"), empty.getMessage());
    }
}
