package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The float32 weight gradient of convolutions with few input channels (a network's first layer: ResNet-50's 7x7
 * stride-2 stem, MNIST's 1 -> 32 conv1, DCGAN's 1 -> 64 4x4 stride-2 layer) with output pixels in the vector lanes,
 * counted flat over each image's {@code oh * ow} plane: {@code gw[oc][tap] = sum over images and pixels p of
 * gy[oc][p] * x[tap's input of p]}. gy is read as it lies in the tensor, 16 consecutive pixels a vector (staged only
 * when a plane is not whole vectors or the channels not whole 8-channel tiles). The input is arranged so that the
 * 16 inputs one tap reads for 16 consecutive flat pixels are 16 consecutive floats: one plane per input channel,
 * horizontal tap {@code kj} and row phase ({@code (ki * dh) % sh}), of {@code ow}-float rows, where row {@code r}
 * holds input row {@code r * sh + phase} sampled at columns {@code ox * sw + kj * dw}; tap {@code (ic, ki, kj)} then
 * reads its plane {@code (ki * dh) / sh} rows down from the pixel. Those planes are built a band of pixels at a
 * time from a zero-bordered, column-phase-split copy of the image, and a register tile of 8 output channels x 3 taps
 * multiplies 16 pixels of gy (8 loads) by each tap's 16 inputs (3 loads), 24 FMAs per 11 loads.
 *
 * <p>The direct weight gradient ({@link ConvDirectF32}) puts taps in the lanes and gy in broadcasts, which needs gy
 * transposed pixel-major pass by pass (about a fifth of the 7x7 stem's time) and pads 147 taps to 160 lanes; with one
 * input channel and 9 or 16 taps its vectors were mostly idle. Here no operand is transposed and every lane is a real
 * pixel except in an image's last vector.
 *
 * <p>The bands are split over threads in contiguous ranges, each accumulating into its own lanes; the ranges' sums are
 * added in order, so a result depends on the thread count but not on scheduling. Inputs that hold infinities can make
 * a gradient NaN where the exact sum is not: an image's last vector multiplies its zero gy lanes by whatever the
 * planes hold there (as {@link ConvLaneWeightGradF32}'s). {@code -Djtorch.conv.fewChannelWeightGrad=false} turns this
 * path off.
 */
final class ConvFewChannelWeightGradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final int L = 16;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Output channels and taps of one register tile: {@link ConvLaneWeightGradF32}'s, whose lane sums finish the call. */
    private static final int ROWS = ConvLaneWeightGradF32.ROWS, TAPS = ConvLaneWeightGradF32.TAPS;
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.fewChannelWeightGrad"));
    /** Most input channels served: beyond a few the direct gradient's tap lanes fill and its gy broadcasts are shared. */
    static final int MAX_CIN = 4;
    /**
     * Vectors of gy (16 pixels each) one band covers: a band's planes are built just before its tiles, and a large image
     * (the 7x7 stem's 12544 pixels) is split into bands so that a band's 8 gy channels and its planes stay in L2.
     */
    private static final int BAND_VECTORS = 128;

    private ConvFewChannelWeightGradF32() {}

    /** Per-thread buffers, grown on demand. */
    private static final class Work {
        /** A band's gy where it is staged: native and 64-byte aligned, so that every gy vector is one cache line. */
        private MemorySegment gy = MemorySegment.NULL;
        /** One image, zero-bordered, columns split by phase. */
        private float[] image = new float[0];
        /** One bordered input row ({@link #padImage}). */
        private float[] row = new float[0];
        /** A band's planes. */
        private float[] planes = new float[0];

        MemorySegment staged(long floats) {
            if (gy.byteSize() < floats * Float.BYTES) gy = Arena.ofAuto().allocate(floats * Float.BYTES, 64);
            return gy;
        }
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /** Whether {@link #weightGrad} serves {@code g}: 16-float vectors, one group, a kernel larger than 1x1, at most {@link #MAX_CIN} input channels. */
    static boolean handles(Geometry g) {
        return ENABLED && FloatVector.SPECIES_PREFERRED.length() == L && g.groups() == 1 && g.cin() <= MAX_CIN
                && g.kh() * g.kw() > 1 && g.oh() > 0 && g.ow() > 0 && g.n() > 0
                && (long) g.oh() * g.ow() * Math.max(g.cout(), 16) < Integer.MAX_VALUE / 4
                && (long) g.cin() * paddedRows(g) * g.sw() * rowLength(g) < Integer.MAX_VALUE / 2;
    }

    /** Rows of the zero-bordered copy that real pixels read (the planes' rows past them are zeros). */
    private static int paddedRows(Geometry g) {
        return (g.oh() - 1) * g.sh() + (g.kh() - 1) * g.dh() + 1;
    }

    /** Floats of one column phase of one bordered row: each horizontal tap's {@code ow} samples. */
    private static int rowLength(Geometry g) {
        return g.ow() + (g.kw() - 1) * g.dw() / g.sw() + 1;
    }

    /** {@code gw = dL/dw} for contiguous float32 gy {@code (n, cout, oh, ow)}, x {@code (n, cin, h, w)} and gw {@code (cout, cin, kh, kw)}. */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cout = g.cout(), taps = g.kg(), kh = g.kh(), kw = g.kw(), sh = g.sh(), ow = g.ow();
        int coutP = roundUp(cout, ROWS), tapsP = roundUp(taps, TAPS);
        int pixels = g.oh() * ow, vectors = (pixels + L - 1) / L;
        // gy in place where each image's channels are whole vectors and whole 8-channel tiles; staged otherwise.
        boolean inPlace = pixels % L == 0 && cout % ROWS == 0;
        int qMax = (kh - 1) * g.dh() / sh;
        // Bands: up to BAND_VECTORS vectors of one image each; several small images make one block of bands.
        int bandVectors = Math.min(vectors, BAND_VECTORS);
        int bandsPerImage = (vectors + bandVectors - 1) / bandVectors;
        int imagesPerBlock = bandsPerImage == 1 ? Math.max(1, BAND_VECTORS / vectors) : 1;
        long blocks = bandsPerImage == 1 ? (g.n() + imagesPerBlock - 1) / imagesPerBlock : g.n() * bandsPerImage;
        int bandRows = (bandVectors * L - 1) / ow + 2 + qMax;
        int planeSize = bandRows * ow + L;
        int planeCount = g.cin() * kw * sh;
        int setSize = planeCount * planeSize;
        // Each tap's offset in a band's planes: its plane, then (ki * dh) / sh rows down.
        int[] tapOff = new int[tapsP];
        for (int t = 0; t < taps; t++) {
            int ic = t / (kh * kw), ki = t / kw % kh, kj = t % kw;
            tapOff[t] = ((ic * kw + kj) * sh + ki * g.dh() % sh) * planeSize + ki * g.dh() / sh * ow;
        }
        int stagedPitch = bandVectors * L + (bandVectors * L % 1024 == 0 ? L : 0);
        int accSize = coutP * tapsP * L;
        int chunks = (int) Math.max(1, Math.min(blocks, Parallel.inParallelRegion() ? 1 : Parallel.numThreads()));
        float[][] partial = new float[chunks][];
        Parallel.forRange(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                Work wk = WORK.get();
                float[] acc = new float[accSize];
                float[] planes = wk.planes = ConvF32.grow(wk.planes, imagesPerBlock * setSize);
                MemorySegment staged = inPlace ? null : wk.staged((long) imagesPerBlock * coutP * stagedPitch);
                long[] gyBase = new long[imagesPerBlock];
                int[] xBase = new int[imagesPerBlock];
                long imagePadded = -1;
                long b0 = c * blocks / chunks, b1 = (c + 1) * blocks / chunks;
                for (long b = b0; b < b1; b++) {
                    long n0 = bandsPerImage == 1 ? b * imagesPerBlock : b / bandsPerImage;
                    int segs = (int) (bandsPerImage == 1 ? Math.min(imagesPerBlock, g.n() - n0) : 1);
                    int v0 = bandsPerImage == 1 ? 0 : (int) (b % bandsPerImage) * bandVectors;
                    int count = Math.min(bandVectors, vectors - v0);
                    int p0 = v0 * L, rowStart = p0 / ow;
                    for (int s = 0; s < segs; s++) {
                        long n = n0 + s;
                        if (n != imagePadded) {
                            padImage(x, xOff + n * g.cin() * g.h() * g.w(), g, wk);
                            imagePadded = n;
                        }
                        buildPlanes(wk.image, g, rowStart, bandRows, planeSize, planes, s * setSize);
                        xBase[s] = s * setSize + p0 - rowStart * ow;
                        long image = gyOff + n * cout * pixels;
                        if (inPlace) {
                            gyBase[s] = (image + p0) * Float.BYTES;
                        } else {
                            stage(gy, image, g, p0, Math.min(count * L, pixels - p0), staged, (long) s * coutP * stagedPitch, stagedPitch);
                            gyBase[s] = (long) s * coutP * stagedPitch * Float.BYTES;
                        }
                    }
                    MemorySegment src = inPlace ? gy : staged;
                    long pitch = (inPlace ? pixels : stagedPitch) * (long) Float.BYTES;
                    for (int oc = 0; oc < coutP; oc += ROWS) {
                        for (int t = 0; t < tapsP; t += TAPS) {
                            tile(segs, count, src, gyBase, oc * pitch, pitch, planes, xBase, tapOff[t], tapOff[t + 1], tapOff[t + 2],
                                    acc, (oc * tapsP + t * ROWS) * L);
                        }
                    }
                }
                partial[(int) c] = acc;
            }
        });
        ConvLaneWeightGradF32.addLanes(partial, cout, taps, gw, gwOff);
    }

    /**
     * One image (from element {@code off}) zero-bordered with its columns split by phase:
     * {@code image[((ic * rows + yp) * sw + c % sw) * rowLength + c / sw] = xpad[ic][yp][c]}. Each row goes through
     * {@code row} (zero-bordered, unsplit); stride 2 splits it 32 floats at a time (element by element from the tensor,
     * the 7x7 stem's 8 images took about 3 ms of a 26 ms call, one thread).
     */
    private static float[] padImage(MemorySegment x, long off, Geometry g, Work wk) {
        int sw = g.sw(), rl = rowLength(g), rows = paddedRows(g), h = g.h(), w = g.w(), pw = g.pw();
        int size = g.cin() * rows * sw * rl;
        float[] dst = wk.image = ConvF32.grow(wk.image, size);
        // The bordered row, long enough for every phase's rl floats.
        float[] row = wk.row = ConvF32.grow(wk.row, sw * rl + 2 * L);
        Arrays.fill(row, 0f);
        int n = Math.min(w, sw * rl - pw);
        for (int ic = 0; ic < g.cin(); ic++) {
            for (int yp = 0; yp < rows; yp++) {
                int iy = yp - g.ph();
                int at = (ic * rows + yp) * sw * rl;
                // Only the border is cleared: the copies below write every other float (the 7x7 stem's images were
                // 5 MB of fill a call).
                if (iy < 0 || iy >= h || n <= 0) {
                    Arrays.fill(dst, at, at + sw * rl, 0f);
                    continue;
                }
                long src = (off + ((long) ic * h + iy) * w) * Float.BYTES;
                if (sw == 1) {
                    Arrays.fill(dst, at, at + pw, 0f);
                    Arrays.fill(dst, at + pw + n, at + rl, 0f);
                    MemorySegment.copy(x, F32, src, dst, at + pw, n);
                    continue;
                }
                MemorySegment.copy(x, F32, src, row, pw, n);
                int q = 0;
                if (sw == 2) {
                    for (; q + L <= rl; q += L) {
                        FloatVector a = FloatVector.fromArray(FS, row, 2 * q), b = FloatVector.fromArray(FS, row, 2 * q + L);
                        ConvF32.EVEN_LANES.selectFrom(a, b).intoArray(dst, at + q);
                        ODD_LANES.selectFrom(a, b).intoArray(dst, at + rl + q);
                    }
                }
                for (; q < rl; q++) {
                    for (int phase = 0; phase < sw; phase++) dst[at + phase * rl + q] = row[q * sw + phase];
                }
            }
        }
        return dst;
    }

    /** Lane i holds 2i + 1: with {@code selectFrom(a, b)}, the odd lanes of the 32 floats a:b. */
    private static final FloatVector ODD_LANES = ConvF32.EVEN_LANES.add(1f);

    /**
     * The planes of plane rows {@code [rowStart, rowStart + rows)} into {@code planes} from {@code base}: plane
     * {@code (ic * kw + kj) * sh + phase}, row {@code r}, column {@code ox} holds padded input {@code (r * sh + phase,
     * ox * sw + kj * dw)} of channel {@code ic}.
     */
    private static void buildPlanes(float[] image, Geometry g, int rowStart, int rows, int planeSize, float[] planes, int base) {
        int sw = g.sw(), sh = g.sh(), kw = g.kw(), ow = g.ow(), rl = rowLength(g), padded = paddedRows(g);
        for (int ic = 0; ic < g.cin(); ic++) {
            for (int kj = 0; kj < kw; kj++) {
                int c = kj * g.dw(), from = c % sw * rl + c / sw;
                for (int phase = 0; phase < sh; phase++) {
                    int plane = base + ((ic * kw + kj) * sh + phase) * planeSize;
                    for (int r = 0; r < rows; r++) {
                        int yp = (rowStart + r) * sh + phase;
                        if (yp < padded) System.arraycopy(image, ((ic * padded + yp) * sw) * rl + from, planes, plane + r * ow, ow);
                        else Arrays.fill(planes, plane + r * ow, plane + (r + 1) * ow, 0f);
                    }
                    Arrays.fill(planes, plane + rows * ow, plane + planeSize, 0f);
                }
            }
        }
    }

    /**
     * Pixels {@code [p0, p0 + n)} of each channel of one image's gy (from element {@code image}) into {@code staged}
     * from float {@code base}, channel {@code oc} at {@code oc * pitch}, zeros past {@code n} and past the last channel.
     */
    private static void stage(MemorySegment gy, long image, Geometry g, int p0, int n, MemorySegment staged, long base, int pitch) {
        int cout = g.cout(), pixels = g.oh() * g.ow();
        for (int oc = 0; oc < roundUp(cout, ROWS); oc++) {
            long dst = (base + (long) oc * pitch) * Float.BYTES;
            if (oc < cout) {
                MemorySegment.copy(gy, (image + (long) oc * pixels + p0) * Float.BYTES, staged, dst, (long) n * Float.BYTES);
                staged.asSlice(dst + (long) n * Float.BYTES, (long) (pitch - n) * Float.BYTES).fill((byte) 0);
            } else {
                staged.asSlice(dst, (long) pitch * Float.BYTES).fill((byte) 0);
            }
        }
    }

    /**
     * {@code acc[aBase + (r * 3 + j) * 16 + lane] += sum over segments s and v in [0, count) of
     * gy[gyBase[s] + ocOff + r * pitch + v * 64 bytes + lane] * planes[xBase[s] + tj + v * 16 + lane]} for 8 output
     * channels r and the 3 taps j at plane offsets t0, t1, t2: 11 loads per 24 FMAs.
     */
    private static void tile(int segs, int count, MemorySegment gy, long[] gyBase, long ocOff, long pitch, float[] planes, int[] xBase,
                             int t0, int t1, int t2, float[] acc, int aBase) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c02 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS), c12 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c22 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS), c32 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS), c42 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS), c52 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS), c62 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS), c72 = FloatVector.zero(FS);
        for (int s = 0; s < segs; s++) {
            long gb = gyBase[s] + ocOff;
            int xb = xBase[s];
            for (int v = 0; v < count; v++) {
                int xi = xb + v * L;
                FloatVector b0 = FloatVector.fromArray(FS, planes, xi + t0);
                FloatVector b1 = FloatVector.fromArray(FS, planes, xi + t1);
                FloatVector b2 = FloatVector.fromArray(FS, planes, xi + t2);
                long gi = gb + (long) v * (L * Float.BYTES);
                FloatVector a = FloatVector.fromMemorySegment(FS, gy, gi, NO);
                c00 = a.fma(b0, c00);
                c01 = a.fma(b1, c01);
                c02 = a.fma(b2, c02);
                a = FloatVector.fromMemorySegment(FS, gy, gi + pitch, NO);
                c10 = a.fma(b0, c10);
                c11 = a.fma(b1, c11);
                c12 = a.fma(b2, c12);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 2 * pitch, NO);
                c20 = a.fma(b0, c20);
                c21 = a.fma(b1, c21);
                c22 = a.fma(b2, c22);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 3 * pitch, NO);
                c30 = a.fma(b0, c30);
                c31 = a.fma(b1, c31);
                c32 = a.fma(b2, c32);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 4 * pitch, NO);
                c40 = a.fma(b0, c40);
                c41 = a.fma(b1, c41);
                c42 = a.fma(b2, c42);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 5 * pitch, NO);
                c50 = a.fma(b0, c50);
                c51 = a.fma(b1, c51);
                c52 = a.fma(b2, c52);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 6 * pitch, NO);
                c60 = a.fma(b0, c60);
                c61 = a.fma(b1, c61);
                c62 = a.fma(b2, c62);
                a = FloatVector.fromMemorySegment(FS, gy, gi + 7 * pitch, NO);
                c70 = a.fma(b0, c70);
                c71 = a.fma(b1, c71);
                c72 = a.fma(b2, c72);
            }
        }
        // Written out rather than passed to a helper: with its 24 accumulators handed on, C2 compiled the lane tile without
        // its vector intrinsics (the ninth session's ConvLaneWeightGradF32).
        FloatVector.fromArray(FS, acc, aBase).add(c00).intoArray(acc, aBase);
        FloatVector.fromArray(FS, acc, aBase + 1 * L).add(c01).intoArray(acc, aBase + 1 * L);
        FloatVector.fromArray(FS, acc, aBase + 2 * L).add(c02).intoArray(acc, aBase + 2 * L);
        FloatVector.fromArray(FS, acc, aBase + 3 * L).add(c10).intoArray(acc, aBase + 3 * L);
        FloatVector.fromArray(FS, acc, aBase + 4 * L).add(c11).intoArray(acc, aBase + 4 * L);
        FloatVector.fromArray(FS, acc, aBase + 5 * L).add(c12).intoArray(acc, aBase + 5 * L);
        FloatVector.fromArray(FS, acc, aBase + 6 * L).add(c20).intoArray(acc, aBase + 6 * L);
        FloatVector.fromArray(FS, acc, aBase + 7 * L).add(c21).intoArray(acc, aBase + 7 * L);
        FloatVector.fromArray(FS, acc, aBase + 8 * L).add(c22).intoArray(acc, aBase + 8 * L);
        FloatVector.fromArray(FS, acc, aBase + 9 * L).add(c30).intoArray(acc, aBase + 9 * L);
        FloatVector.fromArray(FS, acc, aBase + 10 * L).add(c31).intoArray(acc, aBase + 10 * L);
        FloatVector.fromArray(FS, acc, aBase + 11 * L).add(c32).intoArray(acc, aBase + 11 * L);
        FloatVector.fromArray(FS, acc, aBase + 12 * L).add(c40).intoArray(acc, aBase + 12 * L);
        FloatVector.fromArray(FS, acc, aBase + 13 * L).add(c41).intoArray(acc, aBase + 13 * L);
        FloatVector.fromArray(FS, acc, aBase + 14 * L).add(c42).intoArray(acc, aBase + 14 * L);
        FloatVector.fromArray(FS, acc, aBase + 15 * L).add(c50).intoArray(acc, aBase + 15 * L);
        FloatVector.fromArray(FS, acc, aBase + 16 * L).add(c51).intoArray(acc, aBase + 16 * L);
        FloatVector.fromArray(FS, acc, aBase + 17 * L).add(c52).intoArray(acc, aBase + 17 * L);
        FloatVector.fromArray(FS, acc, aBase + 18 * L).add(c60).intoArray(acc, aBase + 18 * L);
        FloatVector.fromArray(FS, acc, aBase + 19 * L).add(c61).intoArray(acc, aBase + 19 * L);
        FloatVector.fromArray(FS, acc, aBase + 20 * L).add(c62).intoArray(acc, aBase + 20 * L);
        FloatVector.fromArray(FS, acc, aBase + 21 * L).add(c70).intoArray(acc, aBase + 21 * L);
        FloatVector.fromArray(FS, acc, aBase + 22 * L).add(c71).intoArray(acc, aBase + 22 * L);
        FloatVector.fromArray(FS, acc, aBase + 23 * L).add(c72).intoArray(acc, aBase + 23 * L);
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
