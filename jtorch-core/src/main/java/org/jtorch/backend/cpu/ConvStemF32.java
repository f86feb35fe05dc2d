package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The forward of few-input-channel convolutions with large kernels and output rows of whole 32-pixel strips (ResNet-18's
 * 7x7 stride-2 stem at 64 px: 3 channels, 147 taps per output, 32 px rows), with pixels in the lanes and nothing packed
 * per strip. Each padded image row is split once into its {@code sw} column phases (stride 2: even and odd columns), so
 * that the 32 outputs of a strip read tap {@code (c, ki, kj)} from 32 consecutive floats of phase {@code kj % sw} at
 * {@code kj / sw}. The 8x32 register tile is {@link Gemm#kernel}'s (8 output channels broadcast from the packed weights,
 * two pixel vectors, 16 FMAs a tap) with its B rows addressed through a tap-offset table, stored straight into the NCHW
 * output rows.
 *
 * <p>Before it the stem ran on {@link ConvF32}'s implicit GEMM, which gathers every strip's 147 x 32 column panel with
 * permutes (stride 2) before the same tile: the tile alone runs at about 90-100% of the FMA peak with its operands in
 * L1, the whole convolution at 66-70% (one thread). {@code -Djtorch.conv.stemTiles=false} leaves these shapes to it.
 */
final class ConvStemF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.stemTiles"));
    private static final int MR = 8;
    private static final int NR = 32;
    /** Input channels at most, and taps per channel at least: stems, not DCGAN's 4x4 or the 3x3 layers. */
    private static final int MAX_CIN = 4;
    private static final int MIN_TAPS = 25;
    /** Lane l picks lane 2l (even) or 2l + 1 (odd) of the 32 floats a:b, with {@code selectFrom(a, b)}. */
    private static final FloatVector EVEN = lanes(0), ODD = lanes(1);

    private ConvStemF32() {}

    private static FloatVector lanes(int phase) {
        float[] idx = new float[16];
        for (int l = 0; l < 16; l++) idx[l] = 2 * l + phase;
        return FloatVector.fromArray(FS, idx, 0);
    }

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        /** One image's padded rows split into column phases: {@code [channel][padded row][phase][pitch]}. */
        float[] phases = new float[0];
        /** One padded input row, before its split. */
        float[] row = new float[0];
        float[] weights = new float[0];
        float[] bias = new float[0];
        int[] offs = new int[0];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    static boolean handles(Geometry g) {
        return ENABLED && FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.dw() == 1 && g.cin() <= MAX_CIN
                && g.kh() * g.kw() >= MIN_TAPS && (g.sw() == 1 || g.sw() == 2) && g.cout() % MR == 0 && g.ow() % NR == 0
                && g.oh() > 0 && g.n() > 0 && (long) g.cin() * ConvF32.paddedHeight(g) * g.sw() * pitch(g) < Integer.MAX_VALUE / 2;
    }

    /** Floats per phase row: a strip's last window reaches {@code ow + (kw - 1) / sw} columns into its phase; whole vectors. */
    private static int pitch(Geometry g) {
        return (g.ow() + (g.kw() - 1) / g.sw() + 15) / 16 * 16;
    }

    /** {@code out = conv(x, w) + bias} for contiguous float32 tensors given as segments and element offsets ({@code bias} may be null). */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw(), sw = g.sw();
        int k = g.kg();
        int hp = ConvF32.paddedHeight(g), pitch = pitch(g);
        // Weights as Gemm's A strips: wp[block][tap][row] = w[block * 8 + row][tap], taps in w's (c, ki, kj) order.
        Work caller = WORK.get();
        float[] wp = caller.weights = ConvF32.grow(caller.weights, cout * k);
        for (int oc = 0; oc < cout; oc++) {
            int dst = oc / MR * k * MR + oc % MR;
            for (int t = 0; t < k; t++) wp[dst + t * MR] = w.get(F32, (wOff + (long) oc * k + t) * Float.BYTES);
        }
        float[] bv = caller.bias = ConvF32.grow(caller.bias, cout);
        for (int oc = 0; oc < cout; oc++) bv[oc] = bias == null ? 0f : bias.get(F32, (bOff + oc) * Float.BYTES);
        // Tap (c, ki, kj) of output row 0's first pixel in the phase buffer; a row oy adds oy * sh rows.
        int[] offs = caller.offs = ConvF32.growInts(caller.offs, k);
        for (int c = 0; c < cin; c++) {
            for (int ki = 0; ki < kh; ki++) {
                for (int kj = 0; kj < kw; kj++) {
                    offs[(c * kh + ki) * kw + kj] = ((c * hp + ki * g.dh()) * sw + kj % sw) * pitch + kj / sw;
                }
            }
        }
        long pixels = (long) g.oh() * g.ow();
        int oh = g.oh();
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        int split = g.n() >= 2L * threads ? 1 : Math.min(oh, 2 * threads);
        Parallel.forRange((long) g.n() * split, 1, (t0, t1) -> {
            Work wk = WORK.get();
            long split0 = -1;
            for (long t = t0; t < t1; t++) {
                long n = t / split;
                int part = (int) (t % split);
                if (split0 != n) {
                    splitPhases(x, xOff + n * cin * g.h() * g.w(), g, hp, pitch, wk);
                    split0 = n;
                }
                int y0 = part * oh / split, y1 = (part + 1) * oh / split;
                rows(wk.phases, wp, bv, offs, k, g, pitch, y0, y1, out, oOff + n * cout * pixels, pixels);
                if (epilogue != null) epilogue.block(n, n + 1, 0, cout, (long) y0 * g.ow(), (long) y1 * g.ow());
            }
        });
    }

    /** Splits one image's zero-padded rows into {@code wk.phases} ({@code [c][row][phase][pitch]}, zeros past the image). */
    private static void splitPhases(MemorySegment x, long xOff, Geometry g, int hp, int pitch, Work wk) {
        int cin = g.cin(), h = g.h(), w = g.w(), ph = g.ph(), pw = g.pw(), sw = g.sw();
        int rowLength = sw * pitch;
        float[] p = wk.phases = ConvF32.grow(wk.phases, cin * hp * rowLength);
        float[] row = wk.row = ConvF32.grow(wk.row, rowLength + 32);
        for (int c = 0; c < cin; c++) {
            for (int r = 0; r < hp; r++) {
                int dst = (c * hp + r) * rowLength;
                int y = r - ph;
                if (y < 0 || y >= h) {
                    java.util.Arrays.fill(p, dst, dst + rowLength, 0f);
                    continue;
                }
                // The padded row: left padding, the image row, zeros up to every phase's pitch.
                java.util.Arrays.fill(row, 0, rowLength + 32, 0f);
                int n = Math.min(w, rowLength - pw);
                if (n > 0) MemorySegment.copy(x, F32, (xOff + ((long) c * h + y) * w) * Float.BYTES, row, pw, n);
                if (sw == 1) {
                    System.arraycopy(row, 0, p, dst, pitch);
                } else {
                    for (int i = 0; i < pitch; i += 16) {
                        FloatVector a = FloatVector.fromArray(FS, row, 2 * i);
                        FloatVector b = FloatVector.fromArray(FS, row, 2 * i + 16);
                        EVEN.selectFrom(a, b).intoArray(p, dst + i);
                        ODD.selectFrom(a, b).intoArray(p, dst + pitch + i);
                    }
                }
            }
        }
    }

    /** Output rows {@code [y0, y1)} of the image in {@code phases}: every 32-pixel strip, every 8-channel block. */
    private static void rows(float[] phases, float[] wp, float[] bv, int[] offs, int k, Geometry g, int pitch, int y0, int y1,
                             MemorySegment out, long outImage, long pixels) {
        int rowStep = g.sh() * g.sw() * pitch;
        long planeBytes = pixels * Float.BYTES;
        for (int oy = y0; oy < y1; oy++) {
            for (int ox = 0; ox < g.ow(); ox += NR) {
                int base = oy * rowStep + ox;
                long at = (outImage + (long) oy * g.ow() + ox) * Float.BYTES;
                for (int blk = 0; blk < g.cout() / MR; blk++) {
                    tile(k, wp, blk * k * MR, phases, offs, base, bv, blk * MR, out, at + blk * MR * planeBytes, planeBytes);
                }
            }
        }
    }

    /**
     * 8 output channels x 32 pixels: the sum over taps {@code t < k} of {@code wp[aBase + t * 8 + r]} times the 32 floats
     * at {@code b[offs[t] + base]}, plus {@code bias[c0 + r]}, stored as 8 rows {@code planeBytes} apart from {@code at}.
     * As {@link Gemm#kernel}, straight-line so that C2 keeps the 16 accumulators in registers.
     */
    static void tile(int k, float[] wp, int aBase, float[] b, int[] offs, int base, float[] bias, int c0, MemorySegment out,
                     long at, long planeBytes) {
        FloatVector c00 = FloatVector.broadcast(FS, bias[c0]), c01 = c00;
        FloatVector c10 = FloatVector.broadcast(FS, bias[c0 + 1]), c11 = c10;
        FloatVector c20 = FloatVector.broadcast(FS, bias[c0 + 2]), c21 = c20;
        FloatVector c30 = FloatVector.broadcast(FS, bias[c0 + 3]), c31 = c30;
        FloatVector c40 = FloatVector.broadcast(FS, bias[c0 + 4]), c41 = c40;
        FloatVector c50 = FloatVector.broadcast(FS, bias[c0 + 5]), c51 = c50;
        FloatVector c60 = FloatVector.broadcast(FS, bias[c0 + 6]), c61 = c60;
        FloatVector c70 = FloatVector.broadcast(FS, bias[c0 + 7]), c71 = c70;
        for (int t = 0; t < k; t++) {
            int bi = offs[t] + base;
            int ai = aBase + t * MR;
            FloatVector b0 = FloatVector.fromArray(FS, b, bi);
            FloatVector b1 = FloatVector.fromArray(FS, b, bi + 16);
            FloatVector av = FloatVector.broadcast(FS, wp[ai]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(FS, wp[ai + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(FS, wp[ai + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(FS, wp[ai + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(FS, wp[ai + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(FS, wp[ai + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            av = FloatVector.broadcast(FS, wp[ai + 6]);
            c60 = b0.fma(av, c60);
            c61 = b1.fma(av, c61);
            av = FloatVector.broadcast(FS, wp[ai + 7]);
            c70 = b0.fma(av, c70);
            c71 = b1.fma(av, c71);
        }
        c00.intoMemorySegment(out, at, NO);
        c01.intoMemorySegment(out, at + 64, NO);
        c10.intoMemorySegment(out, at + planeBytes, NO);
        c11.intoMemorySegment(out, at + planeBytes + 64, NO);
        c20.intoMemorySegment(out, at + 2 * planeBytes, NO);
        c21.intoMemorySegment(out, at + 2 * planeBytes + 64, NO);
        c30.intoMemorySegment(out, at + 3 * planeBytes, NO);
        c31.intoMemorySegment(out, at + 3 * planeBytes + 64, NO);
        c40.intoMemorySegment(out, at + 4 * planeBytes, NO);
        c41.intoMemorySegment(out, at + 4 * planeBytes + 64, NO);
        c50.intoMemorySegment(out, at + 5 * planeBytes, NO);
        c51.intoMemorySegment(out, at + 5 * planeBytes + 64, NO);
        c60.intoMemorySegment(out, at + 6 * planeBytes, NO);
        c61.intoMemorySegment(out, at + 6 * planeBytes + 64, NO);
        c70.intoMemorySegment(out, at + 7 * planeBytes, NO);
        c71.intoMemorySegment(out, at + 7 * planeBytes + 64, NO);
    }
}
