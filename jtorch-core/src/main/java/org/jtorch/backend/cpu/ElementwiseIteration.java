package org.jtorch.backend.cpu;

import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;

/**
 * Walks same-shaped strided tensors element by element in row-major order of the first operand (the
 * output), like ATen's TensorIterator. Dimensions of size 1 are dropped and adjacent dimensions that
 * are contiguous for every operand are merged, so most calls reduce to one long row per thread.
 *
 * <p>Callers receive rows: a byte offset per operand and a length; {@link #innerByteStride} gives each
 * operand's byte stride along the row (0 for a broadcast operand).
 */
final class ElementwiseIteration {
    /** Receives one row: {@code offsets[i]} is operand i's byte offset at the row start. */
    @FunctionalInterface
    interface RowBody {
        void row(long[] offsets, long length);
    }

    final int operands;
    final long numel;
    /** Coalesced shape, outermost first; at least one dimension. */
    final long[] shape;
    /** {@code byteStrides[op][dim]} */
    final long[][] byteStrides;
    final long[] baseOffsets;

    ElementwiseIteration(StridedView... tensors) {
        operands = tensors.length;
        if (allFlat(tensors)) {
            // Common case: every operand contiguous or a broadcast scalar: one row, no per-dimension state.
            long n = Shapes.numel(tensors[0].shape());
            numel = n;
            shape = new long[] {n};
            byteStrides = new long[operands][];
            baseOffsets = new long[operands];
            for (int i = 0; i < operands; i++) {
                StridedView t = tensors[i];
                int es = t.dtype().byteSize();
                baseOffsets[i] = t.offset() * es;
                boolean single = Shapes.numel(t.shape()) == 1 || isAllZeroStrides(t);
                byteStrides[i] = new long[] {single ? 0 : es};
            }
            return;
        }
        long[] fullShape = tensors[0].shape();
        int rank = fullShape.length;
        long n = 1;
        for (long s : fullShape) n *= s;
        numel = n;
        baseOffsets = new long[operands];
        long[][] strides = new long[operands][];
        for (int i = 0; i < operands; i++) {
            StridedView t = tensors[i];
            int es = t.dtype().byteSize();
            baseOffsets[i] = t.offset() * es;
            long[] st = t.strides();
            strides[i] = new long[rank];
            for (int d = 0; d < rank; d++) strides[i][d] = st[d] * es;
        }
        // Drop size-1 dimensions, then merge dims d-1 and d when stride[d-1] == stride[d] * shape[d] for all.
        long[] sh = new long[Math.max(rank, 1)];
        long[][] bs = new long[operands][Math.max(rank, 1)];
        int r = 0;
        for (int d = 0; d < rank; d++) {
            if (fullShape[d] == 1) continue;
            if (r > 0) {
                boolean mergeable = true;
                for (int i = 0; i < operands; i++) {
                    if (bs[i][r - 1] != strides[i][d] * fullShape[d]) {
                        mergeable = false;
                        break;
                    }
                }
                if (mergeable) {
                    sh[r - 1] *= fullShape[d];
                    for (int i = 0; i < operands; i++) bs[i][r - 1] = strides[i][d];
                    continue;
                }
            }
            sh[r] = fullShape[d];
            for (int i = 0; i < operands; i++) bs[i][r] = strides[i][d];
            r++;
        }
        if (r == 0) {
            sh[0] = numel == 0 ? 0 : 1;
            r = 1;
        }
        shape = java.util.Arrays.copyOf(sh, r);
        byteStrides = new long[operands][];
        for (int i = 0; i < operands; i++) byteStrides[i] = java.util.Arrays.copyOf(bs[i], r);
    }

    /** Whether every operand is contiguous over the output's elements, or a single broadcast element. */
    private static boolean allFlat(StridedView[] tensors) {
        long n = Shapes.numel(tensors[0].shape());
        for (StridedView t : tensors) {
            long tn = Shapes.numel(t.shape());
            boolean scalar = tn == 1 || isAllZeroStrides(t);
            if (scalar) continue;
            if (tn != n || !t.isContiguous()) return false;
        }
        return true;
    }

    private static boolean isAllZeroStrides(StridedView t) {
        for (long st : t.strides()) if (st != 0) return false;
        return true;
    }

    long innerByteStride(int operand) {
        return byteStrides[operand][shape.length - 1];
    }

    long innerLength() {
        return shape[shape.length - 1];
    }

    /** Visits the rows covering flat element indices {@code [begin, end)}. */
    void forEachRow(long begin, long end, RowBody body) {
        int rank = shape.length;
        long inner = shape[rank - 1];
        long[] index = new long[rank];
        long[] offsets = new long[operands];
        // Position at 'begin'.
        long rem = begin;
        for (int d = rank - 1; d >= 0; d--) {
            index[d] = rem % shape[d];
            rem /= shape[d];
        }
        for (int i = 0; i < operands; i++) {
            long o = baseOffsets[i];
            for (int d = 0; d < rank; d++) o += index[d] * byteStrides[i][d];
            offsets[i] = o;
        }
        long pos = begin;
        while (pos < end) {
            long len = Math.min(inner - index[rank - 1], end - pos);
            body.row(offsets, len);
            pos += len;
            if (pos >= end) break;
            // Advance to the next row start.
            for (int i = 0; i < operands; i++) offsets[i] += len * byteStrides[i][rank - 1];
            index[rank - 1] += len;
            for (int d = rank - 1; d > 0 && index[d] == shape[d]; d--) {
                index[d] = 0;
                index[d - 1]++;
                for (int i = 0; i < operands; i++) {
                    offsets[i] += byteStrides[i][d - 1] - shape[d] * byteStrides[i][d];
                }
            }
        }
    }
}
