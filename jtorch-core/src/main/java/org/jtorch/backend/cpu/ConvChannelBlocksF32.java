package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The forward of many-channel strided convolutions on rows of whole 7-pixel tiles (ResNet-50's 3x3 stride-2 layers:
 * 128, 256 and 512 channels onto 28, 14 and 7 px) as {@link ConvDirectF32}'s 7x32 tile, with the reduction cut into
 * blocks of {@link #CB} input channels. There a tile runs over all {@code kh * kw * cin} taps of a 32-channel weight
 * block (ResNet-50's 512 channels: 590 KB), so its weights stream from L2 or memory at 2 vectors per 14 FMAs, and
 * each image fetches all of them again (9.4 MB at 512 channels). Here a block of 16 input channels of a 32-channel
 * weight block is 18 KB at 3x3: it stays in L1 while every tile of a group of images runs over it, adding into
 * partial sums kept in the tile's register layout ({@code [image][block][oy][tile][14 vectors]}, in L2); the last
 * channel block adds the bias and stores the transposed tile into the NCHW output. Each image is copied once per
 * channel block, channels-last with its zero border: a pixel's 16 channels are one cache line.
 *
 * <p>The sums run over the channel blocks in order and, within one, in the direct tile's order, so they differ from
 * {@link ConvDirectF32}'s in rounding only. {@code -Djtorch.conv.channelBlocks=false} (read at each call) leaves these shapes to it.
 */
final class ConvChannelBlocksF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Input channels per block: one 64-byte line per pixel, and a 3x3 kernel's 32-channel weight block 18 KB. */
    static final int CB = 16;
    private static final int P = 7, OB = 32;
    /** Floats of one tile's partial sums: 7 pixels x 32 channels. */
    private static final int TILE = P * OB;
    /** Fewest taps per output channel ({@code kh * kw * cin}) taken: below it a 32-channel weight block fits L1 anyway. */
    private static final int MIN_TAPS = 9 * 64;
    /** Partial sums of a group of images kept together (floats, 512 KB: in L2). */
    private static final int GROUP_PARTIAL_FLOATS = 1 << 17;
    private static final int GROUP = 4;

    private ConvChannelBlocksF32() {}

    /**
     * Whether this path serves {@code g}: 16-lane vectors, one group, no column dilation, a stride, output channels in
     * 32-channel blocks, rows of whole 7-pixel tiles that are not whole 8-pixel ones (those {@link ConvDirectF32} runs
     * on its 7x32 tile), input channels in whole blocks, and enough taps that the weights outgrow L1.
     */
    static boolean handles(Geometry g) {
        return !"false".equals(System.getProperty("jtorch.conv.channelBlocks")) && FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.dw() == 1
                && (g.sh() > 1 || g.sw() > 1) && g.cout() % OB == 0 && g.ow() % P == 0 && g.ow() % 8 != 0 && g.oh() > 0
                && g.n() > 0 && g.cin() % CB == 0 && g.kh() * g.kw() * g.cin() >= MIN_TAPS
                && (long) g.cout() * g.kh() * g.kw() * g.cin() < Integer.MAX_VALUE / 2
                && (long) GROUP * g.cout() * g.oh() * g.ow() < Integer.MAX_VALUE / 2
                && (long) GROUP * ConvF32.paddedHeight(g) * ConvF32.paddedWidth(g) * CB < Integer.MAX_VALUE / 2;
    }

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        /** The group's images, one channel block each: {@code [image][padded row][padded column][CB]}. */
        float[] images = new float[0];
        float[] partial = new float[0];
        /** The native register tile and transpose block of {@link ConvDirectF32#store7x32}. */
        final ConvDirectF32.Work direct = new ConvDirectF32.Work();
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /** The calling thread's blocked weights, read by every worker until the call returns. */
    private static final ThreadLocal<float[][]> WEIGHTS = ThreadLocal.withInitial(() -> new float[][] {new float[0], new float[0]});

    /** {@code out = conv(x, w) + bias} for contiguous float32 tensors given as segments and element offsets ({@code bias} may be null). */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw(), oh = g.oh(), ow = g.ow();
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g);
        int blocks = cout / OB, channelBlocks = cin / CB, kwc = kw * CB, blockTaps = kh * kwc;
        float[] wp = blockedWeights(w, wOff, g);
        float[] bv = new float[cout];
        if (bias != null) MemorySegment.copy(bias, F32, bOff * Float.BYTES, bv, 0, cout);
        int imageFloats = hp * wpad * CB, tilesPerRow = ow / P;
        long pixels = (long) oh * ow;
        int imagePartial = cout * oh * ow;
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        int together = (int) Math.max(1, Math.min(Math.min(GROUP, g.n() / threads), GROUP_PARTIAL_FLOATS / imagePartial));
        int sx = g.sw() * CB, rowStride = g.dh() * wpad * CB;
        long rsBytes = pixels * Float.BYTES;
        Parallel.forRangeBalanced((g.n() + together - 1) / together, 1, (t0, t1) -> {
            Work wk = WORK.get();
            for (long t = t0; t < t1; t++) {
                long n0 = t * together;
                int count = (int) Math.min(together, g.n() - n0);
                float[] images = wk.images = ConvF32.grow(wk.images, count * imageFloats);
                float[] partial = wk.partial = ConvF32.grow(wk.partial, count * imagePartial);
                for (int cb = 0; cb < channelBlocks; cb++) {
                    for (int i = 0; i < count; i++) {
                        long src = xOff + ((n0 + i) * cin + (long) cb * CB) * g.h() * g.w();
                        ConvF32.padChannelsLast(x, src, CB, g, hp, wpad, images, i * imageFloats, wk.direct.block);
                    }
                    boolean first = cb == 0, last = cb == channelBlocks - 1;
                    for (int blk = 0; blk < blocks; blk++) {
                        int wBase = (blk * channelBlocks + cb) * blockTaps * OB;
                        for (int i = 0; i < count; i++) {
                            long outImage = oOff + (n0 + i) * cout * pixels;
                            for (int oy = 0; oy < oh; oy++) {
                                for (int tx = 0; tx < tilesPerRow; tx++) {
                                    int xBase = i * imageFloats + (oy * g.sh() * wpad + tx * P * g.sw()) * CB;
                                    int at = i * imagePartial + ((blk * oh + oy) * tilesPerRow + tx) * TILE;
                                    tile(images, xBase, sx, rowStride, kh, kwc, wp, wBase, partial, at, first, last, bv, blk * OB,
                                            wk.direct.tile);
                                    if (last) {
                                        long o = (outImage + (long) blk * OB * pixels + (long) oy * ow + tx * P) * Float.BYTES;
                                        ConvDirectF32.store7x32(wk.direct, out, o, rsBytes);
                                    }
                                }
                            }
                        }
                    }
                }
                if (epilogue != null) epilogue.block(n0, n0 + count, 0, cout, 0, pixels);
            }
        });
    }

    /**
     * The weights in {@link #forward}'s order, {@code wp[block][cb][ki][kj * CB + c][lane]} = weight (output channel
     * {@code block * 32 + lane}, input channel {@code cb * CB + c}, tap (ki, kj)), gathered 16 lanes at a time.
     */
    private static float[] blockedWeights(MemorySegment w, long wOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw();
        int kk = kh * kw, k = cin * kk;
        float[][] buffers = WEIGHTS.get();
        float[] wh = buffers[0] = ConvF32.grow(buffers[0], cout * k);
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, cout * k);
        int[] lanes = new int[16];
        for (int l = 0; l < 16; l++) lanes[l] = l * k;
        float[] wp = buffers[1] = ConvF32.grow(buffers[1], cout * k);
        int dst = 0;
        for (int blk = 0; blk < cout / OB; blk++) {
            for (int cb = 0; cb < cin / CB; cb++) {
                for (int ki = 0; ki < kh; ki++) {
                    for (int kj = 0; kj < kw; kj++) {
                        for (int c = 0; c < CB; c++) {
                            int src = (blk * OB * cin + cb * CB + c) * kk + ki * kw + kj;
                            FloatVector.fromArray(FS, wh, src, lanes, 0).intoArray(wp, dst);
                            FloatVector.fromArray(FS, wh, src + 16 * k, lanes, 0).intoArray(wp, dst + 16);
                            dst += OB;
                        }
                    }
                }
            }
        }
        return wp;
    }

    /**
     * {@link ConvDirectF32#tile7x32} over one channel block, adding to the tile's partial sums at {@code acc[at]} (7
     * vectors of lanes 0-15, then 7 of lanes 16-31; not read when {@code first}). The last block adds the bias and
     * leaves the tile in {@code tile} for {@link ConvDirectF32#store7x32}; the others store the sums back.
     */
    static void tile(float[] x, int xBase, int sx, int rowStride, int kh, int kwc, float[] wp, int wBase, float[] acc, int at,
                     boolean first, boolean last, float[] bias, int c0, MemorySegment tile) {
        FloatVector a0, a1, a2, a3, a4, a5, a6, b0, b1, b2, b3, b4, b5, b6;
        if (first) {
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = b0 = b1 = b2 = b3 = b4 = b5 = b6 = FloatVector.zero(FS);
        } else {
            a0 = FloatVector.fromArray(FS, acc, at);
            a1 = FloatVector.fromArray(FS, acc, at + 16);
            a2 = FloatVector.fromArray(FS, acc, at + 32);
            a3 = FloatVector.fromArray(FS, acc, at + 48);
            a4 = FloatVector.fromArray(FS, acc, at + 64);
            a5 = FloatVector.fromArray(FS, acc, at + 80);
            a6 = FloatVector.fromArray(FS, acc, at + 96);
            b0 = FloatVector.fromArray(FS, acc, at + 112);
            b1 = FloatVector.fromArray(FS, acc, at + 128);
            b2 = FloatVector.fromArray(FS, acc, at + 144);
            b3 = FloatVector.fromArray(FS, acc, at + 160);
            b4 = FloatVector.fromArray(FS, acc, at + 176);
            b5 = FloatVector.fromArray(FS, acc, at + 192);
            b6 = FloatVector.fromArray(FS, acc, at + 208);
        }
        for (int ki = 0; ki < kh; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * kwc * OB;
            for (int j = 0; j < kwc; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * OB);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * OB + 16);
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
        if (last) {
            FloatVector bl = FloatVector.fromArray(FS, bias, c0), bh = FloatVector.fromArray(FS, bias, c0 + 16);
            // ConvDirectF32.tile7x32's layout: pixel p's lanes 0-15 in row p, its lanes 16-31 in row 8 + p.
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
            return;
        }
        a0.intoArray(acc, at);
        a1.intoArray(acc, at + 16);
        a2.intoArray(acc, at + 32);
        a3.intoArray(acc, at + 48);
        a4.intoArray(acc, at + 64);
        a5.intoArray(acc, at + 80);
        a6.intoArray(acc, at + 96);
        b0.intoArray(acc, at + 112);
        b1.intoArray(acc, at + 128);
        b2.intoArray(acc, at + 144);
        b3.intoArray(acc, at + 160);
        b4.intoArray(acc, at + 176);
        b5.intoArray(acc, at + 192);
        b6.intoArray(acc, at + 208);
    }
}
