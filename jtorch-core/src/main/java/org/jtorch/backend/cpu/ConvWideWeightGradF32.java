package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The float32 weight gradient of DCGAN's 4x4 stride-2 convolution from 64 to 128 channels (16 -> 8 pixels, batch 64)
 * with a 24-accumulator register tile: 6 output channels x 64 input channels (4 vectors) of one tap, summed over a
 * group of images' output pixels, per pixel 4 vector loads of the input and 6 broadcasts of gy for 24 fused
 * multiply-adds. {@link ConvDirectF32}'s weight gradient (4 channels x 96 taps) first transposes gy and gathers each
 * pass's window rows; here each image is copied once channels-last with its zero border
 * ({@link ConvF32#padChannelsLast}), so a tap's input for 64 channels is one run of 64 floats read in place at any
 * stride (a strided weight gradient has no zero taps, so no phase split is needed), and gy is read channel-major as it
 * is, a channel's pixels one broadcast each.
 *
 * <p>Each chunk of images adds into its own {@code [cout][tap][cin]} sums; the chunks' sums are added in chunk order,
 * so the result does not depend on the thread count.
 */
final class ConvWideWeightGradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Output channels of a tile, and input channels of its 4 vectors. */
    private static final int P = 6, OB = 64;
    /** Pixels the tiles sweep between loading and storing their sums (several images' when images are small). */
    private static final int GROUP_PIXELS = 128;
    /** Switch: {@code -Djtorch.conv.wideWeightGrad=false} leaves these shapes to the paths before. */
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.wideWeightGrad"));

    private ConvWideWeightGradF32() {}

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] images = new float[0];
        float[] gy = new float[0];
        int[] base = new int[0];
        final float[] block = new float[16 * 16];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);
    /** The summed chunks as the transpose reads them, native ({@link CpuConvolutionKernels.Scratch} says why). */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> SUMS = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);

    /**
     * Whether the selection gives {@code g} to this path: {@link #computes} it, 4x4 stride-2 kernels and outputs of at
     * least 64 pixels (DCGAN's 64 -> 128 layer B, 16 -> 8 pixels, and the generator's 128 -> 64 transposed layer, whose
     * weight gradient is B's). Not the 128 -> 256 layer at 8 -> 4 pixels: there the direct weight gradient was level or
     * ahead (one thread, batch 64, load 20-40: 11.2-12.7 ms against 11.8-14.4 on these tiles).
     */
    static boolean handles(Geometry g) {
        return ENABLED && computes(g) && g.kh() == 4 && g.kw() == 4 && g.sh() == 2 && g.sw() == 2 && g.oh() * g.ow() >= 64;
    }

    /**
     * Whether the kernel computes {@code g} at all (any kernel size, stride, padding and dilation): 16-lane vectors, one
     * group, input and output channels in whole 64-channel blocks.
     */
    static boolean computes(Geometry g) {
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.cout() % OB == 0 && g.cin() % OB == 0
                && g.oh() > 0 && g.ow() > 0 && g.n() > 0;
    }

    /** Offsets (floats, channels-last) of each tap's window element from a window's corner. */
    private static int[] tapOffsets(Geometry g, int wpad) {
        int[] r = new int[g.kh() * g.kw()];
        for (int ky = 0; ky < g.kh(); ky++) {
            for (int kx = 0; kx < g.kw(); kx++) r[ky * g.kw() + kx] = (ky * g.dh() * wpad + kx * g.dw()) * g.cin();
        }
        return r;
    }

    /** {@code gw = d(sum(gy * conv(x, w))) / dw}, overwriting {@code gw}. */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kk = g.kh() * g.kw();
        int hp = ConvF32.paddedHeight(g), wpad = ConvF32.paddedWidth(g);
        int image = hp * wpad * cin, l = g.oh() * g.ow();
        int[] pixOff = ConvF32.windowOffsets(g, wpad, cin);
        int[] tapOff = tapOffsets(g, wpad);
        int chunks = (int) Math.max(1, Math.min(g.n(), Parallel.inParallelRegion() ? 1 : Parallel.numThreads()));
        // Enough images that a tile's sweep is long against loading and storing its 24 sums.
        int group = Math.max(1, Math.min(8, Math.ceilDiv(GROUP_PIXELS, l)));
        float[][] partial = new float[chunks][];
        Parallel.forRange(chunks, 1, (k0, k1) -> {
            for (long k = k0; k < k1; k++) {
                Work wk = WORK.get();
                wk.images = ConvF32.grow(wk.images, group * image);
                wk.base = ConvF32.growInts(wk.base, group * l);
                wk.gy = ConvF32.grow(wk.gy, cout * group * l);
                int[] base = wk.base;
                float[] gs = wk.gy;
                // [cout][tap][cin], the column order sumPartials takes.
                float[] acc = new float[cout * kk * cin];
                long n0 = k * g.n() / chunks, n1 = (k + 1) * g.n() / chunks;
                for (long n = n0; n < n1; n += group) {
                    int count = (int) Math.min(group, n1 - n);
                    int total = count * l;
                    for (int i = 0; i < count; i++) {
                        ConvF32.padChannelsLast(x, xOff + (n + i) * cin * g.h() * g.w(), cin, g, hp, wpad, wk.images, i * image, wk.block);
                        for (int p = 0; p < l; p++) base[i * l + p] = i * image + pixOff[p];
                        // gy's channel rows, the group's images one after another: gs[co][i * l + p].
                        for (int co = 0; co < cout; co++) {
                            MemorySegment.copy(gy, F32, (gyOff + ((n + i) * cout + co) * l) * Float.BYTES, gs, co * total + i * l, l);
                        }
                    }
                    for (int co0 = 0; co0 < cout; co0 += P) {
                        // The last tile's spare rows repeat the last channel (see weightTile).
                        int rows = Math.min(P, cout - co0);
                        for (int tap = 0; tap < kk; tap++) {
                            for (int c0 = 0; c0 < cin; c0 += OB) {
                                weightTile(wk.images, base, total, tapOff[tap] + c0, gs, co0, rows, acc, (co0 * kk + tap) * cin + c0, kk * cin);
                            }
                        }
                    }
                }
                partial[(int) k] = acc;
            }
        });
        storeWeightGrad(partial, cout, cin, kk, gw, gwOff);
    }

    /**
     * {@code gw[co][ci][tap]} = the chunks' {@code [co][tap][ci]} sums added in chunk order. With 16 taps, each
     * (output channel, 16 input channels) block is one 16x16 transpose ({@link Gemm#transposeBlock16}); other tap
     * counts go through {@link ConvF32#sumPartials}.
     */
    private static void storeWeightGrad(float[][] partial, int cout, int cin, int kk, MemorySegment gw, long gwOff) {
        if (kk != 16 || cin % 16 != 0) {
            ConvF32.sumPartials(partial, cout, cin, kk, gw, gwOff);
            return;
        }
        float[] sum = partial[0];
        for (int c = 1; c < partial.length; c++) {
            float[] p = partial[c];
            for (int i = 0; i < sum.length; i += 16) FloatVector.fromArray(FS, sum, i).add(FloatVector.fromArray(FS, p, i)).intoArray(sum, i);
        }
        MemorySegment src = SUMS.get().get((long) sum.length * Float.BYTES);
        MemorySegment.copy(sum, 0, src, F32, 0, sum.length);
        float[] out = new float[sum.length];
        for (int co = 0; co < cout; co++) {
            for (int ci = 0; ci < cin; ci += 16) {
                Gemm.transposeBlock16(src, ((long) co * kk * cin + ci) * Float.BYTES, (long) cin * Float.BYTES, out, (co * cin + ci) * kk, kk);
            }
        }
        MemorySegment.copy(out, 0, gw, F32, gwOff * Float.BYTES, out.length);
    }

    /**
     * Adds to {@code acc[r_j + c]} (row {@code r_j = dst + j * rowStride}) the sum over the group's {@code total} pixels q
     * of {@code gy[co0 + j][q] * x[base[q] + off + c]}, for 64 channels c and the tile's 6 rows j. Rows past
     * {@code rows} repeat the last row: they start from the same sums and add the same products, so storing them again
     * changes nothing.
     */
    private static void weightTile(float[] x, int[] base, int total, int off, float[] gs, int co0, int rows, float[] acc,
                                   int dst, int rowStride) {
        int r0 = dst, r1 = dst + Math.min(1, rows - 1) * rowStride, r2 = dst + Math.min(2, rows - 1) * rowStride;
        int r3 = dst + Math.min(3, rows - 1) * rowStride, r4 = dst + Math.min(4, rows - 1) * rowStride;
        int r5 = dst + Math.min(5, rows - 1) * rowStride;
        FloatVector a0 = FloatVector.fromArray(FS, acc, r0), a1 = FloatVector.fromArray(FS, acc, r0 + 16);
        FloatVector a2 = FloatVector.fromArray(FS, acc, r0 + 32), a3 = FloatVector.fromArray(FS, acc, r0 + 48);
        FloatVector b0 = FloatVector.fromArray(FS, acc, r1), b1 = FloatVector.fromArray(FS, acc, r1 + 16);
        FloatVector b2 = FloatVector.fromArray(FS, acc, r1 + 32), b3 = FloatVector.fromArray(FS, acc, r1 + 48);
        FloatVector c0 = FloatVector.fromArray(FS, acc, r2), c1 = FloatVector.fromArray(FS, acc, r2 + 16);
        FloatVector c2 = FloatVector.fromArray(FS, acc, r2 + 32), c3 = FloatVector.fromArray(FS, acc, r2 + 48);
        FloatVector d0 = FloatVector.fromArray(FS, acc, r3), d1 = FloatVector.fromArray(FS, acc, r3 + 16);
        FloatVector d2 = FloatVector.fromArray(FS, acc, r3 + 32), d3 = FloatVector.fromArray(FS, acc, r3 + 48);
        FloatVector e0 = FloatVector.fromArray(FS, acc, r4), e1 = FloatVector.fromArray(FS, acc, r4 + 16);
        FloatVector e2 = FloatVector.fromArray(FS, acc, r4 + 32), e3 = FloatVector.fromArray(FS, acc, r4 + 48);
        FloatVector f0 = FloatVector.fromArray(FS, acc, r5), f1 = FloatVector.fromArray(FS, acc, r5 + 16);
        FloatVector f2 = FloatVector.fromArray(FS, acc, r5 + 32), f3 = FloatVector.fromArray(FS, acc, r5 + 48);
        int g0 = co0 * total;
        int g1 = (co0 + Math.min(1, rows - 1)) * total, g2 = (co0 + Math.min(2, rows - 1)) * total;
        int g3 = (co0 + Math.min(3, rows - 1)) * total, g4 = (co0 + Math.min(4, rows - 1)) * total;
        int g5 = (co0 + Math.min(5, rows - 1)) * total;
        for (int q = 0; q < total; q++) {
            int xi = base[q] + off;
            FloatVector x0 = FloatVector.fromArray(FS, x, xi);
            FloatVector x1 = FloatVector.fromArray(FS, x, xi + 16);
            FloatVector x2 = FloatVector.fromArray(FS, x, xi + 32);
            FloatVector x3 = FloatVector.fromArray(FS, x, xi + 48);
            FloatVector v = FloatVector.broadcast(FS, gs[g0 + q]);
            a0 = x0.fma(v, a0);
            a1 = x1.fma(v, a1);
            a2 = x2.fma(v, a2);
            a3 = x3.fma(v, a3);
            v = FloatVector.broadcast(FS, gs[g1 + q]);
            b0 = x0.fma(v, b0);
            b1 = x1.fma(v, b1);
            b2 = x2.fma(v, b2);
            b3 = x3.fma(v, b3);
            v = FloatVector.broadcast(FS, gs[g2 + q]);
            c0 = x0.fma(v, c0);
            c1 = x1.fma(v, c1);
            c2 = x2.fma(v, c2);
            c3 = x3.fma(v, c3);
            v = FloatVector.broadcast(FS, gs[g3 + q]);
            d0 = x0.fma(v, d0);
            d1 = x1.fma(v, d1);
            d2 = x2.fma(v, d2);
            d3 = x3.fma(v, d3);
            v = FloatVector.broadcast(FS, gs[g4 + q]);
            e0 = x0.fma(v, e0);
            e1 = x1.fma(v, e1);
            e2 = x2.fma(v, e2);
            e3 = x3.fma(v, e3);
            v = FloatVector.broadcast(FS, gs[g5 + q]);
            f0 = x0.fma(v, f0);
            f1 = x1.fma(v, f1);
            f2 = x2.fma(v, f2);
            f3 = x3.fma(v, f3);
        }
        // Last row first: a repeated row's store then comes after the real one's and writes the same sums.
        f0.intoArray(acc, r5);
        f1.intoArray(acc, r5 + 16);
        f2.intoArray(acc, r5 + 32);
        f3.intoArray(acc, r5 + 48);
        e0.intoArray(acc, r4);
        e1.intoArray(acc, r4 + 16);
        e2.intoArray(acc, r4 + 32);
        e3.intoArray(acc, r4 + 48);
        d0.intoArray(acc, r3);
        d1.intoArray(acc, r3 + 16);
        d2.intoArray(acc, r3 + 32);
        d3.intoArray(acc, r3 + 48);
        c0.intoArray(acc, r2);
        c1.intoArray(acc, r2 + 16);
        c2.intoArray(acc, r2 + 32);
        c3.intoArray(acc, r2 + 48);
        b0.intoArray(acc, r1);
        b1.intoArray(acc, r1 + 16);
        b2.intoArray(acc, r1 + 32);
        b3.intoArray(acc, r1 + 48);
        a0.intoArray(acc, r0);
        a1.intoArray(acc, r0 + 16);
        a2.intoArray(acc, r0 + 32);
        a3.intoArray(acc, r0 + 48);
    }
}
