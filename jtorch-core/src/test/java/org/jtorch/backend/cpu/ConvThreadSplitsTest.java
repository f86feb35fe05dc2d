package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The float32 small-map convolutions split over the threads inside the kernels: the strided 1x1 product's column
 * blocks in parts of rows when there are fewer blocks than threads, the strided 1x1 weight gradient's rows over the
 * threads (each over every column) for short depths, and {@link ConvSmallMapF32}'s and {@link ConvRasterTileF32}'s
 * weight packing over the threads.
 * Each element is summed in the same order whatever the split, so the output and the three gradients must come out
 * bit for bit as in one thread, at 2 and 3 threads (ResNet-18's shortcuts at a smaller batch, odd sizes and channel
 * counts that are not whole 8-row strips). That the values are right is {@code ConvolutionFastPathTest}'s part (the same
 * paths against float64).
 */
class ConvThreadSplitsTest {
    private final int savedThreads = Parallel.numThreads();

    @AfterEach
    void restoreThreads() {
        Parallel.setNumThreads(savedThreads);
    }

    /** {x shape, w shape, {stride, padding}}. */
    private static final long[][][] SHAPES = {
        // ResNet-18's 64 -> 128 strided 1x1 shortcut (16 -> 8 px) at batch 8: the weight gradient's rows split.
        {{8, 64, 16, 16}, {128, 64, 1, 1}, {2, 0}},
        // One image: one column block (49, 81 and 36 columns), its rows in parts; odd sizes the stride skips the last
        // row and column of; channel counts that are not whole 8-row strips.
        {{1, 64, 14, 14}, {96, 64, 1, 1}, {2, 0}},
        {{1, 40, 9, 9}, {72, 40, 1, 1}, {1, 0}},
        {{1, 33, 11, 11}, {100, 33, 1, 1}, {2, 0}},
        {{3, 40, 11, 11}, {45, 40, 1, 1}, {2, 0}},
        {{2, 24, 15, 13}, {70, 24, 1, 1}, {3, 0}},
        // ConvSmallMapF32: ResNet-18's 2x2 and 4x4 layers at fewer channels, cout not a whole strip, the stride-2 layer.
        {{32, 64, 2, 2}, {96, 64, 3, 3}, {1, 1}},
        {{17, 48, 4, 4}, {44, 48, 3, 3}, {1, 1}},
        {{20, 32, 4, 4}, {72, 32, 3, 3}, {2, 1}},
        // ConvRasterTileF32's forward (its weight blocks packed over the threads): ResNet-18's 128 -> 256 stride-2 layer
        // from 8x8 at fewer channels, and a 7x7 input. Their output only: their gradients' paths (the direct weight
        // gradient's chunks of images) are not thread-count invariant, nor changed here.
        {{4, 32, 8, 8}, {96, 32, 3, 3}, {2, 1}},
        {{3, 20, 7, 7}, {64, 20, 3, 3}, {2, 1}},
    };

    /** Where {@link #SHAPES}' 1x1 ({@link ConvPointwiseF32}) and tiny-map ({@link ConvSmallMapF32}) entries end. */
    private static final int POINTWISE = 6, SMALL_MAPS = 9;

    @Test
    void splitsGiveTheOneThreadBits() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the paths need 16 float lanes");
        for (int k = 0; k < SHAPES.length; k++) {
            long[][] s = SHAPES[k];
            float[][] one = run(s, 1);
            for (int threads : new int[] {2, 3}) {
                float[][] split = run(s, threads);
                for (int i = 0; i < (k < SMALL_MAPS ? one.length : 1); i++) assertSameBits(one[i], split[i], s, threads, i);
            }
        }
    }

    /** The shapes above reach the paths whose splits they test (else they would pass on any path). */
    @Test
    void shapesTakeTheSplitPaths() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the paths need 16 float lanes");
        for (int i = 0; i < POINTWISE; i++) {
            Geometry g = geometry(SHAPES[i]);
            assertTrue(ConvPointwiseF32.handles(g) && !ConvGemmF32.prefers(g), "pointwise path for shape " + i);
            boolean strided = g.sh() > 1;
            assertEquals(strided, ConvPointwiseF32.handlesWeightGrad(g), "pointwise weight gradient for shape " + i);
            assertTrue((long) g.n() * g.oh() * g.ow() <= ConvPointwiseF32.ROW_SPLIT_COLUMNS, "short depth for shape " + i);
        }
        for (int i = POINTWISE; i < SMALL_MAPS; i++) assertTrue(ConvSmallMapF32.handles(geometry(SHAPES[i])), "small map for shape " + i);
        for (int i = SMALL_MAPS; i < SHAPES.length; i++) {
            Geometry g = geometry(SHAPES[i]);
            assertTrue(ConvRasterTileF32.handles(g) && !ConvSmallMapF32.handles(g), "raster tiles for shape " + i);
        }
        // One column block at 2 threads: 2 parts of rows; with an epilogue, or two blocks, or under 4 strips: 1.
        Parallel.setNumThreads(2);
        assertEquals(2, ConvPointwiseF32.rowParts(1, 64, true));
        assertEquals(1, ConvPointwiseF32.rowParts(1, 64, false));
        assertEquals(1, ConvPointwiseF32.rowParts(2, 64, true));
        assertEquals(1, ConvPointwiseF32.rowParts(1, 3, true));
    }

    private static Geometry geometry(long[][] s) {
        int n = (int) s[0][0], cin = (int) s[0][1], h = (int) s[0][2], w = (int) s[0][3];
        int cout = (int) s[1][0], kh = (int) s[1][2], kw = (int) s[1][3], st = (int) s[2][0], p = (int) s[2][1];
        return new Geometry(n, cin, h, w, cout, kh, kw, st, st, p, p, 1, 1, 1, (h + 2 * p - kh) / st + 1, (w + 2 * p - kw) / st + 1);
    }

    /** Output, input gradient, weight gradient and bias gradient of one float32 convolution at {@code threads}. */
    private static float[][] run(long[][] s, int threads) {
        Parallel.setNumThreads(threads);
        int stride = (int) s[2][0], pad = (int) s[2][1];
        try (Tensor x = Torch.randn(s[0], DType.FLOAT32, Device.cpu(), Torch.manualSeed(31));
             Tensor w = Torch.randn(s[1], DType.FLOAT32, Device.cpu(), Torch.manualSeed(32));
             Tensor b = Torch.randn(new long[] {s[1][0]}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(33))) {
            for (Tensor t : new Tensor[] {x, w, b}) t.requiresGrad_(true);
            try (Tensor y = F.conv2d(x, w, b, new int[] {stride}, new int[] {pad}, new int[] {1}, 1);
                 Tensor u = Torch.randn(y.shape(), DType.FLOAT32, Device.cpu(), Torch.manualSeed(34))) {
                Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x, w, b}, new Tensor[] {u}, false, false, false);
                float[][] r = {y.toFloatArray(), g[0].toFloatArray(), g[1].toFloatArray(), g[2].toFloatArray()};
                for (Tensor t : g) t.close();
                return r;
            }
        }
    }

    private static void assertSameBits(float[] expected, float[] actual, long[][] s, int threads, int which) {
        String[] names = {"output", "input gradient", "weight gradient", "bias gradient"};
        for (int k = 0; k < expected.length; k++) {
            if (Float.floatToRawIntBits(expected[k]) != Float.floatToRawIntBits(actual[k])) {
                throw new AssertionError(names[which] + " of x " + java.util.Arrays.toString(s[0]) + ", w "
                        + java.util.Arrays.toString(s[1]) + " at " + threads + " threads: element " + k + " " + actual[k]
                        + ", one thread " + expected[k]);
            }
        }
    }

    /**
     * {@link ConvF32#sumPartials}: each weight element is the chunks' partial sums added in chunk order, on whichever
     * thread takes its output channel: bit for bit a scalar loop's sums at 1, 2 and 3 threads, on the 16-tap block path
     * (4x4 kernels, 16-channel groups) and the general one (3x3), odd output-channel counts leaving a short last chunk.
     * ResNet-20's 64 -> 64 3x3 layer (16 chunks) must split: its region ran as one chunk when the grain counted one
     * chunk's row only.
     */
    @Test
    void partialSumsSplitAndKeepTheirOrder() {
        // {cout, cinG, kk, chunks}
        int[][] shapes = {{64, 64, 9, 16}, {37, 16, 9, 5}, {64, 32, 16, 16}, {33, 16, 16, 3}, {5, 3, 9, 2}};
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(41);
        for (int[] s : shapes) {
            int cout = s[0], cinG = s[1], kk = s[2], kg = cinG * kk;
            float[][] partial = new float[s[3]][cout * kg];
            for (float[] p : partial) for (int e = 0; e < p.length; e++) p[e] = (float) ((rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(5) - 2));
            float[] expected = new float[cout * kg];
            for (int co = 0; co < cout; co++) {
                for (int ci = 0; ci < cinG; ci++) {
                    for (int t = 0; t < kk; t++) {
                        float v = partial[0][co * kg + t * cinG + ci];
                        for (int c = 1; c < partial.length; c++) v += partial[c][co * kg + t * cinG + ci];
                        expected[(co * cinG + ci) * kk + t] = v;
                    }
                }
            }
            for (int threads : new int[] {1, 2, 3}) {
                Parallel.setNumThreads(threads);
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
                    java.lang.foreign.MemorySegment gw = arena.allocate((long) (cout * kg + 3) * Float.BYTES, 64);
                    ConvF32.sumPartials(partial, cout, cinG, kk, gw, 3);
                    float[] got = gw.asSlice(3L * Float.BYTES).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
                    assertSameBits(expected, got, new long[][] {{cout, cinG, kk, s[3]}, {}}, threads, 2);
                }
            }
        }
        // The split itself: at two threads ResNet-20's shape runs no region as one chunk.
        Parallel.setNumThreads(2);
        float[][] partial = new float[16][64 * 576];
        Parallel.setSplitAccounting(true);
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
            org.jtorch.backend.SplitCpu before = Parallel.splitCpu();
            ConvF32.sumPartials(partial, 64, 64, 9, arena.allocate(64 * 576 * Float.BYTES, 64), 0);
            org.jtorch.backend.SplitCpu used = Parallel.splitCpu().minus(before);
            assertEquals(0, used.oneChunkCpu(), "one-chunk CPU ns: " + used);
            assertTrue(used.chunkCpu() + used.workersCpu() > 0, used.toString());
        } finally {
            Parallel.setSplitAccounting(false);
        }
    }
}
