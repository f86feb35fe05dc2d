package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 convolutions with tiny output maps (ResNet-18's last stages at 64 px: 4x4 and 2x2 pixels, batch 32), with the
 * batch as the GEMM's column dimension and the kernel taps as (output pixel, input pixel) pairs. Output pixel p of every
 * image is {@code out_p [cout, n] = sum over its taps t, reading input pixel q, of W_t [cout, cin] x X_q [cin, n]}, where
 * X_q holds pixel q of each image's channels: one register tile of 8 output channels by 32 images accumulates all of
 * p's pairs. Taps that read the zero padding are not pairs at all, so nothing is multiplied by the padding: a 3x3 kernel
 * on a 2x2 map (pad 1) does 16 of the 36 pixel-tap products the column matrix of {@link ConvGemmF32} multiplies, on a
 * 4x4 map 100 of 144. The input gradient is the same sum with the roles turned round ({@code gx_q = sum W_t^T gy_p} over
 * the pairs that read q); the operands are packed once per call in Gemm's strip formats, so the inner loop is
 * {@link Gemm#kernel}'s: two vector loads and eight broadcasts for sixteen FMAs.
 */
final class ConvSmallMapF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int MR = Gemm.MR, NR = Gemm.NR, L = 16;
    /** Output maps of at most this many pixels go here (4x4 and below, as {@link ConvGemmF32#MAX_PIXELS}). */
    static final int MAX_PIXELS = 16;
    /** Packed weight strips kept in L2 together (256 KiB). */
    private static final int A_BLOCK_FLOATS = 64 * 1024;

    private ConvSmallMapF32() {}

    /**
     * Whether {@link #backwardInput} serves {@code g}: one group, 512-bit vectors, a kernel larger than 1x1 (the strided 1x1
     * shortcuts measured faster on the batch GEMM), a tiny output map, enough images to fill most of a 32-image tile, and
     * enough channels each way for the 8-row strips and the channel loop to pay.
     */
    static boolean handlesInputGrad(Geometry g) {
        long l = (long) g.oh() * g.ow();
        long pixels = Math.max(l, (long) g.h() * g.w()), channels = roundUp(Math.max(g.cin(), g.cout()), NR);
        return Gemm.L == L && g.groups() == 1 && g.kh() * g.kw() > 1 && l > 0 && l <= MAX_PIXELS && g.n() >= 16 && g.cin() >= 16
                && g.cout() >= 16 && (long) roundUp(g.n(), NR) * channels * pixels < Integer.MAX_VALUE
                && channels * channels * g.kh() * g.kw() < Integer.MAX_VALUE;
    }

    /** Input maps of up to this many pixels (8x8) go here when the padding saves {@link #MIN_PADDING_SAVED} of the products. */
    static final int MAX_PADDED_INPUT_PIXELS = 64;
    static final double MIN_PADDING_SAVED = 0.2;

    /**
     * Whether {@link #forward} and {@link #weightGrad} serve {@code g}: as {@link #handlesInputGrad}, with a tiny input map
     * too, or an input map of up to 8x8 whose padding makes at least a fifth of the products. ResNet-18's 3x3 stride-2
     * layer from 8x8 to 4x4 (padding: 16% of the products) ran its forward and weight gradient slower here than on the
     * raster tiles (3.4 against 3.9 ms, 3.9 against 4.3 ms, one thread, batch 32); DCGAN's 4x4 stride-2 layer from 8x8 to
     * 4x4 (23%, batch 64) faster: 12.1-12.3 against 11.0-11.1 ms forward, 13.7-15.3 against 11.6-12.5 ms weight gradient.
     */
    static boolean handles(Geometry g) {
        if (!handlesInputGrad(g)) return false;
        long in = (long) g.h() * g.w();
        return in <= MAX_PIXELS || in <= MAX_PADDED_INPUT_PIXELS && paddingShare(g) >= MIN_PADDING_SAVED;
    }

    /** The share of (output pixel, tap) products that read the zero padding, which the tap pairs skip. */
    static double paddingShare(Geometry g) {
        int[] q = inputPixels(g);
        int padded = 0;
        for (int v : q) if (v < 0) padded++;
        return (double) padded / q.length;
    }

    /** For each (output pixel p, tap t) whose window position lies inside the image: {@code q[p * kk + t]}, else -1. */
    private static int[] inputPixels(Geometry g) {
        int kk = g.kh() * g.kw(), l = g.oh() * g.ow();
        int[] q = new int[l * kk];
        for (int p = 0; p < l; p++) {
            for (int ki = 0; ki < g.kh(); ki++) {
                for (int kj = 0; kj < g.kw(); kj++) {
                    int iy = p / g.ow() * g.sh() - g.ph() + ki * g.dh(), ix = p % g.ow() * g.sw() - g.pw() + kj * g.dw();
                    q[p * kk + ki * g.kw() + kj] = iy >= 0 && iy < g.h() && ix >= 0 && ix < g.w() ? iy * g.w() + ix : -1;
                }
            }
        }
        return q;
    }

    /**
     * The pairs of each target pixel as packed-operand offsets: target {@code i}'s pairs are
     * {@code [start[i], start[i + 1])}, pair {@code k} reading A from {@code aOff[k]} and B from {@code bOff[k]}.
     */
    private record Pairs(int[] start, int[] aOff, int[] bOff) {}

    /** {@code out = conv(x, w) + bias} for contiguous float32 tensors ({@code bias} may be null). */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int cin = g.cin(), cout = g.cout(), kk = g.kh() * g.kw(), k = g.kg();
        int l = g.oh() * g.ow(), lin = g.h() * g.w();
        // The weight as Gemm packs a [cout, cin * kk] matrix: strip s, depth c * kk + t at (s * k + c * kk + t) * MR.
        Buffers buffers = BUFFERS.get();
        float[] wp = buffers.weights = ConvF32.grow(buffers.weights, roundUp(cout, MR) * k);
        // Strips packed over the threads: packed by the calling thread alone, the 512-channel weight (9 MB) kept the
        // other thread waiting for most of the call.
        Parallel.forRange((cout + MR - 1) / MR, 1, (s0, s1) -> {
            Buffers own = BUFFERS.get();
            float[] scratch = own.packScratch = ConvF32.grow(own.packScratch, MR * k);
            int r0 = (int) s0 * MR, r1 = Math.min(cout, (int) s1 * MR);
            Gemm.packA(w, wOff + (long) r0 * k, k, 1, r1 - r0, k, wp, r0 * k, scratch);
        });
        float[] xb = packPixels(x, xOff, g.n(), cin, lin);
        int[] q = inputPixels(g);
        int[] start = new int[l + 1], aOffs = new int[l * kk], bOffs = new int[l * kk];
        int pairs = 0;
        for (int p = 0; p < l; p++) {
            start[p] = pairs;
            for (int t = 0; t < kk; t++) {
                if (q[p * kk + t] < 0) continue;
                aOffs[pairs] = t * MR;
                bOffs[pairs++] = q[p * kk + t] * cin * NR;
            }
        }
        start[l] = pairs;
        float[] bv = new float[cout];
        if (bias != null) MemorySegment.copy(bias, F32, bOff * Float.BYTES, bv, 0, cout);
        run(wp, k * MR, kk * MR, xb, lin * cin * NR, cin, new Pairs(start, aOffs, bOffs), cout, l, g.n(), bv, out, oOff);
        // Every strip's task writes a channel block of every image: the epilogue runs once, over the whole output.
        if (epilogue != null) epilogue.block(0, g.n(), 0, cout, 0, l);
    }

    /** {@code gradInput = conv2d's input gradient} for contiguous float32 tensors. */
    static void backwardInput(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kk = g.kh() * g.kw();
        int l = g.oh() * g.ow(), lin = g.h() * g.w();
        float[] wt = transposedWeight(w, wOff, cin, cout, kk);
        float[] gb = packPixels(gy, gyOff, g.n(), cout, l);
        int[] q = inputPixels(g);
        int[] start = new int[lin + 1], aOff = new int[l * kk], bOff = new int[l * kk];
        int pairs = 0;
        for (int qi = 0; qi < lin; qi++) {
            start[qi] = pairs;
            for (int p = 0; p < l; p++) {
                for (int t = 0; t < kk; t++) {
                    if (q[p * kk + t] != qi) continue;
                    aOff[pairs] = t * cout * MR;
                    bOff[pairs++] = p * cout * NR;
                }
            }
        }
        start[lin] = pairs;
        run(wt, kk * cout * MR, MR, gb, l * cout * NR, cout, new Pairs(start, aOff, bOff), cin, lin, g.n(), new float[cin], gi, giOff);
    }

    /**
     * {@code gradWeight}: per tap t, {@code gw_t [cout, cin] = sum over t's pairs (p, q) of gy_p [cout, n] x X_q^T [n, cin]}, a
     * register tile of 8 output by 32 input channels reducing over the images of every pair of the tap (the padding's
     * pairs skipped, as in {@link #forward}).
     */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), kk = g.kh() * g.kw(), n = g.n();
        int l = g.oh() * g.ow(), lin = g.h() * g.w();
        Buffers buffers = BUFFERS.get();
        float[] gp = buffers.gyStrips = channelStrips(gy, gyOff, n, cout, l, MR, buffers.gyStrips);
        float[] xp = buffers.xStrips = channelStrips(x, xOff, n, cin, lin, NR, buffers.xStrips);
        int[] q = inputPixels(g);
        int[] start = new int[kk + 1], aOffs = new int[l * kk], bOffs = new int[l * kk];
        int pairs = 0;
        for (int t = 0; t < kk; t++) {
            start[t] = pairs;
            for (int p = 0; p < l; p++) {
                if (q[p * kk + t] < 0) continue;
                aOffs[pairs] = p * n * MR;
                bOffs[pairs++] = q[p * kk + t] * n * NR;
            }
        }
        start[kk] = pairs;
        Pairs byTap = new Pairs(start, aOffs, bOffs);
        int strips = (cout + MR - 1) / MR, cStrips = (cin + NR - 1) / NR;
        Parallel.forRange(strips, 1, (s0, s1) -> {
            float[] tile = new float[MR * NR];
            for (int cs = 0; cs < cStrips; cs++) {
                int c0 = cs * NR, nc = Math.min(NR, cin - c0);
                for (int s = (int) s0; s < s1; s++) {
                    int r0 = s * MR, mr = Math.min(MR, cout - r0);
                    for (int t = 0; t < kk; t++) {
                        tile(n, byTap, t, gp, s * l * n * MR, MR, xp, cs * lin * n * NR, tile);
                        for (int r = 0; r < mr; r++) {
                            long at = (gwOff + ((long) (r0 + r) * cin + c0) * kk + t) * Float.BYTES;
                            for (int j = 0; j < nc; j++) gw.set(F32, at + (long) j * kk * Float.BYTES, tile[r * NR + j]);
                        }
                    }
                }
            }
        });
    }

    /**
     * {@code src [n][channels][pixels]} as strips of {@code width} channels for each pixel and image: channel c of image j
     * at pixel q at {@code (((c / width) * pixels + q) * n + j) * width + c % width}; channels past the last are zero. Into
     * {@code into} when it is large enough (the calling thread's buffer, returned), images split over the threads: for
     * DCGAN's 128 -> 256 layer (batch 64, 4 calls a step) this was 3 MB of fresh arrays a call, filled by the calling
     * thread alone while the other waited.
     */
    private static float[] channelStrips(MemorySegment src, long off, int n, int channels, int pixels, int width, float[] into) {
        int strips = (channels + width - 1) / width, stripSize = pixels * n * width;
        float[] b = ConvF32.grow(into, strips * stripSize);
        // The last strip's channels past the last stay zero: they are multiplied, never stored.
        if (channels % width != 0) Arrays.fill(b, (strips - 1) * stripSize, strips * stripSize, 0f);
        Parallel.forRange(n, 8, (j0, j1) -> {
            Buffers own = BUFFERS.get();
            float[] image = own.image = ConvF32.grow(own.image, channels * pixels);
            for (int j = (int) j0; j < j1; j++) {
                MemorySegment.copy(src, F32, (off + (long) j * channels * pixels) * Float.BYTES, image, 0, channels * pixels);
                for (int c = 0; c < channels; c++) {
                    int base = (c / width) * stripSize + j * width + c % width;
                    for (int qi = 0; qi < pixels; qi++) b[base + qi * n * width] = image[c * pixels + qi];
                }
            }
        });
        return b;
    }

    /**
     * {@code w [cout][cin][kk]} as 8-row strips of {@code W_t^T [cin, cout]}: strip s (input channels 8s..8s+7), tap t,
     * output channel o at {@code ((s * kk + t) * cout + o) * MR}; rows past cin are zero.
     */
    private static float[] transposedWeight(MemorySegment w, long wOff, int cin, int cout, int kk) {
        int strips = (cin + MR - 1) / MR;
        Buffers buffers = BUFFERS.get();
        float[] wt = buffers.weights = ConvF32.grow(buffers.weights, strips * kk * cout * MR);
        // A row (output channel) at a time, read once from the tensor. Measured for 512 x 512 x 3 x 3 (one thread): 2.9 ms,
        // against 4.2 ms strip by strip from a heap copy of the whole weight and 8.4 ms with 8-lane gathers from it.
        Parallel.forRange(cout, 16, (o0, o1) -> {
            float[] row = new float[strips * MR * kk];
            for (int o = (int) o0; o < o1; o++) {
                MemorySegment.copy(w, F32, (wOff + (long) o * cin * kk) * Float.BYTES, row, 0, cin * kk);
                for (int s = 0; s < strips; s++) {
                    int from = s * MR * kk, to = (s * kk * cout + o) * MR;
                    for (int t = 0; t < kk; t++) {
                        int d = to + t * cout * MR;
                        for (int r = 0; r < MR; r++) wt[d + r] = row[from + r * kk + t];
                    }
                }
            }
        });
        return wt;
    }

    /** Per-thread buffers of the calling thread, grown on demand and then reused. */
    private static final class Buffers {
        float[] weights = new float[0];
        float[] pixels = new float[0];
        /** The weight gradient's operands as channel strips ({@link #channelStrips}). */
        float[] gyStrips = new float[0];
        float[] xStrips = new float[0];
        /** One image, copied from the tensor by the thread that packs it. */
        float[] image = new float[0];
        /** Gemm.packA's scratch for the forward's weight strips of this thread. */
        float[] packScratch = new float[0];
    }

    private static final ThreadLocal<Buffers> BUFFERS = ThreadLocal.withInitial(Buffers::new);

    /**
     * {@code src [n][channels][pixels]} as 32-image strips of each pixel's channels: image j, channel c, pixel q at
     * {@code (((j / NR) * pixels + q) * channels + c) * NR + j % NR}; images past n are zero.
     */
    private static float[] packPixels(MemorySegment src, long off, int n, int channels, int pixels) {
        int strips = (n + NR - 1) / NR, size = strips * pixels * channels * NR;
        Buffers buffers = BUFFERS.get();
        float[] b = buffers.pixels = ConvF32.grow(buffers.pixels, size);
        // Images past n stay zero: they fill the last strip's columns, which are computed and never stored.
        Arrays.fill(b, n / NR * pixels * channels * NR, size, 0f);
        Parallel.forRange(n, 8, (j0, j1) -> {
            Buffers own = BUFFERS.get();
            float[] image = own.image = ConvF32.grow(own.image, channels * pixels);
            for (int j = (int) j0; j < j1; j++) {
                MemorySegment.copy(src, F32, (off + (long) j * channels * pixels) * Float.BYTES, image, 0, channels * pixels);
                int base = (j / NR) * pixels * channels * NR + j % NR;
                for (int c = 0; c < channels; c++) {
                    for (int q = 0; q < pixels; q++) b[base + (q * channels + c) * NR] = image[c * pixels + q];
                }
            }
        });
        return b;
    }

    /**
     * {@code dst[j][r][i] = bias[r] + sum over target i's pairs of sum_c A[r][c] B[c][j]}, for rows {@code r < rows},
     * targets {@code i < targets}, images {@code j < n}: tasks are 8-row strips of A, each over every target and image strip.
     */
    private static void run(float[] ap, int aStrip, int aStep, float[] bp, int bStrip, int depth, Pairs pairs, int rows,
                            int targets, int n, float[] bias, MemorySegment dst, long dOff) {
        int strips = (rows + MR - 1) / MR, imageStrips = (n + NR - 1) / NR;
        // Strips in blocks whose A stays in L2 while every target's B streams past once per block, not once per strip.
        int block = Math.max(1, A_BLOCK_FLOATS / aStrip);
        Parallel.forRange(strips, 1, (s0, s1) -> {
            float[] tile = new float[MR * NR];
            for (int sb = (int) s0; sb < s1; sb += block) {
                int sbEnd = (int) Math.min(s1, sb + block);
                for (int js = 0; js < imageStrips; js++) {
                    int nj = Math.min(NR, n - js * NR);
                    for (int i = 0; i < targets; i++) {
                        for (int s = sb; s < sbEnd; s++) {
                            int r0 = s * MR, mr = Math.min(MR, rows - r0);
                            tile(depth, pairs, i, ap, s * aStrip, aStep, bp, js * bStrip, tile);
                            long step = (long) rows * targets * Float.BYTES;
                            for (int r = 0; r < mr; r++) {
                                float b = bias[r0 + r];
                                long at = (dOff + ((long) js * NR * rows + r0 + r) * targets + i) * Float.BYTES;
                                for (int j = 0; j < nj; j++) dst.set(F32, at + j * step, tile[r * NR + j] + b);
                            }
                        }
                    }
                }
            }
        });
    }

    /**
     * {@code tile[r * NR + j] = sum over target i's pairs of sum_c A[aBase + aOff + c * aStep + r] * B[bBase + bOff + c * NR + j]}:
     * {@link Gemm#kernel}'s 8x32 register tile, accumulating over every pair before it stores. Its own copy of that loop:
     * Gemm's reads one packed A strip at step MR and stores per call; here A is strided (the forward's taps lie kk apart
     * in the packed weight) and the accumulators stay in registers across the pairs.
     */
    private static void tile(int depth, Pairs pairs, int i, float[] ap, int aBase, int aStep, float[] bp, int bBase, float[] tile) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        for (int pr = pairs.start()[i]; pr < pairs.start()[i + 1]; pr++) {
            int ai = aBase + pairs.aOff()[pr], bi = bBase + pairs.bOff()[pr];
            for (int c = 0; c < depth; c++, ai += aStep, bi += NR) {
                FloatVector b0 = FloatVector.fromArray(FS, bp, bi);
                FloatVector b1 = FloatVector.fromArray(FS, bp, bi + L);
                FloatVector av = FloatVector.broadcast(FS, ap[ai]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                av = FloatVector.broadcast(FS, ap[ai + 1]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                av = FloatVector.broadcast(FS, ap[ai + 2]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                av = FloatVector.broadcast(FS, ap[ai + 3]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                av = FloatVector.broadcast(FS, ap[ai + 4]);
                c40 = b0.fma(av, c40);
                c41 = b1.fma(av, c41);
                av = FloatVector.broadcast(FS, ap[ai + 5]);
                c50 = b0.fma(av, c50);
                c51 = b1.fma(av, c51);
                av = FloatVector.broadcast(FS, ap[ai + 6]);
                c60 = b0.fma(av, c60);
                c61 = b1.fma(av, c61);
                av = FloatVector.broadcast(FS, ap[ai + 7]);
                c70 = b0.fma(av, c70);
                c71 = b1.fma(av, c71);
            }
        }
        c00.intoArray(tile, 0);
        c01.intoArray(tile, L);
        c10.intoArray(tile, NR);
        c11.intoArray(tile, NR + L);
        c20.intoArray(tile, 2 * NR);
        c21.intoArray(tile, 2 * NR + L);
        c30.intoArray(tile, 3 * NR);
        c31.intoArray(tile, 3 * NR + L);
        c40.intoArray(tile, 4 * NR);
        c41.intoArray(tile, 4 * NR + L);
        c50.intoArray(tile, 5 * NR);
        c51.intoArray(tile, 5 * NR + L);
        c60.intoArray(tile, 6 * NR);
        c61.intoArray(tile, 6 * NR + L);
        c70.intoArray(tile, 7 * NR);
        c71.intoArray(tile, 7 * NR + L);
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
