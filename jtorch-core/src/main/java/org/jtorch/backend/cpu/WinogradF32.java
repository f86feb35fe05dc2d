package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 3x3 stride-1 convolution by Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray, 2015): each
 * 4x4 block of output pixels comes from a 6x6 input tile as {@code A^T [(G g G^T) . (B^T d B)] A}, 36
 * multiplications per input channel where the direct convolution does 144. The 36 element-wise products,
 * summed over input channels, are 36 matrix products {@code M_e = V_e U_e} of transformed tiles
 * {@code [tiles x cin]} by transformed weights {@code [cin x cout]}, run with output channels in the vector
 * lanes on the direct convolution's register tiles (8 tiles x 32 channels, or 16 x 16). Images are copied
 * channels-last (as {@link ConvDirectF32} does), so both transforms work on 16 channels per vector.
 *
 * <p>The transforms are Toom-Cook's at the points {@code 0, +-3/2, +-3/4} and infinity rather than the usual
 * {@code 0, +-1, +-2}: closer to 1 in magnitude, their Vandermonde matrices are better conditioned (among the
 * best points of a float32 simulation over small fractions, in the spirit of Barabasz et al., "Error analysis
 * and improving the accuracy of Winograd convolution for deep neural networks", 2020), and every matrix entry
 * but G's is a dyadic fraction, exact in float32; G is applied in float64. Against a float64 reference, relative to the
 * largest magnitude, 64 channels: output 1.7e-6 and input gradient 1.3e-6, where the usual points gave 8.0e-6
 * and 6.3e-6 and the direct path gives 1.0e-6 and 9.1e-7 ({@code WinogradConvolutionTest}). The matrices, rows
 * separated by semicolons: {@code B^T = [81/64 0 -45/16 0 1 0; 0 -27/32 -9/16 3/2 1 0; 0 27/32 -9/16 -3/2 1 0;
 * 0 -27/16 -9/4 3/4 1 0; 0 27/16 -9/4 -3/4 1 0; 0 81/64 0 -45/16 0 1]}, {@code G = [64/81 0 0; 32/243 16/81 8/27;
 * 32/243 -16/81 8/27; -128/243 -32/81 -8/27; -128/243 32/81 -8/27; 0 0 1]}, {@code A^T = [1 1 1 1 1 0;
 * 0 3/2 -3/2 3/4 -3/4 0; 0 9/4 9/4 9/16 9/16 0; 0 27/8 -27/8 27/64 -27/64 1]}.
 * The weight gradient stays on {@link ConvDirectF32}: its Winograd form (sums of 36 products over every tile,
 * transformed back at the end) ran slower there, its depth (the tiles) being the register tile's outer loop.
 * On by default for the forward where it {@link #pays}, for the input gradient with {@code JTORCH_CONV_WINOGRAD=1}
 * ({@link #setting}) or on 16 channels ({@link #paysOnSixteenChannels}). A block of tiles may span images.
 *
 * <p>F(2x2, 3x3) (points 0, +-1 and infinity; 4x4 input tiles, 16 products per 2x2 output pixels, 2.25x fewer
 * multiplications than the direct path) runs the input gradients of 32-64 channels by default ({@link
 * #paysInputGrad}): its error against float64 is below the direct path's (fewer roundings: sums of {@code cin}
 * products where the direct path sums {@code 9 cin}), where F(4x4, 3x3)'s took a ResNet basic block's gradients outside
 * their PyTorch fixture ({@link #setting}).
 */
final class WinogradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Tiles transformed and multiplied together: their transformed tiles and products stay in L2. */
    private static final int TB = 16;

    private WinogradF32() {}

    /**
     * The switch, read per call (so that a program or test may turn it at any time): {@code -Djtorch.conv.winograd},
     * else {@code JTORCH_CONV_WINOGRAD}. {@code 0} or {@code false}: off; unset (or {@code forward}): the forward,
     * where it {@link #pays}; {@code 1} or {@code true}: the forward and the input gradient, every shape it
     * {@link #fits}. By default the input gradient takes F(2x2, 3x3) instead ({@link #handlesInputGrad}): with F(4x4,
     * 3x3) both ways, their errors together took a ResNet
     * basic block's conv1 weight gradient, through training-mode batch norm's backward, outside its PyTorch
     * fixture's tolerance ({@code ModelsTest}: 0.0034890
     * against 0.0035155, tolerance 1.35e-5; the float64 value is 0.0035141), where either alone stays inside it
     * (worst error over tolerance in that test: direct 0.36, Winograd forward 0.25, Winograd input gradient 0.62,
     * both 1.96).
     */
    private static String setting() {
        String property = System.getProperty("jtorch.conv.winograd");
        return property != null ? property : ENVIRONMENT_SETTING;
    }

    /** {@code JTORCH_CONV_WINOGRAD}, read once: a process's environment does not change, and a lookup on every call showed in the balance report. */
    private static final String ENVIRONMENT_SETTING = System.getenv("JTORCH_CONV_WINOGRAD");

    private static boolean off(String setting) {
        return "0".equals(setting) || "false".equals(setting);
    }

    /**
     * Whether {@link #forward} applies to a forward convolution: the switch fully on and {@link #fits}, or by
     * default where it also {@link #pays}.
     */
    static boolean handles(Geometry g) {
        String setting = setting();
        return fits(g) && (fullyOn(setting) || !off(setting) && pays(g));
    }

    private static boolean fullyOn(String setting) {
        return "1".equals(setting) || "true".equals(setting);
    }

    /**
     * Whether it beats the direct kernels, as measured on one core (thread CPU time, 8-128 images): with 32 or more
     * channels each way, at least 32 4x4 tiles per image, and a tile per image for every 1024 weights' worth of
     * transformed filters. 128x64x32x32 1.8x faster, ResNet-50's 64 channels at 56 px 1.3x, 128 at 28 px 1.7x.
     * Left direct: 16 channels (ResNet-20 at 32 px 1.33x slower: transforms against 16x16 products); few tiles
     * (ResNet-20's 32 channels at 16 px and 64 at 8 px, 16 and 4 tiles: level, and the direct path's lower error
     * keeps a compiled ResNet-20, its batch norms folded into the weights, within 1e-6 of the eager one:
     * {@code CompiledModelsTest}); and few tiles against large transformed weights, streamed again for every block
     * of 16 tiles (256 channels at 14 px 1.14x slower; 512 at 7 px, 37.7 MB of them, 2.7x).
     */
    static boolean pays(Geometry g) {
        long tiles = (long) ((g.oh() + 3) / 4) * ((g.ow() + 3) / 4);
        return Math.min(g.cin(), g.cout()) >= 32 && tiles >= 32 && tiles * 1024 >= (long) g.cin() * g.cout() || paysOnSmallMaps(g)
                || paysOnSixteenChannels(g) && "all".equals(System.getProperty("jtorch.conv.winogradSixteen"));
    }

    /**
     * ResNet-20's 16-channel layers at 32 px (64 tiles an image), with blocks of tiles across images: forward and input
     * gradient 1.2x faster than the direct path in one thread (docs/BENCHMARKS.md, issue 22, nineteenth session), where
     * one image a block ran 1.33x slower. Only 16 x 16 channels with 64 tiles or more were measured. By default the
     * input gradient only: the forward's larger error moved a compiled ResNet-20, its batch norms folded into the
     * weights, 1.3e-6 away from the eager one ({@code CompiledModelsTest} allows 1e-6). {@code
     * -Djtorch.conv.winogradSixteen} (read per call): {@code false} leaves both direct, {@code all} takes the forward too.
     */
    static boolean paysOnSixteenChannels(Geometry g) {
        long tiles = (long) ((g.oh() + 3) / 4) * ((g.ow() + 3) / 4);
        return ACROSS_IMAGES && g.cin() == 16 && g.cout() == 16 && tiles >= 64;
    }

    /**
     * Small maps of 32-64 channels each way (ResNet-20's 32 channels at 16 px and 64 at 8 px, 16 and 4 tiles an
     * image): with blocks of tiles across images and transformed weights of at most 590 KB (L2-resident), the forward
     * runs 1.5-1.9x faster than the direct path in one thread (docs/BENCHMARKS.md, issue 22, eighteenth session).
     * Maps of 4 tiles or more; {@code -Djtorch.conv.winogradSmallMaps=false} leaves them direct. Their input gradients
     * take F(2x2, 3x3) instead ({@link #paysInputGrad}): F(4x4, 3x3) there failed the {@code ModelsTest} basic block
     * ({@link #setting}).
     */
    static boolean paysOnSmallMaps(Geometry g) {
        long tiles = (long) ((g.oh() + 3) / 4) * ((g.ow() + 3) / 4);
        return SMALL_MAPS && ACROSS_IMAGES && Math.min(g.cin(), g.cout()) >= 32 && (long) g.cin() * g.cout() <= 64 * 64
                && tiles >= 4 && tiles < 32;
    }

    private static final boolean SMALL_MAPS = !"false".equals(System.getProperty("jtorch.conv.winogradSmallMaps"));

    /**
     * Whether {@link #inputGrad} runs the flipped convolution {@code g} of an input gradient: the switch fully on
     * (F(4x4, 3x3), every shape it {@link #fits}), or by default F(2x2, 3x3) where it {@link #paysInputGrad}.
     * {@code -Djtorch.conv.winogradInputGrad} (read per call): {@code false} leaves those direct, {@code all} takes
     * F(2x2, 3x3) for every shape it fits (to test it).
     */
    static boolean handlesInputGrad(Geometry g) {
        String setting = setting(), twoByTwo = System.getProperty("jtorch.conv.winogradInputGrad");
        return fits(g) && (fullyOn(setting) || !off(setting) && (sixteenChannelsInputGrad(g)
                || !"false".equals(twoByTwo) && ("all".equals(twoByTwo) || paysInputGrad(g))));
    }

    /** Whether the input gradient {@code g} takes F(4x4, 3x3) by default: {@link #paysOnSixteenChannels}, unless switched off. */
    private static boolean sixteenChannelsInputGrad(Geometry g) {
        String sixteen = System.getProperty("jtorch.conv.winogradSixteen");
        return paysOnSixteenChannels(g) && !"false".equals(sixteen);
    }

    /**
     * Where F(2x2, 3x3) beats the direct path on an input gradient (flipped geometry {@code g}), as measured on one core:
     * 32-64 channels each way, up to 64 x 64 (ResNet-20's 32 channels at 16 px 1.2x, 64 at 8 px 1.3x, 64 at 16 px 1.4x).
     * Left direct: 16 channels (ResNet-20's at 32 px 1.15x slower: 16-product reductions, and the transforms, against
     * the direct tile's 144; those take F(4x4, 3x3), {@link #paysOnSixteenChannels}).
     */
    static boolean paysInputGrad(Geometry g) {
        return Math.min(g.cin(), g.cout()) >= 32 && (long) g.cin() * g.cout() <= 64 * 64 && ACROSS_IMAGES;
    }

    /**
     * The input gradient of a stride-1 3x3 convolution as the convolution {@code fg} ({@link #handlesInputGrad}) of
     * {@code gradOut} with the flipped weight: F(2x2, 3x3) by default, whose error stays near the direct path's; F(4x4,
     * 3x3) with the switch fully on, whose larger error took a ResNet basic block's conv1 weight gradient, through
     * training-mode batch norm's backward, outside its PyTorch fixture's tolerance ({@code ModelsTest}).
     */
    static void inputGrad(MemorySegment gradOut, long gOff, boolean gradOutBf16, MemorySegment w, long wOff, MemorySegment gradInput,
                          long iOff, Geometry fg) {
        boolean twoByTwo = !fullyOn(setting()) && !sixteenChannelsInputGrad(fg);
        forward(gradOut, gOff, gradOutBf16, w, wOff, null, 0, gradInput, iOff, fg, true, null, twoByTwo);
    }

    /** Whether {@link #forward} can run {@code g}: 3x3, stride 1, no dilation or groups, channels in whole vectors. */
    static boolean fits(Geometry g) {
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.kh() == 3 && g.kw() == 3
                && g.sh() == 1 && g.sw() == 1 && g.dh() == 1 && g.dw() == 1 && g.ph() <= 2 && g.pw() <= 2
                && g.cin() % 16 == 0 && g.cout() % 16 == 0 && g.oh() > 0 && g.ow() > 0;
    }

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] image = new float[0];
        /** Transformed tiles, {@code v[(e * TB + tile) * cin + c]}, and their products {@code m[(e * TB + tile) * cout + c]}. */
        float[] v = new float[0];
        float[] m = new float[0];
        /** One tile's half-transformed 6x6 (or 4x6) vectors. */
        final float[] half = new float[36 * 16];
        final float[] block = new float[16 * 16];
        /**
         * The output pixels of one tile row, channels-last: {@code strip[(r * ow + x) * cout + c]}, r < 2 or 4, and 16
         * pixels more, which {@link #stripTailToPlanes} may read past a row's last pixel; native like the tensors ({@link
         * Gemm#transposeBlock16} reads it).
         */
        MemorySegment strip = MemorySegment.NULL;
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /**
     * {@code out = conv(x, w) + bias} ({@code bias} may be null). With {@code flipped}, {@code w} is the weight of
     * the convolution whose input gradient {@code g} computes: {@code w[ic][oc][2 - ki][2 - kj]}. With {@code xBf16},
     * {@code x} is bfloat16, widened as its images are padded.
     */
    static void forward(MemorySegment x, long xOff, boolean xBf16, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, boolean flipped, ConvolutionKernels.Epilogue epilogue) {
        forward(x, xOff, xBf16, w, wOff, bias, bOff, out, oOff, g, flipped, epilogue, false);
    }

    /**
     * As {@link #forward}, with {@code twoByTwo} on F(2x2, 3x3): 4x4 input tiles, 16 products per 2x2 output
     * pixels (the direct path does 36), an error near the direct path's (the input gradients, {@link #handlesInputGrad}).
     */
    static void forward(MemorySegment x, long xOff, boolean xBf16, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, boolean flipped, ConvolutionKernels.Epilogue epilogue,
                        boolean twoByTwo) {
        int cin = g.cin(), cout = g.cout(), oh = g.oh(), ow = g.ow();
        int mt = twoByTwo ? 2 : 4, elements = (mt + 2) * (mt + 2);
        float[] u = transformedWeights(w, wOff, cin, cout, flipped, twoByTwo);
        float[] bv = new float[cout];
        if (bias != null) {
            for (int oc = 0; oc < cout; oc++) bv[oc] = bias.get(F32, (bOff + oc) * Float.BYTES);
        }
        int tH = (oh + mt - 1) / mt, tW = (ow + mt - 1) / mt, tiles = tH * tW;
        // A block takes TB consecutive tiles of the batch, across images where an image has fewer (8 px: 4 tiles,
        // four images a block), so the register tile's 8 rows are all real tiles.
        long total = (long) g.n() * tiles;
        long blocks = ACROSS_IMAGES ? (total + TB - 1) / TB : (long) g.n() * ((tiles + TB - 1) / TB);
        int perImage = (tiles + TB - 1) / TB;
        int hp = mt * tH + 2, wpad = mt * tW + 2;
        long inImage = (long) cin * g.h() * g.w(), outImage = (long) cout * oh * ow;
        Parallel.forRangeBalanced(blocks, 1, (b0, b1) -> {
            Work wk = WORK.get();
            wk.v = ConvF32.grow(wk.v, elements * TB * cin);
            wk.m = ConvF32.grow(wk.m, elements * TB * cout);
            wk.image = ConvF32.grow(wk.image, hp * wpad * cin);
            long stripBytes = ((long) mt * ow + 16) * cout * Float.BYTES;
            if (wk.strip.byteSize() < stripBytes) wk.strip = Arena.ofAuto().allocate(stripBytes, 64);
            long padded = -1;
            for (long b = b0; b < b1; b++) {
                long first, end;
                if (ACROSS_IMAGES) {
                    first = b * TB;
                    end = Math.min(total, first + TB);
                } else {
                    first = b / perImage * tiles + (b % perImage) * TB;
                    end = Math.min(b / perImage * tiles + tiles, first + TB);
                }
                for (long t = first; t < end; t++) {
                    long n = t / tiles;
                    if (padded != n) {
                        ConvF32.padChannelsLast(x, xOff + n * inImage, xBf16, cin, g, hp, wpad, wk.image, 0, wk.block);
                        padded = n;
                    }
                    int ti = (int) (t - n * tiles);
                    if (twoByTwo) inputTile2x2(wk, cin, wpad, ti / tW, ti % tW, (int) (t - first));
                    else inputTile(wk, cin, wpad, ti / tW, ti % tW, (int) (t - first));
                }
                int count = (int) (end - first);
                int ob = lanes(cout), step = ob == 32 ? 8 : 16;
                for (int e = 0; e < elements; e++) {
                    for (int r = 0; r < count; r += step) {
                        for (int c0 = 0; c0 < cout; c0 += ob) product(wk, u, cin, cout, e, r, c0);
                    }
                }
                for (long t = first; t < end; ) {
                    long n = t / tiles;
                    int t0 = (int) (t - n * tiles), t1 = (int) Math.min(tiles, end - n * tiles);
                    long image = (oOff + n * outImage) * Float.BYTES;
                    outputTiles(wk, mt, cout, oh, ow, tW, t0, t1, (int) (n * tiles - first), bv, out, image);
                    if (epilogue != null) epilogueOverTiles(epilogue, n, cout, oh, ow, tW, mt, t0, t1);
                    t = n * tiles + t1;
                }
            }
        });
    }

    /**
     * Whether a block of {@link #TB} tiles may span images ({@code -Djtorch.conv.winogradAcrossImages=false}: one
     * image's tiles a block, the earlier form, to compare).
     */
    private static final boolean ACROSS_IMAGES = !"false".equals(System.getProperty("jtorch.conv.winogradAcrossImages"));

    /**
     * {@code epilogue} over the output of tiles {@code [t0, t1)} of image n ({@code tW} tiles of {@code mt x mt} pixels a
     * row): whole tile rows as one range of pixels, a part of a tile row one pixel row at a time.
     */
    private static void epilogueOverTiles(ConvolutionKernels.Epilogue epilogue, long n, int cout, int oh, int ow, int tW, int mt,
                                          int t0, int t1) {
        for (int t = t0; t < t1; ) {
            int ty = t / tW, tx = t % tW;
            if (tx == 0 && t + tW <= t1) {
                int rows = (t1 - t) / tW;
                epilogue.block(n, n + 1, 0, cout, (long) mt * ty * ow, (long) Math.min(oh, mt * (ty + rows)) * ow);
                t += rows * tW;
            } else {
                int end = Math.min(t1, (ty + 1) * tW);
                int x0 = mt * tx, x1 = Math.min(ow, mt * (end - ty * tW));
                for (int y = mt * ty; y < Math.min(oh, mt * ty + mt); y++) epilogue.block(n, n + 1, 0, cout, (long) y * ow + x0, (long) y * ow + x1);
                t = end;
            }
        }
    }

    /**
     * {@code (G g G^T)[e]} of each 3x3 filter (oc, ic), transformed in float64, in the register tile's blocked
     * order: {@code u[((e * (cout / ob) + oc / ob) * cin + ic) * ob + oc % ob]}, {@code ob = lanes(cout)}; with
     * {@code twoByTwo}, F(2x2, 3x3)'s 16 elements {@code (G2 g G2^T)[e]}.
     */
    private static float[] transformedWeights(MemorySegment w, long wOff, int cin, int cout, boolean flipped, boolean twoByTwo) {
        WeightBuffers buffers = WEIGHTS.get();
        float[] wh = buffers.source = ConvF32.grow(buffers.source, cin * cout * 9);
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, cin * cout * 9);
        int alpha = twoByTwo ? 4 : 6;
        float[] u = buffers.transformed = ConvF32.grow(buffers.transformed, alpha * alpha * cin * cout);
        int ob = lanes(cout);
        // Eight output channels at a time in float64 lanes: the same operations in the same order as one filter at a
        // time (the same bits), without 36 scattered stores per filter (a 64x64 layer's transform was 12% of its call).
        int[] lanes = new int[8];
        for (int l = 0; l < 8; l++) lanes[l] = l * (flipped ? 9 : cin * 9);
        // Each input channel's filters are transformed apart from the others': split over the pool, the same bits.
        Parallel.forRange(cin, Math.max(1, FILTERS_PER_CHUNK / cout), (ic0, ic1) -> {
            WeightBuffers scratch = WEIGHTS.get();
            for (int ic = (int) ic0; ic < ic1; ic++) {
                for (int oc = 0; oc < cout; oc += 8) {
                    int src = flipped ? (ic * cout + oc) * 9 : (oc * cin + ic) * 9;
                    int at = (oc / ob * cin + ic) * ob + oc % ob;
                    if (twoByTwo) eightFilters2x2(wh, src, flipped, lanes, scratch, u, at, cin * cout);
                    else eightFilters(wh, src, flipped, lanes, scratch, u, at, cin * cout);
                }
            }
        });
        return u;
    }

    /*
     * The filter transform in small methods, each compiled on its own: in one method, both transforms' vector code took
     * C2 past its node budget (NodeCountInliningCutoff), which left a transform, or a conversion to float32 inside one,
     * as a call with its vectors boxed (F(4x4, 3x3) at 64 x 64 channels 0.57 ms a call against 0.17 ms split up).
     */

    /** Eight filters' taps, from {@code wh[src]} on ({@code lanes} apart; read backwards when {@code flipped}), into {@code f[tap * 8 + lane]} in float64. */
    private static void loadFilters(float[] wh, int src, boolean flipped, int[] lanes, double[] f) {
        for (int tap = 0; tap < 9; tap++) {
            int at = flipped ? src + 8 - tap : src + tap;
            ((DoubleVector) FloatVector.fromArray(F8, wh, at, lanes, 0).convertShape(VectorOperators.F2D, D8, 0)).intoArray(f, tap * 8);
        }
    }

    /** {@code (G g G^T)[e]} of eight filters ({@link #loadFilters}) into {@code u[at + e * es]}, e < 36. */
    private static void eightFilters(float[] wh, int src, boolean flipped, int[] lanes, WeightBuffers scratch, float[] u, int at, int es) {
        double[] f = scratch.filters, gf = scratch.columns, t = scratch.transformed64;
        loadFilters(wh, src, flipped, lanes, f);
        for (int j = 0; j < 3; j++) filterColumns(f, j * 8, 24, gf, j * 8, 24);  // columns: G f, 6x3
        for (int i = 0; i < 6; i++) filterColumns(gf, i * 24, 8, t, i * 48, 8);  // rows: (G f) G^T, e = i * 6 + j
        toFloat(t, 36, u, at, es);
    }

    /** F(2x2, 3x3)'s {@code (G2 g G2^T)[e]} of eight filters ({@link #loadFilters}) into {@code u[at + e * es]}, e < 16. */
    private static void eightFilters2x2(float[] wh, int src, boolean flipped, int[] lanes, WeightBuffers scratch, float[] u, int at, int es) {
        double[] f = scratch.filters, gf = scratch.columns, t = scratch.transformed64;
        loadFilters(wh, src, flipped, lanes, f);
        for (int j = 0; j < 3; j++) filterColumns2x2(f, j * 8, 24, gf, j * 8, 24);  // columns: G2 f, 4x3
        for (int i = 0; i < 4; i++) filterColumns2x2(gf, i * 24, 8, t, i * 32, 8);  // rows, e = i * 4 + j
        toFloat(t, 16, u, at, es);
    }

    /** {@code u[at + e * es] = (float) t[e * 8]} for {@code elements} eight-lane vectors. */
    private static void toFloat(double[] t, int elements, float[] u, int at, int es) {
        for (int e = 0; e < elements; e++) {
            ((FloatVector) DoubleVector.fromArray(D8, t, e * 8).convertShape(VectorOperators.D2F, F8, 0)).intoArray(u, at + e * es);
        }
    }

    /**
     * Filters a thread transforms at least ({@link #transformedWeights}' split): 2048 are about 70 µs of F(4x4, 3x3)'s
     * transform on one core, against a few µs to wake a pool thread; ResNet-20's 64x64 layers (4096) split in two.
     */
    private static final int FILTERS_PER_CHUNK = 2048;

    private static final VectorSpecies<Double> D8 = DoubleVector.SPECIES_512;
    private static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
    private static final double G0 = 64.0 / 81, G1 = 32.0 / 243, G2 = 8.0 / 27, G3 = 16.0 / 81, G4 = -128.0 / 243, G5 = 32.0 / 81;

    /** {@code dst[d0 + i * ds] = (G src)[i]}, i < 6, for the 3 eight-lane vectors {@code src[s0 + k * ss]}. */
    private static void filterColumns(double[] src, int s0, int ss, double[] dst, int d0, int ds) {
        DoubleVector g0 = DoubleVector.fromArray(D8, src, s0), g1 = DoubleVector.fromArray(D8, src, s0 + ss);
        DoubleVector g2 = DoubleVector.fromArray(D8, src, s0 + 2 * ss);
        DoubleVector even = g0.mul(G1).add(g2.mul(G2)), odd = g1.mul(G3);
        g0.mul(G0).intoArray(dst, d0);
        even.add(odd).intoArray(dst, d0 + ds);
        even.sub(odd).intoArray(dst, d0 + 2 * ds);
        even = g0.mul(G4).sub(g2.mul(G2));
        odd = g1.mul(G5);
        even.sub(odd).intoArray(dst, d0 + 3 * ds);
        even.add(odd).intoArray(dst, d0 + 4 * ds);
        g2.intoArray(dst, d0 + 5 * ds);
    }

    /**
     * F(2x2, 3x3)'s {@code dst[d0 + i * ds] = (G2 src)[i]}, i < 4, {@code G2 = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]}
     * (points 0, 1, -1 and infinity), as {@link #filterColumns} otherwise.
     */
    private static void filterColumns2x2(double[] src, int s0, int ss, double[] dst, int d0, int ds) {
        DoubleVector g0 = DoubleVector.fromArray(D8, src, s0), g1 = DoubleVector.fromArray(D8, src, s0 + ss);
        DoubleVector g2 = DoubleVector.fromArray(D8, src, s0 + 2 * ss);
        DoubleVector even = g0.add(g2).mul(0.5), odd = g1.mul(0.5);
        g0.intoArray(dst, d0);
        even.add(odd).intoArray(dst, d0 + ds);
        even.sub(odd).intoArray(dst, d0 + 2 * ds);
        g2.intoArray(dst, d0 + 3 * ds);
    }

    /**
     * The calling thread's weight copies, reused (a 64x64 layer's transformed weights are 590 KB): a call's are read
     * by every thread until it returns, and no call runs inside another on one thread. {@link #filters}, {@link
     * #columns} and {@link #transformed64} are scratch of whichever thread runs a part of {@link #transformedWeights}.
     */
    private static final class WeightBuffers {
        float[] source = new float[0];
        float[] transformed = new float[0];
        /** Eight filters' taps, their column transforms and their transforms, {@code [tap][lane]}, in float64. */
        final double[] filters = new double[9 * 8];
        final double[] columns = new double[18 * 8];
        final double[] transformed64 = new double[36 * 8];
    }

    private static final ThreadLocal<WeightBuffers> WEIGHTS = ThreadLocal.withInitial(WeightBuffers::new);

    /** {@code B^T d B} of the 6x6 tile at tile row ty, column tx, 16 channels at a time, into row {@code slot} of each {@code V_e}. */
    private static void inputTile(Work wk, int cin, int wpad, int ty, int tx, int slot) {
        float[] img = wk.image, half = wk.half, v = wk.v;
        int base = (4 * ty * wpad + 4 * tx) * cin;
        int rowStride = wpad * cin;
        for (int c0 = 0; c0 < cin; c0 += 16) {
            // Columns first: half[(i * 6 + j) * 16] = (B^T d)[i][j].
            for (int j = 0; j < 6; j++) inputTransform(img, base + j * cin + c0, rowStride, half, j * 16, 6 * 16);
            // Then rows: V_e, e = i * 6 + j, at v[(e * TB + slot) * cin + c0].
            for (int i = 0; i < 6; i++) inputTransform(half, i * 96, 16, v, ((i * 6) * TB + slot) * cin + c0, TB * cin);
        }
    }

    /**
     * F(2x2, 3x3)'s {@code B2^T d B2}, {@code B2^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]}, of the 4x4 tile at tile row
     * ty, column tx, 16 channels at a time, into row {@code slot} of each {@code V_e}: the 16 vectors in registers.
     */
    private static void inputTile2x2(Work wk, int cin, int wpad, int ty, int tx, int slot) {
        float[] img = wk.image, v = wk.v;
        int rs = wpad * cin, es = TB * cin;
        for (int c0 = 0; c0 < cin; c0 += 16) {
            int p = (2 * ty * wpad + 2 * tx) * cin + c0, at = slot * cin + c0;
            // Columns first: (B2^T d)[i][j] = t<i><j>.
            FloatVector d0 = FloatVector.fromArray(FS, img, p), d1 = FloatVector.fromArray(FS, img, p + rs);
            FloatVector d2 = FloatVector.fromArray(FS, img, p + 2 * rs), d3 = FloatVector.fromArray(FS, img, p + 3 * rs);
            FloatVector t00 = d0.sub(d2), t10 = d1.add(d2), t20 = d2.sub(d1), t30 = d1.sub(d3);
            d0 = FloatVector.fromArray(FS, img, p + cin);
            d1 = FloatVector.fromArray(FS, img, p + rs + cin);
            d2 = FloatVector.fromArray(FS, img, p + 2 * rs + cin);
            d3 = FloatVector.fromArray(FS, img, p + 3 * rs + cin);
            FloatVector t01 = d0.sub(d2), t11 = d1.add(d2), t21 = d2.sub(d1), t31 = d1.sub(d3);
            d0 = FloatVector.fromArray(FS, img, p + 2 * cin);
            d1 = FloatVector.fromArray(FS, img, p + rs + 2 * cin);
            d2 = FloatVector.fromArray(FS, img, p + 2 * rs + 2 * cin);
            d3 = FloatVector.fromArray(FS, img, p + 3 * rs + 2 * cin);
            FloatVector t02 = d0.sub(d2), t12 = d1.add(d2), t22 = d2.sub(d1), t32 = d1.sub(d3);
            d0 = FloatVector.fromArray(FS, img, p + 3 * cin);
            d1 = FloatVector.fromArray(FS, img, p + rs + 3 * cin);
            d2 = FloatVector.fromArray(FS, img, p + 2 * rs + 3 * cin);
            d3 = FloatVector.fromArray(FS, img, p + 3 * rs + 3 * cin);
            FloatVector t03 = d0.sub(d2), t13 = d1.add(d2), t23 = d2.sub(d1), t33 = d1.sub(d3);
            // Then rows: V_e, e = i * 4 + j.
            t00.sub(t02).intoArray(v, at);
            t01.add(t02).intoArray(v, at + es);
            t02.sub(t01).intoArray(v, at + 2 * es);
            t01.sub(t03).intoArray(v, at + 3 * es);
            t10.sub(t12).intoArray(v, at + 4 * es);
            t11.add(t12).intoArray(v, at + 5 * es);
            t12.sub(t11).intoArray(v, at + 6 * es);
            t11.sub(t13).intoArray(v, at + 7 * es);
            t20.sub(t22).intoArray(v, at + 8 * es);
            t21.add(t22).intoArray(v, at + 9 * es);
            t22.sub(t21).intoArray(v, at + 10 * es);
            t21.sub(t23).intoArray(v, at + 11 * es);
            t30.sub(t32).intoArray(v, at + 12 * es);
            t31.add(t32).intoArray(v, at + 13 * es);
            t32.sub(t31).intoArray(v, at + 14 * es);
            t31.sub(t33).intoArray(v, at + 15 * es);
        }
    }

    /** {@code dst[d0 + i * ds] = (B^T x)[i]} for the six 16-float vectors {@code x[k] = src[s0 + k * ss]}. */
    private static void inputTransform(float[] src, int s0, int ss, float[] dst, int d0, int ds) {
        FloatVector x0 = FloatVector.fromArray(FS, src, s0), x1 = FloatVector.fromArray(FS, src, s0 + ss);
        FloatVector x2 = FloatVector.fromArray(FS, src, s0 + 2 * ss), x3 = FloatVector.fromArray(FS, src, s0 + 3 * ss);
        FloatVector x4 = FloatVector.fromArray(FS, src, s0 + 4 * ss), x5 = FloatVector.fromArray(FS, src, s0 + 5 * ss);
        FloatVector e12 = x2.fma(M9_16, x4), o12 = x1.fma(M27_32, x3.mul(P3_2));
        FloatVector e34 = x2.fma(M9_4, x4), o34 = x1.fma(M27_16, x3.mul(P3_4));
        x0.fma(P81_64, x2.fma(M45_16, x4)).intoArray(dst, d0);
        e12.add(o12).intoArray(dst, d0 + ds);
        e12.sub(o12).intoArray(dst, d0 + 2 * ds);
        e34.add(o34).intoArray(dst, d0 + 3 * ds);
        e34.sub(o34).intoArray(dst, d0 + 4 * ds);
        x1.fma(P81_64, x3.fma(M45_16, x5)).intoArray(dst, d0 + 5 * ds);
    }

    /**
     * The transforms' factors as vectors: a scalar operand is parsed by C2 as a chain of calls, which pushed these
     * methods past its inlining budget (a helper taking the scalar was compiled apart, boxing every vector).
     */
    private static final FloatVector M9_16 = FloatVector.broadcast(FS, -9f / 16), M27_32 = FloatVector.broadcast(FS, -27f / 32),
            P3_2 = FloatVector.broadcast(FS, 1.5f), M9_4 = FloatVector.broadcast(FS, -9f / 4), M27_16 = FloatVector.broadcast(FS, -27f / 16),
            P3_4 = FloatVector.broadcast(FS, 0.75f), P81_64 = FloatVector.broadcast(FS, 81f / 64), M45_16 = FloatVector.broadcast(FS, -45f / 16),
            P9_4 = FloatVector.broadcast(FS, 2.25f), P9_16 = FloatVector.broadcast(FS, 0.5625f), P27_8 = FloatVector.broadcast(FS, 3.375f),
            P27_64 = FloatVector.broadcast(FS, 0.421875f);

    /** Output channels per register tile: 32 ({@link ConvDirectF32#tile8x32}) when they come in 32s, else 16 ({@link ConvDirectF32#tile16x16}). */
    private static int lanes(int cout) {
        return cout % 32 == 0 ? 32 : 16;
    }

    /**
     * Rows {@code [r, r + 8)} by channels {@code [c0, c0 + 32)} of {@code M_e = V_e U_e} ({@code [r, r + 16)} by
     * {@code [c0, c0 + 16)} with 16-channel blocks): {@link ConvDirectF32}'s register tiles (one window row of
     * {@code cin} taps, the tiles {@code cin} floats apart), stored straight into {@code m}.
     */
    private static void product(Work wk, float[] u, int cin, int cout, int e, int r, int c0) {
        int ob = lanes(cout), vb = (e * TB + r) * cin, ub = (e * (cout / ob) + c0 / ob) * cin * ob;
        int mb = (e * TB + r) * cout + c0;
        if (ob == 32) product8x32(wk.v, vb, cin, u, ub, wk.m, mb, cout);
        else product16x16(wk.v, vb, cin, u, ub, wk.m, mb, cout);
    }

    /** {@link ConvDirectF32#tile8x32}'s products over {@code cin} taps, rows {@code cout} floats apart in {@code m} from {@code mb}. */
    private static void product8x32(float[] x, int i0, int cin, float[] wp, int wb, float[] m, int mb, int cout) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        for (int j = 0; j < cin; j++) {
            FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32), wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
            int i = i0 + j;
            FloatVector v = FloatVector.broadcast(FS, x[i]);
            a0 = wl.fma(v, a0);
            b0 = wh.fma(v, b0);
            v = FloatVector.broadcast(FS, x[i + cin]);
            a1 = wl.fma(v, a1);
            b1 = wh.fma(v, b1);
            v = FloatVector.broadcast(FS, x[i + 2 * cin]);
            a2 = wl.fma(v, a2);
            b2 = wh.fma(v, b2);
            v = FloatVector.broadcast(FS, x[i + 3 * cin]);
            a3 = wl.fma(v, a3);
            b3 = wh.fma(v, b3);
            v = FloatVector.broadcast(FS, x[i + 4 * cin]);
            a4 = wl.fma(v, a4);
            b4 = wh.fma(v, b4);
            v = FloatVector.broadcast(FS, x[i + 5 * cin]);
            a5 = wl.fma(v, a5);
            b5 = wh.fma(v, b5);
            v = FloatVector.broadcast(FS, x[i + 6 * cin]);
            a6 = wl.fma(v, a6);
            b6 = wh.fma(v, b6);
            v = FloatVector.broadcast(FS, x[i + 7 * cin]);
            a7 = wl.fma(v, a7);
            b7 = wh.fma(v, b7);
        }
        a0.intoArray(m, mb);
        b0.intoArray(m, mb + 16);
        a1.intoArray(m, mb + cout);
        b1.intoArray(m, mb + cout + 16);
        a2.intoArray(m, mb + 2 * cout);
        b2.intoArray(m, mb + 2 * cout + 16);
        a3.intoArray(m, mb + 3 * cout);
        b3.intoArray(m, mb + 3 * cout + 16);
        a4.intoArray(m, mb + 4 * cout);
        b4.intoArray(m, mb + 4 * cout + 16);
        a5.intoArray(m, mb + 5 * cout);
        b5.intoArray(m, mb + 5 * cout + 16);
        a6.intoArray(m, mb + 6 * cout);
        b6.intoArray(m, mb + 6 * cout + 16);
        a7.intoArray(m, mb + 7 * cout);
        b7.intoArray(m, mb + 7 * cout + 16);
    }

    /** {@link ConvDirectF32#tile16x16}'s products over {@code cin} taps, rows {@code cout} floats apart in {@code m} from {@code mb}. */
    private static void product16x16(float[] x, int i0, int cin, float[] wp, int wb, float[] m, int mb, int cout) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector a8 = FloatVector.zero(FS), a9 = FloatVector.zero(FS), a10 = FloatVector.zero(FS), a11 = FloatVector.zero(FS);
        FloatVector a12 = FloatVector.zero(FS), a13 = FloatVector.zero(FS), a14 = FloatVector.zero(FS), a15 = FloatVector.zero(FS);
        for (int j = 0; j < cin; j++) {
            FloatVector w = FloatVector.fromArray(FS, wp, wb + j * 16);
            int i = i0 + j;
            a0 = w.fma(FloatVector.broadcast(FS, x[i]), a0);
            a1 = w.fma(FloatVector.broadcast(FS, x[i + cin]), a1);
            a2 = w.fma(FloatVector.broadcast(FS, x[i + 2 * cin]), a2);
            a3 = w.fma(FloatVector.broadcast(FS, x[i + 3 * cin]), a3);
            a4 = w.fma(FloatVector.broadcast(FS, x[i + 4 * cin]), a4);
            a5 = w.fma(FloatVector.broadcast(FS, x[i + 5 * cin]), a5);
            a6 = w.fma(FloatVector.broadcast(FS, x[i + 6 * cin]), a6);
            a7 = w.fma(FloatVector.broadcast(FS, x[i + 7 * cin]), a7);
            a8 = w.fma(FloatVector.broadcast(FS, x[i + 8 * cin]), a8);
            a9 = w.fma(FloatVector.broadcast(FS, x[i + 9 * cin]), a9);
            a10 = w.fma(FloatVector.broadcast(FS, x[i + 10 * cin]), a10);
            a11 = w.fma(FloatVector.broadcast(FS, x[i + 11 * cin]), a11);
            a12 = w.fma(FloatVector.broadcast(FS, x[i + 12 * cin]), a12);
            a13 = w.fma(FloatVector.broadcast(FS, x[i + 13 * cin]), a13);
            a14 = w.fma(FloatVector.broadcast(FS, x[i + 14 * cin]), a14);
            a15 = w.fma(FloatVector.broadcast(FS, x[i + 15 * cin]), a15);
        }
        a0.intoArray(m, mb);
        a1.intoArray(m, mb + cout);
        a2.intoArray(m, mb + 2 * cout);
        a3.intoArray(m, mb + 3 * cout);
        a4.intoArray(m, mb + 4 * cout);
        a5.intoArray(m, mb + 5 * cout);
        a6.intoArray(m, mb + 6 * cout);
        a7.intoArray(m, mb + 7 * cout);
        a8.intoArray(m, mb + 8 * cout);
        a9.intoArray(m, mb + 9 * cout);
        a10.intoArray(m, mb + 10 * cout);
        a11.intoArray(m, mb + 11 * cout);
        a12.intoArray(m, mb + 12 * cout);
        a13.intoArray(m, mb + 13 * cout);
        a14.intoArray(m, mb + 14 * cout);
        a15.intoArray(m, mb + 15 * cout);
    }

    /**
     * {@code A^T M A + bias} of tile (ty, tx), its products in row {@code slot} of each {@code M_e}: its pixels inside
     * the image into the strip, 16 channels at a time.
     */
    private static void outputTile(Work wk, int cout, int oh, int ow, int ty, int tx, int slot, float[] bias) {
        float[] m = wk.m, half = wk.half;
        int rows = Math.min(4, oh - 4 * ty), cols = Math.min(4, ow - 4 * tx);
        long pixelBytes = (long) cout * Float.BYTES;
        for (int c0 = 0; c0 < cout; c0 += 16) {
            // Columns first: half[(i * 6 + j) * 16] = (A^T M)[i][j], i < 4.
            for (int j = 0; j < 6; j++) outputTransform(m, (j * TB + slot) * cout + c0, 6 * TB * cout, half, j * 16, 6 * 16);
            FloatVector b = FloatVector.fromArray(FS, bias, c0);
            long at = 4L * tx * pixelBytes + (long) c0 * Float.BYTES;
            for (int i = 0; i < rows; i++) outputRow(half, i * 96, b, wk.strip, at + i * ow * pixelBytes, pixelBytes, cols);
        }
    }

    /**
     * The output of tiles {@code [t0, t1)} of one image ({@code mt x mt} pixels each, their products in rows {@code
     * slot0 + ti} of each {@code M_e}) into the NCHW image at byte {@code image} of {@code out}: each tile row's pixels
     * gathered channels-last in the thread's strip ({@link #outputTile}, {@link #outputTile2x2}), then transposed 16
     * pixels by 16 channels at a time into the channel planes, whole vectors a store (a tile's 2x2 pixels stored one float
     * at a time cost as much as its products; F(4x4, 3x3)'s tiles stored as 4-pixel rows, 64 stores of 16 bytes a tile and
     * 16 channels, ran 4-14% slower at ResNet-20's and ConvBench's shapes: docs/BENCHMARKS.md, issue 22, twenty-first
     * session).
     */
    private static void outputTiles(Work wk, int mt, int cout, int oh, int ow, int tW, int t0, int t1, int slot0, float[] bias,
                                    MemorySegment out, long image) {
        int rowStart = t0;
        for (int ti = t0; ti < t1; ti++) {
            int ty = ti / tW, tx = ti % tW;
            if (mt == 2) outputTile2x2(wk, cout, oh, ow, ty, tx, slot0 + ti, bias);
            else outputTile(wk, cout, oh, ow, ty, tx, slot0 + ti, bias);
            if (ti + 1 == t1 || tx + 1 == tW) {
                flushStrip(wk, mt, cout, oh, ow, ty, rowStart % tW, tx + 1, out, image);
                rowStart = ti + 1;
            }
        }
    }

    /**
     * {@code A2^T M A2 + bias}, {@code A2^T = [1 1 1 0; 0 1 -1 -1]}, of tile (ty, tx), its products in row {@code slot} of
     * each {@code M_e}: its pixels inside the image into the strip, 16 channels at a time.
     */
    private static void outputTile2x2(Work wk, int cout, int oh, int ow, int ty, int tx, int slot, float[] bias) {
        float[] m = wk.m;
        MemorySegment strip = wk.strip;
        int rows = Math.min(2, oh - 2 * ty), cols = Math.min(2, ow - 2 * tx);
        int es = TB * cout;
        long pixelBytes = (long) cout * Float.BYTES;
        for (int c0 = 0; c0 < cout; c0 += 16) {
            int s0 = slot * cout + c0;
            // Columns first: (A2^T M)[i][j] = h<i><j>, from M_e, e = i * 4 + j.
            FloatVector x0 = FloatVector.fromArray(FS, m, s0), x1 = FloatVector.fromArray(FS, m, s0 + 4 * es);
            FloatVector x2 = FloatVector.fromArray(FS, m, s0 + 8 * es), x3 = FloatVector.fromArray(FS, m, s0 + 12 * es);
            FloatVector h00 = x0.add(x1).add(x2), h10 = x1.sub(x2).sub(x3);
            x0 = FloatVector.fromArray(FS, m, s0 + es);
            x1 = FloatVector.fromArray(FS, m, s0 + 5 * es);
            x2 = FloatVector.fromArray(FS, m, s0 + 9 * es);
            x3 = FloatVector.fromArray(FS, m, s0 + 13 * es);
            FloatVector h01 = x0.add(x1).add(x2), h11 = x1.sub(x2).sub(x3);
            x0 = FloatVector.fromArray(FS, m, s0 + 2 * es);
            x1 = FloatVector.fromArray(FS, m, s0 + 6 * es);
            x2 = FloatVector.fromArray(FS, m, s0 + 10 * es);
            x3 = FloatVector.fromArray(FS, m, s0 + 14 * es);
            FloatVector h02 = x0.add(x1).add(x2), h12 = x1.sub(x2).sub(x3);
            x0 = FloatVector.fromArray(FS, m, s0 + 3 * es);
            x1 = FloatVector.fromArray(FS, m, s0 + 7 * es);
            x2 = FloatVector.fromArray(FS, m, s0 + 11 * es);
            x3 = FloatVector.fromArray(FS, m, s0 + 15 * es);
            FloatVector h03 = x0.add(x1).add(x2), h13 = x1.sub(x2).sub(x3);
            FloatVector b = FloatVector.fromArray(FS, bias, c0);
            long at = 2L * tx * pixelBytes + (long) c0 * Float.BYTES;
            h00.add(h01).add(h02).add(b).intoMemorySegment(strip, at, NO);
            if (cols == 2) h01.sub(h02).sub(h03).add(b).intoMemorySegment(strip, at + pixelBytes, NO);
            if (rows == 2) {
                at += ow * pixelBytes;
                h10.add(h11).add(h12).add(b).intoMemorySegment(strip, at, NO);
                if (cols == 2) h11.sub(h12).sub(h13).add(b).intoMemorySegment(strip, at + pixelBytes, NO);
            }
        }
    }

    /** The strip's pixels of tiles {@code [tx0, tx1)} in tile row ty ({@code mt x mt} pixels a tile) into the image's channel planes. */
    private static void flushStrip(Work wk, int mt, int cout, int oh, int ow, int ty, int tx0, int tx1, MemorySegment out, long image) {
        int x0 = mt * tx0, x1 = Math.min(ow, mt * tx1), y0 = mt * ty, y1 = Math.min(oh, y0 + mt);
        if (x0 == 0 && x1 == ow) {
            stripToPlanes(wk, cout, oh, ow, 0, (y1 - y0) * ow, out, image + (long) y0 * ow * Float.BYTES);
        } else {
            for (int y = y0; y < y1; y++) {
                stripToPlanes(wk, cout, oh, ow, (y - y0) * ow + x0, x1 - x0, out, image + ((long) y * ow + x0) * Float.BYTES);
            }
        }
    }

    /** {@code count} consecutive strip pixels from {@code p0} into each channel plane from byte {@code at} on. */
    private static void stripToPlanes(Work wk, int cout, int oh, int ow, int p0, int count, MemorySegment out, long at) {
        MemorySegment strip = wk.strip;
        float[] block = wk.block;
        long planeBytes = (long) oh * ow * Float.BYTES, pixelBytes = (long) cout * Float.BYTES;
        for (int c0 = 0; c0 < cout; c0 += 16) {
            int q = 0;
            for (; q + 16 <= count; q += 16) {
                Gemm.transposeBlock16(strip, (p0 + q) * pixelBytes + (long) c0 * Float.BYTES, pixelBytes, block, 0, 16);
                for (int c = 0; c < 16; c++) {
                    FloatVector.fromArray(FS, block, c * 16).intoMemorySegment(out, at + (c0 + c) * planeBytes + (long) q * Float.BYTES, NO);
                }
            }
            if (q < count) stripTailToPlanes(wk, cout, planeBytes, p0 + q, count - q, c0, out, at + (long) q * Float.BYTES);
        }
    }

    /**
     * The last {@code count} (1-15) strip pixels from {@code p} of {@link #stripToPlanes}, channels {@code [c0, c0 + 16)}:
     * a whole block transposed (the strip's 16 spare pixels keep its reads inside it), then stored 4 pixels a vector and
     * the rest one at a time (masked stores are slow on Zen 4). A method of its own: inside {@link #stripToPlanes} it
     * made F(2x2, 3x3)'s input gradients, which never reach it at ResNet-20's widths, about 5% slower.
     */
    private static void stripTailToPlanes(Work wk, int cout, long planeBytes, int p, int count, int c0, MemorySegment out, long at) {
        float[] block = wk.block;
        long pixelBytes = (long) cout * Float.BYTES;
        Gemm.transposeBlock16(wk.strip, p * pixelBytes + (long) c0 * Float.BYTES, pixelBytes, block, 0, 16);
        for (int c = 0; c < 16; c++) {
            long plane = at + (c0 + c) * planeBytes;
            int k = 0;
            for (; k + 4 <= count; k += 4) FloatVector.fromArray(F4, block, c * 16 + k).intoMemorySegment(out, plane + (long) k * Float.BYTES, NO);
            for (; k < count; k++) out.set(F32, plane + (long) k * Float.BYTES, block[c * 16 + k]);
        }
    }

    /** {@code dst[d0 + i * ds] = (A^T x)[i]}, i < 4, for the six 16-float vectors {@code x[k] = src[s0 + k * ss]}. */
    private static void outputTransform(float[] src, int s0, int ss, float[] dst, int d0, int ds) {
        FloatVector x0 = FloatVector.fromArray(FS, src, s0), x1 = FloatVector.fromArray(FS, src, s0 + ss);
        FloatVector x2 = FloatVector.fromArray(FS, src, s0 + 2 * ss), x3 = FloatVector.fromArray(FS, src, s0 + 3 * ss);
        FloatVector x4 = FloatVector.fromArray(FS, src, s0 + 4 * ss), x5 = FloatVector.fromArray(FS, src, s0 + 5 * ss);
        FloatVector p12 = x1.add(x2), m12 = x1.sub(x2), p34 = x3.add(x4), m34 = x3.sub(x4);
        x0.add(p12).add(p34).intoArray(dst, d0);
        m12.fma(P3_2, m34.mul(P3_4)).intoArray(dst, d0 + ds);
        p12.fma(P9_4, p34.mul(P9_16)).intoArray(dst, d0 + 2 * ds);
        m12.fma(P27_8, m34.fma(P27_64, x5)).intoArray(dst, d0 + 3 * ds);
    }

    /**
     * As {@link #outputTransform} along a row of {@code half} (vectors 16 floats apart), plus the bias: the first {@code
     * cols} of its 4 pixels into {@code strip} from byte {@code at}, {@code pixelBytes} apart.
     */
    private static void outputRow(float[] half, int s0, FloatVector bias, MemorySegment strip, long at, long pixelBytes, int cols) {
        FloatVector x0 = FloatVector.fromArray(FS, half, s0), x1 = FloatVector.fromArray(FS, half, s0 + 16);
        FloatVector x2 = FloatVector.fromArray(FS, half, s0 + 32), x3 = FloatVector.fromArray(FS, half, s0 + 48);
        FloatVector x4 = FloatVector.fromArray(FS, half, s0 + 64), x5 = FloatVector.fromArray(FS, half, s0 + 80);
        FloatVector p12 = x1.add(x2), m12 = x1.sub(x2), p34 = x3.add(x4), m34 = x3.sub(x4);
        x0.add(p12).add(p34).add(bias).intoMemorySegment(strip, at, NO);
        if (cols > 1) m12.fma(P3_2, m34.fma(P3_4, bias)).intoMemorySegment(strip, at + pixelBytes, NO);
        if (cols > 2) p12.fma(P9_4, p34.fma(P9_16, bias)).intoMemorySegment(strip, at + 2 * pixelBytes, NO);
        if (cols > 3) m12.fma(P27_8, m34.fma(P27_64, x5.add(bias))).intoMemorySegment(strip, at + 3 * pixelBytes, NO);
    }
}
