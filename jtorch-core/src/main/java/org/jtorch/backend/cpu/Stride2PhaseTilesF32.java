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
     * zero padding after the row in the copy; the caller passes one window row for gradOut's last row.
     */
    static void planeTile8x32(MemorySegment gy, long at, long cs, long rowBytes, int rows, int cout, float[] wp, int wBase,
                              boolean edge, MemorySegment tile) {
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
