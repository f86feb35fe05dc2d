package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * A direct float32 convolution whose register tile is 8 output pixels in raster order (so across output rows) by 32
 * output channels. {@link ConvDirectF32}'s tiles take 8 or 16 pixels of one output row, which rows of 4 pixels (DCGAN's
 * 4x4 stride-2 layer into 4x4, 128 -> 256 channels) do not fill; that layer went to {@link ConvGemmF32}, whose column
 * matrix (16 floats per pixel and tap row) cost as much as a third of its time. Here each image is copied once,
 * channels-last with its zero border ({@link ConvF32#padChannelsLast}), and pixel p of a tile reads its window from
 * its own offset: kernel row ki of the window is {@code kw * cin} consecutive floats from
 * {@code base[p] + ki * dh * wpad * cin}, against the weights blocked as {@code [cout / 32][kh][kw * cin][32]}.
 * Since the 8 pixels are consecutive in raster order, they are 8 consecutive floats of each output channel's plane.
 */
final class ConvRasterTileF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int P = 8, OB = 32;

    private ConvRasterTileF32() {}

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] image = new float[0];
        final float[] block = new float[16 * 16];
        final float[] tile = new float[P * OB];
        final int[] base = new int[P];
        float[] weights = new float[0];
        float[] source = new float[0];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /**
     * Whether this path serves {@code g}: 16-lane vectors, one group, no column dilation (window rows contiguous), output
     * channels in whole 32-channel blocks, small output images of whole 8-pixel tiles, at most 16 pixels (measured:
     * DCGAN's 8x8 -> 4x4 layer; larger images are {@link ConvDirectF32}'s row tiles'), and kernels larger than 1x1
     * (strided 1x1 convolutions stay on the batch GEMM, not measured here).
     */
    static boolean handles(Geometry g) {
        long l = (long) g.oh() * g.ow();
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.dw() == 1 && g.cout() % OB == 0
                && l % P == 0 && l > 0 && l <= 16 && g.kh() * g.kw() > 1;
    }

    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw();
        int kwc = kw * cin, k = kh * kwc;
        float[] wp = blockedWeights(w, wOff, g);
        float[] bv = new float[cout];
        if (bias != null) MemorySegment.copy(bias, F32, bOff * Float.BYTES, bv, 0, cout);
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g);
        int l = g.oh() * g.ow();
        int rowStride = g.dh() * wpad * cin;
        int[] pixBase = new int[l];
        for (int p = 0; p < l; p++) pixBase[p] = ((p / g.ow()) * g.sh() * wpad + (p % g.ow()) * g.sw()) * cin;
        long plane = (long) l * Float.BYTES;
        Parallel.forRange(g.n(), 1, (n0, n1) -> {
            Work wk = WORK.get();
            wk.image = ConvF32.grow(wk.image, hp * wpad * cin);
            for (long n = n0; n < n1; n++) {
                ConvF32.padChannelsLast(x, xOff + n * cin * g.h() * g.w(), cin, g, hp, wpad, wk.image, 0, wk.block);
                long outImage = (oOff + n * cout * (long) l) * Float.BYTES;
                for (int blk = 0; blk < cout / OB; blk++) {
                    for (int p0 = 0; p0 < l; p0 += P) {
                        System.arraycopy(pixBase, p0, wk.base, 0, P);
                        tile(wk.image, wk.base, rowStride, kh, kwc, wp, blk * k * OB, wk.tile);
                        float[] t = wk.tile;
                        for (int c = 0; c < OB; c++) {
                            float b = bv[blk * OB + c];
                            long at = outImage + (blk * OB + c) * plane + (long) p0 * Float.BYTES;
                            for (int p = 0; p < P; p++) out.set(F32, at + (long) p * Float.BYTES, t[p * OB + c] + b);
                        }
                    }
                }
            }
        });
    }

    /**
     * Whether {@link #stride2InputGrad} serves {@code g}: DCGAN's layer, a 4x4 kernel at stride 2 with padding 1 and no
     * dilation or groups, an input exactly twice the output (no output padding), input channels in whole 32-channel
     * blocks, and output images of whole 8-pixel tiles. At 8x8 (DCGAN's 64 -> 128 layer) it measured 12.1 ms against
     * 14.8-15.6 for {@link StridedInputGradF32}'s phases on the row tiles (which pad gradOut once per phase and
     * interleave phase planes in a second pass), one thread, batch 64.
     */
    static boolean handlesStride2InputGrad(Geometry g) {
        long l = (long) g.oh() * g.ow();
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.kh() == 4 && g.kw() == 4 && g.sh() == 2
                && g.sw() == 2 && g.ph() == 1 && g.pw() == 1 && g.dh() == 1 && g.dw() == 1 && g.h() == 2 * g.oh()
                && g.w() == 2 * g.ow() && g.cin() % OB == 0 && l % P == 0 && l > 0;
    }

    /**
     * The input gradient of a 4x4, stride-2, padding-1 convolution (DCGAN's, and its transposed convolution's forward),
     * one output phase at a time: input pixel {@code (2a + py, 2b + px)} receives from gradOut pixels
     * {@code (a - 1 + py + dy, b - 1 + px + dx)}, dy and dx in {0, 1}, through kernel tap {@code (3 - py - 2dy, 3 - px - 2dx)}.
     * So each phase is a 2x2 stride-1 convolution of gradOut padded by one on every side, window corner
     * {@code (a + py, b + px)}; all four read one channels-last copy of each gradOut image, and each tile's pixels are
     * stored straight to their interleaved places in the gradient (no phase planes).
     */
    static void stride2InputGrad(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), oh = g.oh(), ow = g.ow(), l = oh * ow;
        int kwc = 2 * cout, k = 2 * kwc;
        int hp = oh + 2, wpad = ow + 2;
        // gradOut as the input of a padding-1 convolution, for the channels-last copy.
        Geometry padded = new Geometry(g.n(), cout, oh, ow, cin, 2, 2, 1, 1, 1, 1, 1, 1, 1, oh + 1, ow + 1);
        float[] wp = phaseWeights(w, wOff, g);
        int[] pixBase = new int[4 * l], pixDst = new int[4 * l];
        for (int phase = 0; phase < 4; phase++) {
            int py = phase / 2, px = phase % 2;
            for (int p = 0; p < l; p++) {
                int a = p / ow, b = p % ow;
                pixBase[phase * l + p] = ((a + py) * wpad + b + px) * cout;
                pixDst[phase * l + p] = (2 * a + py) * g.w() + 2 * b + px;
            }
        }
        long plane = (long) g.h() * g.w();
        Parallel.forRange(g.n(), 1, (n0, n1) -> {
            Work wk = WORK.get();
            wk.image = ConvF32.grow(wk.image, hp * wpad * cout);
            for (long n = n0; n < n1; n++) {
                ConvF32.padChannelsLast(gy, gyOff + n * cout * (long) l, cout, padded, hp, wpad, wk.image, 0, wk.block);
                long giImage = giOff + n * cin * plane;
                for (int phase = 0; phase < 4; phase++) {
                    for (int blk = 0; blk < cin / OB; blk++) {
                        for (int p0 = 0; p0 < l; p0 += P) {
                            System.arraycopy(pixBase, phase * l + p0, wk.base, 0, P);
                            tile(wk.image, wk.base, wpad * cout, 2, kwc, wp, (phase * (cin / OB) + blk) * k * OB, wk.tile);
                            float[] t = wk.tile;
                            for (int c = 0; c < OB; c++) {
                                long at = giImage + (blk * OB + c) * plane;
                                for (int p = 0; p < P; p++) gi.set(F32, (at + pixDst[phase * l + p0 + p]) * Float.BYTES, t[p * OB + c]);
                            }
                        }
                    }
                }
            }
        });
    }

    /**
     * The four phases' blocked weights, {@code wp[phase][blk][dy][dx * cout + oc][lane]} = {@code w[oc][blk * 32 + lane][ki][kj]}
     * for the tap {@code (ki, kj) = (3 - py - 2dy, 3 - px - 2dx)} of phase {@code (py, px)}: 16 input channels (16
     * floats apart in w) gathered at a time.
     */
    private static float[] phaseWeights(MemorySegment w, long wOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), k = 4 * cout, kwc = 2 * cout;
        Work wk = WORK.get();
        float[] wh = source(wk, w, wOff, cout * cin * 16);
        float[] wp = wk.weights = ConvF32.grow(wk.weights, 4 * cin * k);
        int[] lanes = laneOffsets(16);
        for (int ki = 0; ki < 4; ki++) {
            int py = (ki + 1) % 2, dy = (3 - py - ki) / 2;
            for (int kj = 0; kj < 4; kj++) {
                int px = (kj + 1) % 2, dx = (3 - px - kj) / 2;
                int base = (py * 2 + px) * cin * k + (dy * kwc + dx * cout) * OB;
                for (int ic = 0; ic < cin; ic += 16) {
                    int dst = base + (ic / OB) * k * OB + ic % OB;
                    for (int oc = 0; oc < cout; oc++) {
                        FloatVector.fromArray(FS, wh, (oc * cin + ic) * 16 + ki * 4 + kj, lanes, 0).intoArray(wp, dst + oc * OB);
                    }
                }
            }
        }
        return wp;
    }

    /**
     * {@code wp[blk][ki][kj * cin + ic][lane]} = {@code w[blk * 32 + lane][ic][ki][kj]}, in the calling thread's buffer: 16
     * output channels (a filter apart in w) gathered at a time. Element by element this took 1.1 ms of the 12 ms forward of
     * DCGAN's 128 -> 256 layer.
     */
    private static float[] blockedWeights(MemorySegment w, long wOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw(), kk = kh * kw, kwc = kw * cin, k = kh * kwc;
        Work wk = WORK.get();
        float[] wp = wk.weights = ConvF32.grow(wk.weights, cout * k);
        int[] lanes = laneOffsets(cin * kk);
        // 16 output channels at a time over the threads, each thread from its own copy of its rows: by the calling
        // thread alone this was a serial phase of the two-thread forward (ResNet-18's 128 -> 256 stride-2 layer).
        Parallel.forRange(cout / 16, 1, (b0, b1) -> {
            int first = (int) b0 * 16, rows = (int) (b1 - b0) * 16;
            float[] wh = source(WORK.get(), w, wOff + (long) first * cin * kk, rows * cin * kk);
            for (int oc = first; oc < first + rows; oc += 16) {
                int dst = (oc / OB) * k * OB + oc % OB;
                for (int ki = 0; ki < kh; ki++) {
                    for (int kj = 0; kj < kw; kj++) {
                        int to = dst + (ki * kwc + kj * cin) * OB, from = (oc - first) * cin * kk + ki * kw + kj;
                        for (int ic = 0; ic < cin; ic++) FloatVector.fromArray(FS, wh, from + ic * kk, lanes, 0).intoArray(wp, to + ic * OB);
                    }
                }
            }
        });
        return wp;
    }

    /** {@code size} floats of the weight from {@code wOff} on, copied to {@code wk}'s heap buffer. */
    private static float[] source(Work wk, MemorySegment w, long wOff, int size) {
        float[] wh = wk.source = ConvF32.grow(wk.source, size);
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, size);
        return wh;
    }

    /** {@code {0, stride, 2 * stride, ...}}: 16 lanes' offsets. */
    private static int[] laneOffsets(int stride) {
        int[] lanes = new int[16];
        for (int l = 0; l < 16; l++) lanes[l] = l * stride;
        return lanes;
    }

    /**
     * 8 pixels (window corners at {@code base[p]}) by 32 channels: {@code tile[p * 32 + lane]}. Kernel row ki of each
     * window is {@code kwc} floats from {@code base[p] + ki * rowStride}.
     */
    private static void tile(float[] x, int[] base, int rowStride, int kh, int kwc, float[] wp, int wBase, float[] tile) {
        FloatVector a0 = FloatVector.zero(FS), a1 = FloatVector.zero(FS), a2 = FloatVector.zero(FS), a3 = FloatVector.zero(FS);
        FloatVector a4 = FloatVector.zero(FS), a5 = FloatVector.zero(FS), a6 = FloatVector.zero(FS), a7 = FloatVector.zero(FS);
        FloatVector b0 = FloatVector.zero(FS), b1 = FloatVector.zero(FS), b2 = FloatVector.zero(FS), b3 = FloatVector.zero(FS);
        FloatVector b4 = FloatVector.zero(FS), b5 = FloatVector.zero(FS), b6 = FloatVector.zero(FS), b7 = FloatVector.zero(FS);
        for (int ki = 0; ki < kh; ki++) {
            int r = ki * rowStride;
            int x0 = base[0] + r, x1 = base[1] + r, x2 = base[2] + r, x3 = base[3] + r;
            int x4 = base[4] + r, x5 = base[5] + r, x6 = base[6] + r, x7 = base[7] + r;
            int wb = wBase + ki * kwc * OB;
            for (int j = 0; j < kwc; j++) {
                FloatVector wl = FloatVector.fromArray(FS, wp, wb + j * OB);
                FloatVector wh = FloatVector.fromArray(FS, wp, wb + j * OB + 16);
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
        a0.intoArray(tile, 0);
        b0.intoArray(tile, 16);
        a1.intoArray(tile, 32);
        b1.intoArray(tile, 48);
        a2.intoArray(tile, 64);
        b2.intoArray(tile, 80);
        a3.intoArray(tile, 96);
        b3.intoArray(tile, 112);
        a4.intoArray(tile, 128);
        b4.intoArray(tile, 144);
        a5.intoArray(tile, 160);
        b5.intoArray(tile, 176);
        a6.intoArray(tile, 192);
        b6.intoArray(tile, 208);
        a7.intoArray(tile, 224);
        b7.intoArray(tile, 240);
    }
}
