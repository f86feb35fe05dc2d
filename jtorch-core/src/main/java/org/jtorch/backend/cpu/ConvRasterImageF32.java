package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * {@link ConvDirectF32}'s 8-pixel x 32-channel register tile with its 8 pixels in raster order over the whole output
 * image, not along one output row. Rows that are not whole tiles (MNIST's 26-pixel rows: conv1's forward, and conv2's
 * input gradient as the flipped convolution) cost the row tiles a last tile overlapping the one before it, 32 pixels
 * computed per 26 (23% more work); in raster order only the last tile of a block of rows overlaps (680 per 676 at
 * 26x26). Each pixel reads its window from its own offset in the same channels-last padded copy, and the 8 pixels are
 * 8 consecutive floats of every output channel's plane: one 8-lane store each. {@code -Djtorch.conv.rasterImages=false}
 * leaves these shapes to the row tiles.
 */
final class ConvRasterImageF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final VectorSpecies<Float> FS8 = FloatVector.SPECIES_256;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.rasterImages"));

    private ConvRasterImageF32() {}

    /** Whether {@link ConvDirectF32}'s 8x32 tiles of {@code g} run here: output rows that are not whole 8-pixel tiles. */
    static boolean serves(Geometry g) {
        return ENABLED && g.ow() % 8 != 0;
    }

    /**
     * Output rows {@code [y0, y1)} of the image in {@code wk.image} (padded {@code wpad} wide, channels-last), every
     * 32-channel block, as raster tiles over their {@code (y1 - y0) * ow} pixels (at least 8: {@link ConvDirectF32}
     * takes 8-pixel tiles only for rows of at least 8), the last ending at the block's end. Weights and bias as
     * {@link ConvDirectF32#tile8x32}'s.
     */
    static void rows(ConvDirectF32.Work wk, float[] wp, float[] bv, Geometry g, int k, int kwc, int wpad, int y0, int y1,
                     MemorySegment out, long outImage, long pixels) {
        int cin = g.cin(), ow = g.ow();
        int rowStride = g.dh() * wpad * cin;
        int p0 = y0 * ow, p1 = y1 * ow;
        long rsBytes = pixels * Float.BYTES;
        int[] base = new int[8];
        for (int blk = 0; blk < g.cout() / 32; blk++) {
            int wBase = blk * k * 32;
            for (int next = p0; next < p1; next += 8) {
                int s = Math.min(next, p1 - 8);
                int oy = s / ow, ox = s % ow;
                for (int q = 0; q < 8; q++) {
                    base[q] = (oy * g.sh() * wpad + ox * g.sw()) * cin;
                    if (++ox == ow) {
                        ox = 0;
                        oy++;
                    }
                }
                tile(wk.image, base, rowStride, g.kh(), kwc, wp, wBase, bv, blk * 32, wk.tile);
                long at = (outImage + (long) blk * 32 * pixels + s) * Float.BYTES;
                store(wk, out, at, rsBytes);
            }
        }
    }

    /**
     * Transposes {@code wk.tile} and stores each channel's 8 pixels at {@code at + channel * rsBytes}, as unmasked 8-lane
     * stores: the row tiles' masked 16-lane stores ({@link ConvDirectF32#storeTransposed}) were about 40% of MNIST
     * conv1's forward samples (JFR, one thread), whose 9 taps leave the stores most of the work.
     */
    static void store(ConvDirectF32.Work wk, MemorySegment out, long at, long rsBytes) {
        float[] t = wk.block;
        Gemm.transposeBlock16(wk.tile, 0, 16 * Float.BYTES, t, 0, 16);
        for (int l = 0; l < 16; l++) {
            FloatVector.fromArray(FS8, t, l * 16).intoMemorySegment(out, at + l * rsBytes, NO);
            FloatVector.fromArray(FS8, t, l * 16 + 8).intoMemorySegment(out, at + (16 + l) * rsBytes, NO);
        }
    }

    /**
     * 8 pixels (window corners at {@code base[p]}) by 32 channels, in {@link ConvDirectF32#tile8x32}'s layout: pixel p's
     * channels 0-15 at float {@code 16 p} of {@code tile}, channels 16-31 at {@code 128 + 16 p}, the bias from
     * {@code bias[c0]} added. Kernel row ki of each window is {@code kwc} floats from {@code base[p] + ki * rowStride}.
     */
    static void tile(float[] x, int[] base, int rowStride, int kh, int kwc, float[] wp, int wBase, float[] bias, int c0,
                     MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        for (int ki = 0; ki < kh; ki++) {
            int r = ki * rowStride;
            int x0 = base[0] + r, x1 = base[1] + r, x2 = base[2] + r, x3 = base[3] + r;
            int x4 = base[4] + r, x5 = base[5] + r, x6 = base[6] + r, x7 = base[7] + r;
            int wb = wBase + ki * kwc * 32;
            for (int j = 0; j < kwc; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * 32);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * 32 + 16);
                FloatVector v = FloatVector.broadcast(FS, x[x0 + j]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[x1 + j]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                v = FloatVector.broadcast(FS, x[x2 + j]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                v = FloatVector.broadcast(FS, x[x3 + j]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                v = FloatVector.broadcast(FS, x[x4 + j]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                v = FloatVector.broadcast(FS, x[x5 + j]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                v = FloatVector.broadcast(FS, x[x6 + j]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                v = FloatVector.broadcast(FS, x[x7 + j]);
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
}
