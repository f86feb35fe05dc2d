package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * CPU elementwise kernels that are not formulas: copy, fill and where over strided tensors of any dtype (the
 * pointwise ops run {@link CpuFormulaKernel}). Same-dtype rows copy in bulk, half-precision rows and the common
 * integer casts ({@link IntegerConversion}) convert with the Vector API; everything else converts a row a block at a
 * time through double (floating) or long (integral) buffers.
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
     * two-vector permute; a destination stride of two (the gradient of that view, {@code slice_backward})
     * spreads 16 into the even lanes of two vectors, stored under a mask that leaves the odd places untouched.
     */
    private static void copy32(MemorySegment ss, long so, long sStride, MemorySegment ds, long d0, long dStride, long len) {
        long i = 0;
        if (sStride == 8 && dStride == 4 && FL == 16) {
            for (; i + 16 <= len && so + 8 * i + 128 <= ss.byteSize(); i += 16) {
                FloatVector a = FloatVector.fromMemorySegment(FS, ss, so + 8 * i, LE);
                FloatVector b = FloatVector.fromMemorySegment(FS, ss, so + 8 * i + 64, LE);
                ConvF32.EVEN_LANES.selectFrom(a, b).intoMemorySegment(ds, d0 + 4 * i, LE);
            }
        } else if (sStride == 4 && dStride == 8 && FL == 16) {
            for (; i + 16 <= len && d0 + 8 * i + 128 <= ds.byteSize(); i += 16) {
                FloatVector a = FloatVector.fromMemorySegment(FS, ss, so + 4 * i, LE);
                SPREAD_LOW.selectFrom(a).intoMemorySegment(ds, d0 + 8 * i, LE, EVEN_PLACES);
                SPREAD_HIGH.selectFrom(a).intoMemorySegment(ds, d0 + 8 * i + 64, LE, EVEN_PLACES);
            }
        }
        for (; i < len; i++) ds.set(I32, d0 + i * dStride, ss.get(I32, so + i * sStride));
    }

    /** Lane j holds j / 2 (and 8 + j / 2): with {@code selectFrom(a)}, a's first (last) 8 lanes, each in an even lane. */
    private static final FloatVector SPREAD_LOW = spread(0), SPREAD_HIGH = spread(8);
    private static final VectorMask<Float> EVEN_PLACES = VectorMask.fromLong(FS, 0x5555_5555_5555_5555L);

    private static FloatVector spread(int first) {
        float[] index = new float[FL];
        for (int j = 0; j < FL; j++) index[j] = first + j / 2;
        return FloatVector.fromArray(FS, index, 0);
    }

    private static final VectorSpecies<Byte> BS = ByteVector.SPECIES_PREFERRED;
    private static final int BL = BS.length();

    /**
     * Copies {@code bytes} bytes. Short runs (a padded image's rows, a column block of a concatenation) move a vector
     * at a time, the last vector overlapping the one before, for {@link MemorySegment#copy}'s checks and dispatch cost
     * about as much as the copy itself below a few hundred bytes.
     */
    private static void copyBytes(MemorySegment ss, long so, MemorySegment ds, long d0, long bytes) {
        if (bytes < BL || bytes > 4L * BL || ss == ds) {
            MemorySegment.copy(ss, so, ds, d0, bytes);
            return;
        }
        long last = bytes - BL;
        for (long i = 0; i < last; i += BL) ByteVector.fromMemorySegment(BS, ss, so + i, LE).intoMemorySegment(ds, d0 + i, LE);
        ByteVector.fromMemorySegment(BS, ss, so + last, LE).intoMemorySegment(ds, d0 + last, LE);
    }

    /**
     * Rows up to this long are copied by {@link #copyShortRows}, whose per-row cost is a few nanoseconds. At 1 KiB, {@code
     * cat} of two 512 x 512 float matrices along dim 1 (2 KiB rows) took the per-row virtual call: 74-100 us, 59-91 us
     * this way.
     */
    private static final long SHORT_ROW_BYTES = 4096;

    /**
     * A same-dtype copy of short contiguous rows ({@code pad}'s interior, {@code cat} of narrow blocks): the rows of
     * each plane are walked by a counted loop here rather than by {@link ElementwiseIteration#forEachRow}, whose call
     * of its row body is shared by every kernel (a virtual call per row, about as costly as copying 128 bytes).
     */
    private static void copyShortRows(ElementwiseIteration it, MemorySegment ss, MemorySegment ds, long es) {
        int rank = it.shape.length;
        long rowBytes = it.innerLength() * es;
        long rows = it.numel / it.innerLength();
        long[] dStrides = it.byteStrides[0];
        long[] sStrides = it.byteStrides[1];
        long planeRows = it.shape[rank - 2];
        long dRow = dStrides[rank - 2];
        long sRow = sStrides[rank - 2];
        Parallel.forRange(rows, Math.max(1, GRAIN / it.innerLength()), (begin, end) -> {
            long[] index = new long[rank - 1];
            long rem = begin;
            for (int d = rank - 2; d >= 0; d--) {
                index[d] = rem % it.shape[d];
                rem /= it.shape[d];
            }
            long d0 = it.baseOffsets[0];
            long s0 = it.baseOffsets[1];
            for (int d = 0; d < rank - 1; d++) {
                d0 += index[d] * dStrides[d];
                s0 += index[d] * sStrides[d];
            }
            for (long r = begin; r < end; ) {
                long run = Math.min(planeRows - index[rank - 2], end - r);
                for (long j = 0; j < run; j++) copyBytes(ss, s0 + j * sRow, ds, d0 + j * dRow, rowBytes);
                r += run;
                if (r >= end) break;
                d0 += run * dRow;
                s0 += run * sRow;
                index[rank - 2] += run;
                for (int d = rank - 2; d > 0 && index[d] == it.shape[d]; d--) {
                    index[d] = 0;
                    index[d - 1]++;
                    d0 += dStrides[d - 1] - it.shape[d] * dStrides[d];
                    s0 += sStrides[d - 1] - it.shape[d] * sStrides[d];
                }
            }
        });
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
        boolean rows = it.innerByteStride(0) == es && it.innerByteStride(1) == st.byteSize();
        boolean half = HalfConversion.supports(st, dt) && rows;
        boolean integer = IntegerConversion.supports(st, dt) && rows;
        boolean floats = !integer && FloatConversion.supports(st, dt) && rows;
        if (sameType && TransposeCopy.serves(it, es)) {
            TransposeCopy.run(it, ss, ds, es);
            return;
        }
        if (bulk && it.shape.length >= 2 && it.innerLength() * es <= SHORT_ROW_BYTES) {
            copyShortRows(it, ss, ds, es);
            return;
        }
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> {
            if (half) {
                it.forEachRow(begin, end, (off, len) -> HalfConversion.convert(st, ss, off[1], dt, ds, off[0], len));
                return;
            }
            if (integer) {
                it.forEachRow(begin, end, (off, len) -> IntegerConversion.convert(st, ss, off[1], dt, ds, off[0], len));
                return;
            }
            if (floats) {
                it.forEachRow(begin, end, (off, len) -> FloatConversion.convert(st, ss, off[1], dt, ds, off[0], len));
                return;
            }
            double[] dbuf = integral ? null : new double[(int) Math.min(BLOCK, end - begin)];
            long[] lbuf = integral ? new long[(int) Math.min(BLOCK, end - begin)] : null;
            long dStride = it.innerByteStride(0);
            long sStride = it.innerByteStride(1);
            it.forEachRow(begin, end, (off, len) -> {
                if (bulk) {
                    copyBytes(ss, off[1], ds, off[0], len * es);
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
                    for (long i = 0; i < len; i++) ElementCodec.setDouble(dt, ds, off[0] + i * stride, value);
                } else {
                    for (long i = 0; i < len; i++) ElementCodec.setLong(dt, ds, off[0] + i * stride, longValue);
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

    /** Rounds inputs to the compute dtype's precision, as if converted to it before the op (e.g. f64 input, f32 compute). */
    static void roundTo(DType compute, double[] buf, int n) {
        if (compute == DType.FLOAT32) {
            for (int i = 0; i < n; i++) buf[i] = (float) buf[i];
        }
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
            if (at == ot && bt == ot && SelectRows.serves(ot.byteSize(), so, sc, sa, sb)) {
                // Same dtypes: selecting is copying bits, a blend per vector.
                MemorySegment[] splats = SelectRows.splats();
                it.forEachRow(begin, end, (off, len) -> SelectRows.row(ot.byteSize(), cs, off[1], as, off[2], sa, bs, off[3], sb, os, off[0], len, splats));
                return;
            }
            it.forEachRow(begin, end, (off, len) -> {
                for (long i = 0; i < len; i++) {
                    boolean c = cs.get(ElementIO.I8, off[1] + i * sc) != 0;
                    long src = c ? off[2] + i * sa : off[3] + i * sb;
                    DType st = c ? at : bt;
                    MemorySegment ss = c ? as : bs;
                    if (floating) ElementCodec.setDouble(ot, os, off[0] + i * so, ElementCodec.getDouble(st, ss, src));
                    else ElementCodec.setLong(ot, os, off[0] + i * so, ElementCodec.getLong(st, ss, src));
                }
            });
        });
    }
}
