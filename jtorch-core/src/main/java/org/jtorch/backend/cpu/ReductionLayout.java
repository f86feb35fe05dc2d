package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The geometry of a reduction, from an input and an output that has the input's shape with stride 0
 * along the reduced dimensions (see {@link org.jtorch.backend.ReductionKernels}). Dimensions split
 * into kept ones (one output element per index) and reduced ones; size-1 dimensions are dropped and
 * each group is coalesced where strides allow, so a contiguous row reduction has one reduced
 * dimension of unit stride. The reduced set of one output element is walked as rows along the
 * innermost reduced dimension. All strides and offsets are in bytes.
 */
final class ReductionLayout {
    final long numOut;
    final long numRed;
    /** Kept dimensions, outermost first (at least one). */
    final long[] keptShape;
    final long[] keptIn;
    final long[] keptOut;
    /** Reduced dimensions, outermost first (at least one); the last is the row dimension. */
    final long[] redShape;
    final long[] redIn;
    final long inBase;
    final long outBase;
    /** Number of rows per output element, their length and the input's stride along them. */
    final long rows;
    final long rowLength;
    final long rowStride;

    ReductionLayout(StridedView in, StridedView out) {
        long[] shape = in.shape();
        int rank = shape.length;
        long esIn = in.dtype().byteSize();
        long esOut = out.dtype().byteSize();
        long[] sIn = in.strides();
        long[] sOut = out.strides();
        long[] ks = new long[rank + 1], ki = new long[rank + 1], ko = new long[rank + 1];
        long[] rs = new long[rank + 1], ri = new long[rank + 1];
        int nk = 0, nr = 0;
        for (int d = 0; d < rank; d++) {
            long size = shape[d];
            if (size == 1) continue;
            long si = sIn[d] * esIn;
            long so = sOut[d] * esOut;
            if (so == 0) {
                if (nr > 0 && ri[nr - 1] == si * size) {
                    rs[nr - 1] *= size;
                    ri[nr - 1] = si;
                } else {
                    rs[nr] = size;
                    ri[nr++] = si;
                }
            } else if (nk > 0 && ki[nk - 1] == si * size && ko[nk - 1] == so * size) {
                ks[nk - 1] *= size;
                ki[nk - 1] = si;
                ko[nk - 1] = so;
            } else {
                ks[nk] = size;
                ki[nk] = si;
                ko[nk++] = so;
            }
        }
        if (nk == 0) ks[nk++] = 1;
        if (nr == 0) rs[nr++] = 1;
        keptShape = Arrays.copyOf(ks, nk);
        keptIn = Arrays.copyOf(ki, nk);
        keptOut = Arrays.copyOf(ko, nk);
        redShape = Arrays.copyOf(rs, nr);
        redIn = Arrays.copyOf(ri, nr);
        long no = 1;
        for (long s : keptShape) no *= s;
        long nred = 1;
        for (long s : redShape) nred *= s;
        numOut = no;
        numRed = nred;
        rowLength = redShape[nr - 1];
        rowStride = redIn[nr - 1];
        rows = rowLength == 0 ? 0 : nred / rowLength;
        inBase = in.offset() * esIn;
        outBase = out.offset() * esOut;
    }

    /** Byte offset in the input of the first element reduced into output element {@code o} (row-major over kept dims). */
    long inOffset(long o) {
        long off = inBase;
        for (int d = keptShape.length - 1; d >= 0 && o != 0; d--) {
            off += (o % keptShape[d]) * keptIn[d];
            o /= keptShape[d];
        }
        return off;
    }

    long outOffset(long o) {
        long off = outBase;
        for (int d = keptShape.length - 1; d >= 0 && o != 0; d--) {
            off += (o % keptShape[d]) * keptOut[d];
            o /= keptShape[d];
        }
        return off;
    }

    /** Byte offset of row {@code k} of the reduced set, relative to the output element's input offset. */
    long rowOffset(long k) {
        long off = 0;
        for (int d = redShape.length - 2; d >= 0 && k != 0; d--) {
            off += (k % redShape[d]) * redIn[d];
            k /= redShape[d];
        }
        return off;
    }

    /** Byte offset of reduced element {@code k} (row-major over all reduced dims), relative to the output element's. */
    long redOffset(long k) {
        if (redShape.length == 1) return k * redIn[0];
        long off = 0;
        for (int d = redShape.length - 1; d >= 0 && k != 0; d--) {
            off += (k % redShape[d]) * redIn[d];
            k /= redShape[d];
        }
        return off;
    }

    /**
     * Streams the reduced elements of one output element into a buffer, converted to double or long,
     * a block at a time. One cursor per thread; {@link #reset} before each output element.
     */
    final class Cursor {
        private final DType type;
        private final MemorySegment segment;
        private long base;
        private long row;
        private long pos;
        private long rowStart;

        Cursor(DType type, MemorySegment segment) {
            this.type = type;
            this.segment = segment;
        }

        void reset(long inOffset) {
            base = inOffset;
            row = 0;
            pos = 0;
            rowStart = inOffset;
        }

        /** Loads the next block into {@code buf}; returns its length, 0 when done. */
        int next(double[] buf) {
            int n = advance(buf.length);
            if (n > 0) ElementIO.load(type, segment, rowStart + pos * rowStride, rowStride, n, buf);
            return step(n);
        }

        int next(long[] buf) {
            int n = advance(buf.length);
            if (n > 0) ElementIO.load(type, segment, rowStart + pos * rowStride, rowStride, n, buf);
            return step(n);
        }

        private int advance(int capacity) {
            if (row >= rows) return 0;
            return (int) Math.min(capacity, rowLength - pos);
        }

        private int step(int n) {
            pos += n;
            if (pos == rowLength) {
                pos = 0;
                row++;
                if (row < rows) rowStart = base + rowOffset(row);
            }
            return n;
        }
    }
}
