package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.DL;
import static org.jtorch.backend.cpu.Gemm.DS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Float64 products whose output rows are short combinations of B's rows, read in place:
 * {@code C[i, :] = alpha * sum_p A[i][p] * B[p, :] + beta * C[i, :]} with B's and C's columns contiguous, accumulated four
 * vectors of columns at a time in registers. {@link Gemm#dgemm} sends it the wide outer products ({@code k <= 2}: a
 * linear layer from one input feature), a row times a matrix ({@code m = 1}) and, through
 * {@code C^T = B^T A^T}, a transposed matrix times a column ({@code G^T x}, a weight gradient from one input feature).
 * The packed path padded such a product to whole 8 x 16 tiles and packed both operands: time_sequence_prediction's
 * {@code G^T [204, 97] x [97, 1]} took 22.5 µs against PyTorch's 5.3.
 *
 * <p>Each element is one chain of fused multiply-adds over p in ascending order, in its vector lane or in the scalar tail
 * alike ({@link Math#fma}), so the result does not depend on the element's column, the thread count or C2.
 */
final class GemmRowsF64 {
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    /** Columns of C accumulated together: four vectors. */
    private static final int CHUNK = 4 * DL;
    /** Deepest k taken for m > 1: every row of C streams all of B's k rows once. */
    static final int MAX_K = 2;
    /**
     * Narrowest C taken for m > 1. One thread, against the packed path: {@code [97, 1] x [1, 204]} 13.3 -> 9.7 µs, but
     * {@code [97, 1] x [1, 51]} 4.5 -> 5.8 (four calls a row for 51 columns, where the packed path's 8 x 16 tiles cost less).
     */
    static final int MIN_N = 2 * CHUNK;
    /** Columns of a work item when C has one row. */
    private static final int RUN = 32 * CHUNK;
    private static final DoubleVector IOTA = DoubleVector.zero(DS).addIndex(1);

    private GemmRowsF64() {}

    /** Whether op(B)'s and C's columns are contiguous and the product is one row of C or a wide outer product. */
    static boolean serves(int m, int n, int k, long bColStride, long cColStride) {
        return bColStride == 1 && cColStride == 1 && (m == 1 || k <= MAX_K && n >= MIN_N);
    }

    /**
     * C's element (i, j) at {@code cOff + i * crs + j}; op(B)'s (p, j) at {@code bOff + p * brs + j}. Work items are whole
     * rows of C, or for one row runs of {@value #RUN} columns: an item's columns past its last whole vector are one
     * window ending at its last column and overlapping the vector before, whose lanes already done are kept (blended in
     * registers, so a beta != 0 does not apply twice); an item narrower than a vector runs the scalar chain.
     */
    static void dgemm(int m, int n, int k, double alpha, MemorySegment a, long aOff, long ars, long acs,
                      MemorySegment b, long bOff, long brs, double beta, MemorySegment c, long cOff, long crs) {
        int runs = m == 1 ? (n + RUN - 1) / RUN : 1, run = m == 1 ? RUN : n;
        long items = (long) m * runs, work = (long) m * n * k;
        Parallel.RangeBody body = (t0, t1) -> {
            for (long t = t0; t < t1; t++) {
                int i = (int) (t / runs), j0 = (int) (t % runs) * run;
                columns(j0, Math.min(n, j0 + run), k, alpha, a, aOff + i * ars, acs, b, bOff, brs, beta, c, (cOff + i * crs) * Double.BYTES);
            }
        };
        if (Parallel.numThreads() > 1 && work >= Gemm.PARALLEL_MIN_WORK && !Parallel.inParallelRegion()) {
            Parallel.forRange(items, Math.max(1, items * Gemm.PARALLEL_MIN_WORK / work), body);
        } else {
            body.run(0, items);
        }
    }

    /** Columns {@code [j0, j1)} of the row of C at byte {@code cRow}, from A's row at element {@code aRow}. */
    private static void columns(int j0, int j1, int k, double alpha, MemorySegment a, long aRow, long acs, MemorySegment b,
                                long bOff, long brs, double beta, MemorySegment c, long cRow) {
        long brsBytes = brs * Double.BYTES;
        int j = j0;
        for (; j + CHUNK <= j1; j += CHUNK) {
            fourVectors(k, alpha, a, aRow, acs, b, (bOff + j) * Double.BYTES, brsBytes, beta, c, cRow + j * 8L);
        }
        for (; j + DL <= j1; j += DL) {
            oneVector(k, alpha, a, aRow, acs, b, (bOff + j) * Double.BYTES, brsBytes, beta, c, cRow + j * 8L, 0);
        }
        if (j == j1) return;
        if (j1 - j0 >= DL) {
            int w = j1 - DL;
            oneVector(k, alpha, a, aRow, acs, b, (bOff + w) * Double.BYTES, brsBytes, beta, c, cRow + w * 8L, j - w);
            return;
        }
        for (; j < j1; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s = Math.fma(b.get(F64, (bOff + p * brs + j) * Double.BYTES), a.get(F64, (aRow + p * acs) * Double.BYTES), s);
            long at = cRow + j * 8L;
            c.set(F64, at, beta == 0d ? alpha * s : alpha * s + beta * c.get(F64, at));
        }
    }

    /** {@code CHUNK} columns of one row of C from B's rows at {@code bByte + p * brsBytes}. */
    private static void fourVectors(int k, double alpha, MemorySegment a, long aRow, long acs, MemorySegment b, long bByte,
                                    long brsBytes, double beta, MemorySegment c, long cByte) {
        DoubleVector s0 = DoubleVector.zero(DS), s1 = s0, s2 = s0, s3 = s0;
        for (int p = 0; p < k; p++) {
            DoubleVector av = DoubleVector.broadcast(DS, a.get(F64, (aRow + p * acs) * Double.BYTES));
            long row = bByte + p * brsBytes;
            s0 = DoubleVector.fromMemorySegment(DS, b, row, NO).fma(av, s0);
            s1 = DoubleVector.fromMemorySegment(DS, b, row + DL * 8L, NO).fma(av, s1);
            s2 = DoubleVector.fromMemorySegment(DS, b, row + 2 * DL * 8L, NO).fma(av, s2);
            s3 = DoubleVector.fromMemorySegment(DS, b, row + 3 * DL * 8L, NO).fma(av, s3);
        }
        store(s0, alpha, beta, c, cByte);
        store(s1, alpha, beta, c, cByte + DL * 8L);
        store(s2, alpha, beta, c, cByte + 2 * DL * 8L);
        store(s3, alpha, beta, c, cByte + 3 * DL * 8L);
    }

    /** One vector of columns; its first {@code keep} lanes, done already, are stored back as they are. */
    private static void oneVector(int k, double alpha, MemorySegment a, long aRow, long acs, MemorySegment b, long bByte,
                                  long brsBytes, double beta, MemorySegment c, long cByte, int keep) {
        DoubleVector s = DoubleVector.zero(DS);
        for (int p = 0; p < k; p++) {
            s = DoubleVector.fromMemorySegment(DS, b, bByte + p * brsBytes, NO).fma(DoubleVector.broadcast(DS, a.get(F64, (aRow + p * acs) * Double.BYTES)), s);
        }
        if (keep == 0) {
            store(s, alpha, beta, c, cByte);
            return;
        }
        DoubleVector old = DoubleVector.fromMemorySegment(DS, c, cByte, NO), r = s.mul(alpha);
        if (beta != 0d) r = r.add(old.mul(beta));
        old.blend(r, IOTA.compare(VectorOperators.GE, keep)).intoMemorySegment(c, cByte, NO);
    }

    /** {@code alpha * s + beta * C}, the scalar tail's operations lane by lane; beta 0 does not read C. */
    private static void store(DoubleVector s, double alpha, double beta, MemorySegment c, long cByte) {
        DoubleVector r = s.mul(alpha);
        if (beta != 0d) r = r.add(DoubleVector.fromMemorySegment(DS, c, cByte, NO).mul(beta));
        r.intoMemorySegment(c, cByte, NO);
    }
}
