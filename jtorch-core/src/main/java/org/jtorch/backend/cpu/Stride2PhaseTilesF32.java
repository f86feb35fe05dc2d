package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The register tiles of {@link ConvDirectF32#stride2InputGrad} with the window's two pixels in one pass over the
 * gradOut channels. That convolution's 32 lanes are both column phases of 16 input channels; the window's first pixel
 * feeds all 32 lanes and its second pixel (one gradOut pixel to the right) the odd phase's 16 only. Run as two loops
 * ({@link ConvDirectF32#phaseTile8x32}), the second one loads one weight vector and 8 broadcasts for 8 FMAs. But tile
 * pixel p's second window pixel is tile pixel p + 1's first: one loop over the channels broadcasts the 9 pixels once
 * and multiplies them by the 3 weight vectors, 12 loads per 24 FMAs (19 before). A JFR profile of ResNet-20's
 * 16 -> 32 stride-2 input gradient put 40% of the old tile's samples in its second loop, which does a third of the FMAs.
 * The sums are the same products added in another order. Alone on operands in L1 (one thread) the tile runs at
 * 105-109 GFLOP/s against the two loops' 95-98; ResNet-20's and ResNet-50's stride-2 input gradients, both ways in one
 * JVM (load 40-44), 1.02-1.08x.
 *
 * <p>{@code -Djtorch.conv.fusedPhaseTiles=false} (read at each call) goes back to the two loops, to compare.
 *
 * <p>{@link #planeTile8x32} and {@link #planeTile7x32} are the same tiles reading gradOut's NCHW planes where they lie:
 * a channel's 9 pixels are consecutive floats, channels a plane apart. That drops the padded channels-last copy of
 * gradOut (a transpose of every image before the tiles run); in one JVM, call by call against the copy (one thread,
 * load 19-24), ResNet-20's two stride-2 input gradients ran 1.17x and 1.23x faster, ResNet-50's three 1.10-1.14x.
 */
final class Stride2PhaseTilesF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private Stride2PhaseTilesF32() {}

    /**
     * Whether the tiles read gradOut's NCHW planes in place ({@link #planeTile8x32}) rather than a padded
     * channels-last copy: on unless {@code jtorch.conv.stride2InPlace} is {@code false} (read at each call).
     */
    static boolean inPlace() {
        return !"false".equals(System.getProperty("jtorch.conv.stride2InPlace"));
    }

    /**
     * Whether the tiles reading gradOut in place store through {@link #storeInterleaved}: on unless
     * {@code jtorch.conv.stride2TransposeInRegisters} is {@code false} (read at each call).
     */
    static boolean transposeInRegisters() {
        return !"false".equals(System.getProperty("jtorch.conv.stride2TransposeInRegisters"));
    }

    /** Whether the fused tiles run: on unless {@code jtorch.conv.fusedPhaseTiles} is {@code false}. */
    static boolean enabled() {
        return !"false".equals(System.getProperty("jtorch.conv.fusedPhaseTiles"));
    }

    /**
     * As {@link ConvDirectF32#phaseTile8x32}: 8 pixels ({@code sx} floats apart in the channels-last {@code x}) by 32
     * lanes, over {@code rows} window rows {@code rowStride} apart; {@code wp}'s row ki holds the first pixel's
     * {@code cout} 32-lane weights, then the second pixel's (lanes 16-31 read). Reads pixel 8 (the next tile's first,
     * or the padded zero column after the row).
     */
    static void tile8x32(float[] x, int xBase, int sx, int rowStride, int rows, int cout, float[] wp, int wBase,
                         MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        int second = cout * 32 + 16;
        for (int ki = 0; ki < rows; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                int wj = wb + j * 32;
                FloatVector wl = FloatVector.fromArray(FS, wp, wj);
                FloatVector wh = FloatVector.fromArray(FS, wp, wj + 16);
                FloatVector wn = FloatVector.fromArray(FS, wp, wj + second);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                b0 = wn.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                b1 = wn.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                b2 = wn.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                b3 = wn.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                b4 = wn.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                b5 = wn.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 7 * sx]);
                a7 = wl.fma(v, a7);
                b7 = wh.fma(v, b7);
                b6 = wn.fma(v, b6);
                v = FloatVector.broadcast(FS, x[i + 8 * sx]);
                b7 = wn.fma(v, b7);
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

    /** {@link #tile8x32} for 7 pixels, slot 7 left unwritten (reads pixel 7): a copy, as the other 7x32 tiles are. */
    static void tile7x32(float[] x, int xBase, int sx, int rowStride, int rows, int cout, float[] wp, int wBase,
                         MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS);
        int second = cout * 32 + 16;
        for (int ki = 0; ki < rows; ki++) {
            int xb = xBase + ki * rowStride;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                int wj = wb + j * 32;
                FloatVector wl = FloatVector.fromArray(FS, wp, wj);
                FloatVector wh = FloatVector.fromArray(FS, wp, wj + 16);
                FloatVector wn = FloatVector.fromArray(FS, wp, wj + second);
                int i = xb + j;
                FloatVector v = FloatVector.broadcast(FS, x[i]);
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + sx]);
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                b0 = wn.fma(v, b0);
                v = FloatVector.broadcast(FS, x[i + 2 * sx]);
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                b1 = wn.fma(v, b1);
                v = FloatVector.broadcast(FS, x[i + 3 * sx]);
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                b2 = wn.fma(v, b2);
                v = FloatVector.broadcast(FS, x[i + 4 * sx]);
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                b3 = wn.fma(v, b3);
                v = FloatVector.broadcast(FS, x[i + 5 * sx]);
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                b4 = wn.fma(v, b4);
                v = FloatVector.broadcast(FS, x[i + 6 * sx]);
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                b5 = wn.fma(v, b5);
                v = FloatVector.broadcast(FS, x[i + 7 * sx]);
                b6 = wn.fma(v, b6);
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

    /**
     * {@link #tile8x32} reading gradOut where it lies: pixel p of channel j at {@code at + j * cs + 4 * p} (bytes),
     * window rows {@code rowBytes} apart. A row's last tile ({@code edge}) takes nothing from pixel 8, which is the
     * zero padding after the row in the copy; the caller passes one window row for gradOut's last row. The tile is an
     * array, which {@link #storeInterleaved} reads.
     */
    static void planeTile8x32(MemorySegment gy, long at, long cs, long rowBytes, int rows, int cout, float[] wp, int wBase,
                              boolean edge, float[] tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        int second = cout * 32 + 16;
        for (int ki = 0; ki < rows; ki++) {
            long xb = at + ki * rowBytes;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                int wj = wb + j * 32;
                FloatVector wl = FloatVector.fromArray(FS, wp, wj);
                FloatVector wh = FloatVector.fromArray(FS, wp, wj + 16);
                FloatVector wn = FloatVector.fromArray(FS, wp, wj + second);
                long i = xb + j * cs;
                FloatVector v = FloatVector.broadcast(FS, gy.get(F32, i));
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 4));
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                b0 = wn.fma(v, b0);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 8));
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                b1 = wn.fma(v, b1);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 12));
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                b2 = wn.fma(v, b2);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 16));
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                b3 = wn.fma(v, b3);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 20));
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                b4 = wn.fma(v, b4);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 24));
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                b5 = wn.fma(v, b5);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 28));
                a7 = wl.fma(v, a7);
                b7 = wh.fma(v, b7);
                b6 = wn.fma(v, b6);
                if (!edge) b7 = wn.fma(FloatVector.broadcast(FS, gy.get(F32, i + 32)), b7);
            }
        }
        a0.intoArray(tile, 0);
        a1.intoArray(tile, 16);
        a2.intoArray(tile, 32);
        a3.intoArray(tile, 48);
        a4.intoArray(tile, 64);
        a5.intoArray(tile, 80);
        a6.intoArray(tile, 96);
        a7.intoArray(tile, 112);
        b0.intoArray(tile, 128);
        b1.intoArray(tile, 144);
        b2.intoArray(tile, 160);
        b3.intoArray(tile, 176);
        b4.intoArray(tile, 192);
        b5.intoArray(tile, 208);
        b6.intoArray(tile, 224);
        b7.intoArray(tile, 240);
    }

    /**
     * Stores a tile of {@link #planeTile8x32} (8 pixels of 16 channels' even column phase, then 8 of their odd one) as
     * 16 channels' 16 interleaved gi pixels, channel l at {@code giAt + l * giPlane} (bytes). Its rows read in the
     * order a0, b0, a1, b1, ... are, transposed in registers, those pixels in order: one transpose and the stores, where
     * {@code ConvDirectF32.storeInterleaved} transposes into an array, reads it back and permutes each row. With
     * ResNet-20's 32 gradOut channels a tile does only 768-1536 FMAs, and a profile of its 16 -> 32 stride-2 input
     * gradient put a quarter of the op in that transpose and its stores. (The transpose at the end of the tile method
     * itself, on the accumulators, was as fast but made the method too large for C1, "out of virtual registers", and C2
     * then came late or not at all; masked stores for the 7-pixel tiles, or reading the tile from a memory segment, made
     * this one too large for C1 too: the 7-pixel tiles keep the old way, and the tile is an array here.)
     */
    static void storeInterleaved(float[] tile, MemorySegment gi, long giAt, long giPlane) {
        FloatVector lo = Gemm.LO1, hi = Gemm.HI1;
        FloatVector a = FloatVector.fromArray(FS, tile, 0), b = FloatVector.fromArray(FS, tile, 128);
        FloatVector t0 = lo.selectFrom(a, b), t1 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 16);
        b = FloatVector.fromArray(FS, tile, 144);
        FloatVector t2 = lo.selectFrom(a, b), t3 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 32);
        b = FloatVector.fromArray(FS, tile, 160);
        FloatVector t4 = lo.selectFrom(a, b), t5 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 48);
        b = FloatVector.fromArray(FS, tile, 176);
        FloatVector t6 = lo.selectFrom(a, b), t7 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 64);
        b = FloatVector.fromArray(FS, tile, 192);
        FloatVector t8 = lo.selectFrom(a, b), t9 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 80);
        b = FloatVector.fromArray(FS, tile, 208);
        FloatVector t10 = lo.selectFrom(a, b), t11 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 96);
        b = FloatVector.fromArray(FS, tile, 224);
        FloatVector t12 = lo.selectFrom(a, b), t13 = hi.selectFrom(a, b);
        a = FloatVector.fromArray(FS, tile, 112);
        b = FloatVector.fromArray(FS, tile, 240);
        FloatVector t14 = lo.selectFrom(a, b), t15 = hi.selectFrom(a, b);
        lo = Gemm.LO2;
        hi = Gemm.HI2;
        FloatVector v0 = lo.selectFrom(t0, t2), v2 = hi.selectFrom(t0, t2);
        FloatVector v1 = lo.selectFrom(t1, t3), v3 = hi.selectFrom(t1, t3);
        FloatVector v4 = lo.selectFrom(t4, t6), v6 = hi.selectFrom(t4, t6);
        FloatVector v5 = lo.selectFrom(t5, t7), v7 = hi.selectFrom(t5, t7);
        FloatVector v8 = lo.selectFrom(t8, t10), v10 = hi.selectFrom(t8, t10);
        FloatVector v9 = lo.selectFrom(t9, t11), v11 = hi.selectFrom(t9, t11);
        FloatVector v12 = lo.selectFrom(t12, t14), v14 = hi.selectFrom(t12, t14);
        FloatVector v13 = lo.selectFrom(t13, t15), v15 = hi.selectFrom(t13, t15);
        lo = Gemm.LO4;
        hi = Gemm.HI4;
        t0 = lo.selectFrom(v0, v4);
        t4 = hi.selectFrom(v0, v4);
        t1 = lo.selectFrom(v1, v5);
        t5 = hi.selectFrom(v1, v5);
        t2 = lo.selectFrom(v2, v6);
        t6 = hi.selectFrom(v2, v6);
        t3 = lo.selectFrom(v3, v7);
        t7 = hi.selectFrom(v3, v7);
        t8 = lo.selectFrom(v8, v12);
        t12 = hi.selectFrom(v8, v12);
        t9 = lo.selectFrom(v9, v13);
        t13 = hi.selectFrom(v9, v13);
        t10 = lo.selectFrom(v10, v14);
        t14 = hi.selectFrom(v10, v14);
        t11 = lo.selectFrom(v11, v15);
        t15 = hi.selectFrom(v11, v15);
        lo = Gemm.LO8;
        hi = Gemm.HI8;
        lo.selectFrom(t0, t8).intoMemorySegment(gi, giAt, NO);
        hi.selectFrom(t0, t8).intoMemorySegment(gi, giAt + 8 * giPlane, NO);
        lo.selectFrom(t1, t9).intoMemorySegment(gi, giAt + giPlane, NO);
        hi.selectFrom(t1, t9).intoMemorySegment(gi, giAt + 9 * giPlane, NO);
        lo.selectFrom(t2, t10).intoMemorySegment(gi, giAt + 2 * giPlane, NO);
        hi.selectFrom(t2, t10).intoMemorySegment(gi, giAt + 10 * giPlane, NO);
        lo.selectFrom(t3, t11).intoMemorySegment(gi, giAt + 3 * giPlane, NO);
        hi.selectFrom(t3, t11).intoMemorySegment(gi, giAt + 11 * giPlane, NO);
        lo.selectFrom(t4, t12).intoMemorySegment(gi, giAt + 4 * giPlane, NO);
        hi.selectFrom(t4, t12).intoMemorySegment(gi, giAt + 12 * giPlane, NO);
        lo.selectFrom(t5, t13).intoMemorySegment(gi, giAt + 5 * giPlane, NO);
        hi.selectFrom(t5, t13).intoMemorySegment(gi, giAt + 13 * giPlane, NO);
        lo.selectFrom(t6, t14).intoMemorySegment(gi, giAt + 6 * giPlane, NO);
        hi.selectFrom(t6, t14).intoMemorySegment(gi, giAt + 14 * giPlane, NO);
        lo.selectFrom(t7, t15).intoMemorySegment(gi, giAt + 7 * giPlane, NO);
        hi.selectFrom(t7, t15).intoMemorySegment(gi, giAt + 15 * giPlane, NO);
    }

    /** {@link #planeTile8x32} for 7 pixels ({@link #tile7x32}'s slots); {@code edge} skips pixel 7. */
    static void planeTile7x32(MemorySegment gy, long at, long cs, long rowBytes, int rows, int cout, float[] wp, int wBase,
                              boolean edge, MemorySegment tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS);
        int second = cout * 32 + 16;
        for (int ki = 0; ki < rows; ki++) {
            long xb = at + ki * rowBytes;
            int wb = wBase + ki * 2 * cout * 32;
            for (int j = 0; j < cout; j++) {
                int wj = wb + j * 32;
                FloatVector wl = FloatVector.fromArray(FS, wp, wj);
                FloatVector wh = FloatVector.fromArray(FS, wp, wj + 16);
                FloatVector wn = FloatVector.fromArray(FS, wp, wj + second);
                long i = xb + j * cs;
                FloatVector v = FloatVector.broadcast(FS, gy.get(F32, i));
                a0 = wl.fma(v, a0);
                b0 = wh.fma(v, b0);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 4));
                a1 = wl.fma(v, a1);
                b1 = wh.fma(v, b1);
                b0 = wn.fma(v, b0);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 8));
                a2 = wl.fma(v, a2);
                b2 = wh.fma(v, b2);
                b1 = wn.fma(v, b1);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 12));
                a3 = wl.fma(v, a3);
                b3 = wh.fma(v, b3);
                b2 = wn.fma(v, b2);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 16));
                a4 = wl.fma(v, a4);
                b4 = wh.fma(v, b4);
                b3 = wn.fma(v, b3);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 20));
                a5 = wl.fma(v, a5);
                b5 = wh.fma(v, b5);
                b4 = wn.fma(v, b4);
                v = FloatVector.broadcast(FS, gy.get(F32, i + 24));
                a6 = wl.fma(v, a6);
                b6 = wh.fma(v, b6);
                b5 = wn.fma(v, b5);
                if (!edge) b6 = wn.fma(FloatVector.broadcast(FS, gy.get(F32, i + 28)), b6);
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
}
