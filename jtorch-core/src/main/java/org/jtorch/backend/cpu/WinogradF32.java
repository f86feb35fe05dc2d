package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 3x3 stride-1 convolution by Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray, 2015): each
 * 4x4 block of output pixels comes from a 6x6 input tile as {@code A^T [(G g G^T) . (B^T d B)] A}, 36
 * multiplications per input channel where the direct convolution does 144. The 36 element-wise products,
 * summed over input channels, are 36 matrix products {@code M_e = V_e U_e} of transformed tiles
 * {@code [tiles x cin]} by transformed weights {@code [cin x cout]}, run with output channels in the vector
 * lanes on the direct convolution's register tiles (8 tiles x 32 channels, or 16 x 16). Images are copied channels-last (as {@link ConvDirectF32}
 * does), so both transforms work on 16 channels per vector.
 *
 * <p>The transforms cost float32 accuracy: against a float64 reference the largest error, relative to the
 * largest magnitude, is 8.0e-6 where the direct path's is 1.0e-6 (64 channels, {@code WinogradConvolutionTest});
 * for the weight gradient 3.1e-6 against 2.4e-7. {@code -Djtorch.conv.winograd=false} or
 * {@code JTORCH_CONV_WINOGRAD=0} turns this path off.
 */
final class WinogradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Tiles transformed and multiplied together: their transformed tiles and products stay in L2. */
    private static final int TB = 16;

    private WinogradF32() {}

    /** Whether the switch is on (read per call, so that a program or test may turn it off at any time). */
    static boolean enabled() {
        String property = System.getProperty("jtorch.conv.winograd");
        if (property != null) return !property.equals("false") && !property.equals("0");
        return !"0".equals(System.getenv("JTORCH_CONV_WINOGRAD"));
    }

    /** Whether {@link #forward} and {@link #weightGrad} apply: 3x3, stride 1, no dilation or groups, channels in whole vectors. */
    static boolean handles(Geometry g) {
        return FloatVector.SPECIES_PREFERRED.length() == 16 && g.groups() == 1 && g.kh() == 3 && g.kw() == 3
                && g.sh() == 1 && g.sw() == 1 && g.dh() == 1 && g.dw() == 1 && g.ph() <= 2 && g.pw() <= 2
                && g.cin() % 16 == 0 && g.cout() % 16 == 0 && g.oh() > 0 && g.ow() > 0 && enabled();
    }

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] image = new float[0];
        /** The weight gradient's gy image, channels-last. */
        float[] grad = new float[0];
        /**
         * Transformed tiles, {@code v[(e * TB + tile) * cin + c]}, and their products {@code m[(e * TB + tile) * cout + c]};
         * for the weight gradient, m holds transformed gradient tiles ({@link #gradTile}).
         */
        float[] v = new float[0];
        float[] m = new float[0];
        /** One tile's half-transformed 6x6 (or 4x6) vectors. */
        final float[] half = new float[36 * 16];
        final float[] block = new float[16 * 16];
        /**
         * One register tile: 8 products by 32 channels, or one tile's 16 output pixels by 16 channels; native like the
         * tensors ({@link Gemm#transposeBlock16} reads both).
         */
        final MemorySegment pixels = Arena.ofAuto().allocate(16 * 16 * Float.BYTES, 64);
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /**
     * {@code out = conv(x, w) + bias} ({@code bias} may be null). With {@code flipped}, {@code w} is the weight of
     * the convolution whose input gradient {@code g} computes: {@code w[ic][oc][2 - ki][2 - kj]}.
     */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, boolean flipped) {
        int cin = g.cin(), cout = g.cout(), oh = g.oh(), ow = g.ow();
        float[] u = transformedWeights(w, wOff, cin, cout, flipped);
        float[] bv = new float[cout];
        if (bias != null) {
            for (int oc = 0; oc < cout; oc++) bv[oc] = bias.get(F32, (bOff + oc) * Float.BYTES);
        }
        int tH = (oh + 3) / 4, tW = (ow + 3) / 4, tiles = tH * tW;
        int blocks = (tiles + TB - 1) / TB;
        int hp = 4 * tH + 2, wpad = 4 * tW + 2;
        long inImage = (long) cin * g.h() * g.w(), outImage = (long) cout * oh * ow;
        Parallel.forRange((long) g.n() * blocks, 1, (b0, b1) -> {
            Work wk = WORK.get();
            wk.v = ConvF32.grow(wk.v, 36 * TB * cin);
            wk.m = ConvF32.grow(wk.m, 36 * TB * cout);
            long padded = -1;
            for (long b = b0; b < b1; b++) {
                long n = b / blocks;
                int t0 = (int) (b % blocks) * TB, t1 = Math.min(tiles, t0 + TB);
                if (padded != n) {
                    wk.image = ConvF32.grow(wk.image, hp * wpad * cin);
                    ConvF32.padChannelsLast(x, xOff + n * inImage, cin, g, hp, wpad, wk.image, 0, wk.block);
                    padded = n;
                }
                for (int t = t0; t < t1; t++) inputTile(wk, cin, wpad, t / tW, t % tW, t - t0, TB);
                int ob = lanes(cout), step = ob == 32 ? 8 : 16;
                for (int e = 0; e < 36; e++) {
                    for (int r = 0; r < t1 - t0; r += step) {
                        for (int c0 = 0; c0 < cout; c0 += ob) product(wk, u, cin, cout, e, r, c0);
                    }
                }
                long image = (oOff + n * outImage) * Float.BYTES;
                for (int t = t0; t < t1; t++) outputTile(wk, cout, oh, ow, t / tW, t % tW, t - t0, bv, out, image);
            }
        });
    }

    /**
     * {@code (G g G^T)[e]} of each 3x3 filter (oc, ic), transformed in float64, in the register tile's blocked
     * order: {@code u[((e * (cout / ob) + oc / ob) * cin + ic) * ob + oc % ob]}, {@code ob = lanes(cout)}.
     */
    private static float[] transformedWeights(MemorySegment w, long wOff, int cin, int cout, boolean flipped) {
        float[] wh = new float[cin * cout * 9];
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, wh.length);
        float[] u = new float[36 * cin * cout];
        int ob = lanes(cout);
        double[] f = new double[9], gf = new double[18];
        for (int oc = 0; oc < cout; oc++) {
            for (int ic = 0; ic < cin; ic++) {
                for (int tap = 0; tap < 9; tap++) f[tap] = flipped ? wh[(ic * cout + oc) * 9 + 8 - tap] : wh[(oc * cin + ic) * 9 + tap];
                for (int j = 0; j < 3; j++) filterTransform(f, j, 3, gf, j, 3);           // columns: G f, 6x3
                for (int i = 0; i < 6; i++) {                                            // rows: (G f) G^T, 6x6
                    double g0 = gf[i * 3], g1 = gf[i * 3 + 1], g2 = gf[i * 3 + 2];
                    double[] r = {g0 / 4, -(g0 + g1 + g2) / 6, -(g0 - g1 + g2) / 6, g0 / 24 + g1 / 12 + g2 / 6, g0 / 24 - g1 / 12 + g2 / 6, g2};
                    for (int j = 0; j < 6; j++) u[(((i * 6 + j) * (cout / ob) + oc / ob) * cin + ic) * ob + oc % ob] = (float) r[j];
                }
            }
        }
        return u;
    }

    /** {@code dst[d0 + i * ds] = (G src)[i]} for the 3 elements {@code src[s0 + k * ss]}. */
    private static void filterTransform(double[] src, int s0, int ss, double[] dst, int d0, int ds) {
        double g0 = src[s0], g1 = src[s0 + ss], g2 = src[s0 + 2 * ss];
        dst[d0] = g0 / 4;
        dst[d0 + ds] = -(g0 + g1 + g2) / 6;
        dst[d0 + 2 * ds] = -(g0 - g1 + g2) / 6;
        dst[d0 + 3 * ds] = g0 / 24 + g1 / 12 + g2 / 6;
        dst[d0 + 4 * ds] = g0 / 24 - g1 / 12 + g2 / 6;
        dst[d0 + 5 * ds] = g2;
    }

    /** {@code B^T d B} of the 6x6 tile at tile row ty, column tx, 16 channels at a time, into row {@code slot} of each {@code V_e} ({@code tb} rows). */
    private static void inputTile(Work wk, int cin, int wpad, int ty, int tx, int slot, int tb) {
        float[] img = wk.image, half = wk.half, v = wk.v;
        int base = (4 * ty * wpad + 4 * tx) * cin;
        int rowStride = wpad * cin;
        for (int c0 = 0; c0 < cin; c0 += 16) {
            // Columns first: half[(i * 6 + j) * 16] = (B^T d)[i][j].
            for (int j = 0; j < 6; j++) inputTransform(img, base + j * cin + c0, rowStride, half, j * 16, 6 * 16);
            // Then rows: V_e, e = i * 6 + j, at v[(e * tb + slot) * cin + c0].
            for (int i = 0; i < 6; i++) inputTransform(half, i * 96, 16, v, ((i * 6) * tb + slot) * cin + c0, tb * cin);
        }
    }

    /** {@code dst[d0 + i * ds] = (B^T x)[i]} for the six 16-float vectors {@code x[k] = src[s0 + k * ss]}. */
    private static void inputTransform(float[] src, int s0, int ss, float[] dst, int d0, int ds) {
        FloatVector x0 = FloatVector.fromArray(FS, src, s0), x1 = FloatVector.fromArray(FS, src, s0 + ss);
        FloatVector x2 = FloatVector.fromArray(FS, src, s0 + 2 * ss), x3 = FloatVector.fromArray(FS, src, s0 + 3 * ss);
        FloatVector x4 = FloatVector.fromArray(FS, src, s0 + 4 * ss), x5 = FloatVector.fromArray(FS, src, s0 + 5 * ss);
        FloatVector x4m2 = x4.sub(x2), x3m1 = x3.sub(x1).mul(2f);
        x0.mul(4f).add(x4).sub(x2.mul(5f)).intoArray(dst, d0);
        x3.add(x4).sub(x1.add(x2).mul(4f)).intoArray(dst, d0 + ds);
        x4.sub(x3).add(x1.sub(x2).mul(4f)).intoArray(dst, d0 + 2 * ds);
        x4m2.add(x3m1).intoArray(dst, d0 + 3 * ds);
        x4m2.sub(x3m1).intoArray(dst, d0 + 4 * ds);
        x1.mul(4f).add(x5).sub(x3.mul(5f)).intoArray(dst, d0 + 5 * ds);
    }

    /** Output channels per register tile: 32 ({@link ConvDirectF32#tile8x32}) when they come in 32s, else 16 ({@link ConvDirectF32#tile16x16}). */
    private static int lanes(int cout) {
        return cout % 32 == 0 ? 32 : 16;
    }

    /**
     * Rows {@code [r, r + 8)} by channels {@code [c0, c0 + 32)} of {@code M_e = V_e U_e} ({@code [r, r + 16)} by
     * {@code [c0, c0 + 16)} with 16-channel blocks): {@link ConvDirectF32}'s register tile (one window row of
     * {@code cin} taps, the tiles {@code cin} floats apart), copied from its pixel-major tile into {@code m}.
     */
    private static void product(Work wk, float[] u, int cin, int cout, int e, int r, int c0) {
        int ob = lanes(cout), vb = (e * TB + r) * cin, ub = (e * (cout / ob) + c0 / ob) * cin * ob;
        int mb = (e * TB + r) * cout + c0;
        if (ob == 32) {
            ConvDirectF32.tile8x32(wk.v, vb, cin, 0, 1, cin, u, ub, ZERO_BIAS, 0, wk.pixels);
            for (int p = 0; p < 8; p++) {
                FloatVector.fromMemorySegment(FS, wk.pixels, p * 64L, NO).intoArray(wk.m, mb + p * cout);
                FloatVector.fromMemorySegment(FS, wk.pixels, 512 + p * 64L, NO).intoArray(wk.m, mb + p * cout + 16);
            }
        } else {
            ConvDirectF32.tile16x16(wk.v, vb, cin, 0, 1, cin, u, ub, ZERO_BIAS, 0, wk.pixels);
            for (int p = 0; p < 16; p++) FloatVector.fromMemorySegment(FS, wk.pixels, p * 64L, NO).intoArray(wk.m, mb + p * cout);
        }
    }

    private static final float[] ZERO_BIAS = new float[32];

    /**
     * {@code A^T M A + bias} of tile (ty, tx), its products in row {@code slot} of each {@code M_e}, into the NCHW
     * image at byte {@code image} of {@code out}: 16 channels at a time, the 16 pixels by 16 channels transposed
     * in registers, then four 4-pixel rows per channel (fewer at the image's bottom and right edges).
     */
    private static void outputTile(Work wk, int cout, int oh, int ow, int ty, int tx, int slot, float[] bias, MemorySegment out,
                                   long image) {
        float[] m = wk.m, half = wk.half, block = wk.block;
        int rows = Math.min(4, oh - 4 * ty), cols = Math.min(4, ow - 4 * tx);
        VectorMask<Float> inRow = F4.indexInRange(0, cols);
        long planeBytes = (long) oh * ow * Float.BYTES;
        long at = image + ((long) 4 * ty * ow + 4 * tx) * Float.BYTES;
        for (int c0 = 0; c0 < cout; c0 += 16) {
            // Columns first: half[(i * 6 + j) * 16] = (A^T M)[i][j], i < 4.
            for (int j = 0; j < 6; j++) outputTransform(m, (j * TB + slot) * cout + c0, 6 * TB * cout, half, j * 16, 6 * 16);
            FloatVector b = FloatVector.fromArray(FS, bias, c0);
            for (int i = 0; i < 4; i++) outputRow(half, i * 96, b, wk.pixels, i * 4 * 64);
            Gemm.transposeBlock16(wk.pixels, 0, 16 * Float.BYTES, block, 0, 16);
            for (int c = 0; c < 16; c++) {
                long plane = at + (c0 + c) * planeBytes;
                for (int i = 0; i < rows; i++) {
                    FloatVector.fromArray(F4, block, c * 16 + i * 4).intoMemorySegment(out, plane + (long) i * ow * Float.BYTES, NO, inRow);
                }
            }
        }
    }

    /** {@code dst[d0 + i * ds] = (A^T x)[i]}, i < 4, for the six 16-float vectors {@code x[k] = src[s0 + k * ss]}. */
    private static void outputTransform(float[] src, int s0, int ss, float[] dst, int d0, int ds) {
        FloatVector x0 = FloatVector.fromArray(FS, src, s0), x1 = FloatVector.fromArray(FS, src, s0 + ss);
        FloatVector x2 = FloatVector.fromArray(FS, src, s0 + 2 * ss), x3 = FloatVector.fromArray(FS, src, s0 + 3 * ss);
        FloatVector x4 = FloatVector.fromArray(FS, src, s0 + 4 * ss), x5 = FloatVector.fromArray(FS, src, s0 + 5 * ss);
        FloatVector p12 = x1.add(x2), m12 = x1.sub(x2), p34 = x3.add(x4), m34 = x3.sub(x4);
        x0.add(p12).add(p34).intoArray(dst, d0);
        m34.mul(2f).add(m12).intoArray(dst, d0 + ds);
        p34.mul(4f).add(p12).intoArray(dst, d0 + 2 * ds);
        m34.mul(8f).add(m12).add(x5).intoArray(dst, d0 + 3 * ds);
    }

    /** As {@link #outputTransform} along a row of {@code half} (vectors 16 floats apart), plus the bias, as 4 pixels of {@code pixels} from byte {@code at}. */
    private static void outputRow(float[] half, int s0, FloatVector bias, MemorySegment pixels, long at) {
        FloatVector x0 = FloatVector.fromArray(FS, half, s0), x1 = FloatVector.fromArray(FS, half, s0 + 16);
        FloatVector x2 = FloatVector.fromArray(FS, half, s0 + 32), x3 = FloatVector.fromArray(FS, half, s0 + 48);
        FloatVector x4 = FloatVector.fromArray(FS, half, s0 + 64), x5 = FloatVector.fromArray(FS, half, s0 + 80);
        FloatVector p12 = x1.add(x2), m12 = x1.sub(x2), p34 = x3.add(x4), m34 = x3.sub(x4);
        x0.add(p12).add(p34).add(bias).intoMemorySegment(pixels, at, NO);
        m34.mul(2f).add(m12).add(bias).intoMemorySegment(pixels, at + 64, NO);
        p34.mul(4f).add(p12).add(bias).intoMemorySegment(pixels, at + 128, NO);
        m34.mul(8f).add(m12).add(x5).add(bias).intoMemorySegment(pixels, at + 192, NO);
    }

    // ------------------------------------------------------------------ weight gradient

    /** Tiles per weight-gradient block: the products' depth, long enough that their register tiles are mostly FMAs. */
    private static final int TBW = 32;

    /**
     * {@code gw} of {@link #forward}'s convolution, by the transpose of its linear map: with {@code S_e} the sum
     * over every image and tile of {@code (B^T x B)_e (A gy A^T)_e} (outer products over input and output
     * channels: 36 matrix products {@code [cin x tiles] [tiles x cout]}), {@code gw = G^T S G}, taken in float64
     * at the end. Each thread's images accumulate into their own {@code S}; those are added in thread order, so
     * results do not depend on scheduling.
     */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cin = g.cin(), cout = g.cout(), oh = g.oh(), ow = g.ow();
        int tH = (oh + 3) / 4, tW = (ow + 3) / 4, tiles = tH * tW;
        int hp = 4 * tH + 2, wpad = 4 * tW + 2;
        // gy copied channels-last like an input image: no border, zeros past the last partial tile.
        Geometry gyImage = new Geometry(g.n(), cout, oh, ow, cin, 3, 3, 1, 1, 0, 0, 1, 1, 1, oh, ow);
        long inImage = (long) cin * g.h() * g.w(), outImage = (long) cout * oh * ow;
        int chunks = (int) Math.max(1, Math.min(g.n(), Parallel.inParallelRegion() ? 1 : Parallel.numThreads()));
        float[][] partial = new float[chunks][];
        Parallel.forRange(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                Work wk = WORK.get();
                float[] sums = new float[36 * cin * cout];
                wk.v = ConvF32.grow(wk.v, 36 * TBW * cin);
                wk.m = ConvF32.grow(wk.m, 36 * TBW * cout);
                for (long n = c * g.n() / chunks; n < (c + 1) * g.n() / chunks; n++) {
                    wk.image = ConvF32.grow(wk.image, hp * wpad * cin);
                    ConvF32.padChannelsLast(x, xOff + n * inImage, cin, g, hp, wpad, wk.image, 0, wk.block);
                    wk.grad = ConvF32.grow(wk.grad, 4 * tH * 4 * tW * cout);
                    ConvF32.padChannelsLast(gy, gyOff + n * outImage, cout, gyImage, 4 * tH, 4 * tW, wk.grad, 0, wk.block);
                    for (int t0 = 0; t0 < tiles; t0 += TBW) {
                        int count = Math.min(TBW, tiles - t0);
                        for (int t = t0; t < t0 + count; t++) {
                            inputTile(wk, cin, wpad, t / tW, t % tW, t - t0, TBW);
                            gradTile(wk, cout, 4 * tW, t / tW, t % tW, t - t0);
                        }
                        for (int e = 0; e < 36; e++) {
                            for (int cb = 0; cb < cout; cb += lanes(cout)) {
                                for (int ic = 0; ic < cin; ic += lanes(cout) == 32 ? 8 : 16) accumulate(wk, sums, cin, cout, count, e, ic, cb);
                            }
                        }
                    }
                }
                partial[(int) c] = sums;
            }
        });
        float[] total = partial[0];
        for (int c = 1; c < chunks; c++) {
            for (int i = 0; i < total.length; i++) total[i] += partial[c][i];
        }
        double[] se = new double[36], half = new double[18];
        for (int oc = 0; oc < cout; oc++) {
            for (int ic = 0; ic < cin; ic++) {
                for (int e = 0; e < 36; e++) se[e] = total[(e * cin + ic) * cout + oc];
                for (int b = 0; b < 6; b++) filterTransposed(se, b, 6, half, b, 6);     // G^T S: 3x6
                for (int k = 0; k < 3; k++) {
                    filterTransposed(half, k * 6, 1, se, 0, 1);                        // (G^T S) G: 3x3
                    for (int l = 0; l < 3; l++) gw.set(F32, (gwOff + ((long) oc * cin + ic) * 9 + k * 3 + l) * Float.BYTES, (float) se[l]);
                }
            }
        }
    }

    /** {@code dst[d0 + k * ds] = (G^T s)[k]}, k < 3, for the 6 elements {@code s[s0 + e * ss]}. */
    private static void filterTransposed(double[] s, int s0, int ss, double[] dst, int d0, int ds) {
        double s1 = s[s0 + ss], s2 = s[s0 + 2 * ss], s3 = s[s0 + 3 * ss], s4 = s[s0 + 4 * ss];
        double k0 = s[s0] / 4 - (s1 + s2) / 6 + (s3 + s4) / 24;
        double k1 = (s2 - s1) / 6 + (s3 - s4) / 12;
        double k2 = (s3 + s4 - s1 - s2) / 6 + s[s0 + 5 * ss];
        dst[d0] = k0;
        dst[d0 + ds] = k1;
        dst[d0 + 2 * ds] = k2;
    }

    /**
     * {@code A g A^T} of the 4x4 gradient tile (ty, tx) of the channels-last gy ({@code wg} pixels a row), 16
     * channels at a time, into row {@code slot} of each {@code Y_e}, blocked for the register tile:
     * {@code m[((e * (cout / ob) + c / ob) * TBW + slot) * ob + c % ob]}, {@code ob = lanes(cout)}.
     */
    private static void gradTile(Work wk, int cout, int wg, int ty, int tx, int slot) {
        float[] gyc = wk.grad, half = wk.half, m = wk.m;
        int base = (4 * ty * wg + 4 * tx) * cout;
        for (int c0 = 0; c0 < cout; c0 += 16) {
            // Columns first: half[(e * 4 + j) * 16] = (A g)[e][j].
            for (int j = 0; j < 4; j++) gradTransform(gyc, base + j * cout + c0, wg * cout, half, j * 16, 4 * 16);
            int ob = lanes(cout), at = ((c0 / ob) * TBW + slot) * ob + c0 % ob;
            for (int i = 0; i < 6; i++) gradTransform(half, i * 64, 16, m, (i * 6) * cout * TBW + at, cout * TBW);
        }
    }

    /** {@code dst[d0 + e * ds] = (A y)[e]}, e < 6, for the four 16-float vectors {@code y[k] = src[s0 + k * ss]}. */
    private static void gradTransform(float[] src, int s0, int ss, float[] dst, int d0, int ds) {
        FloatVector y0 = FloatVector.fromArray(FS, src, s0), y1 = FloatVector.fromArray(FS, src, s0 + ss);
        FloatVector y2 = FloatVector.fromArray(FS, src, s0 + 2 * ss), y3 = FloatVector.fromArray(FS, src, s0 + 3 * ss);
        FloatVector even = y0.add(y2), odd = y1.add(y3), even4 = y0.add(y2.mul(4f)), odd2 = y1.add(y3.mul(4f)).mul(2f);
        y0.intoArray(dst, d0);
        even.add(odd).intoArray(dst, d0 + ds);
        even.sub(odd).intoArray(dst, d0 + 2 * ds);
        even4.add(odd2).intoArray(dst, d0 + 3 * ds);
        even4.sub(odd2).intoArray(dst, d0 + 4 * ds);
        y3.intoArray(dst, d0 + 5 * ds);
    }

    /**
     * {@code sums[(e * cin + ic + r) * cout + cb + c] += sum over the block's count tiles t of V_e[t][ic + r] Y_e[t][cb + c]},
     * r < 8, c < 32 (r < 16, c < 16 with 16-channel blocks): the register tile with the tiles as its kernel rows
     * (depth), input channels as its pixels.
     */
    private static void accumulate(Work wk, float[] sums, int cin, int cout, int count, int e, int ic, int cb) {
        int ob = lanes(cout), vb = e * TBW * cin + ic, yb = (e * (cout / ob) + cb / ob) * TBW * ob;
        int at = (e * cin + ic) * cout + cb;
        if (ob == 32) {
            ConvDirectF32.tile8x32(wk.v, vb, 1, cin, count, 1, wk.m, yb, ZERO_BIAS, 0, wk.pixels);
            for (int r = 0; r < 8; r++) {
                int row = at + r * cout;
                FloatVector.fromArray(FS, sums, row).add(FloatVector.fromMemorySegment(FS, wk.pixels, r * 64L, NO)).intoArray(sums, row);
                FloatVector.fromArray(FS, sums, row + 16).add(FloatVector.fromMemorySegment(FS, wk.pixels, 512 + r * 64L, NO))
                        .intoArray(sums, row + 16);
            }
        } else {
            ConvDirectF32.tile16x16(wk.v, vb, 1, cin, count, 1, wk.m, yb, ZERO_BIAS, 0, wk.pixels);
            for (int r = 0; r < 16; r++) {
                int row = at + r * cout;
                FloatVector.fromArray(FS, sums, row).add(FloatVector.fromMemorySegment(FS, wk.pixels, r * 64L, NO)).intoArray(sums, row);
            }
        }
    }
}
