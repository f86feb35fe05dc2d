package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The contract of {@link ConvolutionKernels#conv2dWithEpilogue} on every CPU path: the epilogue's blocks cover the
 * output exactly once, each block is final when its epilogue runs (its values then are the convolution's result), and
 * the output is what {@code conv2d} writes. The paths are named by their own predicates, so that a shape that falls
 * to another path is noticed.
 */
class ConvolutionEpilogueBlocksTest {
    private final CpuConvolutionKernels kernels = new CpuConvolutionKernels();

    private static Geometry geometry(int n, int cin, int h, int w, int cout, int k, int stride, int pad, int groups) {
        int oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
        return new Geometry(n, cin, h, w, cout, k, k, stride, stride, pad, pad, 1, 1, groups, oh, ow);
    }

    @Test
    void batchGemmOfSmallImages() {
        Geometry g = geometry(4, 8, 4, 4, 16, 3, 1, 1, 1);
        assertTrue(ConvGemmF32.prefers(g));
        check(g, DType.FLOAT32);
    }

    @Test
    void tapPairsOfTinyMaps() {
        Geometry g = geometry(18, 16, 4, 4, 24, 3, 1, 1, 1);
        assertTrue(ConvSmallMapF32.handles(g));
        check(g, DType.FLOAT32);
    }

    @Test
    void pointwiseConvolutionsBlocksOfColumnsAcrossImages() {
        Geometry plain = geometry(3, 16, 14, 14, 24, 1, 1, 0, 1);
        Geometry strided = geometry(2, 16, 9, 9, 32, 1, 2, 0, 1);
        assertTrue(ConvPointwiseF32.handles(plain) && ConvPointwiseF32.handles(strided) && !ConvGemmF32.prefers(strided));
        check(plain, DType.FLOAT32);
        check(strided, DType.FLOAT32);
    }

    /**
     * Tile rows of 8, 7 (28 px: blocks of 16 tiles end inside a row) and 14 tiles (56 px); blocks across images: 4 tiles
     * an image (8 px, a block's tiles from four images) and 9 (blocks ending mid-image).
     */
    @Test
    void winogradBlocksOfTiles() {
        withWinograd("1", () -> {
            for (Geometry g : new Geometry[] {geometry(2, 16, 32, 32, 32, 3, 1, 1, 1), geometry(1, 16, 28, 28, 16, 3, 1, 1, 1),
                    geometry(3, 16, 26, 30, 16, 3, 1, 1, 1), geometry(1, 16, 56, 56, 16, 3, 1, 1, 1),
                    geometry(5, 32, 8, 8, 32, 3, 1, 1, 1), geometry(3, 16, 9, 9, 16, 3, 1, 1, 1)}) {
                assertTrue(WinogradF32.handles(g), g.toString());
                check(g, DType.FLOAT32);
            }
        });
    }

    /** Rows of one image (every image, and one image split over the threads). */
    @Test
    void directKernelsRowsOfAnImage() {
        for (Geometry g : new Geometry[] {geometry(2, 16, 32, 32, 32, 3, 2, 1, 1), geometry(1, 3, 16, 16, 16, 3, 1, 1, 1),
                geometry(2, 3, 32, 32, 64, 7, 2, 3, 1)}) {
            assertTrue(ConvDirectF32.handles(g), g.toString());
            check(g, DType.FLOAT32);
        }
    }

    /** The stem tiles: rows of every image, and of one image split over the threads. */
    @Test
    void stemTilesRowsOfAnImage() {
        for (Geometry g : new Geometry[] {geometry(2, 3, 64, 64, 64, 7, 2, 3, 1), geometry(1, 3, 64, 64, 16, 7, 2, 3, 1)}) {
            assertTrue(ConvStemF32.handles(g), g.toString());
            check(g, DType.FLOAT32);
        }
    }

    /** The packed implicit GEMM: whole images per task, and a single image split over the threads (one block at the end). */
    @Test
    void implicitGemmImagesAndGroups() {
        withWinograd("0", () -> {
            for (Geometry g : new Geometry[] {geometry(4, 16, 32, 32, 16, 3, 1, 1, 1), geometry(1, 16, 32, 32, 16, 3, 1, 1, 1),
                    geometry(3, 32, 9, 9, 48, 3, 1, 1, 2)}) {
                assertTrue(ConvF32.handles(g) && !ConvDirectF32.handles(g) && !WinogradF32.handles(g) && !ConvGemmF32.prefers(g), g.toString());
                check(g, DType.FLOAT32);
            }
        });
    }

    /** The whole-image products and the raster tiles run the epilogue once over the output after the convolution. */
    @Test
    void wholeImageAndRasterTilePaths() {
        Geometry whole = geometry(3, 4, 4, 4, 8, 4, 1, 0, 1);
        Geometry raster = geometry(2, 16, 8, 8, 32, 4, 2, 1, 1);
        assertTrue(ConvWholeImageF32.handles(whole) && ConvRasterTileF32.handles(raster));
        check(whole, DType.FLOAT32);
        check(raster, DType.FLOAT32);
    }

    @Test
    void float64TakesThePerImageGemm() {
        check(geometry(3, 5, 7, 6, 4, 3, 2, 1, 1), DType.FLOAT64);
    }

    /** Runs {@code body} with Winograd's switch ({@code -Djtorch.conv.winograd}, read per call) set, then puts it back. */
    private static void withWinograd(String setting, Runnable body) {
        String before = System.getProperty("jtorch.conv.winograd");
        System.setProperty("jtorch.conv.winograd", setting);
        try {
            body.run();
        } finally {
            if (before == null) System.clearProperty("jtorch.conv.winograd");
            else System.setProperty("jtorch.conv.winograd", before);
        }
    }

    private void check(Geometry g, DType dtype) {
        Torch.manualSeed(g.hashCode());
        long pixels = (long) g.oh() * g.ow();
        try (Tensor x = Torch.randn(g.n(), g.cin(), g.h(), g.w()).to(dtype);
             Tensor w = Torch.randn(g.cout(), g.cinG(), g.kh(), g.kw()).to(dtype);
             Tensor b = Torch.randn(g.cout()).to(dtype);
             Tensor plain = Tensor.empty(new long[] {g.n(), g.cout(), g.oh(), g.ow()}, dtype, x.device());
             Tensor fused = Tensor.empty(new long[] {g.n(), g.cout(), g.oh(), g.ow()}, dtype, x.device())) {
            kernels.conv2d(Dispatcher.view(x), Dispatcher.view(w), Dispatcher.view(b), Dispatcher.view(plain), g);
            StridedView out = Dispatcher.view(fused);
            MemorySegment memory = out.memory();
            AtomicIntegerArray covered = new AtomicIntegerArray(Math.toIntExact(g.n() * g.cout() * pixels));
            double[] seen = new double[covered.length()];
            kernels.conv2dWithEpilogue(Dispatcher.view(x), Dispatcher.view(w), Dispatcher.view(b), out, g, (i0, i1, c0, c1, p0, p1) -> {
                for (long i = i0; i < i1; i++) {
                    for (int c = c0; c < c1; c++) {
                        for (long p = p0; p < p1; p++) {
                            int at = (int) ((i * g.cout() + c) * pixels + p);
                            covered.incrementAndGet(at);
                            long byteAt = (out.offset() + at) * dtype.byteSize();
                            seen[at] = dtype == DType.FLOAT32 ? memory.get(ValueLayout.JAVA_FLOAT_UNALIGNED, byteAt)
                                    : memory.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, byteAt);
                        }
                    }
                }
            });
            for (int i = 0; i < covered.length(); i++) assertEquals(1, covered.get(i), "output element " + i + " of " + g);
            double[] result = fused.to(DType.FLOAT64).toDoubleArray();
            assertArrayEquals(plain.to(DType.FLOAT64).toDoubleArray(), result, 0, "conv2dWithEpilogue's output against conv2d's for " + g);
            assertArrayEquals(result, seen, 0, "values when the epilogue ran, against the final ones, for " + g);
        }
    }
}
