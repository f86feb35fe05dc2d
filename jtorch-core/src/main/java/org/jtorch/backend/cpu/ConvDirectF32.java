package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 convolution with output channels in the vector lanes: each image is copied once into a
 * zero-padded channels-last buffer, and a register tile of P output pixels (along an output row) by 16 or
 * 32 output channels accumulates {@code broadcast(x[pixel window][k]) * w[k][channels]} over the
 * {@code kh * kw * cin} taps. One window row of a pixel ({@code kw} neighbours, all their channels) is
 * contiguous in the channels-last buffer whatever the stride, so the reduction runs as {@code kh}
 * contiguous stretches with no packing of the image at all, and no computed output is discarded.
 * The finished tile is transposed in registers and stored into the NCHW output.
 *
 * <p>Against {@link ConvF32}'s pixels-in-lanes implicit GEMM this drops the per-strip packing (30% of
 * a 16-channel convolution's time) and the junk outputs of the pitched path (a third of them at 8 px).
 * It needs output channels in multiples of 16 (of 32 for 8-pixel rows) and output rows of at least one
 * tile, not whole 32-pixel strips, that split into tiles with at most a quarter recomputed (a row's last
 * tile may overlap the one before it), or, with 32-channel multiples, rows of whole 7-pixel tiles (a 7x32
 * tile: ResNet-50's 28, 14 and 7 px); other shapes stay on {@link ConvF32}. The weight gradient here takes any
 * shape with output channels in multiples of 8, and the input gradient of 3x3 stride-2 layers runs its
 * four phases as one convolution ({@link #stride2InputGrad}).
 */
final class ConvDirectF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final VectorMask<Float> FIRST_8 = FS.indexInRange(0, 8);
    private static final VectorMask<Float> LAST_8 = FIRST_8.not();
    private static final VectorMask<Float> FIRST_7 = FS.indexInRange(0, 7);
    /** Lanes 8-14: the second half of a transposed 7x32 tile. */
    private static final VectorMask<Float> SECOND_7 = LAST_8.and(FS.indexInRange(0, 15));
    /** {@code -Djtorch.conv.sevenPixelTiles=false} leaves rows of 7-pixel multiples to the 8-pixel tile, to compare. */
    private static final boolean SEVEN_PIXEL_TILES = !"false".equals(System.getProperty("jtorch.conv.sevenPixelTiles"));

    private ConvDirectF32() {}

    /** Per-thread buffers, grown on demand and then reused. */
    static final class Work {
        float[] image = new float[0];
        /** One weight-gradient pass's gy, transposed ({@link #transposeGradOut}), and window offsets. */
        float[] gradOut = new float[0];
        int[] xo = new int[0];
        /** Narrow window rows packed back to back per pixel ({@link #packWindows}), and each pixel's offset in them. */
        float[] windows = new float[0];
        int[] wo = new int[0];
        /**
         * One register tile, native like the tensors: a vector access site that sees both heap and native
         * segments is compiled without the intrinsics (transposeBlock16 reads tensors too).
         */
        final MemorySegment tile = java.lang.foreign.Arena.ofAuto().allocate(16 * 16 * Float.BYTES, 64);
        final float[] block = new float[16 * 16];
        /** {@link Stride2PhaseTilesF32#planeTile8x32}'s tile, for {@link Stride2PhaseTilesF32#storeInterleaved}. */
        final float[] tileArray = new float[16 * 16];
        /** Two output rows of one 32-channel block, transposed, for {@link #spreadRows}: one filled while the other is stored. */
        float[] rowsA = new float[0];
        float[] rowsB = new float[0];
        /** {@link #chunkedBlockRows}'s tiles' partial sums between runs of taps, 256 floats a tile in {@link #tile}'s layout. */
        float[] sums = new float[0];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /**
     * Which register tile a geometry uses: 8 pixels x 32 channels, 16 pixels x 16 channels, or none (0).
     * Rows of whole 32-pixel strips stay on {@link ConvF32}, which measured faster there (128x64x32x32:
     * 31.8 against 34.5 ms; 32 channels at 32 px: about equal).
     */
    private static int tilePixels(Geometry g) {
        if (FloatVector.SPECIES_PREFERRED.length() != 16 || g.groups() != 1 || g.dw() != 1 || g.ow() % 32 == 0) return 0;
        // Rows of whole 7-pixel tiles (ResNet-50's 28, 14 and 7 px) take the 7x32 tile: 8-pixel tiles recompute
        // 4 of 28 and 2 of 14 pixels, and 7-pixel rows were left to the implicit GEMM.
        if (g.cout() % 32 == 0 && g.ow() % 8 != 0 && g.ow() % 7 == 0 && SEVEN_PIXEL_TILES) return 7;
        if (g.cout() % 32 == 0 && fewRecomputed(g.ow(), 8)) return 8;
        if (g.cout() % 16 == 0 && fewRecomputed(g.ow(), 16)) return 16;
        return 0;
    }

    /**
     * Whether rows of {@code ow} pixels split into tiles of {@code p} with at most a quarter more pixels computed:
     * a row that is not whole tiles ends with a tile overlapping the one before it ({@link #rows}).
     */
    private static boolean fewRecomputed(int ow, int p) {
        return ow >= p && 4 * ((ow + p - 1) / p * p) <= 5 * ow;
    }

    /** Whether {@link #forward} applies; 1x1 stride-1 convolutions are left to the caller's plain GEMM. */
    static boolean handles(Geometry g) {
        return tilePixels(g) != 0 && !g.isPointwise();
    }

    /** Whether {@link #forward} runs {@code g} on a 32-channel tile (8 or 7 pixels; any kernel size, 1x1 included). */
    static boolean handlesWithWideTile(Geometry g) {
        return tilePixels(g) == 8 || tilePixels(g) == 7;
    }

    /** {@code out = conv(x, w) + bias} for contiguous float32 tensors given as segments and element offsets ({@code bias} may be null). */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        float[] bv = new float[g.cout()];
        if (bias != null) {
            for (int oc = 0; oc < g.cout(); oc++) bv[oc] = bias.get(F32, (bOff + oc) * Float.BYTES);
        }
        run(x, xOff, blockedWeights(w, wOff, g, false), bv, out, oOff, g, epilogue);
    }

    /**
     * The input gradient of a stride-1 convolution {@code g} as the convolution {@code flipped} of gradOut
     * ({@code g}'s input and output channels swapped, the kernel rotated by 180 degrees), whose blocked
     * weights are gathered straight from {@code w}.
     */
    static void backwardInputFlipped(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff,
                                     Geometry flipped) {
        run(gy, gyOff, blockedWeights(w, wOff, flipped, true), new float[flipped.cout()], gi, giOff, flipped, null);
    }

    /**
     * The weights of {@code g} in {@link #rows}'s order, {@code wp[block][ki][kj * cin + ic][lane]} = weight
     * (output channel {@code block * ob + lane}, input channel ic, tap (ki, kj)), gathered 16 lanes at a time
     * into reused buffers. This runs serially, the other threads idle: for 64x64x3x3 weights 16 µs, against
     * 60-170 µs element by element into fresh arrays, the previous way. With
     * {@code flipped}, w is the weight of the convolution whose input gradient {@code g} computes:
     * {@code w[ic][oc][kh - 1 - ki][kw - 1 - kj]}.
     */
    private static float[] blockedWeights(MemorySegment w, long wOff, Geometry g, boolean flipped) {
        int ob = tilePixels(g) == 16 ? 16 : 32;
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw();
        int kk = kh * kw, kwc = kw * cin, k = kh * kwc;
        WeightBuffers buffers = WEIGHTS.get();
        if (!flipped && cin % 16 == 0) return transposedWeights(w, wOff, g, ob, buffers);
        float[] wh = buffers.source = ConvF32.grow(buffers.source, cout * k);
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, cout * k);
        // Lane l's element: output channel + l is a whole filter further (cin * kk) in w, or one filter
        // slice further (kk) when w is the flipped convolution's [ic][oc] weight.
        int laneStride = flipped ? kk : cin * kk;
        int[] lanes = new int[16];
        for (int l = 0; l < 16; l++) lanes[l] = l * laneStride;
        float[] wp = buffers.blocked = ConvF32.grow(buffers.blocked, cout * k);
        for (int blk = 0; blk < cout / ob; blk++) {
            for (int half = 0; half < ob; half += 16) {
                int oc = blk * ob + half;
                // 16 input channels at a time: their 16 lanes' taps (9 KB for 3x3) are gathered from L1, where a tap's
                // sweep over every input channel gathered from L2 (ResNet-50's 512 channels, input gradient: 4.02
                // against 5.88 ms, one thread, load 19).
                for (int ic0 = 0; ic0 < cin; ic0 += 16) {
                    for (int ki = 0; ki < kh; ki++) {
                        for (int kj = 0; kj < kw; kj++) {
                            int dst = blk * k * ob + (ki * kwc + kj * cin) * ob + half;
                            int tap = flipped ? (kh - 1 - ki) * kw + (kw - 1 - kj) : ki * kw + kj;
                            for (int ic = ic0; ic < Math.min(cin, ic0 + 16); ic++) {
                                int src = flipped ? (ic * cout + oc) * kk + tap : (oc * cin + ic) * kk + tap;
                                FloatVector.fromArray(FS, wh, src, lanes, 0).intoArray(wp, dst + ic * ob);
                            }
                        }
                    }
                }
            }
        }
        return wp;
    }

    /**
     * {@link #blockedWeights} of a forward with input channels in multiples of 16, transposed straight from w: 16 output
     * channels' runs of 16 input channels' taps ({@code 16 * kk} contiguous floats each) are {@code kk} 16x16 blocks, and
     * row f of their transposes is tap {@code f % kk} of input channel {@code f / kk} across the 16 lanes. ResNet-50's
     * 512-channel 3x3 weights (2.4 M floats): 2.76 ms against 4.32 for 16-lane gathers from a heap copy of w (one thread,
     * load 19), where the forward's tiles take about 17 ms quiet.
     */
    private static float[] transposedWeights(MemorySegment w, long wOff, Geometry g, int ob, WeightBuffers buffers) {
        int cin = g.cin(), cout = g.cout(), kw = g.kw(), kk = g.kh() * kw, kwc = kw * cin, k = g.kh() * kwc;
        float[] wp = buffers.blocked = ConvF32.grow(buffers.blocked, cout * k);
        float[] runs = buffers.source = ConvF32.grow(buffers.source, 16 * 16 * kk);
        long filterBytes = (long) cin * kk * Float.BYTES;
        for (int oc = 0; oc < cout; oc += 16) {
            int blockBase = oc / ob * k * ob + oc % ob;
            for (int ic0 = 0; ic0 < cin; ic0 += 16) {
                long from = (wOff + ((long) oc * cin + ic0) * kk) * Float.BYTES;
                for (int b = 0; b < kk; b++) Gemm.transposeBlock16(w, from + b * 64L, filterBytes, runs, b * 256, 16);
                for (int f = 0; f < 16 * kk; f++) {
                    int tap = f % kk, ic = ic0 + f / kk;
                    int dst = blockBase + ((tap / kw) * kwc + (tap % kw) * cin + ic) * ob;
                    FloatVector.fromArray(FS, runs, f * 16).intoArray(wp, dst);
                }
            }
        }
        return wp;
    }

    /**
     * The calling thread's weight copies, reused: a call's blocked weights are read by every thread until
     * the call returns, and no call runs inside another on one thread. (Fresh arrays of 64x64x3x3 weights
     * cost more in allocation and zeroing than the gathers.)
     */
    private static final class WeightBuffers {
        float[] source = new float[0];
        float[] blocked = new float[0];
    }

    private static final ThreadLocal<WeightBuffers> WEIGHTS = ThreadLocal.withInitial(WeightBuffers::new);

    /** {@link #rows} over every image with blocked weights {@code wp} and bias {@code bv}. */
    private static void run(MemorySegment x, long xOff, float[] wp, float[] bv, MemorySegment out, long oOff, Geometry g,
                            ConvolutionKernels.Epilogue epilogue) {
        int p = tilePixels(g);
        int ob = p == 16 ? 16 : 32;
        int kwc = g.kw() * g.cin(), k = g.kh() * kwc;
        int wpad = ConvF32.paddedWidth(g);
        long pixels = (long) g.oh() * g.ow();
        boolean raster = p == 8 && ConvRasterImageF32.serves(g);
        int together = imagesTogether(g, k);
        boolean chunked = chunksReduction(g);
        if (together > 1 && !raster && !(p == 8 && spreadsStores(g))) {
            int imageFloats = ConvF32.paddedHeight(g) * wpad * g.cin();
            overImageGroupBlocks(x, xOff, g, together, g.cout() / ob, (wk, n0, count, blk) -> {
                if (chunked) {
                    chunkedBlockRows(wk, count, imageFloats, blk, wp, bv, g, p, k, kwc, wpad, 0, g.oh(), out,
                            oOff + n0 * g.cout() * pixels, pixels);
                    return;
                }
                for (int i = 0; i < count; i++) {
                    blockRows(wk, i * imageFloats, blk, wp, bv, g, p, ob, k, kwc, wpad, 0, g.oh(), out,
                            oOff + (n0 + i) * g.cout() * pixels, pixels);
                }
            }, epilogue);
            return;
        }
        overPaddedImages(x, xOff, g, (wk, n, y0, y1) -> {
            long outImage = oOff + n * g.cout() * pixels;
            if (raster) {
                ConvRasterImageF32.rows(wk, wp, bv, g, k, kwc, wpad, y0, y1, out, outImage, pixels);
            } else if (chunked) {
                for (int blk = 0; blk < g.cout() / 32; blk++) chunkedBlockRows(wk, 1, 0, blk, wp, bv, g, p, k, kwc, wpad, y0, y1, out, outImage, pixels);
            } else {
                rows(wk, wp, bv, g, p, ob, k, kwc, wpad, y0, y1, out, outImage, pixels);
            }
            if (epilogue != null) epilogue.block(n, n + 1, 0, g.cout(), (long) y0 * g.ow(), (long) y1 * g.ow());
        });
    }

    /**
     * Images {@link #run} takes through every weight block together (1 for one at a time): where the blocked weights
     * are over twice the 2 MB L2 of a core ({@link #MEMORY_WEIGHT_FLOATS}), one image's pass over a block's weights
     * (ResNet-50's 512 channels at 7 px: 590 KB, read by 7 tiles) fetched them from memory, every block and every image
     * again; 4 images, where 4 padded ones fit in {@link #STRIDE2_FLOATS} beside them, read each block's weights from L2.
     * Fewer larger images (512 channels at 14 px, stride 2: 2 of 512 KB) and weights that nearly fit (256 channels:
     * 2.4 MB) measured no better grouped (one thread, 3 rounds, load 14-16).
     */
    static int imagesTogether(Geometry g, int k) {
        if ((long) g.cout() * k <= MEMORY_WEIGHT_FLOATS || "false".equals(System.getProperty("jtorch.conv.groupImages"))) return 1;
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        long imageFloats = (long) ConvF32.paddedHeight(g) * ConvF32.paddedWidth(g) * g.cin();
        if (STRIDE2_FLOATS / imageFloats < GROUP) return 1;
        return (int) Math.max(1, Math.min(GROUP, g.n() / threads));
    }

    /**
     * Blocked weights (floats, 4 MB) beyond which {@link #imagesTogether} groups {@link #GROUP} images.
     * {@code jtorch.conv.groupImages=false} (read at each call) runs one image at a time whatever the weights, to compare.
     */
    private static final long MEMORY_WEIGHT_FLOATS = 1 << 20;
    private static final int GROUP = 4;

    /** What {@link #overImageGroups} runs: weight block {@code blk} of image n, its padded copy at {@code imageBase} of {@code wk.image}. */
    interface ImageBlock {
        void run(Work wk, int imageBase, long n, int blk);
    }

    /**
     * Runs {@code body} over groups of {@code together} images in parallel, each thread first copying the group's
     * images into {@code wk.image} (channels-last, {@code g}'s zero border), then every image of the group for each of
     * the {@code blocks} weight blocks in turn, then the epilogue (if any) over the group.
     */
    private static void overImageGroups(MemorySegment x, long xOff, Geometry g, int together, int blocks, ImageBlock body,
                                        ConvolutionKernels.Epilogue epilogue) {
        int imageFloats = ConvF32.paddedHeight(g) * ConvF32.paddedWidth(g) * g.cin();
        overImageGroupBlocks(x, xOff, g, together, blocks, (wk, n0, count, blk) -> {
            for (int i = 0; i < count; i++) body.run(wk, i * imageFloats, n0 + i, blk);
        }, epilogue);
    }

    /** What {@link #overImageGroupBlocks} runs: weight block {@code blk} of images {@code [n0, n0 + count)}, padded in {@code wk.image}. */
    interface GroupBlock {
        void run(Work wk, long n0, int count, int blk);
    }

    /** As {@link #overImageGroups}, the body taking a whole group's images for each weight block. */
    private static void overImageGroupBlocks(MemorySegment x, long xOff, Geometry g, int together, int blocks, GroupBlock body,
                                             ConvolutionKernels.Epilogue epilogue) {
        int cin = g.cin();
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g), imageFloats = hp * wpad * cin;
        Parallel.forRangeBalanced((g.n() + together - 1) / together, 1, (t0, t1) -> {
            Work wk = WORK.get();
            for (long t = t0; t < t1; t++) {
                long n0 = t * together;
                int count = (int) Math.min(together, g.n() - n0);
                wk.image = ConvF32.grow(wk.image, count * imageFloats);
                for (int i = 0; i < count; i++) {
                    ConvF32.padChannelsLast(x, xOff + (n0 + i) * cin * g.h() * g.w(), cin, g, hp, wpad, wk.image, i * imageFloats, wk.block);
                }
                for (int blk = 0; blk < blocks; blk++) body.run(wk, n0, count, blk);
                if (epilogue != null) epilogue.block(n0, n0 + count, 0, g.cout(), 0, (long) g.oh() * g.ow());
            }
        });
    }

    /** What {@link #overPaddedImages} runs: output rows {@code [y0, y1)} of image n, its padded copy in {@code wk.image}. */
    interface ImageRows {
        void run(Work wk, long n, int y0, int y1);
    }

    /**
     * Runs {@code body} over every image of {@code x} in parallel, each thread first copying its image into
     * {@code wk.image}, channels-last with {@code g}'s zero border; with fewer images than twice the threads,
     * each image's output rows are split too, so every thread has work.
     */
    static void overPaddedImages(MemorySegment x, long xOff, Geometry g, ImageRows body) {
        int cin = g.cin(), oh = g.oh();
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g);
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        int split = g.n() >= 2L * threads ? 1 : Math.min(oh, 2 * threads);
        Parallel.forRangeBalanced((long) g.n() * split, 1, (t0, t1) -> {
            Work wk = WORK.get();
            long padded = -1;
            for (long t = t0; t < t1; t++) {
                long n = t / split;
                int part = (int) (t % split);
                if (padded != n) {
                    wk.image = ConvF32.grow(wk.image, hp * wpad * cin);
                    ConvF32.padChannelsLast(x, xOff + n * cin * g.h() * g.w(), cin, g, hp, wpad, wk.image, 0, wk.block);
                    padded = n;
                }
                body.run(wk, n, part * oh / split, (part + 1) * oh / split);
            }
        });
    }

    /** Output rows {@code [y0, y1)} of the image in {@code wk.image}, every channel block. */
    private static void rows(Work wk, float[] wp, float[] bv, Geometry g, int p, int ob, int k, int kwc, int wpad, int y0, int y1,
                             MemorySegment out, long outImage, long pixels) {
        if (p == 8 && spreadsStores(g)) {
            spreadRows(wk, wp, bv, g, k, kwc, wpad, y0, y1, out, outImage, pixels);
            return;
        }
        for (int blk = 0; blk < g.cout() / ob; blk++) blockRows(wk, 0, blk, wp, bv, g, p, ob, k, kwc, wpad, y0, y1, out, outImage, pixels);
    }

    /** Output rows {@code [y0, y1)} of channel block {@code blk} of the image at {@code imageBase} in {@code wk.image}. */
    private static void blockRows(Work wk, int imageBase, int blk, float[] wp, float[] bv, Geometry g, int p, int ob, int k, int kwc,
                                  int wpad, int y0, int y1, MemorySegment out, long outImage, long pixels) {
        int cin = g.cin();
        int sx = g.sw() * cin;
        int rowStride = g.dh() * wpad * cin;
        long rsBytes = pixels * Float.BYTES;
        float[] image = wk.image;
        MemorySegment tile = wk.tile;
        int wBase = blk * k * ob;
        for (int oy = y0; oy < y1; oy++) {
            for (int next = 0; next < g.ow(); next += p) {
                // A row's last tile ends at the row's end, recomputing pixels of the one before it when the
                // row is not whole tiles (28 and 14 px: ResNet-50's layers).
                int ox = Math.min(next, g.ow() - p);
                int xBase = imageBase + (oy * g.sh() * wpad + ox * g.sw()) * cin;
                long at = (outImage + (long) blk * ob * pixels + (long) oy * g.ow() + ox) * Float.BYTES;
                if (p == 8) {
                    tile8x32(image, xBase, sx, rowStride, g.kh(), kwc, wp, wBase, bv, blk * ob, tile);
                    if (HALF_STORES) ConvRasterImageF32.store(wk, out, at, rsBytes);
                    else storeTransposed(wk, out, at, rsBytes, FIRST_8, LAST_8);
                } else if (p == 7) {
                    tile7x32(image, xBase, sx, rowStride, g.kh(), kwc, wp, wBase, bv, blk * ob, tile);
                    storeTransposed(wk, out, at, rsBytes, FIRST_7, SECOND_7);
                } else {
                    tile16x16(image, xBase, sx, rowStride, g.kh(), kwc, wp, wBase, bv, blk * ob, tile);
                    storeTransposed(wk, out, at, rsBytes, null, null);
                }
            }
        }
    }

    /**
     * Whether {@link #run} cuts {@code g}'s reduction into runs of {@link #CHUNK_TAPS} taps ({@link #chunkedBlockRows}):
     * stride-1 forwards and input gradients on the 7x32 and 8x32 row tiles whose 32-channel block of weights
     * ({@code k * 128} bytes) is over L1's 48 KB, so that a tile reading all its taps at once streams them from L2.
     * {@code -Djtorch.conv.chunkedReduction=false} (read at each call) keeps every tile whole, to compare.
     */
    static boolean chunksReduction(Geometry g) {
        int p = tilePixels(g);
        return (p == 7 || p == 8 && !ConvRasterImageF32.serves(g) && !spreadsStores(g)) && g.sh() == 1 && g.sw() == 1
                && (long) g.kh() * g.kw() * g.cin() * 32 * Float.BYTES > 48 * 1024
                && !"false".equals(System.getProperty("jtorch.conv.chunkedReduction"));
    }

    /**
     * Taps of one run of {@link #chunkedBlockRows}: 16 KB of a block's weights, a third of L1 beside the tiles' window rows.
     * 64 and 256 read level with it (one thread, load 30, one run each: too noisy to choose between them).
     */
    private static final int CHUNK_TAPS = 128;

    /**
     * Output rows {@code [y0, y1)} of channel block {@code blk} of {@code count} padded images ({@code imageFloats} apart
     * from the start of {@code wk.image}; outputs {@code cout * pixels} apart from {@code outImage}), stride 1, 7x32 or
     * 8x32 tiles. The reduction runs window row by window row in runs of {@link #CHUNK_TAPS} taps, each run over every
     * tile before the next, so that its 16 KB of weights serve all the tiles from L1 (ResNet-50's 512 channels at 7 px:
     * 28 tiles over 4 images, where {@link #blockRows} streams the block's 590 KB from L2 for each tile). Window rows
     * wholly in the zero padding (the first and last output rows' outer ones) are skipped: their products are exact
     * zeros. Each output element gets the other products in {@link #blockRows}'s order, its partial sums waiting in
     * {@code wk.sums} between runs, then the bias: the same bits (with finite weights: a skipped zero times an
     * infinite weight would have been NaN).
     */
    private static void chunkedBlockRows(Work wk, int count, int imageFloats, int blk, float[] wp, float[] bv, Geometry g, int p,
                                         int k, int kwc, int wpad, int y0, int y1, MemorySegment out, long outImage, long pixels) {
        int cin = g.cin(), ow = g.ow(), kh = g.kh(), dh = g.dh(), ph = g.ph(), h = g.h();
        int rowStride = dh * wpad * cin;
        int perRow = (ow + p - 1) / p, rows = y1 - y0;
        int tiles = count * rows * perRow;
        float[] image = wk.image;
        float[] sums = wk.sums = ConvF32.grow(wk.sums, tiles * 256);
        int wBase = blk * k * 32;
        for (int oy = y0; oy < y1; oy++) {
            // A row whose every window row is padding (padding beyond the kernel's reach) sums nothing.
            if (firstWindowRow(oy, ph, dh, kh) >= endWindowRow(oy, ph, h, dh, kh)) {
                for (int i = 0; i < count; i++) {
                    int s = (i * rows + oy - y0) * perRow;
                    java.util.Arrays.fill(sums, s * 256, (s + perRow) * 256, 0f);
                }
            }
        }
        for (int ki = 0; ki < kh; ki++) {
            for (int j0 = 0; j0 < kwc; j0 += CHUNK_TAPS) {
                int n = Math.min(CHUNK_TAPS, kwc - j0);
                int wb = wBase + (ki * kwc + j0) * 32;
                for (int i = 0; i < count; i++) {
                    for (int oy = y0; oy < y1; oy++) {
                        int first = firstWindowRow(oy, ph, dh, kh);
                        if (ki < first || ki >= endWindowRow(oy, ph, h, dh, kh)) continue;
                        boolean fresh = ki == first && j0 == 0;
                        int rowBase = i * imageFloats + oy * wpad * cin + ki * rowStride + j0;
                        int s = (i * rows + oy - y0) * perRow;
                        for (int next = 0; next < ow; next += p, s++) {
                            int xb = rowBase + Math.min(next, ow - p) * cin;
                            if (p == 8) tile8x32Part(image, xb, cin, n, wp, wb, sums, s * 256, fresh);
                            else tile7x32Part(image, xb, cin, n, wp, wb, sums, s * 256, fresh);
                        }
                    }
                }
            }
        }
        FloatVector bl = FloatVector.fromArray(FS, bv, blk * 32), bh = FloatVector.fromArray(FS, bv, blk * 32 + 16);
        MemorySegment tile = wk.tile;
        long rsBytes = pixels * Float.BYTES;
        for (int i = 0, s = 0; i < count; i++) {
            for (int oy = y0; oy < y1; oy++) {
                for (int next = 0; next < ow; next += p, s++) {
                    for (int q = 0; q < p; q++) {
                        FloatVector.fromArray(FS, sums, s * 256 + q * 16).add(bl).intoMemorySegment(tile, q * 64L, NO);
                        FloatVector.fromArray(FS, sums, s * 256 + 128 + q * 16).add(bh).intoMemorySegment(tile, 512 + q * 64L, NO);
                    }
                    long at = (outImage + i * g.cout() * pixels + (long) blk * 32 * pixels + (long) oy * ow + Math.min(next, ow - p))
                            * Float.BYTES;
                    if (p == 7) storeTransposed(wk, out, at, rsBytes, FIRST_7, SECOND_7);
                    else if (HALF_STORES) ConvRasterImageF32.store(wk, out, at, rsBytes);
                    else storeTransposed(wk, out, at, rsBytes, FIRST_8, LAST_8);
                }
            }
        }
    }

    /** The first window row of output row {@code oy} (stride 1) that reads the image rather than the top padding. */
    private static int firstWindowRow(int oy, int ph, int dh, int kh) {
        return Math.min(kh, Math.max(0, (ph - oy + dh - 1) / dh));
    }

    /** One past the last window row of output row {@code oy} (stride 1) that reads the image rather than the bottom padding. */
    private static int endWindowRow(int oy, int ph, int h, int dh, int kh) {
        int last = ph + h - 1 - oy;
        return last < 0 ? 0 : Math.min(kh, last / dh + 1);
    }

    /**
     * Whether {@link #rows} stores 8x32 tiles through {@link #spreadRows}: rows of whole 16-pixel vectors, at least
     * {@link #SPREAD_MIN_WIDTH} wide (the 7x7 stem's 112), whose output planes stream to memory.
     */
    private static boolean spreadsStores(Geometry g) {
        return SPREAD_STORES && g.ow() % 16 == 0 && g.ow() >= SPREAD_MIN_WIDTH;
    }

    /** {@code -Djtorch.conv.spreadStores=false} stores each 8x32 tile as it finishes ({@link #storeTransposed}), to compare. */
    private static final boolean SPREAD_STORES = !"false".equals(System.getProperty("jtorch.conv.spreadStores"));
    /** Narrowest output row {@link #spreadRows} takes: shorter rows' planes mostly stay in cache. */
    private static final int SPREAD_MIN_WIDTH = 48;

    /** Index vectors picking, from two transposed tile rows a:b, lanes 0-7 of each (the first channel's 16 pixels) or lanes 8-15. */
    private static final FloatVector FIRST_HALVES = halves(0), SECOND_HALVES = halves(8);

    private static FloatVector halves(int from) {
        float[] idx = new float[16];
        for (int l = 0; l < 8; l++) {
            idx[l] = from + l;
            idx[8 + l] = 16 + from + l;
        }
        return FloatVector.fromArray(FS, idx, 0);
    }

    /**
     * As {@link #rows} for 8x32 tiles on rows of whole 16-pixel vectors, the stores spread out: each row's tiles are
     * transposed into a row buffer, and the row before it is stored from the other buffer a slice after each tile,
     * as whole 16-pixel vectors. Storing each tile's 32 channel pieces as it finishes stalled on the output's
     * cache misses in bursts: the 7x7 stem writes 3.2 MB an image, which the tile kernel alone computes in
     * 2.27 ms and with those stores in 2.93 (one thread, scratch prototype, loaded machine); spread, 2.70. The
     * whole stem forward at batch 8, 3 rounds against the tile-by-tile stores in one tree: 24.7-25.8 against
     * 26.3-27.8 ms (load 20-23). Storing whole runs of 8 or 16 rows per channel instead was level with the tile stores.
     * Buffer row q holds, per tile, its 8 pixels of channel q and then of channel 16 + q.
     */
    private static void spreadRows(Work wk, float[] wp, float[] bv, Geometry g, int k, int kwc, int wpad, int y0, int y1,
                                   MemorySegment out, long outImage, long pixels) {
        int cin = g.cin(), ow = g.ow();
        int sx = g.sw() * cin;
        int rowStride = g.dh() * wpad * cin;
        int ld = 2 * ow, tiles = ow / 8, pairs = ow / 16;
        long rsBytes = pixels * Float.BYTES;
        float[] image = wk.image;
        MemorySegment tile = wk.tile;
        float[] bufA = wk.rowsA = ConvF32.grow(wk.rowsA, 16 * ld), bufB = wk.rowsB = ConvF32.grow(wk.rowsB, 16 * ld);
        for (int blk = 0; blk < g.cout() / 32; blk++) {
            int wBase = blk * k * 32;
            long blockBytes = (outImage + (long) blk * 32 * pixels) * Float.BYTES;
            // One pass more than rows: the last pass only stores the last row.
            for (int oy = y0; oy <= y1; oy++) {
                float[] cur = ((oy - y0) & 1) == 0 ? bufA : bufB, prev = cur == bufA ? bufB : bufA;
                long prevRow = blockBytes + (long) (oy - 1) * ow * Float.BYTES;
                for (int t = 0; t < tiles; t++) {
                    if (oy < y1) {
                        int xBase = (oy * g.sh() * wpad + t * 8 * g.sw()) * cin;
                        tile8x32(image, xBase, sx, rowStride, g.kh(), kwc, wp, wBase, bv, blk * 32, tile);
                        Gemm.transposeBlock16(tile, 0, 16 * Float.BYTES, cur, t * 16, ld);
                    }
                    if (oy > y0) {
                        // The previous row's 16 channel pairs x pairs vectors, 8 of them after each of the tiles.
                        for (int u = t * 8; u < t * 8 + 8; u++) {
                            int q = u / pairs, v = u % pairs;
                            FloatVector a = FloatVector.fromArray(FS, prev, q * ld + v * 32);
                            FloatVector b = FloatVector.fromArray(FS, prev, q * ld + v * 32 + 16);
                            long at = prevRow + v * 16L * Float.BYTES;
                            FIRST_HALVES.selectFrom(a, b).intoMemorySegment(out, at + q * rsBytes, NO);
                            SECOND_HALVES.selectFrom(a, b).intoMemorySegment(out, at + (16 + q) * rsBytes, NO);
                        }
                    }
                }
            }
        }
    }

    /**
     * 16 pixels ({@code sx} floats apart from {@code xBase}) by 16 channels: {@code tile[pixel * 16 + lane]}
     * with the bias added. The reduction: {@code kh} stretches of {@code kwc} taps, {@code rowStride} apart.
     */
    static void tile16x16(float[] x, int xBase, int sx, int rowStride, int kh, int kwc, float[] wp, int wBase,
                                  float[] bias, int c0, MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector a8 = FloatVector.zero(FS), a9 = FloatVector.zero(FS), a10 = FloatVector.zero(FS), a11 = FloatVector.zero(FS);
        FloatVector a12 = FloatVector.zero(FS), a13 = FloatVector.zero(FS), a14 = FloatVector.zero(FS), a15 = FloatVector.zero(FS);
        for (int ki = 0; ki < kh; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * kwc * 16;
            for (int j = 0; j < kwc; j++) {
                FloatVector w = FloatVector.fromArray(FS, wp, wb + j * 16);
                int i = xb + j;
                a0 = w.fma(FloatVector.broadcast(FS, x[i]), a0);
                a1 = w.fma(FloatVector.broadcast(FS, x[i + sx]), a1);
                a2 = w.fma(FloatVector.broadcast(FS, x[i + 2 * sx]), a2);
                a3 = w.fma(FloatVector.broadcast(FS, x[i + 3 * sx]), a3);
                a4 = w.fma(FloatVector.broadcast(FS, x[i + 4 * sx]), a4);
                a5 = w.fma(FloatVector.broadcast(FS, x[i + 5 * sx]), a5);
                a6 = w.fma(FloatVector.broadcast(FS, x[i + 6 * sx]), a6);
                a7 = w.fma(FloatVector.broadcast(FS, x[i + 7 * sx]), a7);
                a8 = w.fma(FloatVector.broadcast(FS, x[i + 8 * sx]), a8);
                a9 = w.fma(FloatVector.broadcast(FS, x[i + 9 * sx]), a9);
                a10 = w.fma(FloatVector.broadcast(FS, x[i + 10 * sx]), a10);
                a11 = w.fma(FloatVector.broadcast(FS, x[i + 11 * sx]), a11);
                a12 = w.fma(FloatVector.broadcast(FS, x[i + 12 * sx]), a12);
                a13 = w.fma(FloatVector.broadcast(FS, x[i + 13 * sx]), a13);
                a14 = w.fma(FloatVector.broadcast(FS, x[i + 14 * sx]), a14);
                a15 = w.fma(FloatVector.broadcast(FS, x[i + 15 * sx]), a15);
            }
        }
        FloatVector b = FloatVector.fromArray(FS, bias, c0);
        a0.add(b).intoMemorySegment(tile, 0, NO);
        a1.add(b).intoMemorySegment(tile, 64, NO);
        a2.add(b).intoMemorySegment(tile, 128, NO);
        a3.add(b).intoMemorySegment(tile, 192, NO);
        a4.add(b).intoMemorySegment(tile, 256, NO);
        a5.add(b).intoMemorySegment(tile, 320, NO);
        a6.add(b).intoMemorySegment(tile, 384, NO);
        a7.add(b).intoMemorySegment(tile, 448, NO);
        a8.add(b).intoMemorySegment(tile, 512, NO);
        a9.add(b).intoMemorySegment(tile, 576, NO);
        a10.add(b).intoMemorySegment(tile, 640, NO);
        a11.add(b).intoMemorySegment(tile, 704, NO);
        a12.add(b).intoMemorySegment(tile, 768, NO);
        a13.add(b).intoMemorySegment(tile, 832, NO);
        a14.add(b).intoMemorySegment(tile, 896, NO);
        a15.add(b).intoMemorySegment(tile, 960, NO);
    }

    /**
     * 8 pixels by 32 channels: {@code tile[half * 128 + pixel * 16 + lane]} (channel {@code half * 16 + lane}),
     * with the bias added; as {@link #tile16x16} otherwise.
     */
    static void tile8x32(float[] x, int xBase, int sx, int rowStride, int kh, int kwc, float[] wp, int wBase,
                                 float[] bias, int c0, MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        for (int ki = 0; ki < kh; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * kwc * 32;
            for (int j = 0; j < kwc; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                v = FloatVector.broadcast(FS, x[i + 7 * sx]);
                a7 = wl.fma(v, a7);
                b7 = wh.fma(v, b7);
            }
        }
        FloatVector bl = FloatVector.fromArray(FS, bias, c0), bh = FloatVector.fromArray(FS, bias, c0 + 16);
        a0.add(bl).intoMemorySegment(tile, 0, NO);
        a1.add(bl).intoMemorySegment(tile, 64, NO);
        a2.add(bl).intoMemorySegment(tile, 128, NO);
        a3.add(bl).intoMemorySegment(tile, 192, NO);
        a4.add(bl).intoMemorySegment(tile, 256, NO);
        a5.add(bl).intoMemorySegment(tile, 320, NO);
        a6.add(bl).intoMemorySegment(tile, 384, NO);
        a7.add(bl).intoMemorySegment(tile, 448, NO);
        b0.add(bh).intoMemorySegment(tile, 512, NO);
        b1.add(bh).intoMemorySegment(tile, 576, NO);
        b2.add(bh).intoMemorySegment(tile, 640, NO);
        b3.add(bh).intoMemorySegment(tile, 704, NO);
        b4.add(bh).intoMemorySegment(tile, 768, NO);
        b5.add(bh).intoMemorySegment(tile, 832, NO);
        b6.add(bh).intoMemorySegment(tile, 896, NO);
        b7.add(bh).intoMemorySegment(tile, 960, NO);
    }

    /**
     * 7 pixels by 32 channels, as {@link #tile8x32} with pixel slot 7 left unwritten (its stores are masked off).
     * A copy rather than a pixel-count parameter: C2 keeps the accumulators in registers only in straight-line code.
     */
    static void tile7x32(float[] x, int xBase, int sx, int rowStride, int kh, int kwc, float[] wp, int wBase,
                                 float[] bias, int c0, MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS);
        for (int ki = 0; ki < kh; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * kwc * 32;
            for (int j = 0; j < kwc; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
            }
        }
        FloatVector bl = FloatVector.fromArray(FS, bias, c0), bh = FloatVector.fromArray(FS, bias, c0 + 16);
        a0.add(bl).intoMemorySegment(tile, 0, NO);
        a1.add(bl).intoMemorySegment(tile, 64, NO);
        a2.add(bl).intoMemorySegment(tile, 128, NO);
        a3.add(bl).intoMemorySegment(tile, 192, NO);
        a4.add(bl).intoMemorySegment(tile, 256, NO);
        a5.add(bl).intoMemorySegment(tile, 320, NO);
        a6.add(bl).intoMemorySegment(tile, 384, NO);
        b0.add(bh).intoMemorySegment(tile, 512, NO);
        b1.add(bh).intoMemorySegment(tile, 576, NO);
        b2.add(bh).intoMemorySegment(tile, 640, NO);
        b3.add(bh).intoMemorySegment(tile, 704, NO);
        b4.add(bh).intoMemorySegment(tile, 768, NO);
        b5.add(bh).intoMemorySegment(tile, 832, NO);
        b6.add(bh).intoMemorySegment(tile, 896, NO);
    }

    /** Stores {@code wk.tile}, laid out as {@link #tile7x32} leaves it, as {@link #blockRows} does. */
    static void store7x32(Work wk, MemorySegment out, long at, long rsBytes) {
        storeTransposed(wk, out, at, rsBytes, FIRST_7, SECOND_7);
    }

    /**
     * 8 pixels by 32 channels over {@code n} taps of one window row, from {@code x[xb + j]} (pixel q {@code q * sx}
     * further) and {@code wp[wb + j * 32]}: {@code sums[at...]} (zero when {@code fresh}) plus the products, back into
     * {@code sums[at...]} in {@link #tile8x32}'s layout, no bias: a tile's run in {@link #chunkedBlockRows}.
     */
    static void tile8x32Part(float[] x, int xb, int sx, int n, float[] wp, int wb, float[] sums, int at, boolean fresh) {
        FloatVector a0 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at);
        FloatVector a1 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 16);
        FloatVector a2 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 32);
        FloatVector a3 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 48);
        FloatVector a4 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 64);
        FloatVector a5 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 80);
        FloatVector a6 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 96);
        FloatVector a7 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 112);
        FloatVector b0 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 128);
        FloatVector b1 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 144);
        FloatVector b2 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 160);
        FloatVector b3 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 176);
        FloatVector b4 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 192);
        FloatVector b5 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 208);
        FloatVector b6 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 224);
        FloatVector b7 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 240);
        for (int j = 0; j < n; j++) {
            FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
            FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
            int i = xb + j;
            FloatVector v = FloatVector.broadcast(FS, x[i]);
            a0 = wl.fma(v, a0);
            b0 = wh.fma(v, b0);
            v = FloatVector.broadcast(FS, x[i + sx]);
            a1 = wl.fma(v, a1);
            b1 = wh.fma(v, b1);
            v = FloatVector.broadcast(FS, x[i + 2 * sx]);
            a2 = wl.fma(v, a2);
            b2 = wh.fma(v, b2);
            v = FloatVector.broadcast(FS, x[i + 3 * sx]);
            a3 = wl.fma(v, a3);
            b3 = wh.fma(v, b3);
            v = FloatVector.broadcast(FS, x[i + 4 * sx]);
            a4 = wl.fma(v, a4);
            b4 = wh.fma(v, b4);
            v = FloatVector.broadcast(FS, x[i + 5 * sx]);
            a5 = wl.fma(v, a5);
            b5 = wh.fma(v, b5);
            v = FloatVector.broadcast(FS, x[i + 6 * sx]);
            a6 = wl.fma(v, a6);
            b6 = wh.fma(v, b6);
            v = FloatVector.broadcast(FS, x[i + 7 * sx]);
            a7 = wl.fma(v, a7);
            b7 = wh.fma(v, b7);
        }
        a0.intoArray(sums, at);
        a1.intoArray(sums, at + 16);
        a2.intoArray(sums, at + 32);
        a3.intoArray(sums, at + 48);
        a4.intoArray(sums, at + 64);
        a5.intoArray(sums, at + 80);
        a6.intoArray(sums, at + 96);
        a7.intoArray(sums, at + 112);
        b0.intoArray(sums, at + 128);
        b1.intoArray(sums, at + 144);
        b2.intoArray(sums, at + 160);
        b3.intoArray(sums, at + 176);
        b4.intoArray(sums, at + 192);
        b5.intoArray(sums, at + 208);
        b6.intoArray(sums, at + 224);
        b7.intoArray(sums, at + 240);
    }

    /**
     * 7 pixels by 32 channels over {@code n} taps of one window row, from {@code x[xb + j]} (pixel q {@code q * sx}
     * further) and {@code wp[wb + j * 32]}: {@code sums[at...]} (zero when {@code fresh}) plus the products, back into
     * {@code sums[at...]} in {@link #tile8x32}'s layout, no bias: a tile's run in {@link #chunkedBlockRows}.
     */
    static void tile7x32Part(float[] x, int xb, int sx, int n, float[] wp, int wb, float[] sums, int at, boolean fresh) {
        FloatVector a0 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at);
        FloatVector a1 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 16);
        FloatVector a2 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 32);
        FloatVector a3 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 48);
        FloatVector a4 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 64);
        FloatVector a5 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 80);
        FloatVector a6 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 96);
        FloatVector b0 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 128);
        FloatVector b1 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 144);
        FloatVector b2 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 160);
        FloatVector b3 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 176);
        FloatVector b4 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 192);
        FloatVector b5 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 208);
        FloatVector b6 = fresh ? FloatVector.zero(FS) : FloatVector.fromArray(FS, sums, at + 224);
        for (int j = 0; j < n; j++) {
            FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
            FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
            int i = xb + j;
            FloatVector v = FloatVector.broadcast(FS, x[i]);
            a0 = wl.fma(v, a0);
            b0 = wh.fma(v, b0);
            v = FloatVector.broadcast(FS, x[i + sx]);
            a1 = wl.fma(v, a1);
            b1 = wh.fma(v, b1);
            v = FloatVector.broadcast(FS, x[i + 2 * sx]);
            a2 = wl.fma(v, a2);
            b2 = wh.fma(v, b2);
            v = FloatVector.broadcast(FS, x[i + 3 * sx]);
            a3 = wl.fma(v, a3);
            b3 = wh.fma(v, b3);
            v = FloatVector.broadcast(FS, x[i + 4 * sx]);
            a4 = wl.fma(v, a4);
            b4 = wh.fma(v, b4);
            v = FloatVector.broadcast(FS, x[i + 5 * sx]);
            a5 = wl.fma(v, a5);
            b5 = wh.fma(v, b5);
            v = FloatVector.broadcast(FS, x[i + 6 * sx]);
            a6 = wl.fma(v, a6);
            b6 = wh.fma(v, b6);
        }
        a0.intoArray(sums, at);
        a1.intoArray(sums, at + 16);
        a2.intoArray(sums, at + 32);
        a3.intoArray(sums, at + 48);
        a4.intoArray(sums, at + 64);
        a5.intoArray(sums, at + 80);
        a6.intoArray(sums, at + 96);
        b0.intoArray(sums, at + 128);
        b1.intoArray(sums, at + 144);
        b2.intoArray(sums, at + 160);
        b3.intoArray(sums, at + 176);
        b4.intoArray(sums, at + 192);
        b5.intoArray(sums, at + 208);
        b6.intoArray(sums, at + 224);
    }

    /**
     * Transposes the 16x16 {@code wk.tile} (rows: pixels, lanes: channels) and stores channel rows into the NCHW
     * output, {@code rsBytes} apart from {@code at}. With masks the tile is {@link #tile8x32}'s or {@link #tile7x32}'s: each
     * transposed row holds 8 pixel slots of channel l ({@code first} of them stored) and 8 of channel 16 + l ({@code second}).
     */
    private static void storeTransposed(Work wk, MemorySegment out, long at, long rsBytes, VectorMask<Float> first,
                                        VectorMask<Float> second) {
        float[] t = wk.block;
        Gemm.transposeBlock16(wk.tile, 0, 16 * Float.BYTES, t, 0, 16);
        for (int l = 0; l < 16; l++) {
            FloatVector r = FloatVector.fromArray(FS, t, l * 16);
            if (first != null) {
                r.intoMemorySegment(out, at + l * rsBytes, NO, first);
                // Lanes 8-15 go to channel 16 + l: a store starting 8 floats early, masked to them.
                r.intoMemorySegment(out, at + (16 + l) * rsBytes - 32, NO, second);
            } else {
                r.intoMemorySegment(out, at + l * rsBytes, NO);
            }
        }
    }

    /**
     * Whether {@link #rows} stores whole 8x32 tiles as {@link ConvRasterImageF32#store} does, two unmasked 8-lane stores
     * per transposed row, rather than two masked 16-lane stores ({@link #storeTransposed}): AVX-512's masked stores are
     * slow on AMD's Zen 4, and ResNet-20's 32-channel 16 px and 64-channel 8 px layers store a tile per 4.6-9.2k FMAs.
     * {@code -Djtorch.conv.halfStores=false} keeps the masked stores, to compare.
     */
    private static final boolean HALF_STORES = !"false".equals(System.getProperty("jtorch.conv.halfStores"));

    // ------------------------------------------------------------------ stride-2 input gradient, phases combined

    /**
     * Whether {@link #stride2InputGrad} applies: 3x3 kernels at stride 2 with padding 1 (ResNet's downsampling
     * layers), even input sizes (every phase as large as gradOut), output rows of whole 8- or 7-pixel tiles
     * (ResNet-50's 28, 14 and 7), and input channels in multiples of 16.
     */
    static boolean handlesStride2InputGrad(Geometry g) {
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.sh() == 2 && g.sw() == 2
                && g.kh() == 3 && g.kw() == 3 && g.ph() == 1 && g.pw() == 1 && g.dh() == 1 && g.dw() == 1
                && g.h() == 2 * g.oh() && g.w() == 2 * g.ow() && g.ow() > 0 && (g.ow() % 8 == 0 || g.ow() % 7 == 0)
                && g.cin() % 16 == 0;
    }

    /** Lane l of a transposed {@link #tile8x32} row (8 pixels of the even phase, then 8 of the odd one) interleaved: element l / 2, or 8 + l / 2 in odd lanes. */
    private static final FloatVector ZIP_HALVES = zipHalves();

    private static FloatVector zipHalves() {
        float[] idx = new float[16];
        for (int l = 0; l < 16; l++) idx[l] = (l % 2 == 0 ? 0 : 8) + l / 2;
        return FloatVector.fromArray(FS, idx, 0);
    }

    /**
     * {@code gi} of a 3x3, stride-2, padding-1 convolution, all four output phases as one stride-1 2x2
     * convolution of gradOut (padded by one row and column at the end). Input pixel {@code (2a + py, 2b + px)}
     * receives from gradOut pixels {@code (a + di, b + dj)} through kernel tap {@code (py + 1 - 2di, px + 1 - 2dj)}
     * when that is in the kernel (one or two taps per direction): output channel {@code (py, group, px, c)} of
     * the combined convolution is phase {@code (py, px)} of input channel {@code group * 16 + c}, its missing
     * taps zero. Each 8x32 (7x32) tile is then 8 (7) pixels of both column phases of 16 channels, which a
     * transpose and one permute interleave into whole 16-pixel (14-pixel) rows of {@code gi}. Even rows' tiles
     * skip the second window row, whose taps are all zero for them, and the even column phase skips the window's
     * second column ({@link #phaseTile8x32}): so the tiles do the phases' FMAs and no others, 16 input channels get
     * the 8x32 tile, and there are no phase planes to interleave in a second pass. Running the zero taps (3/9 more
     * FMAs) measured 44-56% of the one-thread peak on ResNet-50's layers (those at 28, 14 and 7 px then ran the
     * phases separately, {@link StridedInputGradF32}).
     */
    static void stride2InputGrad(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), oh = g.oh(), ow = g.ow();
        int groups = cin / 16, blocks = 2 * groups;
        int kwc = 2 * cout, k = 2 * kwc;
        // wp[block (py, group)][di][dj * cout + co][lane (px, c)] = w[co][group * 16 + c][py + 1 - 2di][px + 1 - 2dj]:
        // each tap in one place (kernel row 0 is (py, di) = (1, 1), row 1 (0, 0), row 2 (1, 0); columns alike). The
        // places of no tap (di = 1 for even rows, lanes 0-15 at dj = 1) are never read: the buffer is reused unzeroed.
        // Built a group of 16 input channels of one output channel at a time (one 576-byte run of w), whose taps fill
        // 9 whole 64-byte lane groups. Reading w in order instead wrote 9 places in ~256 pages per output channel and
        // took 7-10 ms of the op for ResNet-50's 512 channels, 1.5-1.9 for 256 (this way 2.0-2.6 and 0.3-0.9, scratch
        // timing of the loop alone, one thread, load 21). Gathering it per place (reading w 9 * cin floats apart) took
        // 8 ms of the 33 at 512 channels.
        float[] wp = STRIDE2_WEIGHTS.get();
        if (wp.length < blocks * k * 32) STRIDE2_WEIGHTS.set(wp = new float[blocks * k * 32]);
        float[] run = new float[16 * 9];
        for (int group = 0; group < groups; group++) {
            for (int co = 0; co < cout; co++) {
                MemorySegment.copy(w, F32, (wOff + ((long) co * cin + group * 16) * 9) * Float.BYTES, run, 0, 16 * 9);
                for (int ki = 0; ki < 3; ki++) {
                    int py = ki == 1 ? 0 : 1, di = ki == 0 ? 1 : 0;
                    int rowBase = (py * groups + group) * k * 32 + (di * kwc + co) * 32;
                    for (int kj = 0; kj < 3; kj++) {
                        int px = kj == 1 ? 0 : 1, dj = kj == 0 ? 1 : 0;
                        int dst = rowBase + dj * cout * 32 + px * 16, tap = ki * 3 + kj;
                        for (int c = 0; c < 16; c++) wp[dst + c] = run[c * 9 + tap];
                    }
                }
            }
        }
        // gradOut as the combined convolution's input: 2x2 window, no leading padding, one zero row and column after.
        Geometry pg = new Geometry(g.n(), cout, oh, ow, 4 * cin, 2, 2, 1, 1, 0, 0, 1, 1, 1, oh, ow);
        int wpad = ConvF32.paddedWidth(pg);
        int p = ow % 8 == 0 ? 8 : 7;
        VectorMask<Float> lanes = p == 8 ? null : FS.indexInRange(0, 2 * p);
        float[] weights = wp;
        boolean fused = Stride2PhaseTilesF32.enabled();
        int hp = ConvF32.paddedHeight(pg), imageFloats = hp * wpad * cout;
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        // Small gradOut images several at a time, up to 1 MB of them, so that each block's weights (256 KB for 512
        // channels) serve them all from L2. One thread, 2 rounds (load 18): 512 channels at 7 px 27.5-31.7 ms one at
        // a time, 26.9-27.4 two, 26.5-26.6 four; 128 at 28 px 26.3-27.6 one, 24.6-24.7 two.
        int together = (int) Math.max(1, Math.min(Math.min(4, g.n() / threads), STRIDE2_FLOATS / imageFloats));
        if (fused && Stride2PhaseTilesF32.inPlace()) {
            stride2InPlace(gy, gyOff, weights, p, lanes, gi, giOff, g, together, threads);
            return;
        }
        if (together == 1) {
            overPaddedImages(gy, gyOff, pg, (wk, n, a0, a1) -> {
                for (int blk = 0; blk < blocks; blk++) stride2Rows(wk, 0, n, a0, a1, blk, weights, p, lanes, gi, giOff, g, fused);
            });
            return;
        }
        overImageGroups(gy, gyOff, pg, together, blocks,
                (wk, imageBase, n, blk) -> stride2Rows(wk, imageBase, n, 0, oh, blk, weights, p, lanes, gi, giOff, g, fused), null);
    }

    /**
     * {@link #stride2InputGrad} with the tiles reading gradOut's NCHW planes where they lie
     * ({@link Stride2PhaseTilesF32#planeTile8x32}): no padded copy. The copy's zero column after each row and zero
     * row after the last are the tiles' {@code edge} (a row's last tile) and one window row for gradOut's last row.
     * Images go {@code together} per block as with the copy; with fewer chunks than twice the threads, their
     * gradOut rows are split too.
     */
    private static void stride2InPlace(MemorySegment gy, long gyOff, float[] wp, int p, VectorMask<Float> lanes,
                                       MemorySegment gi, long giOff, Geometry g, int together, int threads) {
        int cout = g.cout(), oh = g.oh(), ow = g.ow(), groups = g.cin() / 16, blocks = 2 * groups;
        long chunks = (g.n() + together - 1) / together;
        int split = chunks >= 2L * threads ? 1 : Math.min(oh, 2 * threads);
        long plane = (long) oh * ow * Float.BYTES, rowBytes = (long) ow * Float.BYTES;
        long giRow = (long) g.w() * Float.BYTES, giPlane = (long) g.h() * giRow;
        boolean inRegisters = Stride2PhaseTilesF32.transposeInRegisters();
        Parallel.forRange(chunks * split, 1, (t0, t1) -> {
            Work wk = WORK.get();
            for (long t = t0; t < t1; t++) {
                long n0 = t / split * together, n1 = Math.min(g.n(), n0 + together);
                int part = (int) (t % split), a0 = part * oh / split, a1 = (part + 1) * oh / split;
                for (int blk = 0; blk < blocks; blk++) {
                    int py = blk / groups, group = blk % groups, wBase = blk * 4 * cout * 32;
                    for (long n = n0; n < n1; n++) {
                        long image = (gyOff + n * cout * oh * ow) * Float.BYTES;
                        long channelBase = (giOff + n * g.cin() * g.h() * g.w()) * Float.BYTES + group * 16L * giPlane;
                        for (int a = a0; a < a1; a++) {
                            // Even rows take no tap from gradOut row a + 1; odd rows of the last take zero padding.
                            int rows = py == 0 || a == oh - 1 ? 1 : 2;
                            for (int b = 0; b < ow; b += p) {
                                long at = image + a * rowBytes + (long) b * Float.BYTES;
                                boolean edge = b + p == ow;
                                long giAt = channelBase + (2L * a + py) * giRow + 2L * b * Float.BYTES;
                                if (p == 8) {
                                    Stride2PhaseTilesF32.planeTile8x32(gy, at, plane, rowBytes, rows, cout, wp, wBase, edge, wk.tileArray);
                                    if (inRegisters) {
                                        Stride2PhaseTilesF32.storeInterleaved(wk.tileArray, gi, giAt, giPlane);
                                        continue;
                                    }
                                    MemorySegment.copy(wk.tileArray, 0, wk.tile, F32, 0, 256);
                                } else {
                                    Stride2PhaseTilesF32.planeTile7x32(gy, at, plane, rowBytes, rows, cout, wp, wBase, edge, wk.tile);
                                }
                                storeInterleaved(wk, gi, giAt, giPlane, lanes);
                            }
                        }
                    }
                }
            }
        });
    }

    /** Padded gradOut floats {@link #stride2InputGrad} runs together (1 MB). */
    private static final int STRIDE2_FLOATS = 1 << 18;

    /**
     * Block {@code blk} (row phase, 16 input channels) of {@link #stride2InputGrad} for gradOut rows {@code [a0, a1)} of
     * image n, padded in {@code wk.image} from {@code imageBase} on: {@code p}-pixel tiles, interleaved into gi.
     */
    private static void stride2Rows(Work wk, int imageBase, long n, int a0, int a1, int blk, float[] wp, int p,
                                    VectorMask<Float> lanes, MemorySegment gi, long giOff, Geometry g, boolean fused) {
        // The padded gradOut rows: one zero column after (ConvF32.paddedWidth of the combined geometry).
        int cout = g.cout(), ow = g.ow(), groups = g.cin() / 16, wpad = ow + 1;
        int py = blk / groups, group = blk % groups;
        // Even rows (py = 0) take no tap from gradOut row a + 1: one window row.
        int rows = py == 0 ? 1 : 2;
        long rowBytes = (long) g.w() * Float.BYTES, planeBytes = (long) g.h() * rowBytes;
        long channelBase = (giOff + n * g.cin() * g.h() * g.w()) * Float.BYTES + group * 16L * planeBytes;
        int wBase = blk * 4 * cout * 32;
        for (int a = a0; a < a1; a++) {
            for (int b = 0; b < ow; b += p) {
                int xBase = imageBase + (a * wpad + b) * cout;
                if (fused) {
                    if (p == 8) Stride2PhaseTilesF32.tile8x32(wk.image, xBase, cout, wpad * cout, rows, cout, wp, wBase, wk.tile);
                    else Stride2PhaseTilesF32.tile7x32(wk.image, xBase, cout, wpad * cout, rows, cout, wp, wBase, wk.tile);
                } else if (p == 8) {
                    phaseTile8x32(wk.image, xBase, cout, wpad * cout, rows, cout, wp, wBase, wk.tile);
                } else {
                    phaseTile7x32(wk.image, xBase, cout, wpad * cout, rows, cout, wp, wBase, wk.tile);
                }
                storeInterleaved(wk, gi, channelBase + (2L * a + py) * rowBytes + 2L * b * Float.BYTES, planeBytes, lanes);
            }
        }
    }

    /** {@link #stride2InputGrad}'s blocked weight, of the calling thread, reused. */
    private static final ThreadLocal<float[]> STRIDE2_WEIGHTS = ThreadLocal.withInitial(() -> new float[0]);

    /**
     * Transposes {@code wk.tile} ({@link #phaseTile8x32}'s: 8 pixels of 16 channels' even column phase, then of their
     * odd one; {@link #phaseTile7x32}'s with slot 7 unused) and stores channel l's interleaved pixels, the
     * {@code lanes} of 16 (all when null), at {@code at + l * planeBytes}.
     */
    private static void storeInterleaved(Work wk, MemorySegment out, long at, long planeBytes, VectorMask<Float> lanes) {
        float[] t = wk.block;
        Gemm.transposeBlock16(wk.tile, 0, 16 * Float.BYTES, t, 0, 16);
        for (int l = 0; l < 16; l++) {
            FloatVector row = ZIP_HALVES.selectFrom(FloatVector.fromArray(FS, t, l * 16));
            if (lanes == null) row.intoMemorySegment(out, at + l * planeBytes, NO);
            else row.intoMemorySegment(out, at + l * planeBytes, NO, lanes);
        }
    }

    /**
     * The tile of {@link #stride2InputGrad}: as {@link #tile8x32} without bias, over {@code rows} window rows of
     * two pixels of {@code cout} channels each, where the first pixel's taps go to all 32 lanes and the second
     * pixel's to lanes 16-31 only (the even column phase takes no tap from it: its weights there are zero). By default
     * {@link Stride2PhaseTilesF32}'s tiles run instead, with both pixels in one loop; this one with
     * {@code -Djtorch.conv.fusedPhaseTiles=false}.
     */
    static void phaseTile8x32(float[] x, int xBase, int sx, int rowStride, int rows, int cout, float[] wp, int wBase,
                              MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        for (int ki = 0; ki < rows; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                v = FloatVector.broadcast(FS, x[i + 7 * sx]);
                a7 = wl.fma(v, a7);
                b7 = wh.fma(v, b7);
            }
            xb += cout;
            wb += cout * 32;
            for (int j = 0; j < cout; j++) {
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                b0 = wh.fma(FloatVector.broadcast(FS, x[i]), b0);
                b1 = wh.fma(FloatVector.broadcast(FS, x[i + sx]), b1);
                b2 = wh.fma(FloatVector.broadcast(FS, x[i + 2 * sx]), b2);
                b3 = wh.fma(FloatVector.broadcast(FS, x[i + 3 * sx]), b3);
                b4 = wh.fma(FloatVector.broadcast(FS, x[i + 4 * sx]), b4);
                b5 = wh.fma(FloatVector.broadcast(FS, x[i + 5 * sx]), b5);
                b6 = wh.fma(FloatVector.broadcast(FS, x[i + 6 * sx]), b6);
                b7 = wh.fma(FloatVector.broadcast(FS, x[i + 7 * sx]), b7);
            }
        }
        a0.intoMemorySegment(tile, 0, NO);
        a1.intoMemorySegment(tile, 64, NO);
        a2.intoMemorySegment(tile, 128, NO);
        a3.intoMemorySegment(tile, 192, NO);
        a4.intoMemorySegment(tile, 256, NO);
        a5.intoMemorySegment(tile, 320, NO);
        a6.intoMemorySegment(tile, 384, NO);
        a7.intoMemorySegment(tile, 448, NO);
        b0.intoMemorySegment(tile, 512, NO);
        b1.intoMemorySegment(tile, 576, NO);
        b2.intoMemorySegment(tile, 640, NO);
        b3.intoMemorySegment(tile, 704, NO);
        b4.intoMemorySegment(tile, 768, NO);
        b5.intoMemorySegment(tile, 832, NO);
        b6.intoMemorySegment(tile, 896, NO);
        b7.intoMemorySegment(tile, 960, NO);
    }

    /** {@link #phaseTile8x32} for 7 pixels, slot 7 left unwritten: a copy, as {@link #tile7x32} is of {@link #tile8x32}. */
    static void phaseTile7x32(float[] x, int xBase, int sx, int rowStride, int rows, int cout, float[] wp, int wBase,
                              MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS);
        for (int ki = 0; ki < rows; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
            }
            xb += cout;
            wb += cout * 32;
            for (int j = 0; j < cout; j++) {
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                int i = xb + j;
                b0 = wh.fma(FloatVector.broadcast(FS, x[i]), b0);
                b1 = wh.fma(FloatVector.broadcast(FS, x[i + sx]), b1);
                b2 = wh.fma(FloatVector.broadcast(FS, x[i + 2 * sx]), b2);
                b3 = wh.fma(FloatVector.broadcast(FS, x[i + 3 * sx]), b3);
                b4 = wh.fma(FloatVector.broadcast(FS, x[i + 4 * sx]), b4);
                b5 = wh.fma(FloatVector.broadcast(FS, x[i + 5 * sx]), b5);
                b6 = wh.fma(FloatVector.broadcast(FS, x[i + 6 * sx]), b6);
            }
        }
        a0.intoMemorySegment(tile, 0, NO);
        a1.intoMemorySegment(tile, 64, NO);
        a2.intoMemorySegment(tile, 128, NO);
        a3.intoMemorySegment(tile, 192, NO);
        a4.intoMemorySegment(tile, 256, NO);
        a5.intoMemorySegment(tile, 320, NO);
        a6.intoMemorySegment(tile, 384, NO);
        b0.intoMemorySegment(tile, 512, NO);
        b1.intoMemorySegment(tile, 576, NO);
        b2.intoMemorySegment(tile, 640, NO);
        b3.intoMemorySegment(tile, 704, NO);
        b4.intoMemorySegment(tile, 768, NO);
        b5.intoMemorySegment(tile, 832, NO);
        b6.intoMemorySegment(tile, 896, NO);
    }

    // ------------------------------------------------------------------ weight gradient

    /** Whether {@link #weightGrad} applies: output channels in whole 8-row tiles. */
    static boolean handlesWeightGrad(Geometry g) {
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.dw() == 1 && g.cout() % 8 == 0
                && !g.isPointwise();
    }

    /**
     * {@code gw[oc][ic][ki][kj] = sum over images and output pixels of gy[oc][pixel] * x[ic][window(pixel, ki, kj)]}:
     * the channels-last image's window rows are the vector operand (contiguous taps) and gy the broadcast one,
     * each register tile reducing over one pass of {@link #PASS_PIXELS} pixels. A pass's gy is transposed
     * first, 16 channels per pixel, so that a tile's broadcasts are consecutive floats at an offset linear in
     * its loop counter (no per-pixel offsets or bounds checks). Window rows go 96 taps at a time against 4
     * output channels ({@link #weightTileWide}), then 48 against 8 ({@link #weightTile}), then masked
     * 16-tap vectors ({@link #weightTileNarrow}). The tiles loop over the pass's (image, pixel) pairs as one
     * flat list: nested image and pixel loops made whole ResNet-20 steps 6-10% slower or not depending on
     * which shapes C2 first compiled the tile for. Each chunk of images accumulates into its own buffer; the
     * partial sums are added in chunk order, so results do not depend on scheduling. With {@code bf16}, gy and x are
     * bfloat16, widened as they are transposed and padded.
     */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, boolean bf16, MemorySegment gw, long gwOff,
                           Geometry g) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw();
        int kwc = kw * cin, k = kh * kwc;
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g);
        int padSize = hp * wpad * cin;
        int pixels = g.oh() * g.ow();
        int[] pixOff = ConvF32.windowOffsets(g, wpad, cin);
        // Wider pixels (more channels) make fewer of them fit in L1: half the pass from 32 channels on, a quarter from 64;
        // but a whole pass when the sums (cout x k) outgrow L2 by far, as every pass reads and writes all of them.
        int pass = (long) cout * k > BIG_SUMS ? PASS_PIXELS : PASS_PIXELS >> Math.min(2, cin / 32);
        int perPass = Math.max(1, pass / pixels);
        int sub = Math.min(pixels, pass);
        int groups16 = (cout + 15) / 16;
        // Window rows narrower than a 48-tap tile (up to 15 input channels, as in a network's first layer) would
        // run on narrow tiles with most lanes idle: packed per pixel, kh of them fill whole vectors.
        boolean packed = kwc < 48 && kh > 1;
        int chunks = ConvF32.sumChunks(g.n(), cout * k);
        float[][] partial = ConvF32.chunkSums(chunks, cout * k);
        Parallel.forRangeBalanced(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                Work wk = WORK.get();
                float[] acc = ConvF32.clearedChunkSum(partial, (int) c, cout * k);
                long n0 = c * g.n() / chunks, n1 = (c + 1) * g.n() / chunks;
                for (long n = n0; n < n1; n += perPass) {
                    int count = (int) Math.min(perPass, n1 - n);
                    // 16 floats of slack: a narrow tile's vector may read past the last window row (lanes it discards).
                    float[] images = wk.image = ConvF32.grow(wk.image, count * padSize + 16);
                    for (int i = 0; i < count; i++) {
                        ConvF32.padChannelsLast(x, xOff + (n + i) * cin * g.h() * g.w(), bf16, cin, g, hp, wpad, images, i * padSize,
                                wk.block);
                    }
                    for (int p0 = 0; p0 < pixels; p0 += sub) {
                        int p1 = Math.min(pixels, p0 + sub);
                        // The pass's (image, pixel) pairs as one flat list t of window offsets, gy transposed to match.
                        int len = count * (p1 - p0);
                        int[] xo = wk.xo = ConvF32.growInts(wk.xo, len);
                        for (int i = 0, t = 0; i < count; i++) {
                            for (int p = p0; p < p1; p++, t++) xo[t] = i * padSize + pixOff[p];
                        }
                        float[] gt = wk.gradOut = ConvF32.grow(wk.gradOut, groups16 * len * 16);
                        transposeGradOut(gy, gyOff + n * cout * pixels, bf16, cout, pixels, count, p0, p1, gt);
                        if (packed) {
                            // The kh window rows of each pixel as one row of k taps: the columns of acc in the same order.
                            int kp = ((kh - 1) * kwc + (kwc + 15) / 16 * 16 + 15) / 16 * 16;
                            float[] win = wk.windows = ConvF32.grow(wk.windows, len * kp);
                            int[] wo = wk.wo = ConvF32.growInts(wk.wo, len);
                            packWindows(images, xo, len, kh, g.dh() * wpad * cin, kwc, kp, win, wo);
                            weightTiles(len, win, wo, 0, k, gt, cout, acc, 0, k, wk.block);
                        } else {
                            for (int ki = 0; ki < kh; ki++) {
                                weightTiles(len, images, xo, ki * g.dh() * wpad * cin, kwc, gt, cout, acc, ki * kwc, k, wk.block);
                            }
                        }
                    }
                }
            }
        });
        // Columns ordered (ki, kj, ic): the tap-major order ConvF32's weight gradient uses too.
        ConvF32.sumPartials(partial, cout, cin, kh * kw, gw, gwOff);
    }

    /**
     * Pixels one weight-gradient pass reduces over (several small images make one pass, a large image is
     * split): for each window row chunk the tiles of every output-channel block run back to back over the
     * pass, so its window rows stay in L1. Measured on ResNet-20 steps (one JVM, alternating): 256 pixels
     * 168.8 ms against 171.0 with 1024 and 178.2 with 128; then half of it from 32 input channels on,
     * 150.8 against 153.0 ms. With the 96-tap tiles a quarter from 64 channels on: isolated 64-channel 8x8
     * weight gradients, 2.14 against 2.38 ms (3.00 against 3.26 with cold caches), a 64-pixel image and its
     * transposed gy being 42 KB against L1's 48.
     */
    private static final int PASS_PIXELS = 256;

    /**
     * Weight-gradient sums (floats) beyond which a pass takes {@link #PASS_PIXELS} whatever the channels: ResNet-50's
     * 512-channel 3x3 layers (2.4 M floats, 9 MB) at 7 px and at 14 px stride 2, one thread: 47-55% of the FMA peak
     * in one-image passes of 49 pixels, 57-66% in passes of five images (256 channels at 14 px, 0.6 M floats: level).
     */
    private static final long BIG_SUMS = 1 << 20;

    /**
     * Adds to columns {@code [col0, col0 + width)} of every output channel's row of {@code acc} (row length k) the
     * pass's products of gy ({@code gt}) with the {@code width} taps from {@code x[xo[t] + xOff]} on: 96 taps at a
     * time against 4 output channels, then 48 against 8, then masked 16-tap vectors.
     */
    private static void weightTiles(int len, float[] x, int[] xo, int xOff, int width, float[] gt, int cout, float[] acc, int col0,
                                    int k, float[] spill) {
        int j = 0;
        for (; j + 96 <= width; j += 96) {
            for (int oc = 0; oc < cout; oc += 4) {
                weightTileWide(len, x, xo, xOff + j, gt, (oc / 16) * len * 16 + oc % 16, acc, oc * k + col0 + j, k);
            }
        }
        for (; j + 48 <= width; j += 48) {
            for (int oc = 0; oc < cout; oc += 8) {
                weightTile(len, x, xo, xOff + j, gt, (oc / 16) * len * 16 + oc % 16, acc, oc * k + col0 + j, k);
            }
        }
        for (; j < width; j += 16) {
            for (int oc = 0; oc < cout; oc += 8) {
                weightTileNarrow(len, x, xo, xOff + j, gt, (oc / 16) * len * 16 + oc % 16, acc, oc * k + col0 + j, k,
                        Math.min(16, width - j), spill);
            }
        }
    }

    /**
     * {@code win[t * kp + ki * kwc + j] = images[xo[t] + ki * rowStride + j]} and {@code wo[t] = t * kp}: each
     * pixel's kh window rows of kwc taps back to back, kp floats per pixel (the taps rounded up to whole vectors,
     * so that a masked tile's vector stays inside the pixel's row).
     */
    private static void packWindows(float[] images, int[] xo, int len, int kh, int rowStride, int kwc, int kp, float[] win, int[] wo) {
        if (kwc <= 32) {
            // Whole vectors, each row's overshoot overwritten by the next row (kp leaves room for the last one's; the
            // images' 16 floats of slack for the reads past a row's end): seven 21-float copies per pixel through
            // System.arraycopy cost the 7x7 stem's weight gradient 3-8% (one thread, 25.5-25.7 against 25.9-29.8 ms).
            for (int t = 0; t < len; t++) {
                wo[t] = t * kp;
                for (int ki = 0; ki < kh; ki++) {
                    int from = xo[t] + ki * rowStride, to = t * kp + ki * kwc;
                    FloatVector.fromArray(FS, images, from).intoArray(win, to);
                    if (kwc > 16) FloatVector.fromArray(FS, images, from + 16).intoArray(win, to + 16);
                }
            }
            return;
        }
        for (int t = 0; t < len; t++) {
            wo[t] = t * kp;
            for (int ki = 0; ki < kh; ki++) System.arraycopy(images, xo[t] + ki * rowStride, win, t * kp + ki * kwc, kwc);
        }
    }

    /**
     * {@code gt[(grp * len + t) * 16 + c] = gy[image i][grp * 16 + c][p]} for the pass's flat list
     * {@code t = i * (p1 - p0) + p - p0} over images {@code i < count} (from {@code gyOff} on) and pixels
     * {@code [p0, p1)}; channels past {@code cout} in the last group are zero. 16x16 blocks go through vector
     * transposes when whole; the rest element by element. With {@code bf16}, gy is bfloat16 (widened).
     */
    private static void transposeGradOut(MemorySegment gy, long gyOff, boolean bf16, int cout, int pixels, int count, int p0, int p1,
                                         float[] gt) {
        int span = p1 - p0, len = count * span;
        for (int grp = 0; grp * 16 < cout; grp++) {
            int gBase = grp * len * 16;
            int channels = Math.min(16, cout - grp * 16);
            for (int i = 0; i < count; i++) {
                long image = gyOff + ((long) i * cout + grp * 16) * pixels;
                int q = 0;
                if (channels == 16) {
                    for (; q + 16 <= span; q += 16) {
                        ConvF32.transposeBlock16(gy, image + p0 + q, pixels, bf16, gt, gBase + (i * span + q) * 16, 16);
                    }
                }
                for (; q < span; q++) {
                    int at = gBase + (i * span + q) * 16;
                    for (int ch = 0; ch < 16; ch++) {
                        gt[at + ch] = ch < channels ? ConvF32.element(gy, image + (long) ch * pixels + p0 + q, bf16) : 0f;
                    }
                }
            }
        }
    }

    /**
     * {@code acc[accBase + r * ld + j] += sum over t < len of gt[t * 16 + gtBase + r] * x[xo[t] + xOff + j]} for 4
     * rows r and 96 taps j: six vectors of window row against four broadcasts, the fewest loads per FMA of
     * the tiles that fit the registers (measured on one core: 212 against 194 GFLOP/s for {@link #weightTile}).
     */
    private static void weightTileWide(int len, float[] x, int[] xo, int xOff, float[] gt, int gtBase, float[] acc, int accBase, int ld) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c02 = FloatVector.zero(FS), c03 = FloatVector.zero(FS), c04 = FloatVector.zero(FS), c05 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS), c12 = FloatVector.zero(FS), c13 = FloatVector.zero(FS), c14 = FloatVector.zero(FS), c15 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c22 = FloatVector.zero(FS), c23 = FloatVector.zero(FS), c24 = FloatVector.zero(FS), c25 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS), c32 = FloatVector.zero(FS), c33 = FloatVector.zero(FS), c34 = FloatVector.zero(FS), c35 = FloatVector.zero(FS);
        for (int t = 0; t < len; t++) {
            int bi = xo[t] + xOff;
            FloatVector b0 = FloatVector.fromArray(FS, x, bi + 0);
            FloatVector b1 = FloatVector.fromArray(FS, x, bi + 16);
            FloatVector b2 = FloatVector.fromArray(FS, x, bi + 32);
            FloatVector b3 = FloatVector.fromArray(FS, x, bi + 48);
            FloatVector b4 = FloatVector.fromArray(FS, x, bi + 64);
            FloatVector b5 = FloatVector.fromArray(FS, x, bi + 80);
            int ai = t * 16 + gtBase;
            FloatVector v = FloatVector.broadcast(FS, gt[ai]);
            c00 = b0.fma(v, c00);
            c01 = b1.fma(v, c01);
            c02 = b2.fma(v, c02);
            c03 = b3.fma(v, c03);
            c04 = b4.fma(v, c04);
            c05 = b5.fma(v, c05);
            v = FloatVector.broadcast(FS, gt[ai + 1]);
            c10 = b0.fma(v, c10);
            c11 = b1.fma(v, c11);
            c12 = b2.fma(v, c12);
            c13 = b3.fma(v, c13);
            c14 = b4.fma(v, c14);
            c15 = b5.fma(v, c15);
            v = FloatVector.broadcast(FS, gt[ai + 2]);
            c20 = b0.fma(v, c20);
            c21 = b1.fma(v, c21);
            c22 = b2.fma(v, c22);
            c23 = b3.fma(v, c23);
            c24 = b4.fma(v, c24);
            c25 = b5.fma(v, c25);
            v = FloatVector.broadcast(FS, gt[ai + 3]);
            c30 = b0.fma(v, c30);
            c31 = b1.fma(v, c31);
            c32 = b2.fma(v, c32);
            c33 = b3.fma(v, c33);
            c34 = b4.fma(v, c34);
            c35 = b5.fma(v, c35);
        }
        FloatVector.fromArray(FS, acc, accBase).add(c00).intoArray(acc, accBase);
        FloatVector.fromArray(FS, acc, accBase + 16).add(c01).intoArray(acc, accBase + 16);
        FloatVector.fromArray(FS, acc, accBase + 32).add(c02).intoArray(acc, accBase + 32);
        FloatVector.fromArray(FS, acc, accBase + 48).add(c03).intoArray(acc, accBase + 48);
        FloatVector.fromArray(FS, acc, accBase + 64).add(c04).intoArray(acc, accBase + 64);
        FloatVector.fromArray(FS, acc, accBase + 80).add(c05).intoArray(acc, accBase + 80);
        FloatVector.fromArray(FS, acc, accBase + ld).add(c10).intoArray(acc, accBase + ld);
        FloatVector.fromArray(FS, acc, accBase + ld + 16).add(c11).intoArray(acc, accBase + ld + 16);
        FloatVector.fromArray(FS, acc, accBase + ld + 32).add(c12).intoArray(acc, accBase + ld + 32);
        FloatVector.fromArray(FS, acc, accBase + ld + 48).add(c13).intoArray(acc, accBase + ld + 48);
        FloatVector.fromArray(FS, acc, accBase + ld + 64).add(c14).intoArray(acc, accBase + ld + 64);
        FloatVector.fromArray(FS, acc, accBase + ld + 80).add(c15).intoArray(acc, accBase + ld + 80);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld).add(c20).intoArray(acc, accBase + 2 * ld);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 16).add(c21).intoArray(acc, accBase + 2 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 32).add(c22).intoArray(acc, accBase + 2 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 48).add(c23).intoArray(acc, accBase + 2 * ld + 48);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 64).add(c24).intoArray(acc, accBase + 2 * ld + 64);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 80).add(c25).intoArray(acc, accBase + 2 * ld + 80);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld).add(c30).intoArray(acc, accBase + 3 * ld);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 16).add(c31).intoArray(acc, accBase + 3 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 32).add(c32).intoArray(acc, accBase + 3 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 48).add(c33).intoArray(acc, accBase + 3 * ld + 48);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 64).add(c34).intoArray(acc, accBase + 3 * ld + 64);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 80).add(c35).intoArray(acc, accBase + 3 * ld + 80);
    }

    /** As {@link #weightTileWide} for 8 rows and 48 taps: a window row of 16 channels is 48 taps. */
    private static void weightTile(int len, float[] x, int[] xo, int xOff, float[] gt, int gtBase, float[] acc, int accBase, int ld) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c02 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS), c12 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c22 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS), c32 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS), c42 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS), c52 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS), c62 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS), c72 = FloatVector.zero(FS);
        for (int t = 0; t < len; t++) {
            int bi = xo[t] + xOff;
            FloatVector b0 = FloatVector.fromArray(FS, x, bi + 0);
            FloatVector b1 = FloatVector.fromArray(FS, x, bi + 16);
            FloatVector b2 = FloatVector.fromArray(FS, x, bi + 32);
            int ai = t * 16 + gtBase;
            FloatVector v = FloatVector.broadcast(FS, gt[ai]);
            c00 = b0.fma(v, c00);
            c01 = b1.fma(v, c01);
            c02 = b2.fma(v, c02);
            v = FloatVector.broadcast(FS, gt[ai + 1]);
            c10 = b0.fma(v, c10);
            c11 = b1.fma(v, c11);
            c12 = b2.fma(v, c12);
            v = FloatVector.broadcast(FS, gt[ai + 2]);
            c20 = b0.fma(v, c20);
            c21 = b1.fma(v, c21);
            c22 = b2.fma(v, c22);
            v = FloatVector.broadcast(FS, gt[ai + 3]);
            c30 = b0.fma(v, c30);
            c31 = b1.fma(v, c31);
            c32 = b2.fma(v, c32);
            v = FloatVector.broadcast(FS, gt[ai + 4]);
            c40 = b0.fma(v, c40);
            c41 = b1.fma(v, c41);
            c42 = b2.fma(v, c42);
            v = FloatVector.broadcast(FS, gt[ai + 5]);
            c50 = b0.fma(v, c50);
            c51 = b1.fma(v, c51);
            c52 = b2.fma(v, c52);
            v = FloatVector.broadcast(FS, gt[ai + 6]);
            c60 = b0.fma(v, c60);
            c61 = b1.fma(v, c61);
            c62 = b2.fma(v, c62);
            v = FloatVector.broadcast(FS, gt[ai + 7]);
            c70 = b0.fma(v, c70);
            c71 = b1.fma(v, c71);
            c72 = b2.fma(v, c72);
        }
        FloatVector.fromArray(FS, acc, accBase).add(c00).intoArray(acc, accBase);
        FloatVector.fromArray(FS, acc, accBase + 16).add(c01).intoArray(acc, accBase + 16);
        FloatVector.fromArray(FS, acc, accBase + 32).add(c02).intoArray(acc, accBase + 32);
        FloatVector.fromArray(FS, acc, accBase + ld).add(c10).intoArray(acc, accBase + ld);
        FloatVector.fromArray(FS, acc, accBase + ld + 16).add(c11).intoArray(acc, accBase + ld + 16);
        FloatVector.fromArray(FS, acc, accBase + ld + 32).add(c12).intoArray(acc, accBase + ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld).add(c20).intoArray(acc, accBase + 2 * ld);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 16).add(c21).intoArray(acc, accBase + 2 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 2 * ld + 32).add(c22).intoArray(acc, accBase + 2 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld).add(c30).intoArray(acc, accBase + 3 * ld);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 16).add(c31).intoArray(acc, accBase + 3 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 3 * ld + 32).add(c32).intoArray(acc, accBase + 3 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 4 * ld).add(c40).intoArray(acc, accBase + 4 * ld);
        FloatVector.fromArray(FS, acc, accBase + 4 * ld + 16).add(c41).intoArray(acc, accBase + 4 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 4 * ld + 32).add(c42).intoArray(acc, accBase + 4 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 5 * ld).add(c50).intoArray(acc, accBase + 5 * ld);
        FloatVector.fromArray(FS, acc, accBase + 5 * ld + 16).add(c51).intoArray(acc, accBase + 5 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 5 * ld + 32).add(c52).intoArray(acc, accBase + 5 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 6 * ld).add(c60).intoArray(acc, accBase + 6 * ld);
        FloatVector.fromArray(FS, acc, accBase + 6 * ld + 16).add(c61).intoArray(acc, accBase + 6 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 6 * ld + 32).add(c62).intoArray(acc, accBase + 6 * ld + 32);
        FloatVector.fromArray(FS, acc, accBase + 7 * ld).add(c70).intoArray(acc, accBase + 7 * ld);
        FloatVector.fromArray(FS, acc, accBase + 7 * ld + 16).add(c71).intoArray(acc, accBase + 7 * ld + 16);
        FloatVector.fromArray(FS, acc, accBase + 7 * ld + 32).add(c72).intoArray(acc, accBase + 7 * ld + 32);
    }

    /**
     * As {@link #weightTile} for the {@code width <= 16} taps left of a window row: one vector per row, its
     * lanes past {@code width} (taps of the next window row or pixel) computed and discarded. The rows are
     * added to {@code acc} through {@code spill} (256 floats) by scalar code: eight inlined masked loads and
     * stores made this method too large for C1 ("out of virtual registers"), and when C2 was busy as it first
     * grew hot, it stayed in C1's tier-2 code, where every vector is a heap object, for good (a one-input-channel
     * weight gradient 50x slower, or not, depending on what the JVM had run before: issue 20).
     */
    private static void weightTileNarrow(int len, float[] x, int[] xo, int xOff, float[] gt, int gtBase, float[] acc, int accBase,
                                         int ld, int width, float[] spill) {
        FloatVector c0 = FloatVector.zero(FS), c1 = FloatVector.zero(FS), c2 = FloatVector.zero(FS), c3 = FloatVector.zero(FS);
        FloatVector c4 = FloatVector.zero(FS), c5 = FloatVector.zero(FS), c6 = FloatVector.zero(FS), c7 = FloatVector.zero(FS);
        for (int t = 0; t < len; t++) {
            FloatVector b = FloatVector.fromArray(FS, x, xo[t] + xOff);
            int ai = t * 16 + gtBase;
            c0 = b.fma(FloatVector.broadcast(FS, gt[ai]), c0);
            c1 = b.fma(FloatVector.broadcast(FS, gt[ai + 1]), c1);
            c2 = b.fma(FloatVector.broadcast(FS, gt[ai + 2]), c2);
            c3 = b.fma(FloatVector.broadcast(FS, gt[ai + 3]), c3);
            c4 = b.fma(FloatVector.broadcast(FS, gt[ai + 4]), c4);
            c5 = b.fma(FloatVector.broadcast(FS, gt[ai + 5]), c5);
            c6 = b.fma(FloatVector.broadcast(FS, gt[ai + 6]), c6);
            c7 = b.fma(FloatVector.broadcast(FS, gt[ai + 7]), c7);
        }
        c0.intoArray(spill, 0);
        c1.intoArray(spill, 16);
        c2.intoArray(spill, 32);
        c3.intoArray(spill, 48);
        c4.intoArray(spill, 64);
        c5.intoArray(spill, 80);
        c6.intoArray(spill, 96);
        c7.intoArray(spill, 112);
        for (int r = 0; r < 8; r++) {
            for (int j = 0; j < width; j++) acc[accBase + r * ld + j] += spill[r * 16 + j];
        }
    }
}
