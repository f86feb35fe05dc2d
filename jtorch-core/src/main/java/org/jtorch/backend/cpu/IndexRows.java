package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The contiguous fast paths of {@code gather} and {@code scatter_add} along any dimension, and of the index check. With
 * {@code self} contiguous as {@code [outer, size, inner]} and the index (int64) and the other operand contiguous as
 * {@code [outer, m, inner]} (the index's shape is self's apart from {@code dim}), element {@code (o, j, i)} moves between
 * {@code self[o, index[o, j, i], i]} and the other operand's {@code [o, j, i]}: typed loads and stores of the element's
 * width, no per-element dtype switch, no iterator. Rows of different {@code o} touch disjoint parts of {@code self}, so
 * the outer loop runs in parallel even when accumulating; within a row, duplicates sum in index order, as the general
 * loop sums them (the same bits).
 */
final class IndexRows {
    private IndexRows() {}

    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final long GRAIN = ElementwiseKernels.GRAIN;

    /** Whether the fast paths take these operands: all contiguous, an int64 index shaped as self apart from {@code dim}. */
    static boolean fits(StridedView self, int dim, StridedView index, StridedView other) {
        if (self.dim() == 0 || index.dtype() != DType.INT64 || index.dim() != self.dim() || other.dtype() != self.dtype()) return false;
        if (!self.isContiguous() || !index.isContiguous() || !other.isContiguous()) return false;
        if (!java.util.Arrays.equals(index.shape(), other.shape())) return false;
        for (int k = 0; k < self.dim(); k++) if (k != dim && index.size(k) != self.size(k)) return false;
        return true;
    }

    /** {@code out[o, j, i] = self[o, index[o, j, i], i]}; a bad index throws (out is the op's own result, discarded then). */
    static void gather(String op, StridedView self, int dim, StridedView index, StridedView out) {
        Geometry g = new Geometry(self, dim, index);
        int es = self.dtype().byteSize();
        MemorySegment ss = self.memory(), is = index.memory(), os = out.memory();
        long sBase = self.offset() * es, iBase = index.offset() * 8, oBase = out.offset() * es;
        long rowElems = g.m * g.inner;
        Parallel.forRange(g.outer, Math.max(1, GRAIN / Math.max(1, rowElems)), (begin, end) -> {
            for (long o = begin; o < end; o++) {
                long src = sBase + o * g.size * g.inner * es;
                long idx = iBase + o * rowElems * 8;
                long dst = oBase + o * rowElems * es;
                if (g.inner == 1) {
                    gatherRow(op, dim, ss, src, g.size, is, idx, os, dst, (int) g.m, es);
                } else {
                    for (long j = 0; j < g.m; j++) {
                        gatherSlice(op, dim, ss, src, g.size, g.inner, is, idx + j * g.inner * 8, os, dst + j * g.inner * es, es);
                    }
                }
            }
        });
    }

    /** {@code out[j] = self[index[j]]} for {@code n} elements of {@code es} bytes (the last dimension). */
    private static void gatherRow(String op, int dim, MemorySegment ss, long src, long size, MemorySegment is, long idx,
                                  MemorySegment os, long dst, int n, int es) {
        switch (es) {
            case 4 -> {
                for (int j = 0; j < n; j++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * j), size);
                    os.set(ElementIO.I32, dst + 4L * j, ss.get(ElementIO.I32, src + 4 * v));
                }
            }
            case 8 -> {
                for (int j = 0; j < n; j++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * j), size);
                    os.set(ElementIO.I64, dst + 8L * j, ss.get(ElementIO.I64, src + 8 * v));
                }
            }
            default -> {
                for (int j = 0; j < n; j++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * j), size);
                    CpuIndexKernels.moveElement(ss, src + es * v, os, dst + (long) es * j, es);
                }
            }
        }
    }

    /** {@code out[i] = self[index[i], i]} for the {@code inner} elements of one {@code (o, j)}. */
    private static void gatherSlice(String op, int dim, MemorySegment ss, long src, long size, long inner, MemorySegment is, long idx,
                                    MemorySegment os, long dst, int es) {
        int n = (int) inner;
        long step = inner * es;
        switch (es) {
            case 4 -> {
                for (int i = 0; i < n; i++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * i), size);
                    os.set(ElementIO.I32, dst + 4L * i, ss.get(ElementIO.I32, src + v * step + 4L * i));
                }
            }
            case 8 -> {
                for (int i = 0; i < n; i++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * i), size);
                    os.set(ElementIO.I64, dst + 8L * i, ss.get(ElementIO.I64, src + v * step + 8L * i));
                }
            }
            default -> {
                for (int i = 0; i < n; i++) {
                    long v = checked(op, dim, is.get(ElementIO.I64, idx + 8L * i), size);
                    CpuIndexKernels.moveElement(ss, src + v * step + (long) es * i, os, dst + (long) es * i, es);
                }
            }
        }
    }

    /** Whether {@link #scatterAdd} takes {@code self}'s dtype: float32 and float64 (the others accumulate in the general loop). */
    static boolean addsInPlace(DType t) {
        return t == DType.FLOAT32 || t == DType.FLOAT64;
    }

    /** {@code self[o, index[o, j, i], i] += src[o, j, i]} in float32 or float64; the indices are already checked. */
    static void scatterAdd(StridedView self, int dim, StridedView index, StridedView src) {
        Geometry g = new Geometry(self, dim, index);
        boolean f64 = self.dtype() == DType.FLOAT64;
        int es = f64 ? 8 : 4;
        MemorySegment ds = self.memory(), is = index.memory(), ss = src.memory();
        long dBase = self.offset() * es, iBase = index.offset() * 8, sBase = src.offset() * es;
        long rowElems = g.m * g.inner;
        int n = (int) g.inner;
        long step = g.inner * es;
        Parallel.forRange(g.outer, Math.max(1, GRAIN / Math.max(1, rowElems)), (begin, end) -> {
            for (long o = begin; o < end; o++) {
                long dst = dBase + o * g.size * step;
                if (g.inner == 1) {
                    // the last dimension: one run of m elements, each at its index (no lane offset)
                    long idx = iBase + o * rowElems * 8, s = sBase + o * rowElems * es;
                    if (f64) addRowF64(ds, dst, es, 0, is, idx, ss, s, (int) g.m);
                    else addRowF32(ds, dst, es, 0, is, idx, ss, s, (int) g.m);
                    continue;
                }
                for (long j = 0; j < g.m; j++) {
                    long idx = iBase + (o * rowElems + j * g.inner) * 8;
                    long s = sBase + (o * rowElems + j * g.inner) * es;
                    if (f64) addRowF64(ds, dst, step, 8, is, idx, ss, s, n);
                    else addRowF32(ds, dst, step, 4, is, idx, ss, s, n);
                }
            }
        });
    }

    /**
     * {@code self[dst + index[i] * step + i * lane] += src[i]} (byte offsets) for {@code n} consecutive index and source
     * elements: the elements of one {@code (o, j)} ({@code lane} the element width), or a last-dimension row ({@code lane} 0).
     */
    private static void addRowF32(MemorySegment ds, long dst, long step, long lane, MemorySegment is, long idx, MemorySegment ss, long s,
                                  int n) {
        for (int i = 0; i < n; i++) {
            long d = dst + is.get(ElementIO.I64, idx + 8L * i) * step + lane * i;
            ds.set(ElementIO.F32, d, ds.get(ElementIO.F32, d) + ss.get(ElementIO.F32, s + 4L * i));
        }
    }

    private static void addRowF64(MemorySegment ds, long dst, long step, long lane, MemorySegment is, long idx, MemorySegment ss, long s,
                                  int n) {
        for (int i = 0; i < n; i++) {
            long d = dst + is.get(ElementIO.I64, idx + 8L * i) * step + lane * i;
            ds.set(ElementIO.F64, d, ds.get(ElementIO.F64, d) + ss.get(ElementIO.F64, s + 8L * i));
        }
    }

    /**
     * Whether every entry of a contiguous int64 {@code index} lies in {@code [low, size)}: a vectorised pass of signed
     * compares (AVX2 has no 64-bit min/max, and their fallback was slower than scalar code); the caller finds the bad
     * entry for its message when not.
     */
    static boolean inRange(StridedView index, long low, long size) {
        MemorySegment s = index.memory();
        long base = index.offset() * 8;
        long n = index.numel();
        long i = 0;
        int lanes = LS.length();
        for (long upper = n - n % lanes; i < upper; i += lanes) {
            LongVector v = LongVector.fromMemorySegment(LS, s, base + i * 8, LE);
            if (v.compare(VectorOperators.LT, low).or(v.compare(VectorOperators.GE, size)).anyTrue()) return false;
        }
        for (; i < n; i++) {
            long v = s.get(ElementIO.I64, base + i * 8);
            if (v < low || v >= size) return false;
        }
        return true;
    }

    private static long checked(String op, int dim, long v, long size) {
        if (v < 0 || v >= size) {
            throw new IndexOutOfBoundsException(op + ": index " + v + " is out of bounds for dimension " + dim + " with size " + size);
        }
        return v;
    }

    /** {@code self} as {@code [outer, size, inner]} and the index's extent {@code m} along {@code dim}. */
    private record Geometry(long outer, long size, long inner, long m) {
        Geometry(StridedView self, int dim, StridedView index) {
            this(prefix(self, dim), self.size(dim), self.numel() == 0 ? 0 : suffix(self, dim), index.size(dim));
        }

        private static long prefix(StridedView v, int dim) {
            long p = 1;
            for (int d = 0; d < dim; d++) p *= v.size(d);
            return p;
        }

        private static long suffix(StridedView v, int dim) {
            long p = 1;
            for (int d = dim + 1; d < v.dim(); d++) p *= v.size(d);
            return p;
        }
    }
}
