package org.jtorch.vision.datasets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.GZIPOutputStream;
import org.jtorch.Tensor;
import org.jtorch.data.Sample;
import org.jtorch.types.DType;
import org.jtorch.vision.transforms.ToTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MNIST and Fashion-MNIST read IDX files (format: http://yann.lecun.com/exdb/mnist/) written here,
 * raw and gzipped, in the layouts of {@code scripts/fetch-data} and torchvision; the real data are
 * checked too when {@code scripts/fetch-data} has fetched them.
 */
class MnistTest {
    @TempDir
    Path tmp;

    /** Image i of a 3-image, 4x5 set has pixel (r, c) = 40 i + 5 r + c; labels 7, 0, 9. */
    static byte[] images(int n, int rows, int cols) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0x0803);
        out.writeInt(n);
        out.writeInt(rows);
        out.writeInt(cols);
        for (int i = 0; i < n; i++) for (int p = 0; p < rows * cols; p++) out.writeByte(40 * i + p);
        return bytes.toByteArray();
    }

    static byte[] labels(int... y) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0x0801);
        out.writeInt(y.length);
        for (int v : y) out.writeByte(v);
        return bytes.toByteArray();
    }

    static void write(Path file, byte[] data, boolean gzip) throws IOException {
        Files.createDirectories(file.getParent());
        if (!gzip) {
            Files.write(file, data);
            return;
        }
        try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file.resolveSibling(file.getFileName() + ".gz")))) {
            out.write(data);
        }
    }

    private Path smallSet(Path dir, String prefix, boolean gzip) throws IOException {
        write(dir.resolve(prefix + "-images-idx3-ubyte"), images(3, 4, 5), gzip);
        write(dir.resolve(prefix + "-labels-idx1-ubyte"), labels(7, 0, 9), gzip);
        return dir;
    }

    @Test
    void samplesAreUint8HwcImagesWithInt64Labels() throws IOException {
        MNIST ds = new MNIST(smallSet(tmp, "train", false), true, null, null);
        assertEquals(3, ds.size());
        try (Sample s = ds.get(1)) {
            assertArrayEquals(new long[] {4, 5, 1}, s.input().shape());
            assertEquals(DType.UINT8, s.input().dtype());
            assertEquals(40 + 5 * 2 + 3, s.input().toLongArray()[2 * 5 + 3]);
            assertEquals(DType.INT64, s.target().dtype());
            assertEquals(0, s.target().dim());
            assertEquals(0, s.target().itemLong());
        }
    }

    @Test
    void theTestSplitReadsT10kFilesGzipped() throws IOException {
        MNIST ds = new MNIST(smallSet(tmp, "t10k", true), false, null, null);
        try (Sample s = ds.get(2)) {
            assertEquals(9, s.target().itemLong());
            assertEquals(80, s.input().toLongArray()[0]);
        }
    }

    @Test
    void transformsApplyToImageAndTarget() throws IOException {
        MNIST ds = new MNIST(smallSet(tmp, "train", false), true, new ToTensor(), t -> t.add(100L));
        try (Sample s = ds.get(0)) {
            assertArrayEquals(new long[] {1, 4, 5}, s.input().shape());
            assertEquals(DType.FLOAT32, s.input().dtype());
            assertEquals(19 / 255.0, s.input().toFloatArray()[19], 1e-7);
            assertEquals(107, s.target().itemLong());
        }
    }

    @Test
    void dataAndTargetsAreWholeTensorsAsTorchvision() throws IOException {
        MNIST ds = new MNIST(smallSet(tmp, "train", false), true, null, null);
        try (Tensor data = ds.data(); Tensor targets = ds.targets()) {
            assertArrayEquals(new long[] {3, 4, 5}, data.shape());
            assertArrayEquals(new long[] {7, 0, 9}, targets.toLongArray());
        }
    }

    @Test
    void findsTheFetchDataAndTorchvisionLayoutsUnderARoot() throws IOException {
        smallSet(tmp.resolve("mnist"), "train", false);
        assertEquals(3, new MNIST(tmp, true, null, null).size());
        smallSet(tmp.resolve("FashionMNIST").resolve("raw"), "t10k", true);
        FashionMNIST f = new FashionMNIST(tmp, false, null, null);
        assertEquals(3, f.size());
        assertEquals("Ankle boot", f.classes().get(9));
    }

    @Test
    void missingFilesSayWhereItLookedAndHowToFetch() {
        var e = assertThrows(UncheckedIOException.class, () -> new MNIST(tmp.resolve("nowhere"), true, null, null));
        assertTrue(e.getMessage().contains("train-images-idx3-ubyte"), e.getMessage());
        assertTrue(e.getMessage().contains(tmp.resolve("nowhere").toString()), e.getMessage());
        assertTrue(e.getMessage().contains("scripts/fetch-data mnist"), e.getMessage());
        var f = assertThrows(UncheckedIOException.class, () -> new FashionMNIST(tmp, true, null, null));
        assertTrue(f.getMessage().contains("scripts/fetch-data fashion-mnist"), f.getMessage());
    }

    @Test
    void truncatedAndMismatchedFilesAreErrors() throws IOException {
        byte[] img = images(3, 4, 5);
        write(tmp.resolve("train-images-idx3-ubyte"), java.util.Arrays.copyOf(img, img.length - 1), false);
        write(tmp.resolve("train-labels-idx1-ubyte"), labels(1, 2, 3), false);
        var e = assertThrows(UncheckedIOException.class, () -> new MNIST(tmp, true, null, null));
        assertTrue(e.getMessage().contains("truncated"), e.getMessage());
        write(tmp.resolve("train-images-idx3-ubyte"), img, false);
        write(tmp.resolve("train-labels-idx1-ubyte"), labels(1, 2), false);
        var m = assertThrows(UncheckedIOException.class, () -> new MNIST(tmp, true, null, null));
        assertTrue(m.getMessage().contains("3 images but 2 labels"), m.getMessage());
    }

    @Test
    void indexOutOfRangeNamesTheDataset() throws IOException {
        MNIST ds = new MNIST(smallSet(tmp, "train", false), true, null, null);
        var e = assertThrows(IndexOutOfBoundsException.class, () -> ds.get(3));
        assertTrue(e.getMessage().contains("MNIST") && e.getMessage().contains("3"), e.getMessage());
    }

    @Test
    void concurrentGetsReturnTheSameSamplesAsSequentialOnes() throws Exception {
        MNIST ds = new MNIST(smallSet(tmp, "train", false), true, new ToTensor(), null);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<float[]>> futures = new ArrayList<>();
            for (int n = 0; n < 300; n++) {
                int i = n % 3;
                futures.add(pool.submit(() -> {
                    try (Sample s = ds.get(i)) {
                        return s.input().toFloatArray();
                    }
                }));
            }
            for (int n = 0; n < futures.size(); n++) {
                try (Sample s = ds.get(n % 3)) {
                    assertArrayEquals(s.input().toFloatArray(), futures.get(n).get());
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void realMnistHasTheKnownSizesAndFirstLabels() {
        assumeTrue(DataRoot.find("mnist") != null, "MNIST not found: run scripts/fetch-data mnist (or set JTORCH_DATA)");
        MNIST train = new MNIST(true);
        MNIST test = new MNIST(false);
        assertEquals(60000, train.size());
        assertEquals(10000, test.size());
        try (Sample a = train.get(0); Sample b = test.get(0)) {
            assertArrayEquals(new long[] {28, 28, 1}, a.input().shape());
            assertEquals(5, a.target().itemLong());   // the well-known first training digit
            assertEquals(7, b.target().itemLong());
        }
    }

    @Test
    void realFashionMnistHasTheKnownSizesAndFirstLabel() {
        assumeTrue(DataRoot.find("fashion-mnist") != null, "Fashion-MNIST not found: run scripts/fetch-data fashion-mnist");
        FashionMNIST train = new FashionMNIST(true);
        assertEquals(60000, train.size());
        assertEquals(10000, new FashionMNIST(false).size());
        try (Sample a = train.get(0)) {
            assertEquals(9, a.target().itemLong());   // an ankle boot
        }
    }
}
