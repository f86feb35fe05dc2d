package org.jtorch.backend.cpu;

import org.jtorch.op.StridedView;

/**
 * Same-shaped tensors seen as lines along one dimension (for scans, softmax and arg-reductions): every
 * index of the other dimensions starts a line of {@link #length} elements. An operand with stride 0
 * along the line (an arg-reduction's output) simply stays put. Offsets and strides are in bytes.
 */
final class LineLayout {
    final long lines;
    final long length;
    /** {@code lineStride[op]}: operand op's byte stride along the line. */
    final long[] lineStride;
    private final long[] outerShape;
    private final long[][] outerStrides;
    private final long[] base;

    LineLayout(int dim, StridedView... tensors) {
        long[] shape = tensors[0].shape();
        int rank = shape.length;
        int ops = tensors.length;
        length = rank == 0 ? 1 : shape[dim];
        lineStride = new long[ops];
        base = new long[ops];
        outerShape = new long[Math.max(rank - 1, 0)];
        outerStrides = new long[ops][outerShape.length];
        for (int d = 0, j = 0; d < rank; d++) {
            if (d != dim) outerShape[j++] = shape[d];
        }
        for (int i = 0; i < ops; i++) {
            long es = tensors[i].dtype().byteSize();
            long[] st = tensors[i].strides();
            base[i] = tensors[i].offset() * es;
            for (int d = 0, j = 0; d < rank; d++) {
                if (d == dim) lineStride[i] = st[d] * es;
                else outerStrides[i][j++] = st[d] * es;
            }
        }
        long n = 1;
        for (long s : outerShape) n *= s;
        lines = n;
    }

    /** Byte offset of line {@code line}'s first element in operand {@code op}. */
    long offset(int op, long line) {
        long off = base[op];
        long[] st = outerStrides[op];
        for (int d = outerShape.length - 1; d >= 0 && line != 0; d--) {
            off += (line % outerShape[d]) * st[d];
            line /= outerShape[d];
        }
        return off;
    }
}
