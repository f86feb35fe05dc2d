package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.DType;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.UnaryOp;
import org.jtorch.op.StridedView;

/**
 * CPU elementwise kernels: copy, fill, unary, binary and where over strided tensors of any dtype.
 *
 * <p>Two paths. The fast path handles float32 rows with unit or zero (broadcast) stride using the
 * Vector API, for the ops training spends its time in. The generic path handles everything else by
 * converting a row, a block at a time, into double (floating compute) or long (integral compute)
 * buffers, applying the op's scalar definition, and converting back; its results are the reference.
 */
final class ElementwiseKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per block in the generic path: buffers stay in L1. */
    static final int BLOCK = 256;
    /** Minimum elements per thread before an op goes parallel (~ a few microseconds of work). */
    static final long GRAIN = 32_768;

    private ElementwiseKernels() {}

    // ---------------------------------------------------------------- copy and fill

    private static final java.lang.foreign.ValueLayout.OfInt I32 = java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;

    /**
     * Copies {@code len} 4-byte elements between strided rows, bits unchanged (a strided view's copy, such
     * as {@code x[:, :, ::2, ::2]}). A source stride of two elements gathers 16 at a time with one
     * two-vector permute.
     */
    private static void copy32(MemorySegment ss, long so, long sStride, MemorySegment ds, long d0, long dStride, long len) {
        long i = 0;
        if (sStride == 8 && dStride == 4 && FL == 16) {
            for (; i + 16 <= len && so + 8 * i + 128 <= ss.byteSize(); i += 16) {
                FloatVector a = FloatVector.fromMemorySegment(FS, ss, so + 8 * i, LE);
                FloatVector b = FloatVector.fromMemorySegment(FS, ss, so + 8 * i + 64, LE);
                ConvF32.EVEN_LANES.selectFrom(a, b).intoMemorySegment(ds, d0 + 4 * i, LE);
            }
        }
        for (; i < len; i++) ds.set(I32, d0 + i * dStride, ss.get(I32, so + i * sStride));
    }

    static void copy(StridedView src, StridedView dst) {
        DType st = src.dtype();
        DType dt = dst.dtype();
        MemorySegment ss = src.memory();
        MemorySegment ds = dst.memory();
        ElementwiseIteration it = new ElementwiseIteration(dst, src);
        boolean sameType = st == dt;
        boolean integral = !st.isFloatingPoint() && !dt.isFloatingPoint();
        long es = dt.byteSize();
        boolean bulk = sameType && it.innerByteStride(0) == es && it.innerByteStride(1) == es;
        boolean half = HalfConversion.supports(st, dt) && it.innerByteStride(0) == es && it.innerByteStride(1) == st.byteSize();
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            if (half) {
                it.forEachRow(begin, end, (off, len) -> HalfConversion.convert(st, ss, off[1], dt, ds, off[0], len));
                return;
            }
            double[] dbuf = integral ? null : new double[(int) Math.min(BLOCK, end - begin)];
            long[] lbuf = integral ? new long[(int) Math.min(BLOCK, end - begin)] : null;
            long dStride = it.innerByteStride(0);
            long sStride = it.innerByteStride(1);
            it.forEachRow(begin, end, (off, len) -> {
                if (bulk) {
                    MemorySegment.copy(ss, off[1], ds, off[0], len * es);
                    return;
                }
                if (sameType && es == 4) {
                    copy32(ss, off[1], sStride, ds, off[0], dStride, len);
                    return;
                }
                for (long done = 0; done < len; done += BLOCK) {
                    int n = (int) Math.min(BLOCK, len - done);
                    long so = off[1] + done * sStride;
                    long d0 = off[0] + done * dStride;
                    if (integral) {
                        ElementIO.load(st, ss, so, sStride, n, lbuf);
                        ElementIO.store(dt, ds, d0, dStride, n, lbuf);
                    } else {
                        ElementIO.load(st, ss, so, sStride, n, dbuf);
                        ElementIO.store(dt, ds, d0, dStride, n, dbuf);
                    }
                }
            });
        });
    }

    static void fill(StridedView dst, double value, long longValue) {
        DType dt = dst.dtype();
        MemorySegment ds = dst.memory();
        ElementwiseIteration it = new ElementwiseIteration(dst);
        long es = dt.byteSize();
        boolean zeroBits = dt.isFloatingPoint() ? Double.doubleToRawLongBits(value) == 0 : longValue == 0;
        boolean contiguous = it.innerByteStride(0) == es;
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            long stride = it.innerByteStride(0);
            it.forEachRow(begin, end, (off, len) -> {
                if (zeroBits && contiguous) {
                    ds.asSlice(off[0], len * es).fill((byte) 0);
                } else if (dt == DType.FLOAT32 && contiguous) {
                    fillF32(ds, off[0], len, (float) value);
                } else if (dt.isFloatingPoint()) {
                    for (long i = 0; i < len; i++) ElementIO.setDouble(dt, ds, off[0] + i * stride, value);
                } else {
                    for (long i = 0; i < len; i++) ElementIO.setLong(dt, ds, off[0] + i * stride, longValue);
                }
            });
        });
    }

    private static void fillF32(MemorySegment s, long off, long n, float v) {
        FloatVector vv = FloatVector.broadcast(FS, v);
        long i = 0;
        for (long upper = n - n % FL; i < upper; i += FL) vv.intoMemorySegment(s, off + i * 4, LE);
        for (; i < n; i++) s.set(ElementIO.F32, off + i * 4, v);
    }

    // ---------------------------------------------------------------- unary

    static void unary(UnaryOp op, StridedView x, StridedView out, DType compute, double p0, double p1) {
        MemorySegment xs = x.memory();
        MemorySegment os = out.memory();
        DType xt = x.dtype();
        DType ot = out.dtype();
        ElementwiseIteration it = new ElementwiseIteration(out, x);
        boolean fast = xt == DType.FLOAT32 && ot == DType.FLOAT32 && compute == DType.FLOAT32
                && it.innerByteStride(0) == 4 && it.innerByteStride(1) == 4 && VectorF32.hasUnary(op);
        // bf16/f16 in and out, computed in f32: converted a block at a time through an f32 buffer into the f32 kernel.
        boolean half = isHalf(xt) && ot == xt && compute == xt && it.innerByteStride(0) == 2
                && it.innerByteStride(1) == 2 && VectorF32.hasUnary(op);
        boolean floating = compute.isFloatingPoint();
        long lp0 = (long) p0;
        long lp1 = (long) p1;
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            int cap = (int) Math.min(BLOCK, end - begin);
            double[] dbuf = !fast && !half && floating ? new double[cap] : null;
            long[] lbuf = !fast && !half && !floating ? new long[cap] : null;
            MemorySegment fbuf = half ? halfScratch(0) : null;
            long oStride = it.innerByteStride(0);
            long xStride = it.innerByteStride(1);
            it.forEachRow(begin, end, (off, len) -> {
                if (fast) {
                    VectorF32.unary(op, xs, off[1], os, off[0], len, (float) p0, (float) p1);
                    return;
                }
                if (half) {
                    for (long done = 0; done < len; done += BLOCK) {
                        int n = (int) Math.min(BLOCK, len - done);
                        HalfConversion.convert(xt, xs, off[1] + done * 2, DType.FLOAT32, fbuf, 0, n);
                        VectorF32.unary(op, fbuf, 0, fbuf, 0, n, (float) p0, (float) p1);
                        HalfConversion.convert(DType.FLOAT32, fbuf, 0, ot, os, off[0] + done * 2, n);
                    }
                    return;
                }
                for (long done = 0; done < len; done += BLOCK) {
                    int n = (int) Math.min(BLOCK, len - done);
                    long xo = off[1] + done * xStride;
                    long oo = off[0] + done * oStride;
                    if (floating) {
                        ElementIO.load(xt, xs, xo, xStride, n, dbuf);
                        if (compute != DType.FLOAT64) roundTo(compute, dbuf, n);
                        for (int i = 0; i < n; i++) dbuf[i] = op.apply(dbuf[i], p0, p1);
                        ElementIO.store(ot, os, oo, oStride, n, dbuf);
                    } else {
                        ElementIO.load(xt, xs, xo, xStride, n, lbuf);
                        for (int i = 0; i < n; i++) lbuf[i] = op.applyLong(lbuf[i], lp0, lp1);
                        ElementIO.store(ot, os, oo, oStride, n, lbuf);
                    }
                }
            });
        });
    }

    /**
     * Per-thread off-heap f32 buffers of BLOCK floats for the half-precision paths (Vector API loads from
     * heap segments were ~10x slower here); freed with the thread.
     */
    private static final ThreadLocal<MemorySegment> HALF_SCRATCH =
            ThreadLocal.withInitial(() -> java.lang.foreign.Arena.ofAuto().allocate(3L * BLOCK * 4, 64));

    private static MemorySegment halfScratch(int i) {
        return HALF_SCRATCH.get().asSlice(i * BLOCK * 4L, BLOCK * 4L);
    }

    /** {@code n} contiguous half-precision or float32 values into float32 scratch; offsets in bytes. */
    private static void toF32(DType t, MemorySegment src, long off, MemorySegment dst, int n) {
        if (t == DType.FLOAT32) MemorySegment.copy(src, off, dst, 0, 4L * n);
        else HalfConversion.convert(t, src, off, DType.FLOAT32, dst, 0, n);
    }

    private static boolean isHalf(DType t) {
        return t == DType.BFLOAT16 || t == DType.FLOAT16;
    }

    /** Rounds inputs to the compute dtype's precision, as if converted to it before the op (e.g. f64 input, f32 compute). */
    static void roundTo(DType compute, double[] buf, int n) {
        if (compute == DType.FLOAT32) {
            for (int i = 0; i < n; i++) buf[i] = (float) buf[i];
        }
    }

    // ---------------------------------------------------------------- binary

    static void binary(BinaryOp op, StridedView a, StridedView b, StridedView out, DType compute, double alpha) {
        MemorySegment as = a.memory();
        MemorySegment bs = b.memory();
        MemorySegment os = out.memory();
        DType at = a.dtype();
        DType bt = b.dtype();
        DType ot = out.dtype();
        ElementwiseIteration it = new ElementwiseIteration(out, a, b);
        long sa = it.innerByteStride(1);
        long sb = it.innerByteStride(2);
        boolean f32Rows = at == DType.FLOAT32 && bt == DType.FLOAT32 && compute == DType.FLOAT32
                && (sa == 4 || sa == 0) && (sb == 4 || sb == 0);
        boolean fast = f32Rows && ot == DType.FLOAT32 && it.innerByteStride(0) == 4 && VectorF32.hasBinary(op);
        boolean fastCompare = f32Rows && ot == DType.BOOL && it.innerByteStride(0) == 1 && VectorF32.hasComparison(op);
        // Half-precision rows; an operand may also be a float32 scalar (a wrapped Java number, kept unrounded).
        boolean half = isHalf(ot) && compute == ot && it.innerByteStride(0) == 2
                && (at == ot ? sa == 2 || sa == 0 : at == DType.FLOAT32 && sa == 0)
                && (bt == ot ? sb == 2 || sb == 0 : bt == DType.FLOAT32 && sb == 0) && VectorF32.hasBinary(op);
        boolean floating = compute.isFloatingPoint();
        long lalpha = (long) alpha;
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            int cap = (int) Math.min(BLOCK, end - begin);
            boolean generic = !fast && !fastCompare && !half;
            MemorySegment fa = half ? halfScratch(0) : null;
            MemorySegment fb = half ? halfScratch(1) : null;
            MemorySegment fo = half ? halfScratch(2) : null;
            double[] da = generic && floating ? new double[cap] : null;
            double[] db = generic && floating ? new double[cap] : null;
            long[] la = generic && !floating ? new long[cap] : null;
            long[] lb = generic && !floating ? new long[cap] : null;
            long so = it.innerByteStride(0);
            it.forEachRow(begin, end, (off, len) -> {
                if (fast) {
                    VectorF32.binary(op, as, off[1], sa == 0, bs, off[2], sb == 0, os, off[0], len, (float) alpha);
                    return;
                }
                if (fastCompare) {
                    VectorF32.compare(op, as, off[1], sa == 0, bs, off[2], sb == 0, os, off[0], len);
                    return;
                }
                if (half) {
                    for (long done = 0; done < len; done += BLOCK) {
                        int n = (int) Math.min(BLOCK, len - done);
                        toF32(at, as, off[1] + done * sa, fa, sa == 0 ? 1 : n);
                        toF32(bt, bs, off[2] + done * sb, fb, sb == 0 ? 1 : n);
                        VectorF32.binary(op, fa, 0, sa == 0, fb, 0, sb == 0, fo, 0, n, (float) alpha);
                        HalfConversion.convert(DType.FLOAT32, fo, 0, ot, os, off[0] + done * 2, n);
                    }
                    return;
                }
                for (long done = 0; done < len; done += BLOCK) {
                    int n = (int) Math.min(BLOCK, len - done);
                    long ao = off[1] + done * sa;
                    long bo = off[2] + done * sb;
                    long oo = off[0] + done * so;
                    if (floating) {
                        ElementIO.load(at, as, ao, sa, n, da);
                        ElementIO.load(bt, bs, bo, sb, n, db);
                        if (compute != DType.FLOAT64) {
                            roundTo(compute, da, n);
                            roundTo(compute, db, n);
                        }
                        for (int i = 0; i < n; i++) da[i] = op.apply(da[i], db[i], alpha);
                        ElementIO.store(ot, os, oo, so, n, da);
                    } else {
                        ElementIO.load(at, as, ao, sa, n, la);
                        ElementIO.load(bt, bs, bo, sb, n, lb);
                        for (int i = 0; i < n; i++) la[i] = op.applyLong(la[i], lb[i], lalpha);
                        ElementIO.store(ot, os, oo, so, n, la);
                    }
                }
            });
        });
    }

    // ---------------------------------------------------------------- where

    static void where(StridedView cond, StridedView a, StridedView b, StridedView out) {
        MemorySegment cs = cond.memory();
        MemorySegment as = a.memory();
        MemorySegment bs = b.memory();
        MemorySegment os = out.memory();
        DType ot = out.dtype();
        DType at = a.dtype();
        DType bt = b.dtype();
        boolean floating = ot.isFloatingPoint();
        ElementwiseIteration it = new ElementwiseIteration(out, cond, a, b);
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            long so = it.innerByteStride(0);
            long sc = it.innerByteStride(1);
            long sa = it.innerByteStride(2);
            long sb = it.innerByteStride(3);
            it.forEachRow(begin, end, (off, len) -> {
                for (long i = 0; i < len; i++) {
                    boolean c = cs.get(ElementIO.I8, off[1] + i * sc) != 0;
                    long src = c ? off[2] + i * sa : off[3] + i * sb;
                    DType st = c ? at : bt;
                    MemorySegment ss = c ? as : bs;
                    if (floating) ElementIO.setDouble(ot, os, off[0] + i * so, ElementIO.getDouble(st, ss, src));
                    else ElementIO.setLong(ot, os, off[0] + i * so, ElementIO.getLong(st, ss, src));
                }
            });
        });
    }
}
