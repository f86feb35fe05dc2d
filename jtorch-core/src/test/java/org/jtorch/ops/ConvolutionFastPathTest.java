package org.jtorch.ops;

import java.util.List;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.nn.F;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The float32 fast paths (implicit GEMM forward, flipped-weight input gradient, per-thread weight
 * gradients) on shapes the small fixtures do not reach: reductions deeper than one packed block
 * (cin*kh*kw > 1024), channel counts that are not multiples of the 8-row tile, pixel counts that are
 * not multiples of the 32-column strip, single images split across threads. Reference: the same
 * convolution in float64, which runs the im2col + GEMM path. The Winograd forward (on by default) is switched
 * off, so that 3x3 stride-1 shapes reach the direct and implicit-GEMM forwards they are chosen for, except in
 * {@link #randomShapesMatchFloat64}, which runs each shape both ways.
 */
class ConvolutionFastPathTest {
    private String winogradBefore;

    @BeforeEach
    void winogradOff() {
        winogradBefore = System.getProperty("jtorch.conv.winograd");
        System.setProperty("jtorch.conv.winograd", "false");
    }

    @AfterEach
    void restoreWinograd() {
        if (winogradBefore == null) System.clearProperty("jtorch.conv.winograd");
        else System.setProperty("jtorch.conv.winograd", winogradBefore);
    }

    private static void compare(long[] xShape, long[] wShape, int[] stride, int[] padding, int[] dilation, int groups) {
        compareWithFloat64(xShape, wShape, wShape[0], (x, w, b) -> F.conv2d(x, w, b, stride, padding, dilation, groups));
    }

    /** A convolution-like op of (input, weight, bias). */
    private interface Op {
        Tensor apply(Tensor x, Tensor w, Tensor b);
    }

    /** {@code op} in float32 against float64 on the same random operands: its output and its three gradients. */
    private static void compareWithFloat64(long[] xShape, long[] wShape, long biasLength, Op op) {
        try (Tensor x64 = Torch.randn(xShape, DType.FLOAT64, Device.cpu(), Torch.manualSeed(11));
             Tensor w64 = Torch.randn(wShape, DType.FLOAT64, Device.cpu(), Torch.manualSeed(12));
             Tensor b64 = Torch.randn(new long[] {biasLength}, DType.FLOAT64, Device.cpu(), Torch.manualSeed(13));
             Tensor x32 = x64.to(DType.FLOAT32); Tensor w32 = w64.to(DType.FLOAT32); Tensor b32 = b64.to(DType.FLOAT32)) {
            List<Tensor> in64 = List.of(x64, w64, b64), in32 = List.of(x32, w32, b32);
            in64.forEach(t -> t.requiresGrad_(true));
            in32.forEach(t -> t.requiresGrad_(true));
            try (Tensor y64 = op.apply(x64, w64, b64);
                 Tensor y32 = op.apply(x32, w32, b32);
                 Tensor u64 = Torch.randn(y64.shape(), DType.FLOAT64, Device.cpu(), Torch.manualSeed(14));
                 Tensor u32 = u64.to(DType.FLOAT32)) {
                assertClose(y64, y32, "output");
                Tensor[] g64 = Autograd.grad(new Tensor[] {y64}, in64.toArray(new Tensor[0]), new Tensor[] {u64}, false, false, false);
                Tensor[] g32 = Autograd.grad(new Tensor[] {y32}, in32.toArray(new Tensor[0]), new Tensor[] {u32}, false, false, false);
                String[] names = {"input gradient", "weight gradient", "bias gradient"};
                for (int i = 0; i < 3; i++) assertClose(g64[i], g32[i], names[i]);
            }
        }
    }

    /** float32 sums of a few thousand products against float64: relative 1e-4 of the values' scale. */
    private static void assertClose(Tensor expected, Tensor actual, String what) {
        double scale;
        try (Tensor a = expected.abs(); Tensor m = a.max()) {
            scale = Math.max(1, m.item());
        }
        try (Tensor a32 = actual.to(DType.FLOAT64)) {
            Fixtures.assertClose(expected, a32, 0, 1e-4 * scale, what);
        }
    }

    /**
     * An empty batch on every float32 fast path's shape (1x1 as GEMMs, small maps, Winograd's, the stems, DCGAN's 4x4
     * stride 2, a transposed convolution), each right after two images of the same shape: an empty output of PyTorch's
     * shape and zero weight and bias gradients. The API fuzzer found the 1x1 path dividing by its zero column blocks;
     * then the weight gradients of no images returned what the kernels' kept buffers held from the call before.
     */
    @Test
    void emptyBatchesOnEveryFastPath() {
        long[][][] shapes = { // input, weight; stride, padding
                {{0, 16, 8, 8}, {32, 16, 1, 1}, {1, 0}}, {{0, 16, 8, 8}, {32, 16, 1, 1}, {2, 0}},
                {{0, 1, 1}, {1, 1, 1}, {2, 0}}, {{0, 32, 16, 16}, {32, 32, 3, 3}, {1, 1}},
                {{0, 64, 8, 8}, {64, 64, 3, 3}, {1, 1}}, {{0, 16, 32, 32}, {32, 16, 3, 3}, {2, 1}},
                {{0, 3, 64, 64}, {64, 3, 7, 7}, {2, 3}}, {{0, 1, 28, 28}, {32, 1, 3, 3}, {1, 0}},
                {{0, 6, 14, 14}, {16, 6, 5, 5}, {1, 0}}, {{0, 64, 16, 16}, {128, 64, 4, 4}, {2, 1}}};
        for (String winograd : new String[] {"false", "true"}) {
            System.setProperty("jtorch.conv.winograd", winograd);
            for (long[][] c : shapes) {
                long[] two = c[0].clone();
                two[0] = 2;
                weightAndBiasGradients(two, c, 1);
                String what = java.util.Arrays.toString(c[0]) + " * " + java.util.Arrays.toString(c[1]) + ", winograd " + winograd;
                double[] maxima = weightAndBiasGradients(c[0], c, 1);
                org.junit.jupiter.api.Assertions.assertEquals(0.0, maxima[0], what + ": weight gradient");
                org.junit.jupiter.api.Assertions.assertEquals(0.0, maxima[1], what + ": bias gradient");
            }
        }
    }

    /** The largest magnitudes of the weight and bias gradients of a convolution and a transposed one of input {@code x}. */
    private static double[] weightAndBiasGradients(long[] xShape, long[][] c, long seed) {
        int stride = (int) c[2][0], padding = (int) c[2][1];
        boolean oneD = xShape.length == 3;
        try (Tensor x = Torch.randn(xShape, DType.FLOAT32, Device.cpu(), Torch.manualSeed(seed)).requiresGrad_(true);
             Tensor w = Torch.randn(c[1], DType.FLOAT32, Device.cpu(), Torch.manualSeed(seed + 1)).requiresGrad_(true);
             Tensor b = Torch.randn(new long[] {c[1][0]}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(seed + 2)).requiresGrad_(true);
             Tensor y = oneD ? F.conv1d(x, w, b, stride, padding, 2, 1) : F.conv2d(x, w, b, stride, padding);
             Tensor x4 = oneD ? x.unsqueeze(3) : x.alias(); Tensor wt = oneD ? w.unsqueeze(3) : w.transpose(0, 1);
             Tensor t = F.convTranspose2d(x4, wt, null, stride, padding);
             Tensor loss = y.sum(); Tensor loss2 = t.sum(); Tensor total = loss.add(loss2)) {
            org.junit.jupiter.api.Assertions.assertEquals(xShape[0] * c[1][0], y.size(0) * y.size(1));
            Tensor[] g = Autograd.grad(new Tensor[] {total}, new Tensor[] {x, w, b}, null, false, false, false);
            try (Tensor gx = g[0]; Tensor gw = g[1]; Tensor gb = g[2];
                 Tensor gwAbs = gw.abs(); Tensor gwMax = gwAbs.max(); Tensor gbAbs = gb.abs(); Tensor gbMax = gbAbs.max()) {
                org.junit.jupiter.api.Assertions.assertArrayEquals(x.shape(), gx.shape());
                return new double[] {gwMax.item(), gbMax.item()};
            }
        }
    }

    /**
     * Small output images (at most 16 pixels, several images) run as one GEMM over the batch: ResNet-18's last stage at
     * 64 px (2x2), stride 2 into 2x2, odd sizes, padding 2 with dilation 2, a 5x3 kernel, 1x1 stride 2 (downsampling).
     */
    @Test
    void smallImagesRunAsOneGemmOverTheBatch() {
        compare(new long[] {6, 64, 2, 2}, new long[] {48, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {5, 32, 4, 4}, new long[] {40, 32, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 20, 3, 5}, new long[] {17, 20, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {4, 16, 4, 4}, new long[] {24, 16, 3, 3}, new int[] {1}, new int[] {2}, new int[] {2}, 1);
        compare(new long[] {3, 12, 6, 4}, new long[] {9, 12, 5, 3}, new int[] {2, 1}, new int[] {1, 0}, new int[] {1}, 1);
        compare(new long[] {4, 48, 8, 8}, new long[] {96, 48, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
    }

    /**
     * 1x1 convolutions as GEMMs without im2col (ConvPointwiseF32): strips of 32 columns that lie in one image or cross
     * into the next (7- and 14-pixel images, odd sizes, images smaller than a strip), output and input channel counts
     * that are not whole 8-row or 32-column tiles, depths over one packed block (1100 and 1030, in strips that cross
     * images and in whole ones, forward and input gradient; a depth of 200 against 40 rows, in 128-deep blocks and whole
     * strips), strides 2 and 3 (gathered input, scattered input gradient, odd sizes whose last row and column the stride
     * skips; a weight gradient 270 pixels deep, over one depth block, in two blocks of rows, the second ragged), a single image; and a 1x1 kernel with padding, and with groups, which this path leaves to the general one.
     */
    @Test
    void pointwiseConvolutionsAsGemms() {
        compare(new long[] {3, 64, 7, 7}, new long[] {32, 64, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 40, 14, 14}, new long[] {72, 40, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {5, 13, 3, 5}, new long[] {11, 13, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 1100, 6, 6}, new long[] {16, 1100, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 1030, 4, 16}, new long[] {24, 1030, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 40, 8, 8}, new long[] {1030, 40, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 48, 9, 40}, new long[] {96, 48, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 200, 16, 16}, new long[] {40, 200, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {3, 32, 15, 14}, new long[] {64, 32, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 24, 11, 10}, new long[] {40, 24, 1, 1}, new int[] {3, 2}, new int[] {0}, new int[] {2}, 1);
        compare(new long[] {3, 40, 20, 18}, new long[] {140, 40, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 16, 6, 6}, new long[] {24, 16, 1, 1}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 9, 9}, new long[] {48, 16, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 2);
        // Images of 37 whole strips, in blocks within each image (13, 13 and 11 strips).
        compare(new long[] {2, 8, 37, 32}, new long[] {24, 8, 1, 1}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        // Stride 2 along rows of 64, 70 and 45 pixels, and 3 by 2.
        compare(new long[] {1, 8, 8, 64}, new long[] {16, 8, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 16, 13, 70}, new long[] {24, 16, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 16, 10, 45}, new long[] {24, 16, 1, 1}, new int[] {3, 2}, new int[] {0}, new int[] {1}, 1);
    }

    /**
     * Random 1x1 convolutions, ConvPointwiseF32's domain and around it, each with the strided input gradient written row
     * by row once and as a zero fill then a scatter ({@code jtorch.conv.pointwiseScatterOnce}): 1-3 images of odd and even
     * sizes 1-20, strides 1-3 along each axis (the last row or column skipped or not), 1-70 channels and now and then
     * over 1024 (depth blocks of the packed weight, forward or input gradient), and sometimes padding 1 or 2 groups, which
     * leave the path.
     */
    @Test
    void randomPointwiseConvolutionsMatchFloat64() {
        Random r = new Random(1122);
        for (int i = 0; i < 14; i++) {
            int groups = r.nextInt(8) == 0 ? 2 : 1, pad = r.nextInt(8) == 0 ? 1 : 0;
            int cin = groups * (1 + r.nextInt(70)), cout = groups * (1 + r.nextInt(70));
            if (i % 5 == 4) {
                if (r.nextBoolean()) cin = 1025 + r.nextInt(100);
                else cout = 1025 + r.nextInt(100);
                groups = 1;
            }
            int sh = 1 + r.nextInt(3), sw = 1 + r.nextInt(3);
            long[] x = {1 + r.nextInt(3), cin, 1 + r.nextInt(20), 1 + r.nextInt(20)}, wt = {cout, cin / groups, 1, 1};
            int g = groups;
            for (String once : new String[] {"true", "false"}) {
                withProperty("jtorch.conv.pointwiseScatterOnce", once, () -> {
                    try {
                        compare(x, wt, new int[] {sh, sw}, new int[] {pad}, new int[] {1}, g);
                    } catch (AssertionError e) {
                        throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride "
                                + sh + "x" + sw + ", padding " + pad + ", groups " + g + ", scatter once " + once, e);
                    }
                });
            }
        }
    }

    /**
     * Kernels that cover the whole unpadded image run as matrix products (ConvWholeImageF32): DCGAN's discriminator head
     * ([256, 4, 4] -> 1) and its generator's first layer's shape (256 channels of 4x4 -> 100), a kernel that is not square,
     * a stride (no part in a one-pixel output), a single image, one input channel; and padding, which leaves the path.
     */
    @Test
    void wholeImageKernelsAsMatrixProducts() {
        compare(new long[] {6, 256, 4, 4}, new long[] {1, 256, 4, 4}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {5, 256, 4, 4}, new long[] {100, 256, 4, 4}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {3, 7, 3, 5}, new long[] {9, 7, 3, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 8, 3, 3}, new long[] {4, 8, 3, 3}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 33, 2, 2}, new long[] {17, 33, 2, 2}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {4, 1, 5, 5}, new long[] {3, 1, 5, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 8, 3, 3}, new long[] {4, 8, 5, 5}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /** DCGAN's (32 x 32) convolutions at a small batch: 4x4 kernels, stride 2, padding 1, from 1, 64 and 128 channels. */
    @Test
    void dcganConvolutions() {
        compare(new long[] {3, 1, 32, 32}, new long[] {64, 1, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 64, 16, 16}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 128, 8, 8}, new long[] {256, 128, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Output images of 8 or 16 pixels with output channels in 32-channel blocks take the raster-order tiles (8 pixels
     * across output rows): rows of 4, 2, 8 and 1 pixels, strides, row dilation, padding, a bias, 1 to 70 input channels;
     * and the 4x4 stride-2 padding-1 input gradient by phases (input channels in 32-channel blocks, gradOut of 2x4,
     * 4x4, 6x8 and 8x8 pixels, with 5 to 256 of its channels).
     */
    @Test
    void rasterTilesOnSmallImages() {
        compare(new long[] {3, 70, 8, 8}, new long[] {32, 70, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 5, 4, 8}, new long[] {64, 5, 3, 3}, new int[] {2, 1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 1, 6, 4}, new long[] {32, 1, 3, 3}, new int[] {1}, new int[] {1, 0}, new int[] {2, 1}, 1);
        compare(new long[] {4, 9, 3, 10}, new long[] {32, 9, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 16, 8, 1}, new long[] {96, 16, 3, 1}, new int[] {1}, new int[] {1, 0}, new int[] {1}, 1);
        compare(new long[] {2, 32, 4, 8}, new long[] {5, 32, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 64, 8, 8}, new long[] {17, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 8, 8}, new long[] {256, 32, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 16, 16}, new long[] {40, 32, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 64, 12, 16}, new long[] {7, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Random small-output shapes (at most 16 output pixels, 2-5 images, 16 or more output channels: the batch GEMM, its
     * column matrices gathered a vector of pixels at a time): kernels 1-5 wide, strides 1-3, dilations 1-2, paddings
     * 0-2, odd and non-square images, output pixel counts from 1 to 16.
     */
    @Test
    void randomSmallImagesMatchFloat64() {
        compareRandomSmallOutputs(new Random(31), 16, 5, 3, 12, new int[] {2, 4}, new int[] {1, 40}, 30);
    }

    /**
     * Input gradients of few input channels (at most 8) on maps at most 16 pixels wide, stride 1 (ConvNarrowRowsF32: an
     * output row's pixels in the lanes, kernel rows over the padding skipped): LeNet-5's conv2, 8 channels (every
     * accumulator), one channel, a non-square kernel with asymmetric padding, and random shapes.
     */
    @Test
    void narrowRowInputGradientsMatchFloat64() {
        compare(new long[] {5, 6, 14, 14}, new long[] {16, 6, 5, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {3, 8, 9, 16}, new long[] {5, 8, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 1, 12, 7}, new long[] {4, 1, 5, 5}, new int[] {1}, new int[] {2}, new int[] {1}, 1);
        compare(new long[] {3, 7, 6, 11}, new long[] {9, 7, 2, 4}, new int[] {1}, new int[] {1, 3}, new int[] {1}, 1);
        Random r = new Random(47);
        for (int i = 0; i < 24; ) {
            int kh = 2 + r.nextInt(4), kw = 1 + r.nextInt(5), ph = r.nextInt(kh), pw = r.nextInt(kw);
            int h = 1 + r.nextInt(12), w = 1 + r.nextInt(16);
            if (h + 2 * ph < kh || w + 2 * pw < kw) continue;
            long[] x = {1 + r.nextInt(4), 1 + r.nextInt(8), h, w};
            long[] wt = {1 + r.nextInt(20), x[1], kh, kw};
            try {
                compare(x, wt, new int[] {1}, new int[] {ph, pw}, new int[] {1}, 1);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", padding "
                        + ph + "x" + pw, e);
            }
            i++;
        }
    }

    /**
     * {@code shapes} random convolutions with at most 16 output pixels against float64: kernels 1 to {@code maxKernel}
     * wide, strides 1 to {@code maxStride}, dilations 1-2, paddings 0-2, images 1 to {@code maxSize} each way, images and
     * input channels {@code [from, from + range)}, 16 to {@code 16 + coutRange - 1} output channels.
     */
    private static void compareRandomSmallOutputs(Random r, int shapes, int maxKernel, int maxStride, int maxSize, int[] images,
                                                  int[] channels, int coutRange) {
        for (int i = 0; i < shapes; ) {
            int kh = 1 + r.nextInt(maxKernel), kw = 1 + r.nextInt(maxKernel), s = 1 + r.nextInt(maxStride), d = 1 + r.nextInt(2);
            int ph = r.nextInt(3), pw = r.nextInt(3), h = 1 + r.nextInt(maxSize), w = 1 + r.nextInt(maxSize);
            int oh = (h + 2 * ph - d * (kh - 1) - 1) / s + 1, ow = (w + 2 * pw - d * (kw - 1) - 1) / s + 1;
            if (h + 2 * ph < d * (kh - 1) + 1 || w + 2 * pw < d * (kw - 1) + 1 || oh * ow > 16) continue;
            long[] x = {images[0] + r.nextInt(images[1]), channels[0] + r.nextInt(channels[1]), h, w};
            long[] wt = {16 + r.nextInt(coutRange), x[1], kh, kw};
            try {
                compare(x, wt, new int[] {s}, new int[] {ph, pw}, new int[] {d}, 1);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride " + s
                        + ", padding " + ph + "x" + pw + ", dilation " + d, e);
            }
            i++;
        }
    }

    /**
     * Tiny output maps of 16 or more images (ConvSmallMapF32: the batch as the GEMM's columns, taps as pixel pairs):
     * ResNet-18's 2x2 and 4x4 layers at small channel counts, 33 images (a second, one-image strip of the 32-image tile),
     * channel counts that are not whole 8- or 32-channel strips, stride 2 into 2x2, padding 2 with dilation 2 (taps that
     * read no pixel at all), a non-square 3x2 kernel, and a stride-2 layer from 8x8 whose input gradient alone runs here.
     */
    @Test
    void tinyMapsRunAsTapPairs() {
        compare(new long[] {33, 24, 2, 2}, new long[] {40, 24, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {16, 32, 4, 4}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {17, 20, 3, 5}, new long[] {19, 20, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {20, 16, 4, 4}, new long[] {24, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {18, 17, 4, 4}, new long[] {23, 17, 3, 3}, new int[] {1}, new int[] {2}, new int[] {2}, 1);
        compare(new long[] {16, 18, 4, 3}, new long[] {21, 18, 3, 2}, new int[] {1}, new int[] {1, 0}, new int[] {1}, 1);
        compare(new long[] {16, 16, 8, 8}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        // DCGAN's 4x4 stride-2 layer from 8x8 into 4x4 (its padding is 23% of the products: all three passes here), and
        // a ragged 7x6 input.
        compare(new long[] {33, 20, 8, 8}, new long[] {24, 20, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {17, 18, 7, 6}, new long[] {19, 18, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Random tiny-map shapes of 16-40 images and 16-40 channels each way (ConvSmallMapF32 where its predicates take them,
     * the paths before it where not): kernels 1-4 wide, strides 1-2, dilations 1-2, paddings 0-2, odd and non-square
     * images of at most 6x6, output pixel counts from 1 to 16.
     */
    @Test
    void randomTinyMapsMatchFloat64() {
        compareRandomSmallOutputs(new Random(37), 10, 4, 2, 6, new int[] {16, 25}, new int[] {16, 25}, 25);
        // Input maps up to 8x8 (the padded ones among them take the tap pairs for all three passes).
        compareRandomSmallOutputs(new Random(43), 10, 4, 2, 8, new int[] {16, 25}, new int[] {16, 25}, 25);
    }

    /**
     * Transposed convolutions against float64, forward and the input, weight and bias gradients: DCGAN's generator
     * layers (100 -> 256 from 1x1, 256 -> 128, 128 -> 64, 64 -> 1, kernel 4, stride 2, padding 1) at a small batch,
     * then random shapes with output padding, strides, dilations and groups.
     */
    @Test
    void transposedConvolutionsMatchFloat64() {
        compareTransposed(new long[] {3, 100, 1, 1}, new long[] {100, 256, 4, 4}, new int[] {1}, new int[] {0}, new int[] {0}, new int[] {1}, 1);
        compareTransposed(new long[] {3, 256, 4, 4}, new long[] {256, 128, 4, 4}, new int[] {2}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compareTransposed(new long[] {3, 128, 8, 8}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compareTransposed(new long[] {3, 64, 16, 16}, new long[] {64, 1, 4, 4}, new int[] {2}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        Random r = new Random(41);
        for (int i = 0; i < 16; ) {
            int groups = 1 + r.nextInt(2), k = 1 + r.nextInt(5), s = 1 + r.nextInt(3), d = 1 + r.nextInt(2), p = r.nextInt(3);
            int op = r.nextInt(Math.max(s, d));
            int h = 1 + r.nextInt(9), w = 1 + r.nextInt(9);
            long hOut = (h - 1L) * s - 2L * p + d * (k - 1L) + op + 1, wOut = (w - 1L) * s - 2L * p + d * (k - 1L) + op + 1;
            if (hOut <= 0 || wOut <= 0) continue;
            long[] x = {2 + r.nextInt(3), groups * (1 + r.nextInt(40)), h, w}, wt = {x[1], 1 + r.nextInt(40), k, k};
            try {
                compareTransposed(x, wt, new int[] {s}, new int[] {p}, new int[] {op}, new int[] {d}, groups);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride " + s
                        + ", padding " + p + ", output padding " + op + ", dilation " + d + ", groups " + groups, e);
            }
            i++;
        }
    }

    private static void compareTransposed(long[] xShape, long[] wShape, int[] stride, int[] padding, int[] outputPadding, int[] dilation,
                                          int groups) {
        compareWithFloat64(xShape, wShape, wShape[1] * groups,
                (x, w, b) -> F.convTranspose2d(x, w, b, stride, padding, outputPadding, groups, dilation));
    }

    @Test
    void deepReductionSplitsIntoBlocks() {
        compare(new long[] {2, 130, 7, 9}, new long[] {20, 130, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    @Test
    void singleImageWithRaggedTiles() {
        compare(new long[] {1, 5, 13, 11}, new long[] {11, 5, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    @Test
    void resnetShapesAtSmallBatch() {
        compare(new long[] {4, 16, 32, 32}, new long[] {16, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {4, 16, 16, 16}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 64, 8, 8}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 32, 8, 8}, new long[] {64, 32, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
    }

    @Test
    void groupsDilationAndAsymmetricPadding() {
        compare(new long[] {3, 12, 10, 9}, new long[] {18, 4, 3, 2}, new int[] {1}, new int[] {2, 0}, new int[] {2, 1}, 3);
        compare(new long[] {2, 8, 9, 9}, new long[] {8, 1, 5, 5}, new int[] {1}, new int[] {2}, new int[] {1}, 8);
    }

    /**
     * The weight gradient's channels-last copy of the image transposes whole 16x16 blocks of (channels,
     * pixels) with vectors and the rest element by element: channel counts and widths on both sides of 16,
     * with strides, dilation, groups and kernels that are not square.
     */
    @Test
    void channelsLastCopiesInWholeAndPartialBlocks() {
        compare(new long[] {2, 32, 9, 11}, new long[] {16, 16, 2, 3}, new int[] {2, 1}, new int[] {1, 2}, new int[] {1, 2}, 2);
        compare(new long[] {3, 64, 7, 6}, new long[] {8, 32, 5, 1}, new int[] {1}, new int[] {2, 0}, new int[] {1}, 2);
        compare(new long[] {2, 32, 17, 16}, new long[] {8, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /** Strides 2 and 3 with padding, dilation, groups, and one image split across threads. */
    @Test
    void stridedConvolutions() {
        compare(new long[] {3, 16, 32, 32}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 6, 23, 29}, new long[] {10, 3, 3, 4}, new int[] {3}, new int[] {2, 1}, new int[] {2, 1}, 2);
        compare(new long[] {2, 4, 17, 18}, new long[] {8, 4, 5, 5}, new int[] {2}, new int[] {2}, new int[] {1}, 1);
    }
    /**
     * Each thread keeps its padded-image buffer's zero border between images: convolutions whose layouts
     * share one buffer (padding 1, then 2, then a weight gradient's channels-last copy, then padding 1 again)
     * each match the float64 reference, so no layout sees another's data in its border.
     */
    @Test
    void alternatingPaddingsKeepEachBorderZero() {
        for (int round = 0; round < 2; round++) {
            compare(new long[] {4, 16, 12, 12}, new long[] {16, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
            compare(new long[] {4, 16, 12, 12}, new long[] {16, 16, 3, 3}, new int[] {1}, new int[] {2}, new int[] {1}, 1);
            compare(new long[] {4, 16, 10, 12}, new long[] {16, 16, 3, 3}, new int[] {1}, new int[] {0, 1}, new int[] {1}, 1);
        }
    }

    /**
     * The direct (channels-in-lanes) forward and weight gradient: 8x32 tiles (32 and 64 output channels, rows
     * of 8, 16 and 24 pixels), the 16x16 tile (16 channels, 16-pixel rows), strides, dilated kernel rows, a
     * 5x3 kernel, one image split by rows, and window rows that are not whole 48-tap tiles (3 and 24 input
     * channels: narrow tiles with masked lanes). {@code ConvolutionPathsTest} checks these shapes take the path.
     */
    @Test
    void directConvolutionTiles() {
        compare(new long[] {2, 16, 8, 8}, new long[] {32, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 24, 12, 16}, new long[] {64, 24, 3, 3}, new int[] {1}, new int[] {2, 1}, new int[] {2, 1}, 1);
        compare(new long[] {3, 3, 16, 16}, new long[] {16, 3, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 8, 20, 24}, new long[] {32, 8, 5, 3}, new int[] {2, 1}, new int[] {2, 1}, new int[] {1}, 1);
        compare(new long[] {2, 16, 32, 32}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Direct forwards whose blocked weights are over 2^20 floats, several images running each weight block together
     * ({@code ConvDirectF32.imagesTogether}): the 7-pixel tile at 7 px (ResNet-50's 512-channel layer, at 512 -> 256
     * channels), at stride 2 from an odd 13 px map, the 8x32 tile on 8-pixel rows with a dilated kernel, and the 16x16
     * tile (912 channels); odd batches (a last group of fewer images) and one image (no groups); the stride-1 input
     * gradients run the same groups on the flipped weights. {@code ConvolutionPathsTest} checks these shapes group their
     * images.
     */
    @Test
    void manyChannelForwardsGroupImages() {
        compare(new long[] {5, 512, 7, 7}, new long[] {256, 512, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 512, 7, 7}, new long[] {256, 512, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {4, 288, 13, 13}, new long[] {416, 288, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 512, 10, 8}, new long[] {256, 512, 3, 3}, new int[] {1}, new int[] {1}, new int[] {2, 1}, 1);
        compare(new long[] {5, 128, 4, 16}, new long[] {912, 128, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Grouping images changes only the order in which tiles run ({@code -Djtorch.conv.groupImages=false} takes one image
     * at a time): the forward and the stride-1 input gradient of grouped shapes above come out bit for bit.
     */
    @Test
    void groupedImagesGiveTheSameBits() {
        long[][][] shapes = {{{5, 512, 7, 7}, {256, 512, 3, 3}}, {{5, 128, 4, 16}, {912, 128, 3, 3}}};
        for (long[][] sh : shapes) {
            assertSameGradientBits("jtorch.conv.groupImages", sh[0], sh[1], 1, 1, false);
            float[][] outs = new float[2][];
            String[] ways = {"true", "false"};
            for (int i = 0; i < 2; i++) {
                int way = i;
                withProperty("jtorch.conv.groupImages", ways[i], () -> {
                    try (Tensor x = Torch.randn(sh[0], DType.FLOAT32, Device.cpu(), Torch.manualSeed(31));
                         Tensor w = Torch.randn(sh[1], DType.FLOAT32, Device.cpu(), Torch.manualSeed(32));
                         Tensor b = Torch.randn(new long[] {sh[1][0]}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(33));
                         Tensor y = F.conv2d(x, w, b, new int[] {1}, new int[] {1}, new int[] {1}, 1)) {
                        outs[way] = y.toFloatArray();
                    }
                });
            }
            for (int k = 0; k < outs[0].length; k++) {
                if (Float.floatToRawIntBits(outs[0][k]) != Float.floatToRawIntBits(outs[1][k])) {
                    throw new AssertionError("groupImages, x " + java.util.Arrays.toString(sh[0]) + ": output element " + k + " "
                            + outs[0][k] + " grouped, " + outs[1][k] + " one image at a time");
                }
            }
        }
    }

    /**
     * The stride-1 direct forwards and input gradients whose reduction runs in chunks of taps across the tiles
     * ({@code ConvDirectF32.chunkedBlockRows}, skipping window rows in the padding) against whole tiles
     * ({@code -Djtorch.conv.chunkedReduction=false}), bit for bit: the 7x32 tile at 7 px over grouped images (ResNet-50's
     * 512 channels, at 512 -> 256) and at 14 px one image at a time (two tiles a row), the 8x32 tile at 8 px, one image
     * (its rows split over the threads), and padding 3 rows deep (output rows whose every window row is padding: the
     * bias alone) and a dilated kernel with padding 2.
     */
    @Test
    void chunkedReductionGivesTheSameBits() {
        long[][][] shapes = {{{5, 512, 7, 7}, {256, 512, 3, 3}}, {{2, 256, 14, 14}, {256, 256, 3, 3}},
                {{3, 128, 8, 8}, {128, 128, 3, 3}}, {{1, 96, 9, 16}, {64, 96, 3, 3}}};
        for (long[][] sh : shapes) {
            assertSameGradientBits("jtorch.conv.chunkedReduction", sh[0], sh[1], 1, 1, false);
            assertSameForwardBits("jtorch.conv.chunkedReduction", sh[0], sh[1], new int[] {1}, new int[] {1});
        }
        assertSameForwardBits("jtorch.conv.chunkedReduction", new long[] {2, 64, 5, 8}, new long[] {32, 64, 3, 3},
                new int[] {3, 1}, new int[] {1});
        assertSameForwardBits("jtorch.conv.chunkedReduction", new long[] {2, 64, 9, 7}, new long[] {64, 64, 3, 3},
                new int[] {2, 1}, new int[] {2, 1});
    }

    /**
     * Random stride-1 convolutions in the chunked reduction's domain against float64: 1-3 images, 48-176 input channels
     * (a block's weights over L1), 32-128 output channels, 3-10 rows of 7, 8, 14, 16, 21 or 24 pixels (7x32 and 8x32
     * tiles, one or several a row, a last one overlapping), row padding 0-3 (rows of padding alone at 3), dilation 2 now
     * and then; the three gradients alongside (the input gradient runs the same tiles on the flipped weights).
     */
    @Test
    void randomChunkedReductionsMatchFloat64() {
        Random r = new Random(27);
        int[] widths = {7, 8, 14, 16, 21, 24};
        for (int i = 0; i < 6; i++) {
            int n = 1 + r.nextInt(3), cin = 48 + 16 * r.nextInt(9), cout = 32 * (1 + r.nextInt(4));
            int h = 3 + r.nextInt(8), w = widths[r.nextInt(widths.length)], padH = r.nextInt(4), dil = r.nextInt(4) == 0 ? 2 : 1;
            if (h + 2 * padH < 2 * dil + 1) padH = 2;
            compare(new long[] {n, cin, h, w}, new long[] {cout, cin, 3, 3}, new int[] {1}, new int[] {padH, 1},
                    new int[] {dil, 1}, 1);
        }
    }

    /**
     * Random many-channel convolutions around the grouped forward's domain: 4-5 images (groups at 1 and 2 threads) and
     * sometimes 1, 384 or 512 input channels, 304-352 output channels (multiples of 16, some not of 32: the 16x16 tile),
     * 5-9 rows of 7 or 8 pixels at stride 1 (grouped) or 14-16 at stride 2 (too large a map to group), row padding 0-2,
     * dilation 2 now and then, 2 groups now and then (which leave the path).
     */
    @Test
    void randomManyChannelConvolutionsMatchFloat64() {
        Random r = new Random(26);
        int[] widths = {7, 8, 7, 8, 14, 16};
        for (int i = 0; i < 5; i++) {
            int n = r.nextInt(4) == 0 ? 1 : 4 + r.nextInt(2), cin = 384 + 128 * r.nextInt(2), cout = 304 + 16 * r.nextInt(4);
            int h = 5 + r.nextInt(5), w = widths[r.nextInt(widths.length)], stride = w >= 14 ? 2 : 1, padH = r.nextInt(3);
            int dil = r.nextInt(4) == 0 ? 2 : 1, groups = r.nextInt(5) == 0 ? 2 : 1;
            if (h + 2 * padH < 2 * dil + 1) padH = 2;
            compare(new long[] {n, cin, h, w}, new long[] {cout, cin / groups, 3, 3}, new int[] {stride}, new int[] {padH, 1},
                    new int[] {dil, 1}, groups);
        }
    }

    /**
     * Strided forwards on rows of whole 7-pixel tiles with the reduction in 16-channel blocks
     * ({@code ConvChannelBlocksF32}): ResNet-50's three 3x3 stride-2 layers with fewer output channels (512 channels from
     * 14 px in 5 images, 256 from 28 px in 3, 128 from 56 px in one), odd and non-square maps, stride 3, dilated kernel
     * rows, a 4x4 and a 7x7 stride-2 kernel, and two groups (which leave the path); the output and its three gradients.
     * {@code ConvolutionPathsTest} checks these shapes reach the path.
     */
    @Test
    void channelBlockForwards() {
        compare(new long[] {5, 512, 14, 14}, new long[] {64, 512, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 256, 28, 28}, new long[] {96, 256, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 128, 56, 56}, new long[] {32, 128, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 80, 13, 27}, new long[] {32, 80, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 64, 21, 20}, new long[] {64, 64, 3, 3}, new int[] {3}, new int[] {1, 1}, new int[] {1}, 1);
        compare(new long[] {3, 64, 17, 14}, new long[] {32, 64, 3, 3}, new int[] {2}, new int[] {1, 1}, new int[] {2, 1}, 1);
        compare(new long[] {2, 48, 14, 14}, new long[] {32, 48, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 16, 28, 28}, new long[] {64, 16, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {2, 256, 14, 14}, new long[] {64, 128, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 2);
    }

    /**
     * Random strided convolutions in the channel-block forward's domain: 1-5 images, 64-320 input channels (whole
     * 16-channel blocks), 32-96 output channels, 3x3 to 5x5 kernels, stride 2 or 3, row dilation 1-2, padding 0-2,
     * sizes chosen so that the output rows are 7, 14 or 21 pixels.
     */
    @Test
    void randomChannelBlockForwardsMatchFloat64() {
        Random r = new Random(27);
        for (int i = 0; i < 6; ) {
            int n = 1 + r.nextInt(5), cin = 16 * (4 + r.nextInt(17)), cout = 32 * (1 + r.nextInt(3));
            int k = 3 + r.nextInt(3), s = 2 + r.nextInt(2), dh = 1 + r.nextInt(2), ph = r.nextInt(3), pw = r.nextInt(3);
            int ow = 7 * (1 + r.nextInt(3)), w = (ow - 1) * s + k - 2 * pw + r.nextInt(s);
            int h = 4 + r.nextInt(20);
            if (w < 1 || h + 2 * ph < dh * (k - 1) + 1) continue;
            compare(new long[] {n, cin, h, w}, new long[] {cout, cin, k, k}, new int[] {s}, new int[] {ph, pw}, new int[] {dh, 1}, 1);
            i++;
        }
    }

    /**
     * ResNet-20's 32- and 64-channel layers on the 8x32 row tiles, stored as two 8-lane halves per transposed row
     * ({@code ConvRasterImageF32.store}): 32 -> 32 at 16 px and 64 -> 64 at 8 px with odd batches, odd
     * map heights, one image (its rows split over the threads), 24-pixel rows, and the stride-2 32 -> 64 forward
     * (8-pixel output rows); the input gradients of the stride-1 shapes run the same tiles on the flipped weights.
     */
    @Test
    void resNet20WideTileShapes() {
        compare(new long[] {3, 32, 16, 16}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {5, 64, 8, 8}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 64, 9, 8}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 32, 7, 16}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 32, 5, 24}, new long[] {64, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 32, 16, 16}, new long[] {64, 32, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * ResNet-20's 32-channel 16 px and 64-channel 8 px forwards with the Winograd switch at its default, where they take
     * Winograd's blocks of 16 tiles across images ({@code WinogradF32.paysOnSmallMaps}): odd batches (a block's tiles
     * from four images, the last block part-filled), one image (a part-filled block), 48 -> 32 channels on 8x12 maps
     * (6 tiles an image, blocks ending mid-image), and 6x6 maps (partial tiles at the edges); the gradients alongside.
     */
    @Test
    void resNet20SmallMapsOnWinogradAcrossImages() {
        System.clearProperty("jtorch.conv.winograd");
        compare(new long[] {3, 32, 16, 16}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {5, 64, 8, 8}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 64, 8, 8}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {7, 48, 8, 12}, new long[] {32, 48, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {6, 32, 6, 6}, new long[] {64, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * The direct weight gradient's tiles and its transposed gy: 96-tap tiles against 4 channels (twice per
     * window row at 64 input channels), then a 48-tap tile; 49- and 90-pixel images, whose gy transposes end
     * in partial blocks and whose passes hold two images; 24 output channels, a whole 16-channel group and
     * a half one that is zero-filled; sums over a million floats (256 x 512 x 3 x 3), whose passes take whole images
     * whatever the channels (three 25-pixel images in one pass), at stride 1 and 2.
     */
    @Test
    void weightGradientTiles() {
        compare(new long[] {3, 64, 7, 7}, new long[] {16, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 48, 9, 10}, new long[] {24, 48, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 512, 5, 5}, new long[] {256, 512, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 512, 9, 9}, new long[] {256, 512, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * The weight gradient with pixels in the lanes, for few taps ({@code ConvLaneWeightGradF32}; with at most 4 input
     * channels {@code ConvFewChannelWeightGradF32} takes these shapes first, so the last two have 5 and 16): ResNet-20's 3 -> 16
     * stem (gy read in place); 27-pixel rows with dilated kernel rows and 12 output channels (gy staged in whole vectors,
     * a half-empty 8-channel tile); one input channel 5x5 (25 taps, 24-pixel rows); stride 2 down the rows only; a
     * 3x5 kernel with unequal padding on 44-pixel rows (45 taps); 48 taps (3 channels 4x4) on 15-pixel rows; and one
     * image (a single chunk).
     */
    @Test
    void fewTapWeightGradientsInPixelLanes() {
        compare(new long[] {3, 3, 32, 32}, new long[] {16, 3, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 3, 27, 27}, new long[] {12, 3, 3, 3}, new int[] {1}, new int[] {2}, new int[] {2}, 1);
        compare(new long[] {3, 1, 28, 28}, new long[] {20, 1, 5, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 2, 17, 32}, new long[] {8, 2, 3, 3}, new int[] {2, 1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 3, 12, 44}, new long[] {16, 3, 3, 5}, new int[] {1}, new int[] {1, 2}, new int[] {1}, 1);
        compare(new long[] {2, 3, 16, 16}, new long[] {8, 3, 4, 4}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 3, 30, 31}, new long[] {24, 3, 3, 3}, new int[] {1}, new int[] {1, 0}, new int[] {1}, 1);
        compare(new long[] {2, 5, 14, 14}, new long[] {12, 5, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 16, 12, 32}, new long[] {8, 16, 1, 3}, new int[] {1}, new int[] {0, 1}, new int[] {1}, 1);
    }

    /**
     * Few-input-channel forwards and gradients (the implicit GEMM's row tiles and the pixel-lane weight gradient where
     * their predicates take a shape): ResNet-20's 3 -> 16 stem; one image; 27-pixel rows with dilated kernel rows and 12
     * output channels; one input channel 5x5 on 28-pixel rows; stride 2 down the rows only; 4 channels of a 3x5 kernel
     * with unequal padding on 44-pixel rows; 7-pixel rows, 5 of them; a 1x1 output; and 2 groups.
     */
    @Test
    void fewInputChannelShapesMatchFloat64() {
        compare(new long[] {3, 3, 32, 32}, new long[] {16, 3, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 3, 30, 32}, new long[] {16, 3, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 3, 27, 27}, new long[] {12, 3, 3, 3}, new int[] {1}, new int[] {2}, new int[] {2}, 1);
        compare(new long[] {3, 1, 28, 28}, new long[] {20, 1, 5, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 2, 17, 32}, new long[] {8, 2, 3, 3}, new int[] {2, 1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 4, 12, 44}, new long[] {16, 4, 3, 5}, new int[] {1}, new int[] {1, 2}, new int[] {1}, 1);
        compare(new long[] {2, 1, 5, 7}, new long[] {8, 1, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 3, 3, 3}, new long[] {16, 3, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 4, 16, 16}, new long[] {8, 2, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 2);
    }

    /**
     * The stem tiles ({@code ConvStemF32}: 2-4 input channels, at least 25 taps, output rows of whole 32-pixel strips,
     * output channels in multiples of 8): ResNet-18's 7x7 stride-2 stem at 64 px, one image (its rows split over the
     * threads), stride 1 with a 5x5 kernel, 64-pixel rows (two strips), stride 3x2 with dilation 2 down the rows and
     * unequal padding, 8 output channels, a padding wider than the stride's reach; then random shapes the predicate takes.
     */
    @Test
    void stemTilesMatchFloat64() {
        compare(new long[] {2, 3, 64, 64}, new long[] {64, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {1, 3, 64, 64}, new long[] {16, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {2, 2, 9, 36}, new long[] {8, 2, 5, 5}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 4, 13, 127}, new long[] {24, 4, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {2, 3, 23, 61}, new long[] {8, 3, 5, 5}, new int[] {3, 2}, new int[] {1, 0}, new int[] {2, 1}, 1);
        compare(new long[] {1, 3, 11, 58}, new long[] {8, 3, 5, 5}, new int[] {2}, new int[] {4}, new int[] {1}, 1);
        Random r = new Random(43);
        for (int i = 0; i < 10; i++) {
            int cin = 2 + r.nextInt(3), cout = 8 * (1 + r.nextInt(4));
            int kh = 5 + r.nextInt(3), kw = 5 + r.nextInt(3), sh = 1 + r.nextInt(3), sw = 1 + r.nextInt(2), dh = 1 + r.nextInt(2);
            int ph = r.nextInt(4), pw = r.nextInt(4), ow = 32 * (1 + r.nextInt(2));
            int w = (ow - 1) * sw + kw - 2 * pw + r.nextInt(sw), h = dh * (kh - 1) + 1 - 2 * ph + r.nextInt(12) + sh;
            if (h < 1 || w < 1) continue;
            long[] x = {1 + r.nextInt(2), cin, h, w}, wt = {cout, cin, kh, kw};
            try {
                compare(x, wt, new int[] {sh, sw}, new int[] {ph, pw}, new int[] {dh, 1}, 1);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride "
                        + sh + "x" + sw + ", padding " + ph + "x" + pw + ", dilation " + dh + "x1", e);
            }
        }
    }

    /**
     * Random few-input-channel shapes (1-4 channels, 1-3 images): kernels 1-5 each way, strides 1-2 each way, dilations
     * 1-2, paddings 0-2, odd sizes up to 40, 1-20 output channels, one or two groups; the pixel-lane weight gradient
     * where its predicate takes a shape, the other paths where not.
     */
    @Test
    void randomFewChannelShapesMatchFloat64() {
        Random r = new Random(41);
        for (int i = 0; i < 16; ) {
            int groups = 1 + (r.nextInt(4) == 0 ? 1 : 0);
            int cin = groups * (1 + r.nextInt(groups == 1 ? 4 : 2)), cout = groups * (1 + r.nextInt(20 / groups));
            int kh = 1 + r.nextInt(5), kw = 1 + r.nextInt(5), sh = 1 + r.nextInt(2), sw = r.nextInt(3) == 0 ? 2 : 1;
            int d = 1 + r.nextInt(2), ph = r.nextInt(3), pw = r.nextInt(3);
            int h = 1 + r.nextInt(40), w = 1 + r.nextInt(40);
            if (h + 2 * ph < d * (kh - 1) + 1 || w + 2 * pw < d * (kw - 1) + 1) continue;
            long[] x = {1 + r.nextInt(3), cin, h, w}, wt = {cout, cin / groups, kh, kw};
            try {
                compare(x, wt, new int[] {sh, sw}, new int[] {ph, pw}, new int[] {d}, groups);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride "
                        + sh + "x" + sw + ", padding " + ph + "x" + pw + ", dilation " + d + ", groups " + groups, e);
            }
            i++;
        }
    }

    /**
     * Weight gradients of 1-4 input channels with pixels in the lanes counted flat over each image
     * ({@code ConvFewChannelWeightGradF32}): a 7x7 stride-2 stem on 70 px and, at 100 px, over two bands of one image;
     * MNIST's conv1 (676 pixels: gy staged, the last vector part zeros); DCGAN's 1 -> 64 4x4 stride 2; 5 output channels
     * (staged: not whole 8-channel tiles); a 64x64 image of whole vectors read in place over two bands; stride 3 with
     * dilation 2 and unequal padding; strides 2x1 and 1x3; batch 1 throughout some.
     */
    @Test
    void fewChannelWeightGradientsMatchFloat64() {
        compare(new long[] {1, 3, 64, 70}, new long[] {16, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {2, 3, 100, 100}, new long[] {8, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {3, 1, 28, 28}, new long[] {32, 1, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 1, 32, 32}, new long[] {64, 1, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 2, 13, 9}, new long[] {5, 2, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 1, 64, 64}, new long[] {8, 1, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 4, 19, 23}, new long[] {5, 4, 2, 3}, new int[] {3}, new int[] {0, 2}, new int[] {2}, 1);
        compare(new long[] {2, 3, 21, 17}, new long[] {24, 3, 5, 3}, new int[] {2, 1}, new int[] {2, 1}, new int[] {1}, 1);
        compare(new long[] {1, 2, 15, 40}, new long[] {9, 2, 3, 4}, new int[] {1, 3}, new int[] {1, 0}, new int[] {1}, 1);
    }

    /**
     * Random weight gradients of 1-4 input channels (one group, 1-3 images, 1-20 output channels, kernels 1-7 each way,
     * strides 1-3 each way, dilation 1-2, padding 0-3 each way, odd sizes up to 90, so that some images span several
     * bands), forward and all three gradients against float64.
     */
    @Test
    void randomFewChannelWeightGradientsMatchFloat64() {
        Random r = new Random(73);
        for (int i = 0; i < 20; ) {
            int cin = 1 + r.nextInt(4), cout = 1 + r.nextInt(20);
            int kh = 1 + r.nextInt(7), kw = 1 + r.nextInt(7), sh = 1 + r.nextInt(3), sw = 1 + r.nextInt(3);
            int d = 1 + r.nextInt(2), ph = r.nextInt(4), pw = r.nextInt(4);
            int h = 1 + r.nextInt(90), w = 1 + r.nextInt(90);
            if (h + 2 * ph < d * (kh - 1) + 1 || w + 2 * pw < d * (kw - 1) + 1) continue;
            long[] x = {1 + r.nextInt(3), cin, h, w}, wt = {cout, cin, kh, kw};
            try {
                compare(x, wt, new int[] {sh, sw}, new int[] {ph, pw}, new int[] {d}, 1);
            } catch (AssertionError e) {
                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride "
                        + sh + "x" + sw + ", padding " + ph + "x" + pw + ", dilation " + d, e);
            }
            i++;
        }
    }

    /**
     * Stride-1 input gradients on the direct tiles, their blocked weights gathered from the forward weight
     * with channels swapped and the kernel rotated: the 16x16 tile (16 input channels, 16-pixel rows) and the
     * 8x32 tile with a 3x5 kernel, whose rotation a square kernel's symmetric taps could hide.
     */
    @Test
    void inputGradientsFromGatheredFlippedWeights() {
        compare(new long[] {2, 16, 16, 16}, new long[] {32, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 8, 16}, new long[] {64, 32, 3, 5}, new int[] {1}, new int[] {1, 2}, new int[] {1}, 1);
    }

    /**
     * Input gradients of 3x3 stride-2 padding-1 convolutions with the four phases combined into one 2x2
     * convolution: 16 input channels (ResNet-20's 16->32 layer), three 16-channel groups with 24 output
     * channels and non-square images, and a single image split by rows across threads; on the 7-pixel tile,
     * gradient rows of 14, 28 and 56 pixels (ResNet-50's), with 7- and 14-pixel rows in one image, and 3 output channels;
     * and small images several at a time.
     */
    @Test
    void stride2InputGradientsWithPhasesCombined() {
        stride2PhaseShapes();
    }

    /**
     * The same shapes on the phase tiles that run the window's two pixels as two loops
     * ({@code -Djtorch.conv.fusedPhaseTiles=false}): the fused tiles ({@code Stride2PhaseTilesF32}) are on by default.
     */
    @Test
    void stride2InputGradientsWithTwoLoopPhaseTiles() {
        withProperty("jtorch.conv.fusedPhaseTiles", "false", ConvolutionFastPathTest::stride2PhaseShapes);
    }

    /**
     * The same shapes with the tiles reading a padded channels-last copy of gradOut
     * ({@code -Djtorch.conv.stride2InPlace=false}); by default they read gradOut's planes in place, with a row's last
     * tile and gradOut's last row kept off the pixels past them.
     */
    @Test
    void stride2InputGradientsFromAPaddedCopy() {
        withProperty("jtorch.conv.stride2InPlace", "false", ConvolutionFastPathTest::stride2PhaseShapes);
    }

    /**
     * The same shapes with the 8-pixel tiles storing through the tile buffer and a transpose from memory
     * ({@code -Djtorch.conv.stride2TransposeInRegisters=false}); by default they transpose in registers and store gi
     * themselves ({@code Stride2PhaseTilesF32.planeTile8x32Interleaved}).
     */
    @Test
    void stride2InputGradientsThroughTheTileBuffer() {
        withProperty("jtorch.conv.stride2TransposeInRegisters", "false", ConvolutionFastPathTest::stride2PhaseShapes);
    }

    /**
     * The in-register transpose only moves the tile's sums: ResNet-20's 16 -> 32 and 32 -> 64 stride-2 input gradients
     * (two images), and 48 channels into 16-pixel rows, come out bit for bit as through the tile buffer.
     */
    @Test
    void stride2TransposeInRegistersIsExact() {
        long[][][] shapes = {
            {{2, 16, 32, 32}, {32, 16, 3, 3}}, {{2, 32, 16, 16}, {64, 32, 3, 3}}, {{1, 48, 10, 32}, {40, 48, 3, 3}}};
        for (long[][] s : shapes) assertSameGradientBits("jtorch.conv.stride2TransposeInRegisters", s[0], s[1], 2, 1, false);
    }

    /**
     * The strided 1x1 weight gradient's sums stored 16 channels at a time ({@code ConvPointwiseF32.storeTileRows}) are
     * the same additions as element by element ({@code -Djtorch.conv.pointwiseWeightGradRows=false}): bit for bit, with
     * input channels not a multiple of 16 (a masked last store), over 1024, several images (one chunk per thread), and
     * ResNet-50's 1024 -> 2048 shortcut at one image. Outputs over 16 pixels, which the batch GEMM would take.
     */
    @Test
    void pointwiseWeightGradientRowsAreExact() {
        long[][][] shapes = {{{3, 37, 12, 14}, {21, 37, 1, 1}}, {{2, 1030, 10, 10}, {70, 1030, 1, 1}},
            {{4, 64, 14, 14}, {200, 64, 1, 1}}, {{1, 1024, 14, 14}, {2048, 1024, 1, 1}}};
        for (long[][] s : shapes) assertSameGradientBits("jtorch.conv.pointwiseWeightGradRows", s[0], s[1], 2, 0, true);
    }

    /**
     * The input gradient (or the weight gradient) of one float32 convolution with switch {@code property} on and off:
     * the same bits.
     */
    private static void assertSameGradientBits(String property, long[] xShape, long[] wShape, int stride, int pad, boolean weight) {
        float[][] grads = new float[2][];
        String[] ways = {"true", "false"};
        for (int i = 0; i < 2; i++) {
            int way = i;
            withProperty(property, ways[i], () -> {
                try (Tensor x = Torch.randn(xShape, DType.FLOAT32, Device.cpu(), Torch.manualSeed(21));
                     Tensor w = Torch.randn(wShape, DType.FLOAT32, Device.cpu(), Torch.manualSeed(22))) {
                    Tensor wrt = weight ? w : x;
                    wrt.requiresGrad_(true);
                    try (Tensor y = F.conv2d(x, w, null, new int[] {stride}, new int[] {pad}, new int[] {1}, 1);
                         Tensor u = Torch.randn(y.shape(), DType.FLOAT32, Device.cpu(), Torch.manualSeed(23))) {
                        Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {wrt}, new Tensor[] {u}, false, false, false);
                        grads[way] = g[0].toFloatArray();
                        g[0].close();
                    }
                }
            });
        }
        for (int k = 0; k < grads[0].length; k++) {
            if (Float.floatToRawIntBits(grads[0][k]) != Float.floatToRawIntBits(grads[1][k])) {
                throw new AssertionError(property + ", x " + java.util.Arrays.toString(xShape) + ", w " + java.util.Arrays.toString(wShape)
                        + ", stride " + stride + ": element " + k + " " + grads[0][k] + " switched on, " + grads[1][k] + " off");
            }
        }
    }

    /**
     * Random 3x3 stride-2 convolutions around the combined-phase path's domain, each with gradOut read in place (its
     * 8-pixel tiles transposing in registers, then through the tile buffer) and from the padded copy: 1-3 images, input
     * channels in and out of multiples of 16, 1-70 output channels, even sizes whose gradOut rows are whole 8- or 7-pixel
     * tiles (one or several, so a row's last tile and the tiles before it) and odd or ragged sizes, padding 1 and sometimes 0 or 2, dilation 2 or 2 groups now and then (which leave the path).
     */
    @Test
    void randomStride2InputGradientsInPlaceAndCopied() {
        int[] rowsOut = {7, 8, 14, 16, 21, 24, 28, 5, 9};
        Random r = new Random(2211);
        for (int i = 0; i < 16; i++) {
            int groups = r.nextInt(8) == 0 ? 2 : 1, d = r.nextInt(8) == 0 ? 2 : 1;
            int cin = r.nextInt(6) == 0 ? groups * (8 + r.nextInt(20)) : groups * 16 * (1 + r.nextInt(3));
            int cout = groups * (1 + r.nextInt(70 / groups));
            int ow = rowsOut[r.nextInt(rowsOut.length)], oh = 1 + r.nextInt(9);
            int h = 2 * oh - (r.nextInt(6) == 0 ? 1 : 0), w = 2 * ow - (r.nextInt(6) == 0 ? 1 : 0);
            int pad = r.nextInt(6) == 0 ? 2 * r.nextInt(2) : 1;
            long[] x = {1 + r.nextInt(3), cin, h, w}, wt = {cout, cin / groups, 3, 3};
            for (String way : new String[] {"registers", "tile buffer", "copy"}) {
                withProperty("jtorch.conv.stride2InPlace", way.equals("copy") ? "false" : "true", () ->
                        withProperty("jtorch.conv.stride2TransposeInRegisters", way.equals("registers") ? "true" : "false", () -> {
                            try {
                                compare(x, wt, new int[] {2}, new int[] {pad}, new int[] {d}, groups);
                            } catch (AssertionError e) {
                                throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt)
                                        + ", padding " + pad + ", dilation " + d + ", groups " + groups + ", " + way, e);
                            }
                        }));
            }
        }
    }

    /** Runs {@code body} with system property {@code key} set to {@code value}, then restores it. */
    /** The forward of {@code F.conv2d} with a bias, with {@code property} true against false, bit for bit. */
    private static void assertSameForwardBits(String property, long[] xShape, long[] wShape, int[] padding, int[] dilation) {
        float[][] outs = new float[2][];
        String[] ways = {"true", "false"};
        for (int i = 0; i < 2; i++) {
            int way = i;
            withProperty(property, ways[i], () -> {
                try (Tensor x = Torch.randn(xShape, DType.FLOAT32, Device.cpu(), Torch.manualSeed(31));
                     Tensor w = Torch.randn(wShape, DType.FLOAT32, Device.cpu(), Torch.manualSeed(32));
                     Tensor b = Torch.randn(new long[] {wShape[0]}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(33));
                     Tensor y = F.conv2d(x, w, b, new int[] {1}, padding, dilation, 1)) {
                    outs[way] = y.toFloatArray();
                }
            });
        }
        for (int k = 0; k < outs[0].length; k++) {
            if (Float.floatToRawIntBits(outs[0][k]) != Float.floatToRawIntBits(outs[1][k])) {
                throw new AssertionError(property + ", x " + java.util.Arrays.toString(xShape) + ", w " + java.util.Arrays.toString(wShape)
                        + ": output element " + k + " " + outs[0][k] + " switched on, " + outs[1][k] + " off");
            }
        }
    }

    private static void withProperty(String key, String value, Runnable body) {
        String before = System.getProperty(key);
        System.setProperty(key, value);
        try {
            body.run();
        } finally {
            if (before == null) System.clearProperty(key);
            else System.setProperty(key, before);
        }
    }

    private static void stride2PhaseShapes() {
        compare(new long[] {3, 16, 32, 32}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 48, 16, 32}, new long[] {24, 48, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 16, 8, 16}, new long[] {8, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 16, 56, 56}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 14, 14}, new long[] {48, 32, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 48, 28, 14}, new long[] {24, 48, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 16, 28, 28}, new long[] {3, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        // Five small images: run two at a time, the last one alone.
        compare(new long[] {5, 16, 14, 14}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Strided input gradients as one stride-1 convolution per phase, interleaved: 3x3 and 4x4 kernels, a 1x1
     * stride-2 kernel (half the phases receive nothing and must come out zero), stride 3 along rows (5-tap
     * kernel rows) with a single image, and padding 0 (a phase with top padding).
     */
    @Test
    void stridedInputGradientsByPhase() {
        compare(new long[] {2, 32, 16, 16}, new long[] {64, 32, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 16, 16}, new long[] {32, 32, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 16, 16}, new long[] {64, 32, 1, 1}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 32, 18, 16}, new long[] {32, 32, 5, 3}, new int[] {3, 2}, new int[] {2, 1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 16, 16}, new long[] {32, 32, 3, 3}, new int[] {2}, new int[] {0}, new int[] {1}, 1);
    }

    /**
     * Stride-1 convolutions with 3-tap kernel rows over whole 32-pixel output rows, read with lane slices
     * from the padded rows: padding 0, 1 and 2 (with dilated kernel rows), two strips per row (64 px), groups,
     * output channels that are not whole 8-row tiles, a 1x3 kernel, and the deepest reduction one block holds.
     */
    @Test
    void rowTiledConvolutions() {
        compare(new long[] {2, 5, 6, 34}, new long[] {11, 5, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 4, 9, 64}, new long[] {8, 4, 3, 3}, new int[] {1}, new int[] {2, 1}, new int[] {2, 1}, 1);
        compare(new long[] {2, 6, 5, 32}, new long[] {6, 3, 1, 3}, new int[] {1}, new int[] {0, 1}, new int[] {1}, 2);
        compare(new long[] {2, 8, 4, 30}, new long[] {16, 8, 3, 3}, new int[] {1}, new int[] {1, 2}, new int[] {1}, 1);
        compare(new long[] {1, 113, 3, 32}, new long[] {8, 113, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Rows that are not whole 8- or 16-pixel tiles on the direct tiles, their last tile overlapping the one
     * before it: 20- and 15-pixel rows, 20 pixels at stride 2, and the 16x16 tile on 28-pixel rows; forward, input
     * gradient (the flipped convolution) and weight gradient.
     */
    @Test
    void directTilesOnRaggedRows() {
        compare(new long[] {2, 32, 20, 20}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {3, 64, 15, 15}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 16, 40, 40}, new long[] {32, 16, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 16, 28, 28}, new long[] {16, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * The 8x32 tile in raster order over whole images (ConvRasterImageF32), for rows that are not whole 8-pixel tiles:
     * MNIST's two layers at batch 3 (one input channel, 28 -> 26; 32 -> 64 channels, 26 -> 24, whose input gradient is
     * the flipped convolution onto 26-pixel rows), one image split by rows over the threads, and random shapes of that
     * domain (32 or 64 output channels, rows of 9-31 pixels not a multiple of 8, kernels 1-5 with stride, dilated
     * kernel rows and padding; input channels of 32 for half of them, so that the input gradient takes the tile too);
     * forward, input, weight and bias gradients.
     */
    @Test
    void rasterTilesOverWholeImages() {
        compare(new long[] {3, 1, 28, 28}, new long[] {32, 1, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {3, 32, 26, 26}, new long[] {64, 32, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {1, 32, 13, 11}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        Random r = new Random(31);
        for (int i = 0; i < 12; ) {
            int cin = r.nextBoolean() ? 32 : 1 + r.nextInt(5), cout = r.nextBoolean() ? 32 : 64;
            int kh = 1 + r.nextInt(5), kw = 1 + r.nextInt(5), sh = 1 + r.nextInt(2), sw = 1 + r.nextInt(2);
            int dh = 1 + r.nextInt(2), ph = r.nextInt(3), pw = r.nextInt(3);
            int h = 4 + r.nextInt(20), w = 9 + r.nextInt(40);
            int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - kw) / sw + 1;
            if (oh < 1 || ow < 9 || ow > 31 || ow % 8 == 0 || (kh == 1 && kw == 1)) continue;
            compare(new long[] {1 + r.nextInt(3), cin, h, w}, new long[] {cout, cin, kh, kw}, new int[] {sh, sw},
                    new int[] {ph, pw}, new int[] {dh, 1}, 1);
            i++;
        }
    }

    /**
     * One input channel, pixels in the lanes (ConvOneChannelF32's forward): MNIST's conv1 (26-pixel rows: two row
     * segments, the second stored over the next row's start), DCGAN's first discriminator layer (4x4 stride 2 from 32 px:
     * the phase-split copy), batch 1, then random shapes: odd sizes, rows shorter than a vector and longer than two,
     * padding, strides 1-3, dilation 1-2 along both axes, output channels that are not whole blocks of four (through the
     * shared float64 comparison, bias included: the gradients take the other paths); and a grouped shape with one input
     * channel per group, which another path serves.
     */
    @Test
    void oneInputChannelForwards() {
        compare(new long[] {3, 1, 28, 28}, new long[] {32, 1, 3, 3}, new int[] {1}, new int[] {0}, new int[] {1}, 1);
        compare(new long[] {2, 1, 32, 32}, new long[] {64, 1, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 1, 7, 5}, new long[] {6, 1, 2, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 3, 11, 13}, new long[] {6, 1, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 3);
        Random r = new Random(47);
        for (int i = 0; i < 24; ) {
            int cout = 1 + r.nextInt(13), kh = 1 + r.nextInt(5), kw = 1 + r.nextInt(5);
            int sh = 1 + r.nextInt(3), sw = 1 + r.nextInt(3), dh = 1 + r.nextInt(2), dw = 1 + r.nextInt(2);
            int ph = r.nextInt(3), pw = r.nextInt(3), h = 1 + r.nextInt(30), w = 1 + r.nextInt(70);
            int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
            if (oh < 1 || ow < 1 || kh * kw == 1) continue;
            compare(new long[] {1 + r.nextInt(3), 1, h, w}, new long[] {cout, 1, kh, kw}, new int[] {sh, sw},
                    new int[] {ph, pw}, new int[] {dh, dw}, 1);
            i++;
        }
    }

    /**
     * The 6x64 weight gradient tiles (ConvWideWeightGradF32): DCGAN's 64 -> 128 layer (4x4 stride 2, 16 -> 8 pixels) at
     * batch 2 and 1, the generator's 128 -> 64 transposed convolution whose weight gradient is that layer's (with and
     * without output padding), and 12 random shapes: 64 or 128 channels each way, odd and even sizes 15-24, paddings
     * 0-2, dilations 1-2 along each axis, 1-3 images (at 64 output pixels two images are a group, so three leave a short
     * last group; 64 and 128 output channels leave a 6-channel tile with spare rows). Output and the three gradients
     * against float64.
     */
    @Test
    void wideWeightGradients() {
        compare(new long[] {2, 64, 16, 16}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 64, 16, 16}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compareTransposed(new long[] {2, 128, 8, 8}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {0},
                new int[] {1}, 1);
        compareTransposed(new long[] {3, 128, 8, 8}, new long[] {128, 64, 4, 4}, new int[] {2}, new int[] {1}, new int[] {1},
                new int[] {1}, 1);
        Random r = new Random(20);
        for (int i = 0; i < 12; ) {
            int cin = 64 << r.nextInt(2), cout = 64 << r.nextInt(2);
            int ph = r.nextInt(3), pw = r.nextInt(3), dh = 1 + r.nextInt(2), dw = 1 + r.nextInt(2);
            int h = 15 + r.nextInt(10), w = 15 + r.nextInt(10);
            int oh = (h + 2 * ph - dh * 3 - 1) / 2 + 1, ow = (w + 2 * pw - dw * 3 - 1) / 2 + 1;
            if (oh * ow < 64) continue; // another path's shape
            compare(new long[] {1 + r.nextInt(3), cin, h, w}, new long[] {cout, cin, 4, 4}, new int[] {2}, new int[] {ph, pw},
                    new int[] {dh, dw}, 1);
            i++;
        }
    }

    /**
     * 8x32 tiles on rows of whole 16-pixel vectors, at least 48 wide, whose stores are spread over the next row's
     * tiles ({@code ConvDirectF32.spreadRows}): a 7x7 stride-2 stem on 3 channels (48-pixel rows, 64 channels: two
     * blocks), one image of 80-pixel rows split by rows over the threads, and a 3x3 stride-1 layer of 80-pixel rows
     * with dilated kernel rows; forward, input and weight gradients.
     */
    @Test
    void spreadTileStores() {
        compare(new long[] {2, 3, 96, 96}, new long[] {64, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {1, 3, 127, 160}, new long[] {32, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {1, 8, 9, 80}, new long[] {32, 8, 3, 3}, new int[] {1}, new int[] {2, 1}, new int[] {2, 1}, 1);
    }

    /**
     * The 7x32 direct tile, for rows of whole 7-pixel tiles that are not whole 8-pixel ones: 7-pixel rows (ResNet-50's
     * last stage, which the implicit GEMM served before), 14 and 28 at stride 1, 14 and 28 at stride 2 (from even and
     * odd inputs), 21 with dilated kernel rows, a 7x7 stride-2 kernel on 3 channels (the stem's, at 28 px), and one image
     * split by rows; forward, input gradient (the flipped convolution at stride 1, the phases at stride 2) and weight
     * gradient.
     */
    @Test
    void sevenPixelTiles() {
        compare(new long[] {3, 64, 7, 7}, new long[] {64, 64, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 14, 14}, new long[] {96, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 16, 28, 28}, new long[] {32, 16, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 32, 28, 28}, new long[] {64, 32, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {2, 24, 55, 55}, new long[] {32, 24, 3, 3}, new int[] {2}, new int[] {1}, new int[] {1}, 1);
        compare(new long[] {1, 8, 25, 21}, new long[] {32, 8, 5, 3}, new int[] {1}, new int[] {2, 1}, new int[] {2, 1}, 1);
        compare(new long[] {2, 3, 28, 28}, new long[] {64, 3, 7, 7}, new int[] {2}, new int[] {3}, new int[] {1}, 1);
        compare(new long[] {1, 32, 14, 14}, new long[] {32, 32, 3, 3}, new int[] {1}, new int[] {1}, new int[] {1}, 1);
    }

    /**
     * Random shapes, each fast path against float64 (whose im2col + GEMM path is the plain convolution): 1-3
     * images of odd and even sizes 1-30, channel counts that are and are not whole vectors (3 to 64), 1x1 to
     * 5x5 and non-square kernels, strides 1-3, dilations 1-2, paddings 0-3 and 1-2 groups; forward, input,
     * weight and bias gradients. Each shape runs with the Winograd path off and on ({@code jtorch.conv.winograd}).
     */
    @Test
    void randomShapesMatchFloat64() {
        int[] channels = {3, 8, 16, 24, 32, 48, 64};
        Random r = new Random(22);
        for (int i = 0; i < 24; ) {
            int groups = 1 + r.nextInt(2);
            int cin = groups * channels[r.nextInt(channels.length)], cout = groups * channels[r.nextInt(channels.length)];
            int kh = 1 + r.nextInt(5), kw = r.nextBoolean() ? kh : 1 + r.nextInt(5);
            int s = 1 + r.nextInt(3), d = 1 + r.nextInt(2), ph = r.nextInt(4), pw = r.nextInt(4);
            int h = 1 + r.nextInt(30), w = 1 + r.nextInt(30);
            if (h + 2 * ph < d * (kh - 1) + 1 || w + 2 * pw < d * (kw - 1) + 1) continue; // no output
            long n = 1 + r.nextInt(3);
            // Stride 1 and no dilation for half the shapes: the direct, row and Winograd paths' domain.
            if (i % 2 == 0) {
                s = 1;
                d = 1;
                ph = Math.min(ph, kh - 1);
                pw = Math.min(pw, kw - 1);
            }
            // And every fourth one a 3x3 kernel on whole 16-channel vectors: the Winograd path's.
            if (i % 4 == 0) {
                groups = 1;
                kh = 3;
                kw = 3;
                cin = 16 * (1 + r.nextInt(4));
                cout = 16 * (1 + r.nextInt(4));
            }
            // Every eighth one, 5-7 images: Winograd's blocks of 16 tiles then span images (small maps).
            if (i % 8 == 4) n += 4;
            if (h + 2 * ph < d * (kh - 1) + 1 || w + 2 * pw < d * (kw - 1) + 1) continue;
            for (String winograd : new String[] {"false", "true"}) {
                System.setProperty("jtorch.conv.winograd", winograd);
                long[] x = {n, cin, h, w}, wt = {cout, cin / groups, kh, kw};
                try {
                    compare(x, wt, new int[] {s}, new int[] {ph, pw}, new int[] {d}, groups);
                } catch (AssertionError e) {
                    throw new AssertionError("x " + java.util.Arrays.toString(x) + ", w " + java.util.Arrays.toString(wt) + ", stride "
                            + s + ", padding " + ph + "x" + pw + ", dilation " + d + ", groups " + groups + ", winograd " + winograd, e);
                }
            }
            i++;
        }
    }
}
