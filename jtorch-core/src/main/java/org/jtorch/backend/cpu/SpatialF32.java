package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.SpatialKernels.Pool2d;

/**
 * Float32 paths of {@link CpuSpatialKernels} for contiguous planes with dilation 1 (every pooling of a ResNet).
 * A plane is copied to a heap array (C2 compiles array loops far better than scalar segment access), pooled
 * separably (a vectorised pass over the window's rows, then a scalar pass over its columns), and copied back.
 * Buffers belong to one parallel chunk ({@link Buffers}), so nothing is allocated per plane.
 */
final class SpatialF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = CpuSpatialKernels.F32;
    private static final ValueLayout.OfLong I64 = CpuSpatialKernels.I64;

    /** Planes larger than this take the generic path (the heap copies would double their memory). */
    static final long MAX_PLANE = 1 << 22;

    private SpatialF32() {}

    /** Per-chunk scratch: the input plane, the output plane, its indices, and two rows. */
    static final class Buffers {
        final float[] in;
        final float[] out;
        final long[] idx;
        final float[] rowA;
        final float[] rowB;

        /** Floats of the input and output planes ({@link #maxPoolPairs}'s vectors run up to a vector past them). */
        final int inSize;
        final int outSize;

        Buffers(Pool2d g, boolean indices) {
            inSize = (int) (g.inH() * g.inW());
            outSize = (int) (g.outH() * g.outW());
            in = new float[inSize + 2 * FL];
            out = new float[outSize + FL];
            idx = indices ? new long[outSize + FL] : null;
            rowA = new float[(int) g.inW()];
            rowB = new float[(int) g.inW()];
        }
    }

    static boolean fits(Pool2d g) {
        return g.dH() == 1 && g.dW() == 1 && g.inH() * g.inW() <= MAX_PLANE && g.outH() * g.outW() <= MAX_PLANE;
    }

    // ------------------------------------------------------------------ max pooling

    /**
     * One plane of max pooling with PyTorch's row-major scan semantics: the first maximum in row-major order,
     * or the last NaN. The row pass keeps, per column, the first maximum (the last NaN) and its row; the column
     * pass then breaks ties by flat index, which gives the same element as the row-major scan.
     */
    static void maxPool(MemorySegment is, long ib, MemorySegment os, MemorySegment xs, long ob, Pool2d g, Buffers b) {
        int inW = (int) g.inW();
        int inH = (int) g.inH();
        int outW = (int) g.outW();
        int outH = (int) g.outH();
        float[] in = b.in;
        float[] vm = b.rowA;
        float[] vr = b.rowB;
        MemorySegment.copy(is, F32, ib * 4, in, 0, b.inSize);
        int bound = FS.loopBound(inW);
        for (int oh = 0; oh < outH; oh++) {
            int h0 = oh * g.sH() - g.pH();
            int h1 = Math.min(h0 + g.kH(), inH);
            h0 = Math.max(h0, 0);
            System.arraycopy(in, h0 * inW, vm, 0, inW);
            Arrays.fill(vr, 0, inW, h0);
            for (int ih = h0 + 1; ih < h1; ih++) {
                int base = ih * inW;
                FloatVector row = FloatVector.broadcast(FS, ih);
                int w = 0;
                for (; w < bound; w += FL) {
                    FloatVector v = FloatVector.fromArray(FS, in, base + w);
                    FloatVector m = FloatVector.fromArray(FS, vm, w);
                    // x != x tests NaN: test(IS_NAN) is a bit cast, which outside C2 goes through a heap segment (NativeOperandsTest).
                    VectorMask<Float> up = v.compare(VectorOperators.GT, m).or(v.compare(VectorOperators.NE, v));
                    m.blend(v, up).intoArray(vm, w);
                    FloatVector.fromArray(FS, vr, w).blend(row, up).intoArray(vr, w);
                }
                for (; w < inW; w++) {
                    float v = in[base + w];
                    if (v > vm[w] || v != v) {
                        vm[w] = v;
                        vr[w] = ih;
                    }
                }
            }
            int o = oh * outW;
            for (int ow = 0; ow < outW; ow++, o++) {
                int w0 = ow * g.sW() - g.pW();
                int w1 = Math.min(w0 + g.kW(), inW);
                w0 = Math.max(w0, 0);
                float best = vm[w0];
                int bi = (int) vr[w0] * inW + w0;
                for (int c = w0 + 1; c < w1; c++) {
                    float v = vm[c];
                    int ci = (int) vr[c] * inW + c;
                    if (v != v) {
                        if (best == best || ci > bi) {
                            best = v;
                            bi = ci;
                        }
                    } else if (best == best && (v > best || v == best && ci < bi)) {
                        best = v;
                        bi = ci;
                    }
                }
                b.out[o] = best;
                if (b.idx != null) b.idx[o] = bi;
            }
        }
        MemorySegment.copy(b.out, 0, os, F32, ob * 4, b.outSize);
        if (xs != null) MemorySegment.copy(b.idx, 0, xs, I64, ob * 8, b.outSize);
    }

    /**
     * Whether {@link #maxPoolPairs} serves {@code g}: 16-lane vectors, and 2x2 windows at stride 2 with no padding that
     * all lie inside the plane (the MNIST CNN's and LeNet-5's pools). {@code -Djtorch.pool.pairs=false} sends them to
     * {@link #maxPool}.
     */
    static boolean pairs(Pool2d g) {
        return PAIRS && FL == P && g.kH() == 2 && g.kW() == 2 && g.sH() == 2 && g.sW() == 2 && g.pH() == 0 && g.pW() == 0
                && 2 * g.outH() <= g.inH() && 2 * g.outW() <= g.inW();
    }

    private static final boolean PAIRS = !"false".equals(System.getProperty("jtorch.pool.pairs"));
    private static final VectorSpecies<Float> F16 = FloatVector.SPECIES_512;
    private static final VectorSpecies<Integer> I16 = IntVector.SPECIES_512;
    private static final int P = 16;
    /** A window's left and right columns of 8 windows: the even and the odd lanes of a 16-float row segment (twice). */
    private static final VectorShuffle<Float> LEFT = VectorShuffle.fromValues(F16, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    private static final VectorShuffle<Float> RIGHT = VectorShuffle.fromValues(F16, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    private static final IntVector LEFT_COLUMNS = IntVector.fromArray(I16, new int[] {0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14}, 0);

    /**
     * One plane of 2x2 stride-2 max pooling (see {@link #pairs}), with {@link #maxPool}'s semantics: each window's
     * top pair is reduced, then its bottom pair, then the two, a later element winning when greater or NaN. That is
     * the row-major scan's choice (the first maximum, or the last NaN), since each pair is consecutive in the scan.
     * 8 windows a step, from one 16-float segment of each of their two rows; all 16 lanes are stored, the upper 8 (and
     * loads past a row's end) land on the next windows' slots, which are computed after them, or on the buffers' slack.
     * The general path ran one vector and 8 scalar steps over a 24-pixel row and broke ties by flat index: 10.4 ms for
     * MNIST's [64, 64, 24, 24] in one thread (PyTorch 2.13: about 13); branchy scalar code here read 9.7.
     */
    static void maxPoolPairs(MemorySegment is, long ib, MemorySegment os, MemorySegment xs, long ob, Pool2d g, Buffers b) {
        int inW = (int) g.inW();
        int outW = (int) g.outW();
        int outH = (int) g.outH();
        float[] in = b.in;
        float[] out = b.out;
        long[] idx = b.idx;
        MemorySegment.copy(is, F32, ib * 4, in, 0, 2 * outH * inW);
        for (int oh = 0, row = 0; oh < outH; oh++, row += outW) {
            int top = 2 * oh * inW;
            for (int ow = 0; ow < outW; ow += 8) {
                int at = top + 2 * ow;
                FloatVector t = FloatVector.fromArray(F16, in, at);
                FloatVector u = FloatVector.fromArray(F16, in, at + inW);
                FloatVector a = t.rearrange(LEFT), c = t.rearrange(RIGHT), d = u.rearrange(LEFT), e = u.rearrange(RIGHT);
                // x != x tests NaN (as maxPool: test(IS_NAN) is a bit cast).
                VectorMask<Float> right = c.compare(VectorOperators.GT, a).or(c.compare(VectorOperators.NE, c));
                VectorMask<Float> lowerRight = e.compare(VectorOperators.GT, d).or(e.compare(VectorOperators.NE, e));
                FloatVector upper = a.blend(c, right), lower = d.blend(e, lowerRight);
                VectorMask<Float> down = lower.compare(VectorOperators.GT, upper).or(lower.compare(VectorOperators.NE, lower));
                upper.blend(lower, down).intoArray(out, row + ow);
                if (idx != null) {
                    IntVector left = LEFT_COLUMNS.add(at);
                    IntVector fromUpper = left.lanewise(VectorOperators.ADD, 1, right.cast(I16));
                    IntVector fromLower = left.add(inW).lanewise(VectorOperators.ADD, 1, lowerRight.cast(I16));
                    ((LongVector) fromUpper.blend(fromLower, down.cast(I16)).convertShape(VectorOperators.I2L, LongVector.SPECIES_512, 0))
                            .intoArray(idx, row + ow);
                }
            }
        }
        int n = outH * outW;
        MemorySegment.copy(out, 0, os, F32, ob * 4, n);
        if (xs != null) MemorySegment.copy(idx, 0, xs, I64, ob * 8, n);
    }

    /**
     * One plane of the max-pooling gradient, in place: zero (vectorised), then scatter-add. An index outside the
     * plane comes from a window lying wholly in the padding (its -inf output depends on no input): it adds nothing.
     */
    static void maxPoolBackward(MemorySegment gs, MemorySegment xs, long gb, int n, MemorySegment is, long ib, int m) {
        fill(is, ib, m, 0f);
        for (int j = 0; j < n; j++) {
            long i = xs.getAtIndex(I64, gb + j);
            if (i < 0 || i >= m) continue;
            is.setAtIndex(F32, ib + i, is.getAtIndex(F32, ib + i) + gs.getAtIndex(F32, gb + j));
        }
    }

    // ------------------------------------------------------------------ average pooling

    /** One plane of average pooling: the window's row sums (vectorised), then its column sums over them. */
    static void avgPool(MemorySegment is, long ib, MemorySegment os, long ob, Pool2d g, boolean countIncludePad, long divisorOverride,
                        Buffers b) {
        int inW = (int) g.inW();
        int inH = (int) g.inH();
        int outW = (int) g.outW();
        int outH = (int) g.outH();
        float[] in = b.in;
        float[] rs = b.rowA;
        MemorySegment.copy(is, F32, ib * 4, in, 0, b.inSize);
        int bound = FS.loopBound(inW);
        for (int oh = 0; oh < outH; oh++) {
            int h0 = oh * g.sH() - g.pH();
            int h1 = Math.min(h0 + g.kH(), inH + g.pH());
            int poolH = h1 - h0;
            h0 = Math.max(h0, 0);
            h1 = Math.min(h1, inH);
            int o = oh * outW;
            if (h0 >= h1) {
                Arrays.fill(b.out, o, o + outW, 0f);
                continue;
            }
            System.arraycopy(in, h0 * inW, rs, 0, inW);
            for (int ih = h0 + 1; ih < h1; ih++) {
                int base = ih * inW;
                int w = 0;
                for (; w < bound; w += FL) {
                    FloatVector.fromArray(FS, rs, w).add(FloatVector.fromArray(FS, in, base + w)).intoArray(rs, w);
                }
                for (; w < inW; w++) rs[w] += in[base + w];
            }
            for (int ow = 0; ow < outW; ow++, o++) {
                int w0 = ow * g.sW() - g.pW();
                int w1 = Math.min(w0 + g.kW(), inW + g.pW());
                int poolSize = poolH * (w1 - w0);
                w0 = Math.max(w0, 0);
                w1 = Math.min(w1, inW);
                if (w0 >= w1) {
                    b.out[o] = 0f;
                    continue;
                }
                float sum = 0f;
                for (int c = w0; c < w1; c++) sum += rs[c];
                long divisor = divisorOverride > 0 ? divisorOverride : countIncludePad ? poolSize : (long) (h1 - h0) * (w1 - w0);
                b.out[o] = sum / divisor;
            }
        }
        MemorySegment.copy(b.out, 0, os, F32, ob * 4, b.outSize);
    }

    /**
     * One plane of the average-pooling gradient: per output row, each window's share spread over its columns
     * (scalar), then that row added to each input row of the window (vectorised).
     */
    static void avgPoolBackward(MemorySegment gs, long gb, MemorySegment is, long ib, Pool2d g, boolean countIncludePad,
                                long divisorOverride, Buffers b) {
        int inW = (int) g.inW();
        int inH = (int) g.inH();
        int outW = (int) g.outW();
        int outH = (int) g.outH();
        float[] plane = b.in;
        float[] spread = b.rowA;
        float[] grad = b.out;
        Arrays.fill(plane, 0f);
        MemorySegment.copy(gs, F32, gb * 4, grad, 0, b.outSize);
        int bound = FS.loopBound(inW);
        for (int oh = 0; oh < outH; oh++) {
            int h0 = oh * g.sH() - g.pH();
            int h1 = Math.min(h0 + g.kH(), inH + g.pH());
            int poolH = h1 - h0;
            h0 = Math.max(h0, 0);
            h1 = Math.min(h1, inH);
            if (h0 >= h1) continue;
            Arrays.fill(spread, 0f);
            int o = oh * outW;
            for (int ow = 0; ow < outW; ow++, o++) {
                int w0 = ow * g.sW() - g.pW();
                int w1 = Math.min(w0 + g.kW(), inW + g.pW());
                int poolSize = poolH * (w1 - w0);
                w0 = Math.max(w0, 0);
                w1 = Math.min(w1, inW);
                if (w0 >= w1) continue;
                long divisor = divisorOverride > 0 ? divisorOverride : countIncludePad ? poolSize : (long) (h1 - h0) * (w1 - w0);
                float share = grad[o] / divisor;
                for (int c = w0; c < w1; c++) spread[c] += share;
            }
            for (int ih = h0; ih < h1; ih++) {
                int base = ih * inW;
                int w = 0;
                for (; w < bound; w += FL) {
                    FloatVector.fromArray(FS, plane, base + w).add(FloatVector.fromArray(FS, spread, w)).intoArray(plane, base + w);
                }
                for (; w < inW; w++) plane[base + w] += spread[w];
            }
        }
        MemorySegment.copy(plane, 0, is, F32, ib * 4, b.inSize);
    }

    // ------------------------------------------------------------------ global pooling

    /** Sum of {@code n} floats from element {@code base}, accumulated in float lanes (as PyTorch's vectorised mean). */
    static double sum(MemorySegment s, long base, long n) {
        FloatVector acc = FloatVector.zero(FS);
        long i = 0;
        long off = base * 4;
        for (; i + FL <= n; i += FL) acc = acc.add(FloatVector.fromMemorySegment(FS, s, off + i * 4, LE));
        double r = VectorF32.sumLanes(acc);
        for (; i < n; i++) r += s.getAtIndex(F32, base + i);
        return r;
    }

    /** Sets {@code n} floats from element {@code base} to {@code v}. */
    static void fill(MemorySegment s, long base, long n, float v) {
        FloatVector fv = FloatVector.broadcast(FS, v);
        long i = 0;
        long off = base * 4;
        for (; i + FL <= n; i += FL) fv.intoMemorySegment(s, off + i * 4, LE);
        for (; i < n; i++) s.setAtIndex(F32, base + i, v);
    }
}
