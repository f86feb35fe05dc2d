package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import jdk.incubator.vector.FloatVector;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which float32 convolution path each shape of {@code ConvolutionFastPathTest}'s direct and phase tests takes:
 * those tests compare results against float64, and would pass just as well if a shape silently fell back to
 * another path. Here the dispatch itself is checked (on 512-bit vectors, where the paths exist).
 */
class ConvolutionPathsTest {
    @BeforeEach
    void needs512BitVectors() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the direct and phase paths need 16 float lanes");
    }

    /** Geometry of a convolution of {@code x} with {@code w} ({n, c, h, w} and {cout, cin, kh, kw}), no groups. */
    private static Geometry geometry(int[] x, int[] w, int sh, int sw, int ph, int pw, int dh) {
        int oh = (x[2] + 2 * ph - dh * (w[2] - 1) - 1) / sh + 1, ow = (x[3] + 2 * pw - (w[3] - 1) - 1) / sw + 1;
        return new Geometry(x[0], x[1], x[2], x[3], w[0], w[2], w[3], sh, sw, ph, pw, dh, 1, 1, oh, ow);
    }

    @Test
    void directTilesTakeTheirShapes() {
        // {x shape, w shape, sh, sw, ph, pw, dh} -> forward direct, 32-channel tile (8 or 7 pixels), weight gradient direct
        assertPaths(geometry(new int[] {2, 16, 8, 8}, new int[] {32, 16, 3, 3}, 1, 1, 1, 1, 1), true, true);
        assertPaths(geometry(new int[] {1, 24, 12, 16}, new int[] {64, 24, 3, 3}, 1, 1, 2, 1, 2), true, true);
        assertPaths(geometry(new int[] {3, 3, 16, 16}, new int[] {16, 3, 3, 3}, 1, 1, 1, 1, 1), true, false);
        assertPaths(geometry(new int[] {2, 8, 20, 24}, new int[] {32, 8, 5, 3}, 2, 1, 2, 1, 1), true, true);
        assertPaths(geometry(new int[] {2, 16, 32, 32}, new int[] {32, 16, 3, 3}, 2, 2, 1, 1, 1), true, true);
        // Rows that are not whole tiles, the last tile overlapping (at most a quarter more pixels computed).
        assertPaths(geometry(new int[] {2, 32, 28, 28}, new int[] {32, 32, 3, 3}, 1, 1, 1, 1, 1), true, true);
        assertPaths(geometry(new int[] {3, 64, 14, 14}, new int[] {64, 64, 3, 3}, 1, 1, 1, 1, 1), true, true);
        assertPaths(geometry(new int[] {2, 16, 40, 40}, new int[] {32, 16, 3, 3}, 2, 2, 1, 1, 1), true, true);
        assertPaths(geometry(new int[] {2, 16, 28, 28}, new int[] {16, 16, 3, 3}, 1, 1, 1, 1, 1), true, false);
        // More than a quarter recomputed (12 px in 8-pixel tiles, 20 px in 16-pixel ones), or rows under a tile: the implicit GEMM.
        assertEquals(false, ConvDirectF32.handles(geometry(new int[] {2, 32, 12, 12}, new int[] {32, 32, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handles(geometry(new int[] {2, 16, 20, 20}, new int[] {16, 16, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handles(geometry(new int[] {2, 32, 6, 6}, new int[] {32, 32, 3, 3}, 1, 1, 1, 1, 1)));
        // Rows of whole 7-pixel tiles take the 7x32 tile: 7 px (under an 8-pixel tile), 21 px, 28 px at stride 2.
        assertPaths(geometry(new int[] {2, 64, 7, 7}, new int[] {64, 64, 3, 3}, 1, 1, 1, 1, 1), true, true);
        assertPaths(geometry(new int[] {1, 8, 25, 21}, new int[] {32, 8, 5, 3}, 1, 1, 2, 1, 2), true, true);
        assertPaths(geometry(new int[] {2, 24, 55, 55}, new int[] {32, 24, 3, 3}, 2, 2, 1, 1, 1), true, true);
        // Whole 32-pixel rows stay on the packed implicit GEMM; the weight gradient is direct for any width.
        Geometry wide = geometry(new int[] {4, 16, 32, 32}, new int[] {16, 16, 3, 3}, 1, 1, 1, 1, 1);
        assertEquals(false, ConvDirectF32.handles(wide));
        assertEquals(true, ConvDirectF32.handlesWeightGrad(wide));
    }

    /**
     * Rows that are not whole 8-pixel tiles take the 8x32 tile in raster order over the image: MNIST's conv1 forward
     * (26-pixel rows) and conv2's input gradient (the flipped convolution, 64 -> 32 channels onto 26-pixel rows),
     * 20-pixel rows at stride 2; rows of whole tiles (conv2's forward, 24 px) stay on the row tiles.
     */
    @Test
    void raggedRowsTakeRasterTiles() {
        Geometry conv1 = geometry(new int[] {64, 1, 28, 28}, new int[] {32, 1, 3, 3}, 1, 1, 0, 0, 1);
        Geometry conv2InputGrad = geometry(new int[] {64, 64, 24, 24}, new int[] {32, 64, 3, 3}, 1, 1, 2, 2, 1);
        Geometry strided = geometry(new int[] {2, 16, 40, 40}, new int[] {32, 16, 3, 3}, 2, 2, 1, 1, 1);
        for (Geometry g : new Geometry[] {conv1, conv2InputGrad, strided}) {
            assertEquals(true, ConvDirectF32.handlesWithWideTile(g) && ConvRasterImageF32.serves(g), "raster tiles for " + g);
        }
        Geometry conv2 = geometry(new int[] {64, 32, 26, 26}, new int[] {64, 32, 3, 3}, 1, 1, 0, 0, 1);
        assertEquals(false, ConvRasterImageF32.serves(conv2));
    }

    /** MNIST's conv1 and DCGAN's first layer take the one-input-channel forward; two channels or groups do not. */
    @Test
    void oneInputChannelForwardsTakeThePixelLanes() {
        assertEquals(true, ConvOneChannelF32.handles(geometry(new int[] {64, 1, 28, 28}, new int[] {32, 1, 3, 3}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvOneChannelF32.handles(geometry(new int[] {64, 1, 32, 32}, new int[] {64, 1, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvOneChannelF32.handles(geometry(new int[] {1, 1, 9, 5}, new int[] {3, 1, 2, 3}, 3, 1, 2, 1, 2)));
        assertEquals(false, ConvOneChannelF32.handles(geometry(new int[] {2, 2, 28, 28}, new int[] {32, 2, 3, 3}, 1, 1, 0, 0, 1)));
        assertEquals(false, ConvOneChannelF32.handles(geometry(new int[] {2, 1, 28, 28}, new int[] {32, 1, 1, 1}, 1, 1, 0, 0, 1)));
        assertEquals(false, ConvOneChannelF32.handles(new Geometry(2, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4, 9, 9)));
    }

    /**
     * Weight gradients of 1-4 input channels, one group and a kernel larger than 1x1 take the flat pixel lanes (ResNet-50's
     * 7x7 stride-2 stem, ResNet-20's stem, MNIST's conv1, DCGAN's first layer, a dilated stride-3 shape); five channels,
     * groups and 1x1 kernels do not.
     */
    @Test
    void fewInputChannelWeightGradientsTakeTheFlatPixelLanes() {
        // {x shape, w shape, sh, sw, ph, pw, dh}
        assertEquals(true, ConvFewChannelWeightGradF32.handles(geometry(new int[] {8, 3, 224, 224}, new int[] {64, 3, 7, 7}, 2, 2, 3, 3, 1)));
        assertEquals(true, ConvFewChannelWeightGradF32.handles(geometry(new int[] {128, 3, 32, 32}, new int[] {16, 3, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvFewChannelWeightGradF32.handles(geometry(new int[] {64, 1, 28, 28}, new int[] {32, 1, 3, 3}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvFewChannelWeightGradF32.handles(geometry(new int[] {64, 1, 32, 32}, new int[] {64, 1, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvFewChannelWeightGradF32.handles(geometry(new int[] {1, 4, 19, 23}, new int[] {5, 4, 2, 3}, 3, 3, 0, 2, 2)));
        assertEquals(false, ConvFewChannelWeightGradF32.handles(geometry(new int[] {2, 5, 20, 20}, new int[] {32, 5, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvFewChannelWeightGradF32.handles(geometry(new int[] {2, 3, 20, 20}, new int[] {16, 3, 1, 1}, 1, 1, 0, 0, 1)));
        assertEquals(false, ConvFewChannelWeightGradF32.handles(new Geometry(2, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, 9, 9)));
        // Five channels of 3x3 on 14-pixel rows stay on the lane weight gradient.
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 5, 14, 14}, new int[] {12, 5, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvFewChannelWeightGradF32.handles(geometry(new int[] {2, 5, 14, 14}, new int[] {12, 5, 3, 3}, 1, 1, 1, 1, 1)));
    }

    /**
     * Few taps (at most 48), stride 1 along rows, and rows at least three quarters whole vectors take the weight gradient
     * with pixels in the lanes: ConvolutionFastPathTest.fewTapWeightGradientsInPixelLanes's shapes, and not the others.
     */
    @Test
    void fewTapWeightGradientsTakeThePixelLanes() {
        // {x shape, w shape, sh, sw, ph, pw, dh}
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {3, 3, 32, 32}, new int[] {16, 3, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {3, 1, 28, 28}, new int[] {20, 1, 5, 5}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 2, 17, 32}, new int[] {8, 2, 3, 3}, 2, 1, 1, 1, 1)));
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 3, 12, 44}, new int[] {16, 3, 3, 5}, 1, 1, 1, 2, 1)));
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 3, 16, 16}, new int[] {8, 3, 4, 4}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvLaneWeightGradF32.handles(geometry(new int[] {1, 3, 30, 31}, new int[] {24, 3, 3, 3}, 1, 1, 1, 0, 1)));
        // Rows of 20 (20 of 32 lanes used), stride 2 along rows, 75 taps, 16 input channels: the direct tiles.
        assertEquals(false, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 3, 20, 20}, new int[] {16, 3, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 3, 64, 64}, new int[] {16, 3, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 3, 32, 32}, new int[] {16, 3, 5, 5}, 1, 1, 2, 2, 1)));
        assertEquals(false, ConvLaneWeightGradF32.handles(geometry(new int[] {2, 16, 32, 32}, new int[] {16, 16, 3, 3}, 1, 1, 1, 1, 1)));
    }

    /**
     * DCGAN's 64 -> 128 layer (4x4 stride 2, 16 -> 8 pixels) and its relatives with outputs of at least 64 pixels take
     * the 6x64 weight gradient tiles: ConvolutionFastPathTest.wideWeightGradients's shapes; the 128 -> 256 layer at
     * 8 -> 4 pixels, 3x3 kernels, channels not in 64-blocks and groups do not.
     */
    @Test
    void dcganStride2WeightGradientsTakeTheWideTiles() {
        assertEquals(true, ConvWideWeightGradF32.handles(geometry(new int[] {64, 64, 16, 16}, new int[] {128, 64, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvWideWeightGradF32.handles(geometry(new int[] {1, 64, 17, 17}, new int[] {128, 64, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvWideWeightGradF32.handles(geometry(new int[] {2, 128, 19, 21}, new int[] {64, 128, 4, 4}, 2, 2, 2, 0, 2)));
        assertEquals(false, ConvWideWeightGradF32.handles(geometry(new int[] {64, 128, 8, 8}, new int[] {256, 128, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvWideWeightGradF32.handles(geometry(new int[] {2, 64, 16, 16}, new int[] {128, 64, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvWideWeightGradF32.handles(geometry(new int[] {2, 32, 16, 16}, new int[] {128, 32, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvWideWeightGradF32.handles(geometry(new int[] {2, 64, 16, 16}, new int[] {96, 64, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvWideWeightGradF32.handles(new Geometry(2, 128, 16, 16, 128, 4, 4, 2, 2, 1, 1, 1, 1, 2, 8, 8)));
    }

    /**
     * ResNet-20's 32 -> 32 (16 px), 64 -> 64 (8 px) and 32 -> 64 stride-2 forwards take the 8x32 row tiles (not the
     * raster tiles: rows of whole 8-pixel tiles), whose stores {@code ConvolutionFastPathTest.resNet20WideTileShapes} checks;
     * by default the stride-1 forwards go to Winograd before them.
     */
    @Test
    void resNet20WideLayersTakeTheRowTiles() {
        Geometry[] layers = {geometry(new int[] {128, 32, 16, 16}, new int[] {32, 32, 3, 3}, 1, 1, 1, 1, 1),
            geometry(new int[] {128, 64, 8, 8}, new int[] {64, 64, 3, 3}, 1, 1, 1, 1, 1),
            geometry(new int[] {128, 32, 16, 16}, new int[] {64, 32, 3, 3}, 2, 2, 1, 1, 1)};
        for (Geometry g : layers) {
            assertPaths(g, true, true);
            assertEquals(false, ConvRasterImageF32.serves(g), "row tiles, not raster tiles, for " + g);
        }
        // With Winograd's switch at its default, the two stride-1 forwards take Winograd's blocks across images
        // first, and their input gradients (the same geometries flipped) F(2x2, 3x3); the stride-2 one the row tiles.
        if (FloatVector.SPECIES_PREFERRED.length() == 16 && System.getProperty("jtorch.conv.winograd") == null
                && System.getenv("JTORCH_CONV_WINOGRAD") == null) {
            assertEquals(true, WinogradF32.handles(layers[0]) && WinogradF32.handles(layers[1]), "Winograd forwards on small maps");
            assertEquals(false, WinogradF32.handles(layers[2]), "no Winograd at stride 2");
            assertEquals(true, WinogradF32.handlesInputGrad(layers[0]) && WinogradF32.handlesInputGrad(layers[1]), "Winograd input gradients");
        }
    }

    private static void assertPaths(Geometry g, boolean direct, boolean wideTile) {
        assertEquals(direct, ConvDirectF32.handles(g), "direct forward for " + g);
        assertEquals(wideTile, ConvDirectF32.handlesWithWideTile(g), "32-channel tile for " + g);
        assertEquals(true, ConvDirectF32.handlesWeightGrad(g), "direct weight gradient for " + g);
    }

    @Test
    void pointwiseConvolutionsTakeTheGemmWithoutIm2col() {
        assertEquals(true, ConvPointwiseF32.handles(geometry(new int[] {8, 256, 56, 56}, new int[] {64, 256, 1, 1}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvPointwiseF32.handles(geometry(new int[] {8, 1024, 14, 14}, new int[] {2048, 1024, 1, 1}, 2, 2, 0, 0, 1)));
        assertEquals(true, ConvPointwiseF32.handles(geometry(new int[] {3, 13, 3, 5}, new int[] {11, 13, 1, 1}, 3, 2, 0, 0, 2)));
        // The weight gradient only when strided; small strided images go to the batch GEMM first (its test above).
        assertEquals(false, ConvPointwiseF32.handlesWeightGrad(geometry(new int[] {8, 256, 56, 56}, new int[] {64, 256, 1, 1}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvPointwiseF32.handlesWeightGrad(geometry(new int[] {8, 256, 56, 56}, new int[] {512, 256, 1, 1}, 2, 2, 0, 0, 1)));
        // Padding, groups and larger kernels are the other paths'.
        assertEquals(false, ConvPointwiseF32.handles(geometry(new int[] {2, 16, 6, 6}, new int[] {24, 16, 1, 1}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvPointwiseF32.handles(new Geometry(2, 32, 9, 9, 48, 1, 1, 2, 2, 0, 0, 1, 1, 2, 5, 5)));
        assertEquals(false, ConvPointwiseF32.handles(geometry(new int[] {2, 16, 6, 6}, new int[] {24, 16, 3, 3}, 1, 1, 1, 1, 1)));
    }

    @Test
    void smallImagesOfABatchTakeTheBatchGemm() {
        assertEquals(true, ConvGemmF32.prefers(geometry(new int[] {32, 512, 2, 2}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvGemmF32.prefers(geometry(new int[] {32, 256, 4, 4}, new int[] {256, 256, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvGemmF32.prefers(geometry(new int[] {32, 256, 8, 8}, new int[] {512, 256, 1, 1}, 2, 2, 0, 0, 1)));
        // 8x8 outputs stay on the direct kernels; a single image, and a 1x1 stride-1 product, are not batch GEMMs.
        assertEquals(false, ConvGemmF32.prefers(geometry(new int[] {32, 128, 8, 8}, new int[] {128, 128, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvGemmF32.prefers(geometry(new int[] {1, 512, 2, 2}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvGemmF32.prefers(geometry(new int[] {8, 64, 4, 4}, new int[] {64, 64, 1, 1}, 1, 1, 0, 0, 1)));
        assertEquals(false, ConvGemmF32.prefers(geometry(new int[] {64, 256, 4, 4}, new int[] {1, 256, 4, 4}, 1, 1, 0, 0, 1)));
    }

    @Test
    void tinyMapsOfABatchTakeTheTapPairs() {
        // ResNet-18's 3x3 layers at 64 px: 2x2 and 4x4, and the stride-2 ones into them.
        assertEquals(true, ConvSmallMapF32.handles(geometry(new int[] {32, 512, 2, 2}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvSmallMapF32.handles(geometry(new int[] {32, 256, 4, 4}, new int[] {256, 256, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(true, ConvSmallMapF32.handles(geometry(new int[] {32, 256, 4, 4}, new int[] {512, 256, 3, 3}, 2, 2, 1, 1, 1)));
        // From 8x8 into 4x4: the input gradient only.
        Geometry from8 = geometry(new int[] {32, 128, 8, 8}, new int[] {256, 128, 3, 3}, 2, 2, 1, 1, 1);
        assertEquals(false, ConvSmallMapF32.handles(from8));
        assertEquals(true, ConvSmallMapF32.handlesInputGrad(from8));
        assertEquals(23.0 / 144, ConvSmallMapF32.paddingShare(from8), 1e-12);
        // DCGAN's 4x4 stride-2 layer from 8x8 into 4x4: its padding is 23% of the products, all three passes here.
        Geometry dcgan = geometry(new int[] {64, 128, 8, 8}, new int[] {256, 128, 4, 4}, 2, 2, 1, 1, 1);
        assertEquals(1 - 3.5 * 3.5 / 16, ConvSmallMapF32.paddingShare(dcgan), 1e-12);
        assertEquals(true, ConvSmallMapF32.handles(dcgan));
        // Unpadded, or from 16x16: the raster tiles' and direct kernels'.
        assertEquals(false, ConvSmallMapF32.handles(geometry(new int[] {64, 128, 8, 8}, new int[] {256, 128, 4, 4}, 2, 2, 0, 0, 1)));
        assertEquals(false, ConvSmallMapF32.handles(geometry(new int[] {64, 64, 16, 16}, new int[] {128, 64, 4, 4}, 2, 2, 1, 1, 1)));
        // 8x8 outputs, 1x1 shortcuts, small batches, few channels and groups are the other paths'.
        assertEquals(false, ConvSmallMapF32.handlesInputGrad(geometry(new int[] {32, 128, 8, 8}, new int[] {128, 128, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvSmallMapF32.handlesInputGrad(geometry(new int[] {32, 256, 8, 8}, new int[] {512, 256, 1, 1}, 2, 2, 0, 0, 1)));
        assertEquals(false, ConvSmallMapF32.handlesInputGrad(geometry(new int[] {8, 512, 2, 2}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvSmallMapF32.handlesInputGrad(geometry(new int[] {32, 3, 4, 4}, new int[] {64, 3, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvSmallMapF32.handlesInputGrad(new Geometry(32, 64, 4, 4, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2, 4, 4)));
    }

    @Test
    void wholeImageKernelsAreMatrixProducts() {
        // DCGAN's discriminator head and its generator's first layer (as the convolution it transposes).
        assertEquals(true, ConvWholeImageF32.handles(geometry(new int[] {64, 256, 4, 4}, new int[] {1, 256, 4, 4}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvWholeImageF32.handles(geometry(new int[] {64, 256, 4, 4}, new int[] {100, 256, 4, 4}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvWholeImageF32.handles(geometry(new int[] {1, 3, 2, 5}, new int[] {7, 3, 2, 5}, 3, 3, 0, 0, 1)));
        // Padding, a kernel smaller than the image, dilation and groups are the other paths'.
        assertEquals(false, ConvWholeImageF32.handles(geometry(new int[] {2, 8, 3, 3}, new int[] {4, 8, 5, 5}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvWholeImageF32.handles(geometry(new int[] {2, 8, 4, 4}, new int[] {4, 8, 3, 3}, 1, 1, 0, 0, 1)));
        assertEquals(false, ConvWholeImageF32.handles(geometry(new int[] {2, 8, 5, 5}, new int[] {4, 8, 3, 3}, 1, 1, 0, 0, 2)));
        assertEquals(false, ConvWholeImageF32.handles(new Geometry(2, 8, 3, 3, 4, 3, 3, 1, 1, 0, 0, 1, 1, 2, 1, 1)));
    }

    /**
     * {@code ConvolutionFastPathTest.manyChannelForwardsGroupImages}' shapes run several images per weight block (at the
     * threads of the run); on one thread ResNet-50's 512-channel 7 px layer at batch 8 groups 4 images; one image, its
     * 512-channel 14 px stride-2 layer (2 padded images fill the group's 1 MB) and weights within twice an L2 (256
     * channels at 14 px, 128 at 28 px) do not.
     */
    @Test
    void manyChannelForwardsGroupImages() {
        int threads = Parallel.numThreads();
        int[][][] grouped = {{{5, 512, 7, 7}, {256, 512, 3, 3}, {1, 1}}, {{4, 288, 13, 13}, {416, 288, 3, 3}, {2, 1}},
            {{5, 128, 4, 16}, {912, 128, 3, 3}, {1, 1}}};
        for (int[][] s : grouped) {
            Geometry g = geometry(s[0], s[1], s[2][0], s[2][0], s[2][1], s[2][1], 1);
            assertEquals(true, ConvDirectF32.handles(g), "direct forward for " + g);
            assertEquals(Math.min(4, s[0][0] / threads) > 1, ConvDirectF32.imagesTogether(g, 9 * s[0][1]) > 1, "groups for " + g);
        }
        Parallel.setNumThreads(1);
        try {
            assertEquals(4, ConvDirectF32.imagesTogether(geometry(new int[] {8, 512, 7, 7}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1), 9 * 512));
            assertEquals(1, ConvDirectF32.imagesTogether(geometry(new int[] {1, 512, 7, 7}, new int[] {512, 512, 3, 3}, 1, 1, 1, 1, 1), 9 * 512));
            assertEquals(1, ConvDirectF32.imagesTogether(geometry(new int[] {8, 512, 14, 14}, new int[] {512, 512, 3, 3}, 2, 2, 1, 1, 1), 9 * 512));
            assertEquals(1, ConvDirectF32.imagesTogether(geometry(new int[] {8, 256, 14, 14}, new int[] {256, 256, 3, 3}, 1, 1, 1, 1, 1), 9 * 256));
            assertEquals(1, ConvDirectF32.imagesTogether(geometry(new int[] {8, 128, 28, 28}, new int[] {128, 128, 3, 3}, 1, 1, 1, 1, 1), 9 * 128));
        } finally {
            Parallel.setNumThreads(threads);
        }
    }

    /**
     * {@code ConvolutionFastPathTest.chunkedReductionGivesTheSameBits}' shapes and ResNet's many-channel stride-1 3x3
     * layers (ResNet-50's 256 channels at 14 px and 512 at 7, ResNet-18's 128 at 8 px) cut their reduction into runs
     * of taps, forward and input gradient; weights that fit L1 (ResNet-20's 32 channels), stride 2 and 16x16 tiles do not.
     */
    @Test
    void manyChannelStride1ConvolutionsChunkTheirReduction() {
        int[][][] chunked = {{{5, 512, 7, 7}, {256, 512, 3, 3}}, {{2, 256, 14, 14}, {256, 256, 3, 3}},
            {{3, 128, 8, 8}, {128, 128, 3, 3}}, {{1, 96, 9, 16}, {64, 96, 3, 3}}, {{8, 512, 7, 7}, {512, 512, 3, 3}},
            {{32, 128, 8, 8}, {128, 128, 3, 3}}};
        for (int[][] s : chunked) {
            Geometry g = geometry(s[0], s[1], 1, 1, 1, 1, 1);
            assertEquals(true, ConvDirectF32.chunksReduction(g), "forward of " + g);
            assertEquals(true, ConvDirectF32.chunksReduction(CpuConvolutionKernels.flippedGeometry(g)), "input gradient of " + g);
        }
        assertEquals(true, ConvDirectF32.chunksReduction(geometry(new int[] {2, 64, 5, 8}, new int[] {32, 64, 3, 3}, 1, 1, 3, 1, 1)));
        assertEquals(true, ConvDirectF32.chunksReduction(geometry(new int[] {2, 64, 9, 7}, new int[] {64, 64, 3, 3}, 1, 1, 2, 1, 2)));
        assertEquals(false, ConvDirectF32.chunksReduction(geometry(new int[] {8, 32, 16, 16}, new int[] {32, 32, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.chunksReduction(geometry(new int[] {8, 512, 14, 14}, new int[] {512, 512, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.chunksReduction(geometry(new int[] {2, 128, 16, 16}, new int[] {48, 128, 3, 3}, 1, 1, 1, 1, 1)));
    }

    /**
     * {@code ConvolutionFastPathTest.channelBlockForwards}' shapes (but the grouped one) and ResNet-50's three 3x3 stride-2
     * layers run in 16-channel blocks (as does 288 -> 416 at stride 2 of {@link #manyChannelForwardsGroupImages}); stride 1,
     * 8-pixel rows (DCGAN's discriminator 64 -> 128 at 4x4 stride 2 among them), channels not in whole blocks, too few
     * taps, 16-channel output blocks and groups do not.
     */
    @Test
    void stridedSevenPixelRowsTakeChannelBlocks() {
        int[][][] taken = {{{8, 128, 56, 56}, {128, 128, 3, 3}, {2, 1, 1}}, {{8, 256, 28, 28}, {256, 256, 3, 3}, {2, 1, 1}},
            {{8, 512, 14, 14}, {512, 512, 3, 3}, {2, 1, 1}}, {{5, 512, 14, 14}, {64, 512, 3, 3}, {2, 1, 1}},
            {{2, 80, 13, 27}, {32, 80, 3, 3}, {2, 1, 1}}, {{2, 64, 21, 20}, {64, 64, 3, 3}, {3, 1, 1}},
            {{3, 64, 17, 14}, {32, 64, 3, 3}, {2, 1, 2}}, {{2, 48, 14, 14}, {32, 48, 4, 4}, {2, 1, 1}},
            {{1, 16, 28, 28}, {64, 16, 7, 7}, {2, 3, 1}}, {{4, 288, 13, 13}, {416, 288, 3, 3}, {2, 1, 1}}};
        for (int[][] s : taken) {
            Geometry g = geometry(s[0], s[1], s[2][0], s[2][0], s[2][1], s[2][1], s[2][2]);
            assertEquals(true, ConvChannelBlocksF32.handles(g), "channel blocks for " + g);
        }
        int[][][] left = {{{8, 512, 7, 7}, {512, 512, 3, 3}, {1, 1}}, {{8, 128, 32, 32}, {256, 128, 3, 3}, {2, 1}},
            {{8, 72, 14, 14}, {64, 72, 3, 3}, {2, 1}}, {{8, 48, 14, 14}, {64, 48, 3, 3}, {2, 1}},
            {{8, 128, 14, 14}, {48, 128, 3, 3}, {2, 1}}, {{64, 64, 32, 32}, {128, 64, 4, 4}, {2, 1}}};
        for (int[][] s : left) {
            Geometry g = geometry(s[0], s[1], s[2][0], s[2][0], s[2][1], s[2][1], 1);
            assertEquals(false, ConvChannelBlocksF32.handles(g), "channel blocks for " + g);
        }
        assertEquals(false, ConvChannelBlocksF32.handles(new Geometry(2, 256, 14, 14, 64, 3, 3, 2, 2, 1, 1, 1, 1, 2, 7, 7)));
    }

    @Test
    void smallImagesOfWholeTilesTakeTheRasterTiles() {
        // DCGAN's 128 -> 256 layer into 4x4, and 8-pixel images in rows of 2, 4 and 8; its input gradient by phases.
        assertEquals(true, ConvRasterTileF32.handles(geometry(new int[] {64, 128, 8, 8}, new int[] {256, 128, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvRasterTileF32.handles(geometry(new int[] {2, 5, 4, 8}, new int[] {64, 5, 3, 3}, 2, 1, 1, 1, 1)));
        assertEquals(true, ConvRasterTileF32.handles(geometry(new int[] {2, 16, 8, 1}, new int[] {96, 16, 3, 1}, 1, 1, 1, 0, 1)));
        assertEquals(true, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {64, 128, 8, 8}, new int[] {256, 128, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 4, 8}, new int[] {5, 32, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {64, 64, 16, 16}, new int[] {128, 64, 4, 4}, 2, 2, 1, 1, 1)));
        // 12 pixels (not whole tiles), 64 pixels (the row tiles'), 48 output channels, a 1x1 kernel, and, for the input gradient, 48
        // input channels, an odd input (output padding), 3x3 kernels.
        assertEquals(false, ConvRasterTileF32.handles(geometry(new int[] {2, 8, 3, 4}, new int[] {32, 8, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvRasterTileF32.handles(geometry(new int[] {64, 64, 16, 16}, new int[] {128, 64, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvRasterTileF32.handles(geometry(new int[] {2, 8, 4, 4}, new int[] {48, 8, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvRasterTileF32.handles(geometry(new int[] {4, 48, 8, 8}, new int[] {96, 48, 1, 1}, 2, 2, 0, 0, 1)));
        assertEquals(false, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {2, 48, 8, 8}, new int[] {64, 48, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 9, 8}, new int[] {64, 32, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvRasterTileF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 8, 8}, new int[] {64, 32, 3, 3}, 2, 2, 1, 1, 1)));
    }

    @Test
    void stridedInputGradientsSplitIntoPhases() {
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {2, 32, 16, 16}, new int[] {64, 32, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {2, 32, 16, 16}, new int[] {32, 32, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {2, 32, 16, 16}, new int[] {64, 32, 1, 1}, 2, 2, 0, 0, 1)));
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {1, 32, 18, 16}, new int[] {32, 32, 5, 3}, 3, 2, 2, 1, 1)));
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {2, 32, 16, 16}, new int[] {32, 32, 3, 3}, 2, 2, 0, 0, 1)));
        // 28-pixel phases on the 7-pixel tile; 7-pixel phases (14 px at stride 2) measured slower than GEMM + col2im.
        assertEquals(true, StridedInputGradF32.applies(geometry(new int[] {2, 32, 56, 56}, new int[] {32, 32, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, StridedInputGradF32.applies(geometry(new int[] {2, 32, 14, 14}, new int[] {32, 32, 3, 3}, 2, 2, 1, 1, 1)));
        // 16 input channels: the phases would run on the 16x16 tile, slower than GEMM + col2im.
        assertEquals(false, StridedInputGradF32.applies(geometry(new int[] {2, 16, 32, 32}, new int[] {32, 16, 3, 3}, 2, 2, 1, 1, 1)));
        // Stride 3, padding 1, 3x3: phase 2 reads only output row m + 1, which would need negative padding.
        assertEquals(false, StridedInputGradF32.applies(geometry(new int[] {1, 32, 18, 16}, new int[] {32, 32, 3, 3}, 3, 2, 1, 1, 1)));
        // Padding 3 with a 3x3 kernel: likewise.
        assertEquals(false, StridedInputGradF32.applies(geometry(new int[] {2, 32, 16, 16}, new int[] {32, 32, 3, 3}, 2, 2, 3, 3, 1)));
    }

    @Test
    void stride2InputGradientsCombinePhases() {
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {3, 16, 32, 32}, new int[] {32, 16, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 48, 16, 32}, new int[] {24, 48, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {1, 16, 8, 16}, new int[] {8, 16, 3, 3}, 2, 2, 1, 1, 1)));
        // Output rows of whole 7-pixel tiles (ResNet-50's 28, 14 and 7 px).
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {8, 128, 56, 56}, new int[] {128, 128, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {8, 256, 28, 28}, new int[] {256, 256, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(true, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {8, 512, 14, 14}, new int[] {512, 512, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 12, 12}, new int[] {32, 32, 3, 3}, 2, 2, 1, 1, 1)));
        // Left to the phases (or GEMM + col2im): 4x4 and 1x1 kernels, padding 0, odd sizes, 4-pixel output rows, 8 channels.
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 16, 16}, new int[] {32, 32, 4, 4}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 16, 16}, new int[] {64, 32, 1, 1}, 2, 2, 0, 0, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 16, 16}, new int[] {32, 32, 3, 3}, 2, 2, 0, 0, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 17, 16}, new int[] {32, 32, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 32, 8, 8}, new int[] {32, 32, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvDirectF32.handlesStride2InputGrad(geometry(new int[] {2, 8, 16, 16}, new int[] {32, 8, 3, 3}, 2, 2, 1, 1, 1)));
    }

    @Test
    void rowTilesTakeWholeRowShapes() {
        assertEquals(true, ConvF32.rowTiled(geometry(new int[] {2, 5, 6, 34}, new int[] {11, 5, 3, 3}, 1, 1, 0, 0, 1)));
        assertEquals(true, ConvF32.rowTiled(geometry(new int[] {1, 4, 9, 64}, new int[] {8, 4, 3, 3}, 1, 1, 2, 1, 2)));
        assertEquals(true, ConvF32.rowTiled(new Geometry(2, 6, 5, 32, 6, 1, 3, 1, 1, 0, 1, 1, 1, 2, 5, 32)));
        assertEquals(true, ConvF32.rowTiled(geometry(new int[] {2, 8, 4, 30}, new int[] {16, 8, 3, 3}, 1, 1, 1, 2, 1)));
        assertEquals(true, ConvF32.rowTiled(geometry(new int[] {1, 113, 3, 32}, new int[] {8, 113, 3, 3}, 1, 1, 1, 1, 1)));
        // 114 channels: two packed depth blocks; stride 2; 5-tap rows; 16-pixel rows.
        assertEquals(false, ConvF32.rowTiled(geometry(new int[] {1, 114, 3, 32}, new int[] {8, 114, 3, 3}, 1, 1, 1, 1, 1)));
        assertEquals(false, ConvF32.rowTiled(geometry(new int[] {1, 8, 64, 64}, new int[] {8, 8, 3, 3}, 2, 2, 1, 1, 1)));
        assertEquals(false, ConvF32.rowTiled(geometry(new int[] {1, 8, 32, 32}, new int[] {8, 8, 5, 5}, 1, 1, 2, 2, 1)));
        assertEquals(false, ConvF32.rowTiled(geometry(new int[] {1, 8, 16, 16}, new int[] {8, 8, 3, 3}, 1, 1, 1, 1, 1)));
    }
}
