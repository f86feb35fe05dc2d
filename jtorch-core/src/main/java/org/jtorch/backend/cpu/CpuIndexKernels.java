package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.IndexKernels;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * CPU implementation of {@link IndexKernels}.
 *
 * <p>Most ops reduce to two strided loops, as ATen's index kernels: a gather {@code out[e] = src[e +
 * sum_k index_k[e] * stride_k]} and its scatter mirror, where the source (or destination) is restrided
 * to the iteration shape with stride 0 along the indexed dimensions. A copy needs no dtype conversion,
 * so elements move as raw bytes of the element width; only accumulation looks at the dtype. Fast
 * paths cover the shapes training spends its time in: row copies for embedding lookups, last-dim
 * gathers for loss picks, and vectorised row accumulation for embedding gradients.
 */
final class CpuIndexKernels implements IndexKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final long GRAIN = ElementwiseKernels.GRAIN;

    // ---------------------------------------------------------------- index_select

    @Override
    public void indexSelect(StridedView self, int dim, StridedView index, StridedView out) {
        int rank = self.dim();
        long size = rank == 0 ? 1 : self.size(dim);
        checkIndices("index_select", index, size, dim, false);
        if (out.numel() == 0) return;
        if (self.isContiguous() && rank > 0) {
            selectRowsContiguous(self, dim, index, out);
            return;
        }
        long[] outShape = out.shape();
        long[] srcStrides = self.strides().clone();
        long[] idxStrides = new long[rank];
        if (rank > 0) {
            srcStrides[dim] = 0;
            idxStrides[dim] = index.dim() == 0 ? 0 : index.stride(0);
        }
        StridedView src = self.restrided(outShape, srcStrides, self.offset());
        StridedView idx = index.restrided(outShape, idxStrides, index.offset());
        gatherCore(src, new StridedView[] {idx}, new long[] {size}, new long[] {rank == 0 ? 0 : self.stride(dim)}, out);
    }

    /** A contiguous source: each index copies one block of {@code inner} elements per outer position. */
    private static void selectRowsContiguous(StridedView self, int dim, StridedView index, StridedView out) {
        long[] shape = self.shape();
        long outer = 1;
        for (int d = 0; d < dim; d++) outer *= shape[d];
        long inner = 1;
        for (int d = dim + 1; d < shape.length; d++) inner *= shape[d];
        long size = shape[dim];
        long[] idx = readIndexVector(index);
        int n = idx.length;
        long es = self.dtype().byteSize();
        long rowBytes = inner * es;
        long srcBase = self.offset() * es;
        long outBase = out.offset() * es;
        MemorySegment ss = self.memory();
        MemorySegment os = out.memory();
        if (inner == 1) {
            // Selecting single elements (the last dim: flip, roll, a column subset): typed loads and stores, not one
            // bulk copy call per element.
            boolean reversal = ReverseCopy.serves(idx, size, es);
            Parallel.forRange(outer, Math.max(1, GRAIN / n), (begin, end) -> {
                for (long o = begin; o < end; o++) {
                    long src = srcBase + o * size * es, dst = outBase + o * n * es;
                    if (reversal) ReverseCopy.row(ss, src, os, dst, n, es);
                    else selectElements(ss, src, os, dst, idx, es);
                }
            });
            return;
        }
        Parallel.forRange(outer * n, Math.max(1, GRAIN / Math.max(1, inner)), (begin, end) -> {
            for (long r = begin; r < end; r++) {
                long o = r / n;
                int i = (int) (r - o * n);
                MemorySegment.copy(ss, srcBase + (o * size + idx[i]) * rowBytes, os, outBase + r * rowBytes, rowBytes);
            }
        });
    }

    /** {@code out[i] = src[idx[i]]} for elements of {@code es} bytes at byte offsets {@code src} and {@code out}. */
    private static void selectElements(MemorySegment ss, long src, MemorySegment os, long out, long[] idx, long es) {
        int n = idx.length;
        switch ((int) es) {
            case 4 -> { for (int i = 0; i < n; i++) os.set(ElementIO.I32, out + 4L * i, ss.get(ElementIO.I32, src + 4 * idx[i])); }
            case 8 -> { for (int i = 0; i < n; i++) os.set(ElementIO.I64, out + 8L * i, ss.get(ElementIO.I64, src + 8 * idx[i])); }
            case 2 -> { for (int i = 0; i < n; i++) os.set(ElementIO.I16, out + 2L * i, ss.get(ElementIO.I16, src + 2 * idx[i])); }
            default -> { for (int i = 0; i < n; i++) os.set(ElementIO.I8, out + i, ss.get(ElementIO.I8, src + idx[i])); }
        }
    }

    // ---------------------------------------------------------------- gather / scatter

    @Override
    public void gather(StridedView self, int dim, StridedView index, StridedView out) {
        int rank = self.dim();
        long size = rank == 0 ? 1 : self.size(dim);
        if (out.numel() > 0 && IndexRows.fits(self, dim, index, out)) {
            // checks each index as it reads it: only the op's own result is written before a bad one throws
            IndexRows.gather("gather", self, dim, index, out);
            return;
        }
        checkIndices("gather", index, size, dim, false);
        if (out.numel() == 0) return;
        if (rank > 0 && dim == rank - 1 && self.isContiguous() && index.isContiguous() && out.isContiguous()
                && sameLeadingShape(self, index)) {
            gatherLastDim(self, index, out);
            return;
        }
        long[] srcStrides = self.strides().clone();
        if (rank > 0) srcStrides[dim] = 0;
        StridedView src = self.restrided(index.shape(), srcStrides, self.offset());
        gatherCore(src, new StridedView[] {index}, new long[] {size}, new long[] {rank == 0 ? 0 : self.stride(dim)}, out);
    }

    /** {@code out[r, j] = self[r, index[r, j]]} over contiguous rows (cross-entropy's target picks). */
    private static void gatherLastDim(StridedView self, StridedView index, StridedView out) {
        long k = self.size(-1);
        long m = index.size(-1);
        long rows = index.numel() / m;
        int es = self.dtype().byteSize();
        MemorySegment ss = self.memory();
        MemorySegment is = index.memory();
        MemorySegment os = out.memory();
        long sBase = self.offset() * es;
        long iBase = index.offset() * 8;
        long oBase = out.offset() * es;
        Parallel.forRange(rows, Math.max(1, GRAIN / Math.max(1, m)), (begin, end) -> {
            for (long r = begin; r < end; r++) {
                long srcRow = sBase + r * k * es;
                for (long j = 0; j < m; j++) {
                    long e = r * m + j;
                    long v = is.get(ElementIO.I64, iBase + e * 8);
                    moveElement(ss, srcRow + v * es, os, oBase + e * es, es);
                }
            }
        });
    }

    @Override
    public void scatter(String op, StridedView self, int dim, StridedView index, StridedView src, boolean accumulate) {
        int rank = self.dim();
        long size = rank == 0 ? 1 : self.size(dim);
        checkIndices(op, index, size, dim, false);
        if (index.numel() == 0) return;
        if (accumulate && rank == 2 && dim == 0 && self.dtype() == DType.FLOAT32 && self.isContiguous()
                && index.isContiguous() && src.stride(1) == 1) {
            scatterAddRowsF32(self, index, src);
            return;
        }
        if (accumulate && IndexRows.addsInPlace(self.dtype()) && IndexRows.fits(self, dim, index, src)) {
            IndexRows.scatterAdd(self, dim, index, src);
            return;
        }
        long[] dstStrides = self.strides().clone();
        if (rank > 0) dstStrides[dim] = 0;
        StridedView dst = self.restrided(index.shape(), dstStrides, self.offset());
        scatterCore(dst, new StridedView[] {index}, new long[] {size}, new long[] {rank == 0 ? 0 : self.stride(dim)},
                src, accumulate, 1);
    }

    /**
     * {@code self[index[i, j], j] += src[i, j]} for float32 matrices. Threads own disjoint column
     * ranges, so no two threads ever add into the same element.
     */
    private static void scatterAddRowsF32(StridedView self, StridedView index, StridedView src) {
        long rows = index.size(0);
        long cols = index.size(1);
        long selfCols = self.size(1);
        long srcRowStride = src.stride(0);
        MemorySegment ds = self.memory();
        MemorySegment is = index.memory();
        MemorySegment ss = src.memory();
        long dBase = self.offset() * 4;
        long iBase = index.offset() * 8;
        long sBase = src.offset() * 4;
        Parallel.forRange(cols, Math.max(16, GRAIN / Math.max(1, rows)), (c0, c1) -> {
            for (long i = 0; i < rows; i++) {
                for (long j = c0; j < c1; j++) {
                    long v = is.get(ElementIO.I64, iBase + (i * cols + j) * 8);
                    long d = dBase + (v * selfCols + j) * 4;
                    ds.set(ElementIO.F32, d, ds.get(ElementIO.F32, d) + ss.get(ElementIO.F32, sBase + (i * srcRowStride + j) * 4));
                }
            }
        });
    }

    // ---------------------------------------------------------------- index_add / index_copy / index_fill

    @Override
    public void indexAccumulate(String op, StridedView self, int dim, StridedView index, StridedView source, boolean accumulate,
                                double alpha, boolean wrapNegative) {
        int rank = self.dim();
        long size = rank == 0 ? 1 : self.size(dim);
        checkIndices(op, index, size, dim, wrapNegative);
        if (source.numel() == 0) return;
        if (accumulate && !wrapNegative && rank > 0 && dim == 0 && self.dtype() == DType.FLOAT32 && self.isContiguous()
                && source.isContiguous()) {
            indexAddRowsF32(self, index, source, (float) alpha);
            return;
        }
        if (!accumulate && !wrapNegative && rank > 0 && dim == 0 && self.isContiguous() && source.isContiguous()) {
            indexCopyRows(self, index, source);
            return;
        }
        long[] shape = source.shape();
        long[] dstStrides = self.strides().clone();
        long[] idxStrides = new long[rank];
        if (rank > 0) {
            dstStrides[dim] = 0;
            idxStrides[dim] = index.dim() == 0 ? 0 : index.stride(0);
        }
        StridedView dst = self.restrided(shape, dstStrides, self.offset());
        StridedView idx = index.restrided(shape, idxStrides, index.offset());
        scatterCore(dst, new StridedView[] {idx}, new long[] {size}, new long[] {rank == 0 ? 0 : self.stride(dim)},
                source, accumulate, alpha);
    }

    /**
     * {@code self[index[i]] += alpha * source[i]} over contiguous float32 rows (the embedding gradient);
     * the indices are validated and non-negative (index_add rejects negative ones).
     * Threads own disjoint column ranges of every row: no races, and each element sums in index order.
     */
    private static void indexAddRowsF32(StridedView self, StridedView index, StridedView source, float alpha) {
        long[] idx = readIndexVector(index);
        long inner = self.numel() / self.size(0);
        MemorySegment ds = self.memory();
        MemorySegment ss = source.memory();
        long dBase = self.offset() * 4;
        long sBase = source.offset() * 4;
        long grain = Math.max(4L * FL, GRAIN / Math.max(1, idx.length));
        Parallel.forRange(inner, grain, (c0, c1) -> {
            for (int i = 0; i < idx.length; i++) {
                axpyF32(alpha, ss, sBase + (i * inner + c0) * 4, ds, dBase + (idx[i] * inner + c0) * 4, c1 - c0);
            }
        });
    }

    /**
     * {@code self[index[i]] = source[i]} over contiguous rows of any dtype (index_copy along dim 0): one block copy per row
     * where the element loop moved an element at a time. The indices are validated and non-negative. Threads own disjoint
     * column ranges of every row and copy the rows in index order, so that of duplicates the last is kept.
     */
    private static void indexCopyRows(StridedView self, StridedView index, StridedView source) {
        long[] idx = readIndexVector(index);
        int es = self.dtype().byteSize();
        long inner = self.numel() / self.size(0);
        MemorySegment ds = self.memory();
        MemorySegment ss = source.memory();
        long dBase = self.offset() * es;
        long sBase = source.offset() * es;
        long grain = Math.max(256, GRAIN / Math.max(1, idx.length));
        Parallel.forRange(inner, grain, (c0, c1) -> {
            for (int i = 0; i < idx.length; i++) {
                MemorySegment.copy(ss, sBase + (i * inner + c0) * es, ds, dBase + (idx[i] * inner + c0) * es, (c1 - c0) * es);
            }
        });
    }

    /** {@code y[0..n) += a * x[0..n)} over float32 memory. */
    private static void axpyF32(float a, MemorySegment xs, long xOff, MemorySegment ys, long yOff, long n) {
        long i = 0;
        if (a == 1f) {
            for (long upper = n - n % FL; i < upper; i += FL) {
                FloatVector y = FloatVector.fromMemorySegment(FS, ys, yOff + i * 4, LE);
                y.add(FloatVector.fromMemorySegment(FS, xs, xOff + i * 4, LE)).intoMemorySegment(ys, yOff + i * 4, LE);
            }
            for (; i < n; i++) ys.set(ElementIO.F32, yOff + i * 4, ys.get(ElementIO.F32, yOff + i * 4) + xs.get(ElementIO.F32, xOff + i * 4));
            return;
        }
        FloatVector av = FloatVector.broadcast(FS, a);
        for (long upper = n - n % FL; i < upper; i += FL) {
            FloatVector y = FloatVector.fromMemorySegment(FS, ys, yOff + i * 4, LE);
            FloatVector x = FloatVector.fromMemorySegment(FS, xs, xOff + i * 4, LE);
            y.add(x.mul(av)).intoMemorySegment(ys, yOff + i * 4, LE);
        }
        for (; i < n; i++) ys.set(ElementIO.F32, yOff + i * 4, ys.get(ElementIO.F32, yOff + i * 4) + a * xs.get(ElementIO.F32, xOff + i * 4));
    }

    // ---------------------------------------------------------------- nonzero / masked_select

    @Override
    public long countNonzero(StridedView t) {
        if (t.numel() == 0) return 0;
        DType dt = t.dtype();
        MemorySegment s = t.memory();
        ElementwiseIteration it = new ElementwiseIteration(t);
        long[] count = new long[1];
        it.forEachRow(0, it.numel, (off, len) -> {
            long stride = it.innerByteStride(0);
            long c = 0;
            // counted without a branch: a random mask would mispredict half of them
            for (long j = 0; j < len; j++) c += isNonzero(dt, s, off[0] + j * stride) ? 1 : 0;
            count[0] += c;
        });
        return count[0];
    }

    @Override
    public void nonzero(StridedView t, StridedView out) {
        long[] shape = t.shape();
        long[] strides = t.strides();
        int rank = shape.length;
        long n = t.numel();
        DType dt = t.dtype();
        int es = dt.byteSize();
        MemorySegment s = t.memory();
        MemorySegment os = out.memory();
        long[] pos = new long[rank];
        long off = t.offset() * es;
        long o = out.offset() * 8;
        long rows = out.size(0);
        long written = 0;
        for (long e = 0; e < n && written < rows; e++) {
            // without a branch, as maskedSelect: every coordinate is written at the next row, which a nonzero element keeps
            for (int d = 0; d < rank; d++) os.set(ElementIO.I64, o + d * 8L, pos[d]);
            long keep = isNonzero(dt, s, off) ? 1 : 0;
            o += keep * rank * 8L;
            written += keep;
            // Advance the multi-index and the byte offset, innermost dimension first.
            for (int d = rank - 1; d >= 0; d--) {
                off += strides[d] * es;
                if (++pos[d] < shape[d]) break;
                off -= shape[d] * strides[d] * es;
                pos[d] = 0;
            }
        }
    }

    @Override
    public void maskedSelect(StridedView self, StridedView mask, StridedView out) {
        if (out.numel() == 0) return;
        int es = self.dtype().byteSize();
        MemorySegment ss = self.memory();
        MemorySegment ms = mask.memory();
        MemorySegment os = out.memory();
        long capacity = out.numel();
        long[] o = {out.offset() * es, 0};
        ElementwiseIteration it = new ElementwiseIteration(self, mask);
        it.forEachRow(0, it.numel, (off, len) -> {
            long sStride = it.innerByteStride(0);
            long mStride = it.innerByteStride(1);
            // Without a branch on the mask (a random one would mispredict half the time): every element is written at the
            // next place, which only a selected one then keeps; the next writes land below the capacity, as written counts.
            long at = o[0];
            long written = o[1];
            for (long j = 0; j < len && written < capacity; j++) {
                moveElement(ss, off[0] + j * sStride, os, at, es);
                long keep = ms.get(ElementIO.I8, off[1] + j * mStride) != 0 ? 1 : 0;
                written += keep;
                at += keep * es;
            }
            o[0] = at;
            o[1] = written;
        });
    }

    // ---------------------------------------------------------------- advanced indexing

    @Override
    public void advancedIndex(StridedView src, StridedView[] indices, long[] sizes, long[] strides, StridedView out) {
        for (int k = 0; k < indices.length; k++) checkIndices("index", indices[k], sizes[k], -1, true);
        if (out.numel() == 0) return;
        gatherCore(src, indices, sizes, strides, out);
    }

    @Override
    public void indexPut(StridedView dst, StridedView[] indices, long[] sizes, long[] strides, StridedView values,
                         boolean accumulate) {
        for (int k = 0; k < indices.length; k++) checkIndices("indexPut_", indices[k], sizes[k], -1, true);
        if (values.numel() == 0) return;
        scatterCore(dst, indices, sizes, strides, values, accumulate, 1);
    }

    // ---------------------------------------------------------------- shared loops

    /**
     * {@code out[e] = src[e + sum_k idx_k[e] * strides[k]]}: {@code src} and every index are restrided to
     * {@code out}'s shape; indices are already validated, negative ones wrap by {@code sizes[k]}.
     */
    private static void gatherCore(StridedView src, StridedView[] idx, long[] sizes, long[] strides, StridedView out) {
        int k = idx.length;
        StridedView[] operands = new StridedView[2 + k];
        operands[0] = out;
        operands[1] = src;
        System.arraycopy(idx, 0, operands, 2, k);
        ElementwiseIteration it = new ElementwiseIteration(operands);
        int es = out.dtype().byteSize();
        MemorySegment ss = src.memory();
        MemorySegment os = out.memory();
        IndexOperands io = new IndexOperands(idx, sizes, strides, es);
        Parallel.forRange(it.numel, GRAIN, (begin, end) -> it.forEachRow(begin, end, (off, len) -> {
            long oStride = it.innerByteStride(0);
            long sStride = it.innerByteStride(1);
            for (long j = 0; j < len; j++) {
                long so = off[1] + j * sStride + io.byteOffset(it, off, 2, j);
                moveElement(ss, so, os, off[0] + j * oStride, es);
            }
        }));
    }

    /**
     * {@code dst[e + sum_k idx_k[e] * strides[k]] (+)= values[e]}: the mirror of {@link #gatherCore}.
     * Writes run in parallel; accumulation runs on one thread, so duplicates sum in a fixed order.
     */
    private static void scatterCore(StridedView dst, StridedView[] idx, long[] sizes, long[] strides, StridedView values,
                                    boolean accumulate, double alpha) {
        int k = idx.length;
        StridedView[] operands = new StridedView[2 + k];
        operands[0] = values;
        operands[1] = dst;
        System.arraycopy(idx, 0, operands, 2, k);
        ElementwiseIteration it = new ElementwiseIteration(operands);
        DType dt = dst.dtype();
        int es = dt.byteSize();
        MemorySegment vs = values.memory();
        MemorySegment ds = dst.memory();
        IndexOperands io = new IndexOperands(idx, sizes, strides, es);
        long alphaLong = (long) alpha;
        ElementwiseIteration.RowBody body = (off, len) -> {
            long vStride = it.innerByteStride(0);
            long dStride = it.innerByteStride(1);
            for (long j = 0; j < len; j++) {
                long d = off[1] + j * dStride + io.byteOffset(it, off, 2, j);
                if (accumulate) accumulateElement(dt, vs, off[0] + j * vStride, ds, d, alpha, alphaLong);
                else moveElement(vs, off[0] + j * vStride, ds, d, es);
            }
        };
        if (accumulate) it.forEachRow(0, it.numel, body);
        else Parallel.forRange(it.numel, GRAIN, (begin, end) -> it.forEachRow(begin, end, body));
    }

    /** Index operands of the shared loops: their memory, dtype, and the byte step per index unit. */
    private static final class IndexOperands {
        final int count;
        final MemorySegment[] segments;
        final boolean[] int32;
        final long[] sizes;
        final long[] byteSteps;

        IndexOperands(StridedView[] idx, long[] sizes, long[] strides, int es) {
            count = idx.length;
            segments = new MemorySegment[count];
            int32 = new boolean[count];
            byteSteps = new long[count];
            this.sizes = sizes;
            for (int q = 0; q < count; q++) {
                segments[q] = idx[q].memory();
                int32[q] = idx[q].dtype() == DType.INT32;
                byteSteps[q] = strides[q] * es;
            }
        }

        /** Byte offset selected by the indices at element {@code j} of the current row. */
        long byteOffset(ElementwiseIteration it, long[] off, int firstOperand, long j) {
            long r = 0;
            for (int q = 0; q < count; q++) {
                long at = off[firstOperand + q] + j * it.innerByteStride(firstOperand + q);
                long v = int32[q] ? segments[q].get(ElementIO.I32, at) : segments[q].get(ElementIO.I64, at);
                if (v < 0) v += sizes[q];
                r += v * byteSteps[q];
            }
            return r;
        }
    }

    // ---------------------------------------------------------------- element helpers

    /**
     * Throws when an index (int32 or int64) lies outside {@code [0, size)}, or {@code [-size, size)}
     * when negative indices wrap. {@code dim < 0} leaves the dimension number out of the message.
     */
    static void checkIndices(String op, StridedView index, long size, int dim, boolean wrapNegative) {
        if (index.numel() == 0) return;
        if (index.dtype() == DType.INT64 && index.isContiguous() && IndexRows.inRange(index, wrapNegative ? -size : 0, size)) return;
        MemorySegment s = index.memory();
        boolean int32 = index.dtype() == DType.INT32;
        long low = wrapNegative ? -size : 0;
        ElementwiseIteration it = new ElementwiseIteration(index);
        it.forEachRow(0, it.numel, (off, len) -> {
            long stride = it.innerByteStride(0);
            for (long j = 0; j < len; j++) {
                long v = int32 ? s.get(ElementIO.I32, off[0] + j * stride) : s.get(ElementIO.I64, off[0] + j * stride);
                if (v < low || v >= size) {
                    throw new IndexOutOfBoundsException(op + ": index " + v + " is out of bounds for dimension "
                            + (dim >= 0 ? dim + " " : "") + "with size " + size);
                }
            }
        });
    }

    /** A validated 1-d (or 0-d) int32/int64 index as a Java array. */
    private static long[] readIndexVector(StridedView index) {
        long[] r = new long[Math.toIntExact(index.numel())];
        MemorySegment s = index.memory();
        boolean int32 = index.dtype() == DType.INT32;
        long step = (index.dim() == 0 ? 0 : index.stride(0)) * (int32 ? 4 : 8);
        long base = index.offset() * (int32 ? 4 : 8);
        for (int i = 0; i < r.length; i++) {
            r[i] = int32 ? s.get(ElementIO.I32, base + i * step) : s.get(ElementIO.I64, base + i * step);
        }
        return r;
    }

    private static boolean sameLeadingShape(StridedView a, StridedView b) {
        for (int d = 0; d < a.dim() - 1; d++) if (a.size(d) != b.size(d)) return false;
        return true;
    }

    /** Copies one element of {@code es} bytes: a copy needs no dtype conversion. */
    static void moveElement(MemorySegment src, long srcOff, MemorySegment dst, long dstOff, int es) {
        switch (es) {
            case 1 -> dst.set(ElementIO.I8, dstOff, src.get(ElementIO.I8, srcOff));
            case 2 -> dst.set(ElementIO.I16, dstOff, src.get(ElementIO.I16, srcOff));
            case 4 -> dst.set(ElementIO.I32, dstOff, src.get(ElementIO.I32, srcOff));
            default -> dst.set(ElementIO.I64, dstOff, src.get(ElementIO.I64, srcOff));
        }
    }

    /**
     * {@code dst += alpha * src} for one element: float64 in double, the other floating types in float
     * (rounded once on store), integers in exact long arithmetic, bool as logical or.
     */
    private static void accumulateElement(DType t, MemorySegment src, long srcOff, MemorySegment dst, long dstOff,
                                          double alpha, long alphaLong) {
        if (t == DType.FLOAT64) {
            dst.set(ElementIO.F64, dstOff, dst.get(ElementIO.F64, dstOff) + alpha * src.get(ElementIO.F64, srcOff));
        } else if (t.isFloatingPoint()) {
            float v = (float) ElementCodec.getDouble(t, dst, dstOff) + (float) alpha * (float) ElementCodec.getDouble(t, src, srcOff);
            ElementCodec.setDouble(t, dst, dstOff, v);
        } else {
            ElementCodec.setLong(t, dst, dstOff, ElementCodec.getLong(t, dst, dstOff) + alphaLong * ElementCodec.getLong(t, src, srcOff));
        }
    }

    private static boolean isNonzero(DType t, MemorySegment s, long off) {
        return switch (t) {
            case BOOL, UINT8, INT8 -> s.get(ElementIO.I8, off) != 0;
            case INT16 -> s.get(ElementIO.I16, off) != 0;
            case INT32 -> s.get(ElementIO.I32, off) != 0;
            case INT64 -> s.get(ElementIO.I64, off) != 0;
            default -> ElementCodec.getDouble(t, s, off) != 0;
        };
    }
}
