package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The F(4x4, 3x3) Winograd path ({@link WinogradF32}) against the same convolution in float64 (im2col + GEMM)
 * and against the float32 direct path with the switch off: forward and input gradient (the flipped-weight
 * convolution), with the weight gradient (direct) alongside, on random shapes with odd sizes, paddings 0-2 and single images; its error measured; and the
 * shapes it leaves to the other paths.
 */
class WinogradConvolutionTest {
    private String switchBefore, inputGradBefore;

    /** Each test turns the path fully on (forward and input gradient, {@code WinogradF32.setting}), and back as it was after. */
    @BeforeEach
    void needs512BitVectorsAndTheSwitchOn() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the Winograd path needs 16 float lanes");
        switchBefore = System.getProperty("jtorch.conv.winograd");
        inputGradBefore = System.getProperty("jtorch.conv.winogradInputGrad");
        System.setProperty("jtorch.conv.winograd", "true");
        System.clearProperty("jtorch.conv.winogradInputGrad");
    }

    @AfterEach
    void restoreTheSwitch() {
        if (switchBefore == null) System.clearProperty("jtorch.conv.winograd");
        else System.setProperty("jtorch.conv.winograd", switchBefore);
        if (inputGradBefore == null) System.clearProperty("jtorch.conv.winogradInputGrad");
        else System.setProperty("jtorch.conv.winogradInputGrad", inputGradBefore);
    }

    private static Geometry geometry(int n, int cin, int h, int w, int cout, int pad) {
        return new Geometry(n, cin, h, w, cout, 3, 3, 1, 1, pad, pad, 1, 1, 1, h + 2 * pad - 2, w + 2 * pad - 2);
    }

    /** Largest |float32 - float64| of output, input gradient and weight gradient, each over its float64 values' largest magnitude. */
    private static double[] relativeErrors(long[] xShape, long[] wShape, int pad, boolean winograd) {
        System.setProperty("jtorch.conv.winograd", Boolean.toString(winograd));
        return relativeErrors(xShape, wShape, pad);
    }

    /**
     * As {@link #relativeErrors(long[], long[], int, boolean)} with the forward where it pays and the input gradient on
     * F(2x2, 3x3) for every shape it fits.
     */
    private static double[] twoByTwoInputGradErrors(long[] xShape, long[] wShape, int pad) {
        System.setProperty("jtorch.conv.winograd", "forward");
        System.setProperty("jtorch.conv.winogradInputGrad", "all");
        System.setProperty("jtorch.conv.winogradSixteen", "false");
        try {
            return relativeErrors(xShape, wShape, pad);
        } finally {
            System.clearProperty("jtorch.conv.winogradInputGrad");
            System.clearProperty("jtorch.conv.winogradSixteen");
        }
    }

    private static double[] relativeErrors(long[] xShape, long[] wShape, int pad) {
        try (Tensor x64 = Torch.randn(xShape, DType.FLOAT64, Device.cpu(), Torch.manualSeed(21));
             Tensor w64 = Torch.randn(wShape, DType.FLOAT64, Device.cpu(), Torch.manualSeed(22));
             Tensor b64 = Torch.randn(new long[] {wShape[0]}, DType.FLOAT64, Device.cpu(), Torch.manualSeed(23));
             Tensor x32 = x64.to(DType.FLOAT32); Tensor w32 = w64.to(DType.FLOAT32); Tensor b32 = b64.to(DType.FLOAT32)) {
            List<Tensor> in64 = List.of(x64, w64, b64), in32 = List.of(x32, w32, b32);
            in64.forEach(t -> t.requiresGrad_(true));
            in32.forEach(t -> t.requiresGrad_(true));
            int[] one = {1}, p = {pad};
            try (Tensor y64 = F.conv2d(x64, w64, b64, one, p, one, 1);
                 Tensor y32 = F.conv2d(x32, w32, b32, one, p, one, 1);
                 Tensor u64 = Torch.randn(y64.shape(), DType.FLOAT64, Device.cpu(), Torch.manualSeed(24));
                 Tensor u32 = u64.to(DType.FLOAT32)) {
                Tensor[] g64 = Autograd.grad(new Tensor[] {y64}, new Tensor[] {x64, w64}, new Tensor[] {u64}, false, false, false);
                Tensor[] g32 = Autograd.grad(new Tensor[] {y32}, new Tensor[] {x32, w32}, new Tensor[] {u32}, false, false, false);
                return new double[] {relative(y64, y32), relative(g64[0], g32[0]), relative(g64[1], g32[1])};
            }
        } finally {
            System.setProperty("jtorch.conv.winograd", "true");
        }
    }

    private static double relative(Tensor expected, Tensor actual) {
        try (Tensor a = actual.to(DType.FLOAT64); Tensor d = a.sub(expected); Tensor ad = d.abs(); Tensor m = ad.max();
             Tensor e = expected.abs(); Tensor em = e.max()) {
            return m.item() / Math.max(1e-30, em.item());
        }
    }

    /**
     * Random shapes: 1-3 images, 16-64 input and output channels (the 8x32 register tile where output channels
     * come in 32s, the 16x16 one otherwise), sizes 3-19 (partial 4x4 tiles at the
     * right and bottom, images smaller than a tile), padding 0-2. float32 sums of up to 576 products of
     * unit normals, through the transforms: within 3e-5 of the largest magnitude (1.7e-6 measured at 64 channels).
     */
    @Test
    void matchesFloat64OnRandomShapes() {
        Random r = new Random(5);
        for (int i = 0; i < 16; i++) {
            int n = 1 + r.nextInt(3), cin = 16 * (1 + r.nextInt(4)), cout = 16 * (1 + r.nextInt(4));
            int pad = r.nextInt(3), h = Math.max(3 - 2 * pad, 3) + r.nextInt(17), w = Math.max(3 - 2 * pad, 3) + r.nextInt(17);
            Geometry g = geometry(n, cin, h, w, cout, pad);
            assertTrue(WinogradF32.handles(g), "Winograd forward for " + g);
            double[] e = relativeErrors(new long[] {n, cin, h, w}, new long[] {cout, cin, 3, 3}, pad, true);
            String shape = g.toString();
            assertTrue(e[0] < 3e-5, "output " + e[0] + " for " + shape);
            assertTrue(e[1] < 3e-5, "input gradient " + e[1] + " for " + shape);
            assertTrue(e[2] < 3e-5, "weight gradient " + e[2] + " for " + shape);
        }
    }

    /**
     * F(2x2, 3x3) on input gradients (the default where it pays) on random shapes: 1-3 images, and 5-7 every fourth shape
     * (blocks of 16 tiles across images, ending mid-image), 16-64 channels each way (both register tiles), sizes 1-19 and
     * paddings 0-2 (partial 2x2 tiles, maps smaller than a tile): within 3x the direct path's error against float64 or 1e-6 of the
     * largest magnitude.
     */
    @Test
    void inputGradientOnTwoByTwoMatchesFloat64OnRandomShapes() {
        Random r = new Random(7);
        for (int i = 0; i < 16; i++) {
            int n = i % 4 == 3 ? 5 + r.nextInt(3) : 1 + r.nextInt(3), cin = 16 * (1 + r.nextInt(4)), cout = 16 * (1 + r.nextInt(4));
            int pad = r.nextInt(3), h = Math.max(3 - 2 * pad, 1) + r.nextInt(17), w = Math.max(3 - 2 * pad, 1) + r.nextInt(17);
            long[] x = {n, cin, h, w}, wt = {cout, cin, 3, 3};
            Geometry g = geometry(n, cin, h, w, cout, pad);
            System.setProperty("jtorch.conv.winogradInputGrad", "all");
            assertTrue(WinogradF32.handlesInputGrad(CpuConvolutionKernels.flippedGeometry(g)), "Winograd input gradient for " + g);
            System.clearProperty("jtorch.conv.winogradInputGrad");
            double[] direct = relativeErrors(x, wt, pad, false), winograd = twoByTwoInputGradErrors(x, wt, pad);
            assertTrue(winograd[1] < Math.max(3 * direct[1], 1e-6), "input gradient " + winograd[1] + " against direct " + direct[1] + " for " + g);
        }
    }

    /**
     * The error the transforms add, on ResNet's 64-channel layer and ResNet-50's 128 channels at 28 px: Winograd
     * against float64 within 3x of the direct float32 path's own error for the forward and for the input gradient,
     * whose flipped convolution takes it too. Measured 2026-12-05 (relative to the largest magnitude; interpolation
     * points 0, +-3/2, +-3/4): 64 channels output 1.7e-6 against 1.0e-6 direct, input gradient 1.3e-6 against
     * 9.1e-7 (with the usual points 0, +-1, +-2, 8.0e-6 and 6.3e-6); 128 channels output 2.1e-6 against 1.2e-6,
     * input gradient 2.3e-6 against 1.5e-6. docs/BENCHMARKS.md has the absolute errors and deeper layers. ResNet-20's
     * small maps (blocks across images), 2026-12-07: 32 channels at 16 px output 1.4e-6 against 4.7e-7 direct, input
     * gradient 1.3e-6 against 6.3e-7; 64 channels at 8 px 1.6e-6 against 7.5e-7, 1.5e-6 against 1.1e-6. Winograd's
     * error stays near 1.5e-6 while the direct path's shrinks with shorter sums, so the bound is 3x direct or 2e-6.
     * F(2x2, 3x3)'s input gradient, 2026-12-07 (nineteenth session): 64 channels at 16 px 2.8e-7, 128 at 28 px 4.6e-7,
     * 32 at 16 px 2.6e-7, 64 at 8 px 3.6e-7: below the direct path's (sums of cin products, not 9 cin), its bound.
     */
    @Test
    void errorAgainstTheDirectPaths() {
        long[][] shapes = {{2, 64, 16, 16}, {2, 128, 28, 28}, {4, 32, 16, 16}, {8, 64, 8, 8}, {2, 16, 32, 32}};
        for (long[] x : shapes) {
            long[] w = {x[1], x[1], 3, 3};
            assertTrue(WinogradF32.handles(geometry((int) x[0], (int) x[1], (int) x[2], (int) x[3], (int) x[1], 1)));
            double[] direct = relativeErrors(x, w, 1, false), winograd = relativeErrors(x, w, 1, true);
            double[] twoByTwo = twoByTwoInputGradErrors(x, w, 1);
            System.out.printf("Winograd F(4x4,3x3) relative error, %d channels, %d px: output %.2e (direct %.2e), input gradient %.2e "
                    + "(direct %.2e, F(2x2,3x3) %.2e)%n", x[1], x[2], winograd[0], direct[0], winograd[1], direct[1], twoByTwo[1]);
            // Shorter sums (32 channels) make the direct path's error small, not Winograd's: there the bound is 2e-6.
            assertTrue(winograd[0] < Math.max(3 * direct[0], 2e-6), x[1] + " channels, output: " + winograd[0] + " against direct " + direct[0]);
            assertTrue(winograd[1] < Math.max(3 * direct[1], 2e-6), x[1] + " channels, input gradient: " + winograd[1] + " against direct " + direct[1]);
            // F(2x2, 3x3) (the default input gradient of 32-64 channels): at most the direct path's error.
            assertTrue(twoByTwo[1] < direct[1], x[1] + " channels, F(2x2, 3x3) input gradient: " + twoByTwo[1] + " against direct " + direct[1]);
        }
    }

    /** Shapes it leaves to the direct and GEMM paths, and the switch. */
    @Test
    void otherShapesAndTheSwitchTakeOtherPaths() {
        assertTrue(WinogradF32.handles(geometry(2, 16, 9, 9, 32, 1)));
        assertEquals(false, WinogradF32.handles(geometry(2, 8, 9, 9, 32, 1)), "8 input channels");
        assertTrue(WinogradF32.handles(geometry(2, 16, 9, 9, 16, 1)), "16 output channels: the 16x16 tile");
        assertEquals(false, WinogradF32.handles(geometry(2, 16, 9, 9, 24, 1)), "24 output channels");
        assertEquals(false, WinogradF32.handles(geometry(2, 16, 9, 9, 32, 3)), "padding 3");
        assertEquals(false, WinogradF32.handles(new Geometry(2, 16, 9, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 5, 5)), "stride 2");
        assertEquals(false, WinogradF32.handles(new Geometry(2, 16, 9, 9, 32, 3, 3, 1, 1, 2, 2, 2, 2, 1, 9, 9)), "dilation 2");
        assertEquals(false, WinogradF32.handles(new Geometry(2, 32, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 2, 9, 9)), "2 groups");
        assertEquals(false, WinogradF32.handles(new Geometry(2, 16, 9, 9, 32, 5, 5, 1, 1, 2, 2, 1, 1, 1, 9, 9)), "5x5");
        Geometry g = geometry(2, 16, 9, 9, 32, 1);
        assertTrue(WinogradF32.handlesInputGrad(g), "switched fully on: the input gradient too");
        for (String off : new String[] {"false", "0"}) {
            System.setProperty("jtorch.conv.winograd", off);
            assertEquals(false, WinogradF32.handles(g), "switched off: " + off);
            assertEquals(false, WinogradF32.handlesInputGrad(g), "switched off: " + off);
        }
        // By default (or "forward"): the forward, where it pays.
        Geometry pays = geometry(8, 64, 56, 56, 64, 1);
        for (String forward : new String[] {"forward", null}) {
            if (forward == null) System.clearProperty("jtorch.conv.winograd");
            else System.setProperty("jtorch.conv.winograd", forward);
            String env = forward == null ? System.getenv("JTORCH_CONV_WINOGRAD") : forward;
            boolean off = "0".equals(env) || "false".equals(env), full = "1".equals(env) || "true".equals(env);
            assertEquals(!off, WinogradF32.handles(pays), "forward on: " + env);
            assertEquals(full, WinogradF32.handles(g), "16 input channels: " + env);
            assertEquals(!off, WinogradF32.handlesInputGrad(pays), "input gradient on F(2x2, 3x3): " + env);
        }
    }

    /**
     * Where it pays (measured on one core): 32 and more channels each way, 32 tiles per image, and enough for the
     * transformed weights; or small maps (4-31 tiles an image) of up to 64 x 64 channels, whose blocks span images.
     */
    @Test
    void paysWithEnoughChannelsAndTiles() {
        assertTrue(WinogradF32.pays(geometry(128, 64, 32, 32, 64, 1)), "128x64x32x32");
        assertTrue(WinogradF32.pays(geometry(8, 128, 28, 28, 128, 1)), "128 channels at 28 px");
        // Small maps, their blocks of tiles across images, up to 64 x 64 channels (transformed weights in L2).
        assertTrue(WinogradF32.pays(geometry(128, 64, 8, 8, 64, 1)), "64 channels at 8 px: 4 tiles");
        assertTrue(WinogradF32.pays(geometry(128, 32, 16, 16, 32, 1)), "32 channels at 16 px: 16 tiles");
        assertEquals(false, WinogradF32.pays(geometry(128, 64, 4, 4, 64, 1)), "64 channels at 4 px: one tile");
        assertEquals(false, WinogradF32.pays(geometry(128, 128, 8, 8, 128, 1)), "128 channels at 8 px: 2.4 MB of transformed weights");
        assertEquals(false, WinogradF32.pays(geometry(128, 16, 32, 32, 16, 1)), "16 channels");
        assertEquals(false, WinogradF32.pays(geometry(128, 16, 32, 32, 64, 1)), "16 input channels");
        assertEquals(false, WinogradF32.pays(geometry(8, 256, 14, 14, 256, 1)), "256 channels at 14 px: 16 tiles");
        assertEquals(false, WinogradF32.pays(geometry(8, 512, 7, 7, 512, 1)), "512 channels at 7 px");
        System.clearProperty("jtorch.conv.winograd");
        assertTrue(WinogradF32.handles(geometry(128, 64, 8, 8, 64, 1)), "by default the forward");
        assertTrue(WinogradF32.handlesInputGrad(geometry(128, 64, 8, 8, 64, 1)), "by default the input gradient, on F(2x2, 3x3)");
        assertTrue(WinogradF32.paysInputGrad(geometry(128, 32, 16, 16, 32, 1)), "32 channels at 16 px");
        assertEquals(false, WinogradF32.paysInputGrad(geometry(128, 128, 8, 8, 128, 1)), "128 channels: not measured");
        assertEquals(false, WinogradF32.paysInputGrad(geometry(128, 16, 32, 32, 16, 1)), "16 channels: F(2x2, 3x3) slower than direct");
        System.setProperty("jtorch.conv.winogradInputGrad", "false");
        assertEquals(false, WinogradF32.handlesInputGrad(geometry(128, 64, 8, 8, 64, 1)), "F(2x2, 3x3) switched off");
    }

    /**
     * ResNet-20's 16-channel 32 px layers: by default the input gradient on F(4x4, 3x3) (the forward stays direct,
     * {@code CompiledModelsTest}'s folded batch norms); {@code jtorch.conv.winogradSixteen} {@code all} and {@code false}.
     */
    @Test
    void sixteenChannelsTakeWinogradsInputGradient() {
        Geometry layer = geometry(128, 16, 32, 32, 16, 1);
        System.clearProperty("jtorch.conv.winograd");
        assertTrue(WinogradF32.paysOnSixteenChannels(layer));
        assertEquals(false, WinogradF32.paysOnSixteenChannels(geometry(128, 16, 16, 16, 16, 1)), "16 px: not measured");
        assertEquals(false, WinogradF32.paysOnSixteenChannels(geometry(128, 16, 32, 32, 32, 1)), "16 -> 32");
        String before = System.getProperty("jtorch.conv.winogradSixteen");
        try {
            System.clearProperty("jtorch.conv.winogradSixteen");
            assertEquals(false, WinogradF32.handles(layer), "the forward stays direct by default");
            assertTrue(WinogradF32.handlesInputGrad(layer), "the input gradient on Winograd by default");
            System.setProperty("jtorch.conv.winogradSixteen", "all");
            assertTrue(WinogradF32.handles(layer) && WinogradF32.handlesInputGrad(layer), "all: both");
            System.setProperty("jtorch.conv.winogradSixteen", "false");
            assertEquals(false, WinogradF32.handles(layer) || WinogradF32.handlesInputGrad(layer), "false: neither");
        } finally {
            if (before == null) System.clearProperty("jtorch.conv.winogradSixteen");
            else System.setProperty("jtorch.conv.winogradSixteen", before);
        }
    }

    /**
     * The filter transform split over the pool ({@code WinogradF32.transformedWeights}, by input channel): each filter's
     * transform is its own, so the outputs come out bit for bit as in one thread, at 2 and 3 threads, for F(4x4, 3x3) and
     * F(2x2, 3x3), forward and flipped (the input gradient's weight); 96 x 64 channels split in three at 3 threads.
     */
    @Test
    void filterTransformSplitOverThreadsKeepsTheBits() {
        int saved = Parallel.numThreads();
        try (Arena arena = Arena.ofShared()) {
            Geometry g = geometry(2, 96, 9, 11, 64, 1);
            Random r = new Random(11);
            MemorySegment x = arena.allocate((long) 2 * 96 * 9 * 11 * Float.BYTES, 64), w = arena.allocate(96L * 64 * 9 * Float.BYTES, 64);
            for (long i = 0; i < x.byteSize() / Float.BYTES; i++) x.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) r.nextGaussian());
            for (long i = 0; i < w.byteSize() / Float.BYTES; i++) w.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) r.nextGaussian());
            // All four forms at one thread first, then each at 2 and 3 threads: consecutive calls differ in form, so a
            // part of the transformed weights left unwritten would hold another form's values (the buffer is reused).
            float[][] one = new float[4][];
            for (int form = 0; form < 4; form++) one[form] = winograd(arena, x, w, g, form, 1);
            for (int threads = 2; threads <= 3; threads++) {
                for (int form = 0; form < 4; form++) {
                    assertTrue(Arrays.equals(one[form], winograd(arena, x, w, g, form, threads)),
                            ((form & 2) != 0 ? "F(2x2)" : "F(4x4)") + ((form & 1) != 0 ? " flipped" : "") + " at " + threads + " threads");
                }
            }
        } finally {
            Parallel.setNumThreads(saved);
        }
    }

    /** {@code WinogradF32.forward} at {@code threads}: F(2x2, 3x3) where {@code form & 2}, the weight flipped where {@code form & 1}. */
    private static float[] winograd(Arena arena, MemorySegment x, MemorySegment w, Geometry g, int form, int threads) {
        boolean twoByTwo = (form & 2) != 0, flipped = (form & 1) != 0;
        Parallel.setNumThreads(threads);
        MemorySegment out = arena.allocate((long) g.n() * g.cout() * g.oh() * g.ow() * Float.BYTES, 64);
        WinogradF32.forward(x, 0, false, w, 0, null, 0, out, 0, g, flipped, null, twoByTwo);
        return out.toArray(ValueLayout.JAVA_FLOAT);
    }
}
