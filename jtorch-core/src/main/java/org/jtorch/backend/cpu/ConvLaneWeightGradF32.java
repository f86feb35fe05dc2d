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
 * The float32 weight gradient of convolutions with few taps ({@code cin * kh * kw}, as a network's first layer on
 * 3-channel images) with output pixels in the vector lanes: {@code gw[oc][tap] = sum over images and pixels of
 * gy[oc][pixel] * x[tap's shift of pixel]}. Both operands stay channel-major (NCHW), so neither is transposed:
 * each image's gy is copied into rows of whole 16-pixel vectors (zeros past each row's end and past the last output
 * channel), its input into zero-padded planes, and a register tile of 8 output channels x 3 taps multiplies 16
 * pixels of gy by the input shifted by each tap, summing per lane. The lanes are added up once per call.
 *
 * <p>The direct weight gradient ({@link ConvDirectF32}) puts taps in the lanes and gy in broadcasts; with 27 taps
 * (ResNet-20's 3 -> 16 stem) its vectors are mostly idle lanes, and transposing gy and packing each pixel's window
 * rows took half its time. Here every lane is a real pixel when the rows are whole vectors.
 *
 * <p>Each chunk of images accumulates into its own lanes; the chunks' sums are added in chunk order, so results do
 * not depend on the thread count.
 */
final class ConvLaneWeightGradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final int L = 16;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Output channels and taps of one register tile. */
    static final int ROWS = 8, TAPS = 3;
    /** Switch: {@code -Djtorch.conv.laneWeightGrad=false} leaves these shapes to {@link ConvDirectF32}. */
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.laneWeightGrad"));
    /** Most taps served: beyond a 48-tap window row the direct gradient's tiles fill their lanes. */
    static final int MAX_TAPS = 48;
    /**
     * Output pixels of gy one tile's sweep covers: a 32-pixel image whole, its 8 channels (32 KB) read from L2 by each
     * 3-tap tile. ResNet-20's stem, one thread: 1.72-1.74 ms a call against 1.88-1.94 in sweeps of 512 pixels.
     */
    private static final int PASS_PIXELS = 1024;

    private ConvLaneWeightGradF32() {}

    /** Per-thread buffers, grown on demand. */
    private static final class Work {
        /** One image's gy in rows of whole vectors, native and 64-byte aligned (see {@link #staged}). */
        private MemorySegment gy = MemorySegment.NULL;
        /** One image's zero-padded input planes. */
        private float[] x = new float[0];

        /** {@link #gy}, at least {@code floats}, zero-filled: the padding past rows and channels must read 0. */
        MemorySegment staged(int floats) {
            // Aligned so that each gy vector is one cache line: on the heap (16 bytes past a line at best) every one of the
            // tile's 8 gy loads straddled two lines.
            if (gy.byteSize() < (long) floats * Float.BYTES) gy = Arena.ofAuto().allocate((long) floats * Float.BYTES, 64);
            gy.asSlice(0, (long) floats * Float.BYTES).fill((byte) 0);
            return gy;
        }

        /** {@link #x}, at least {@code floats}, zero-filled: the border must read 0. */
        float[] image(int floats) {
            x = ConvF32.grow(x, floats);
            Arrays.fill(x, 0, floats, 0f);
            return x;
        }
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /**
     * Whether {@link #weightGrad} serves {@code g}: 16-float vectors, stride 1 along rows, one group, at most
     * {@link #MAX_TAPS} taps, and output rows at least three quarters real pixels once rounded up to whole vectors.
     */
    static boolean handles(Geometry g) {
        return ENABLED && FloatVector.SPECIES_PREFERRED.length() == L && g.groups() == 1 && g.sw() == 1 && !g.isPointwise()
                && g.kg() <= MAX_TAPS && 4 * g.ow() >= 3 * roundUp(g.ow(), L);
    }

    /** {@code gw = dL/dw} for contiguous float32 gy {@code (n, cout, oh, ow)}, x {@code (n, cin, h, w)} and gw {@code (cout, cin, kh, kw)}. */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cout = g.cout(), taps = g.kg();
        int coutP = roundUp(cout, ROWS), tapsP = roundUp(taps, TAPS);
        int wq = roundUp(g.ow(), L);
        int wpad = Math.max(g.w() + 2 * g.pw(), wq + (g.kw() - 1) * g.dw());
        int hp = g.h() + 2 * g.ph();
        int plane = hp * wpad;
        // Each tap's offset in the padded planes (taps past the last read the first's and are discarded).
        int[] tapOff = new int[tapsP];
        for (int t = 0; t < taps; t++) {
            int ic = t / (g.kh() * g.kw()), ki = t / g.kw() % g.kh(), kj = t % g.kw();
            tapOff[t] = ic * plane + ki * g.dh() * wpad + kj * g.dw();
        }
        // Each gy vector's window corner: vector v covers output row v / (wq / 16), from column v % (wq / 16) * 16.
        int perRow = wq / L, vectors = g.oh() * perRow;
        int[] xo = new int[vectors];
        for (int v = 0; v < vectors; v++) xo[v] = v / perRow * g.sh() * wpad + v % perRow * L;
        int passVectors = Math.max(perRow, PASS_PIXELS / wq * perRow);
        int accSize = coutP * tapsP * L;
        // gy's channels one vector more than a channel's pixels apart: at a multiple of 4 KB (a 32-pixel image's 1024
        // floats) the tile's 8 channel streams would share L1 sets. Staged rather than read in place from the tensor: the
        // stem measured 1.97-2.15 ms against 2.20-2.30 in place alone, but ResNet-20 steps 508-515 ms against 489-491
        // before this class (one thread, load 27-33; whether that was the load is open). The staging buffer is native and
        // 64-byte aligned, and the pitch a multiple of 16 floats, so that every gy vector the tile loads is one cache line.
        long pixels = (long) g.oh() * g.ow();
        int pitch = vectors * L + L;
        int chunks = (int) Math.max(1, Math.min(g.n(), Parallel.inParallelRegion() ? 1 : Parallel.numThreads()));
        float[][] partial = new float[chunks][];
        Parallel.forRange(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                Work wk = WORK.get();
                float[] acc = new float[accSize];
                MemorySegment staged = wk.staged(coutP * pitch);
                // Slack past the last plane: the discarded lanes of the last row's vectors read up to a row further.
                float[] xp = wk.image(g.cin() * plane + wpad);
                long n0 = c * g.n() / chunks, n1 = (c + 1) * g.n() / chunks;
                for (long n = n0; n < n1; n++) {
                    long image = gyOff + n * cout * pixels;
                    stageGradOut(gy, image, g, wq, pitch, staged);
                    copyInput(x, xOff + n * g.cin() * g.h() * g.w(), g, wpad, plane, xp);
                    for (int v0 = 0; v0 < vectors; v0 += passVectors) {
                        int v1 = Math.min(vectors, v0 + passVectors);
                        for (int oc = 0; oc < coutP; oc += ROWS) {
                            for (int t = 0; t < tapsP; t += TAPS) {
                                tile(v0, v1, staged, oc * pitch, pitch, xp, xo, tapOff[t], tapOff[t + 1], tapOff[t + 2], acc,
                                        (oc * tapsP + t * ROWS) * L);
                            }
                        }
                    }
                }
                partial[(int) c] = acc;
            }
        });
        addLanes(partial, cout, taps, gw, gwOff);
    }

    /**
     * {@code gw[oc][t]} = the sum over chunks, in order, of the 16 lanes {@link #tile}s of 8 output channels x 3 taps left in
     * each chunk's {@code acc} (also {@link ConvFewChannelWeightGradF32}'s, whose tiles lay out their lanes alike).
     */
    static void addLanes(float[][] partial, int cout, int taps, MemorySegment gw, long gwOff) {
        int tapsP = roundUp(taps, TAPS);
        for (int oc = 0; oc < cout; oc++) {
            for (int t = 0; t < taps; t++) {
                int at = (oc / ROWS * ROWS * tapsP + t / TAPS * TAPS * ROWS + oc % ROWS * TAPS + t % TAPS) * L;
                // The lanes in a fixed order, chunk by chunk: the stem's 432 sums through VectorF32.sumLanes' shuffles made a
                // call without its tiles and copies 0.16 ms against 0.09 (scratch timing, one thread).
                float v = 0f;
                for (float[] acc : partial) {
                    float s = 0f;
                    for (int lane = 0; lane < L; lane++) s += acc[at + lane];
                    v += s;
                }
                gw.set(F32, (gwOff + (long) oc * taps + t) * Float.BYTES, v);
            }
        }
    }

    /**
     * One image's gy (from element {@code off}) into {@code staged[oc * pitch + oy * wq + ox]}; the zeros past each row
     * and past the last channel are left as they are. Rows of whole vectors go a channel at a time (a copy per 32-float
     * row cost the stem about 0.5 ms a call).
     */
    private static void stageGradOut(MemorySegment gy, long off, Geometry g, int wq, int pitch, MemorySegment staged) {
        int oh = g.oh(), ow = g.ow();
        for (int oc = 0; oc < g.cout(); oc++) {
            long src = (off + (long) oc * oh * ow) * Float.BYTES;
            if (ow == wq) {
                MemorySegment.copy(gy, src, staged, (long) oc * pitch * Float.BYTES, (long) oh * ow * Float.BYTES);
            } else {
                for (int oy = 0; oy < oh; oy++) {
                    MemorySegment.copy(gy, src + (long) oy * ow * Float.BYTES, staged, ((long) oc * pitch + oy * wq) * Float.BYTES, (long) ow * Float.BYTES);
                }
            }
        }
    }

    /** One image into zero-bordered planes {@code xp[ic * plane + (y + ph) * wpad + x + pw]}; the border is left as it is. */
    private static void copyInput(MemorySegment x, long off, Geometry g, int wpad, int plane, float[] xp) {
        int h = g.h(), w = g.w();
        for (int ic = 0; ic < g.cin(); ic++) {
            for (int y = 0; y < h; y++) {
                MemorySegment.copy(x, F32, (off + ((long) ic * h + y) * w) * Float.BYTES, xp, ic * plane + (y + g.ph()) * wpad + g.pw(), w);
            }
        }
    }

    /**
     * {@code acc[aBase + (r * 3 + j) * 16 + lane] += sum over v in [v0, v1) of gp[gBase + r * gs + v * 16 + lane] *
     * xp[xo[v] + tj + lane]} for 8 output channels r and the 3 taps j at offsets t0, t1, t2: 11 loads per 24 FMAs.
     */
    private static void tile(int v0, int v1, MemorySegment gp, int gBase, int gs, float[] xp, int[] xo, int t0, int t1, int t2,
                             float[] acc, int aBase) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c02 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS), c12 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c22 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS), c32 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS), c42 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS), c52 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS), c62 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS), c72 = FloatVector.zero(FS);
        for (int v = v0; v < v1; v++) {
            int xi = xo[v];
            FloatVector b0 = FloatVector.fromArray(FS, xp, xi + t0);
            FloatVector b1 = FloatVector.fromArray(FS, xp, xi + t1);
            FloatVector b2 = FloatVector.fromArray(FS, xp, xi + t2);
            int gi = gBase + v * L;
            FloatVector a = FloatVector.fromMemorySegment(FS, gp, (long) gi * Float.BYTES, NO);
            c00 = a.fma(b0, c00);
            c01 = a.fma(b1, c01);
            c02 = a.fma(b2, c02);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + gs) * Float.BYTES, NO);
            c10 = a.fma(b0, c10);
            c11 = a.fma(b1, c11);
            c12 = a.fma(b2, c12);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 2 * gs) * Float.BYTES, NO);
            c20 = a.fma(b0, c20);
            c21 = a.fma(b1, c21);
            c22 = a.fma(b2, c22);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 3 * gs) * Float.BYTES, NO);
            c30 = a.fma(b0, c30);
            c31 = a.fma(b1, c31);
            c32 = a.fma(b2, c32);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 4 * gs) * Float.BYTES, NO);
            c40 = a.fma(b0, c40);
            c41 = a.fma(b1, c41);
            c42 = a.fma(b2, c42);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 5 * gs) * Float.BYTES, NO);
            c50 = a.fma(b0, c50);
            c51 = a.fma(b1, c51);
            c52 = a.fma(b2, c52);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 6 * gs) * Float.BYTES, NO);
            c60 = a.fma(b0, c60);
            c61 = a.fma(b1, c61);
            c62 = a.fma(b2, c62);
            a = FloatVector.fromMemorySegment(FS, gp, (long) (gi + 7 * gs) * Float.BYTES, NO);
            c70 = a.fma(b0, c70);
            c71 = a.fma(b1, c71);
            c72 = a.fma(b2, c72);
        }
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
