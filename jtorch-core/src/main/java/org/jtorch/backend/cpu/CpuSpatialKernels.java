package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.backend.SpatialKernels;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU's {@link SpatialKernels}, parallel over planes. The scalar loops serve float32 and float64
 * alike (the dtype test is loop-invariant, so C2 unswitches it); the float32 shapes that sit in a
 * ResNet training step have Vector API paths in {@link SpatialF32}.
 */
final class CpuSpatialKernels implements SpatialKernels {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;

    /** Elements of work per parallel chunk (below this, threads cost more than they save). */
    private static final long GRAIN_ELEMENTS = 1 << 15;

    /** The tensor's elements from its storage offset on (none for an empty view whose offset lies past its memory's end). */
    static MemorySegment seg(StridedView t) {
        return t.memory().asSlice(Math.min(t.offset() * t.dtype().byteSize(), t.memory().byteSize()));
    }

    static double ld(MemorySegment s, boolean f32, long i) {
        return f32 ? s.getAtIndex(F32, i) : s.getAtIndex(F64, i);
    }

    static void st(MemorySegment s, boolean f32, long i, double v) {
        if (f32) s.setAtIndex(F32, i, (float) v);
        else s.setAtIndex(F64, i, v);
    }

    private static boolean isF32(StridedView t) {
        if (t.dtype() != DType.FLOAT32 && t.dtype() != DType.FLOAT64) {
            throw new IllegalArgumentException("spatial kernels take float32 or float64, got " + t.dtype());
        }
        return t.dtype() == DType.FLOAT32;
    }

    private static long grain(long workPerPlane) {
        return Math.max(1, GRAIN_ELEMENTS / Math.max(1, workPerPlane));
    }

    // ------------------------------------------------------------------ max pooling

    @Override
    public void maxPool2d(StridedView in, StridedView out, StridedView indices, Pool2d g) {
        boolean f32 = isF32(in);
        MemorySegment is = seg(in);
        MemorySegment os = seg(out);
        MemorySegment xs = indices == null ? null : seg(indices);
        long inPlane = g.inH() * g.inW();
        long outPlane = g.outH() * g.outW();
        boolean fast = f32 && SpatialF32.fits(g);
        boolean pairs = fast && SpatialF32.pairs(g);
        Parallel.forRange(g.planes(), grain(outPlane * g.kH() * g.kW()), (b, e) -> {
            SpatialF32.Buffers buf = fast ? new SpatialF32.Buffers(g, xs != null) : null;
            for (long p = b; p < e; p++) {
                if (pairs) SpatialF32.maxPoolPairs(is, p * inPlane, os, xs, p * outPlane, g, buf);
                else if (fast) SpatialF32.maxPool(is, p * inPlane, os, xs, p * outPlane, g, buf);
                else maxPlane(is, os, xs, f32, p * inPlane, p * outPlane, g);
            }
        });
    }

    private static void maxPlane(MemorySegment is, MemorySegment os, MemorySegment xs, boolean f32, long ib, long ob, Pool2d g) {
        long inH = g.inH();
        long inW = g.inW();
        for (long oh = 0; oh < g.outH(); oh++) {
            long h0 = oh * g.sH() - g.pH();
            long h1 = Math.min(h0 + (long) (g.kH() - 1) * g.dH() + 1, inH);
            while (h0 < 0) h0 += g.dH();
            for (long ow = 0; ow < g.outW(); ow++) {
                long w0 = ow * g.sW() - g.pW();
                long w1 = Math.min(w0 + (long) (g.kW() - 1) * g.dW() + 1, inW);
                while (w0 < 0) w0 += g.dW();
                long maxIndex = h0 * inW + w0;
                double max = Double.NEGATIVE_INFINITY;
                for (long ih = h0; ih < h1; ih += g.dH()) {
                    for (long iw = w0; iw < w1; iw += g.dW()) {
                        long index = ih * inW + iw;
                        double v = ld(is, f32, ib + index);
                        if (v > max || Double.isNaN(v)) {
                            max = v;
                            maxIndex = index;
                        }
                    }
                }
                long o = ob + oh * g.outW() + ow;
                st(os, f32, o, max);
                if (xs != null) xs.setAtIndex(I64, o, maxIndex);
            }
        }
    }

    @Override
    public void maxPoolBackward(StridedView gradOut, StridedView indices, StridedView gradIn) {
        boolean f32 = isF32(gradOut);
        MemorySegment gs = seg(gradOut);
        MemorySegment xs = seg(indices);
        MemorySegment is = seg(gradIn);
        long planes = gradOut.size(0);
        long n = gradOut.numel() / Math.max(1, planes);
        long m = gradIn.numel() / Math.max(1, planes);
        if (f32 && m <= SpatialF32.MAX_PLANE && n <= SpatialF32.MAX_PLANE) {
            Parallel.forRange(planes, grain(n + m), (b, e) -> {
                for (long p = b; p < e; p++) SpatialF32.maxPoolBackward(gs, xs, p * n, (int) n, is, p * m, (int) m);
            });
            return;
        }
        Parallel.forRange(planes, grain(n + m), (b, e) -> {
            for (long p = b; p < e; p++) {
                long gb = p * n;
                long ib = p * m;
                for (long i = 0; i < m; i++) st(is, f32, ib + i, 0);
                // An index outside the plane: a window wholly in the padding, whose output depends on no input.
                if (f32) {
                    for (long j = 0; j < n; j++) {
                        long i = xs.getAtIndex(I64, gb + j);
                        if (i >= 0 && i < m) is.setAtIndex(F32, ib + i, is.getAtIndex(F32, ib + i) + gs.getAtIndex(F32, gb + j));
                    }
                } else {
                    for (long j = 0; j < n; j++) {
                        long i = xs.getAtIndex(I64, gb + j);
                        if (i >= 0 && i < m) is.setAtIndex(F64, ib + i, is.getAtIndex(F64, ib + i) + gs.getAtIndex(F64, gb + j));
                    }
                }
            }
        });
    }

    // ------------------------------------------------------------------ average pooling

    @Override
    public void avgPool2d(StridedView in, StridedView out, Pool2d g, boolean countIncludePad, long divisorOverride) {
        boolean f32 = isF32(in);
        MemorySegment is = seg(in);
        MemorySegment os = seg(out);
        long inPlane = g.inH() * g.inW();
        long outPlane = g.outH() * g.outW();
        boolean fast = f32 && SpatialF32.fits(g);
        Parallel.forRange(g.planes(), grain(outPlane * g.kH() * g.kW()), (b, e) -> {
            SpatialF32.Buffers buf = fast ? new SpatialF32.Buffers(g, false) : null;
            for (long p = b; p < e; p++) {
                if (fast) SpatialF32.avgPool(is, p * inPlane, os, p * outPlane, g, countIncludePad, divisorOverride, buf);
                else avgPlane(is, os, f32, p * inPlane, p * outPlane, g, countIncludePad, divisorOverride, false);
            }
        });
    }

    @Override
    public void avgPool2dBackward(StridedView gradOut, StridedView gradIn, Pool2d g, boolean countIncludePad,
                                  long divisorOverride) {
        boolean f32 = isF32(gradOut);
        MemorySegment gs = seg(gradOut);
        MemorySegment is = seg(gradIn);
        long inPlane = g.inH() * g.inW();
        long outPlane = g.outH() * g.outW();
        boolean fast = f32 && SpatialF32.fits(g);
        Parallel.forRange(g.planes(), grain(outPlane * g.kH() * g.kW()), (b, e) -> {
            SpatialF32.Buffers buf = fast ? new SpatialF32.Buffers(g, false) : null;
            for (long p = b; p < e; p++) {
                if (fast) {
                    SpatialF32.avgPoolBackward(gs, p * outPlane, is, p * inPlane, g, countIncludePad, divisorOverride, buf);
                    continue;
                }
                for (long i = 0; i < inPlane; i++) st(is, f32, p * inPlane + i, 0);
                avgPlane(is, gs, f32, p * inPlane, p * outPlane, g, countIncludePad, divisorOverride, true);
            }
        });
    }

    /** One plane of average pooling, or of its gradient when {@code backward} ({@code os} then holds the gradient). */
    private static void avgPlane(MemorySegment is, MemorySegment os, boolean f32, long ib, long ob, Pool2d g,
                                 boolean countIncludePad, long divisorOverride, boolean backward) {
        long inH = g.inH();
        long inW = g.inW();
        for (long oh = 0; oh < g.outH(); oh++) {
            long h0 = oh * g.sH() - g.pH();
            long h1 = Math.min(h0 + g.kH(), inH + g.pH());
            long poolH = h1 - h0;
            h0 = Math.max(h0, 0);
            h1 = Math.min(h1, inH);
            for (long ow = 0; ow < g.outW(); ow++) {
                long w0 = ow * g.sW() - g.pW();
                long w1 = Math.min(w0 + g.kW(), inW + g.pW());
                long poolSize = poolH * (w1 - w0);
                w0 = Math.max(w0, 0);
                w1 = Math.min(w1, inW);
                long o = ob + oh * g.outW() + ow;
                if (h0 >= h1 || w0 >= w1) {
                    if (!backward) st(os, f32, o, 0);
                    continue;
                }
                long divisor = divisorOverride > 0 ? divisorOverride : countIncludePad ? poolSize : (h1 - h0) * (w1 - w0);
                if (backward) {
                    double share = ld(os, f32, o) / divisor;
                    for (long ih = h0; ih < h1; ih++) {
                        for (long iw = w0; iw < w1; iw++) {
                            long at = ib + ih * inW + iw;
                            st(is, f32, at, ld(is, f32, at) + share);
                        }
                    }
                } else {
                    double sum = 0;
                    for (long ih = h0; ih < h1; ih++) {
                        for (long iw = w0; iw < w1; iw++) sum += ld(is, f32, ib + ih * inW + iw);
                    }
                    st(os, f32, o, sum / divisor);
                }
            }
        }
    }

    // ------------------------------------------------------------------ adaptive pooling

    static long start(long o, long in, long out) {
        return Math.floorDiv(o * in, out);
    }

    static long end(long o, long in, long out) {
        return -Math.floorDiv(-(o + 1) * in, out);
    }

    @Override
    public void adaptiveAvgPool2d(StridedView in, StridedView out) {
        boolean f32 = isF32(in);
        MemorySegment is = seg(in);
        MemorySegment os = seg(out);
        long planes = in.size(0);
        long inH = in.size(1);
        long inW = in.size(2);
        long outH = out.size(1);
        long outW = out.size(2);
        long inPlane = inH * inW;
        long outPlane = outH * outW;
        long outRows = outPlane == 0 ? 0 : outH; // 2^62 x 0 cells: no rows to visit
        if (f32 && outPlane == 1) {
            // Global pooling (the ResNet head): one mean over each contiguous plane.
            Parallel.forRange(planes, grain(inPlane), (b, e) -> {
                for (long p = b; p < e; p++) os.setAtIndex(F32, p, (float) (SpatialF32.sum(is, p * inPlane, inPlane) / inPlane));
            });
            return;
        }
        Parallel.forRange(planes, grain(Math.max(inPlane, outPlane)), (b, e) -> {
            for (long p = b; p < e; p++) {
                long ib = p * inPlane;
                for (long oh = 0; oh < outRows; oh++) {
                    long h0 = start(oh, inH, outH);
                    long h1 = end(oh, inH, outH);
                    for (long ow = 0; ow < outW; ow++) {
                        long w0 = start(ow, inW, outW);
                        long w1 = end(ow, inW, outW);
                        double sum = 0;
                        for (long ih = h0; ih < h1; ih++) {
                            for (long iw = w0; iw < w1; iw++) sum += ld(is, f32, ib + ih * inW + iw);
                        }
                        st(os, f32, p * outPlane + oh * outW + ow, sum / ((h1 - h0) * (w1 - w0)));
                    }
                }
            }
        });
    }

    @Override
    public void adaptiveAvgPool2dBackward(StridedView gradOut, StridedView gradIn) {
        boolean f32 = isF32(gradOut);
        MemorySegment gs = seg(gradOut);
        MemorySegment is = seg(gradIn);
        long planes = gradIn.size(0);
        long inH = gradIn.size(1);
        long inW = gradIn.size(2);
        long outH = gradOut.size(1);
        long outW = gradOut.size(2);
        long inPlane = inH * inW;
        long outPlane = outH * outW;
        long outRows = outPlane == 0 ? 0 : outH; // 2^62 x 0 cells: no rows to visit
        if (f32 && outPlane == 1) {
            Parallel.forRange(planes, grain(inPlane), (b, e) -> {
                for (long p = b; p < e; p++) SpatialF32.fill(is, p * inPlane, inPlane, gs.getAtIndex(F32, p) / inPlane);
            });
            return;
        }
        Parallel.forRange(planes, grain(Math.max(inPlane, outPlane)), (b, e) -> {
            for (long p = b; p < e; p++) {
                long ib = p * inPlane;
                for (long i = 0; i < inPlane; i++) st(is, f32, ib + i, 0);
                for (long oh = 0; oh < outRows; oh++) {
                    long h0 = start(oh, inH, outH);
                    long h1 = end(oh, inH, outH);
                    for (long ow = 0; ow < outW; ow++) {
                        long w0 = start(ow, inW, outW);
                        long w1 = end(ow, inW, outW);
                        double share = ld(gs, f32, p * outPlane + oh * outW + ow) / ((h1 - h0) * (w1 - w0));
                        for (long ih = h0; ih < h1; ih++) {
                            for (long iw = w0; iw < w1; iw++) {
                                long at = ib + ih * inW + iw;
                                st(is, f32, at, ld(is, f32, at) + share);
                            }
                        }
                    }
                }
            }
        });
    }

    @Override
    public void adaptiveMaxPool2d(StridedView in, StridedView out, StridedView indices) {
        boolean f32 = isF32(in);
        MemorySegment is = seg(in);
        MemorySegment os = seg(out);
        MemorySegment xs = seg(indices);
        long planes = in.size(0);
        long inH = in.size(1);
        long inW = in.size(2);
        long outH = out.size(1);
        long outW = out.size(2);
        long inPlane = inH * inW;
        long outPlane = outH * outW;
        long outRows = outPlane == 0 ? 0 : outH; // 2^62 x 0 cells: no rows to visit
        Parallel.forRange(planes, grain(Math.max(inPlane, outPlane)), (b, e) -> {
            for (long p = b; p < e; p++) {
                long ib = p * inPlane;
                for (long oh = 0; oh < outRows; oh++) {
                    long h0 = start(oh, inH, outH);
                    long h1 = end(oh, inH, outH);
                    for (long ow = 0; ow < outW; ow++) {
                        long w0 = start(ow, inW, outW);
                        long w1 = end(ow, inW, outW);
                        long maxIndex = h0 * inW + w0;
                        double max = Double.NEGATIVE_INFINITY;
                        for (long ih = h0; ih < h1; ih++) {
                            for (long iw = w0; iw < w1; iw++) {
                                long index = ih * inW + iw;
                                double v = ld(is, f32, ib + index);
                                if (v > max || Double.isNaN(v)) {
                                    max = v;
                                    maxIndex = index;
                                }
                            }
                        }
                        long o = p * outPlane + oh * outW + ow;
                        st(os, f32, o, max);
                        xs.setAtIndex(I64, o, maxIndex);
                    }
                }
            }
        });
    }
}
