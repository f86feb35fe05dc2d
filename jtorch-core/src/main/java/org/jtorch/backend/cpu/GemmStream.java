package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.FS;
import static org.jtorch.backend.cpu.Gemm.L;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;

/**
 * {@link Gemm#sgemm}'s path for {@code A^T B} with A stored {@code [k, m]} (m long) and at most {@value #MAX_N} columns
 * of B in any layout: {@code A^T x}, a transposed matrix-vector product, and the weight gradient of a layer with a few
 * input features ({@code g^T x}, an LSTM cell's one-feature input). Each row of A runs along C's long side, so each step
 * adds a row of A, scaled by one element of B per column, to accumulators held in registers (an axpy): A is streamed
 * once, in place, where the general path packed all of it (4096 x 1 x 1024: 5.0-7.6 ms before, 1.6-2.8 ms here, one
 * thread at load 26-28). Five to eight columns (two passes over A) measured slower than the general path, and so did
 * the transposed form (a few rows of A against a row-major B, 8 x 1024 x 1024: 0.25 ms packed, 0.9-1.0 ms streamed, B's
 * rows 4 KiB apart for every two-vector block): neither takes it.
 *
 * <p>Two vectors of C's long side at a time, up to four columns at once; each element sums its k products in order, one
 * fused multiply-add per step, on any thread count (a thread's share is whole two-vector blocks). Elements past the
 * last whole block take a scalar loop with the same fused steps.
 */
final class GemmStream {
    static final int MAX_N = 4;

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private GemmStream() {}

    /** P's rows (A's) contiguous along the long side ({@code pStride} 1), at most {@value #MAX_N} columns, at least one block. */
    static boolean serves(int longSide, int columns, long pStride) {
        return L >= 4 && L <= 16 && columns <= MAX_N && pStride == 1 && longSide >= 2 * L;
    }

    /**
     * {@code C[i][j] = alpha * sum_p P[pOff + p * pk + i] * Q[qOff + p * qk + j * qj] + beta * C[i][j]}, C's element at
     * {@code cOff + i * ci + j * cj}; the epilogue gets blocks in these (i, j).
     */
    static void sgemm(int m, int n, int k, float alpha, MemorySegment p, long pOff, long pk,
                      MemorySegment q, long qOff, long qk, long qj, float beta, MemorySegment c, long cOff, long ci, long cj,
                      Gemm.Epilogue epilogue) {
        int block = 2 * L;
        int blocks = m / block;
        long work = (long) m * n * k;
        long grain = Math.max(1, (long) blocks * Gemm.PARALLEL_MIN_WORK / Math.max(1, work));
        Parallel.forRange(blocks, grain, (b0, b1) -> {
            for (long b = b0; b < b1; b++) {
                int i = (int) b * block;
                for (int j = 0; j < n; j += 4) {
                    int width = Math.min(4, n - j);
                    if (width == 1) {
                        oneColumn(i, j, k, alpha, p, pOff, pk, q, qOff, qk, qj, beta, c, cOff, ci, cj);
                    } else {
                        fourColumns(i, j, width, k, alpha, p, pOff, pk, q, qOff, qk, qj, beta, c, cOff, ci, cj);
                    }
                }
            }
            if (epilogue != null && b1 > b0) epilogue.block((int) b0 * block, (int) b1 * block, 0, n);
        });
        int tail = blocks * block;
        if (tail < m) {
            for (int i = tail; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float s = 0f;
                    for (int t = 0; t < k; t++) {
                        s = Math.fma(p.getAtIndex(F32, pOff + t * pk + i), q.getAtIndex(F32, qOff + t * qk + j * qj), s);
                    }
                    store(c, cOff + i * ci + j * cj, s, alpha, beta);
                }
            }
            if (epilogue != null) epilogue.block(tail, m, 0, n);
        }
    }

    /** Columns j to j + width - 1 (width 2 to 4; the missing ones multiply zeros and are not stored) of C's block at i. */
    private static void fourColumns(int i, int j, int width, int k, float alpha, MemorySegment p, long pOff, long pk,
                                    MemorySegment q, long qOff, long qk, long qj, float beta, MemorySegment c, long cOff, long ci,
                                    long cj) {
        FloatVector s00 = FloatVector.zero(FS), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
        long row = (pOff + i) * Float.BYTES, rowStep = pk * Float.BYTES;
        long qRow = qOff + j * qj;
        for (int t = 0; t < k; t++, row += rowStep, qRow += qk) {
            FloatVector p0 = FloatVector.fromMemorySegment(FS, p, row, NO);
            FloatVector p1 = FloatVector.fromMemorySegment(FS, p, row + (long) L * Float.BYTES, NO);
            FloatVector q0 = FloatVector.broadcast(FS, q.getAtIndex(F32, qRow));
            FloatVector q1 = FloatVector.broadcast(FS, q.getAtIndex(F32, qRow + qj));
            FloatVector q2 = FloatVector.broadcast(FS, width > 2 ? q.getAtIndex(F32, qRow + 2 * qj) : 0f);
            FloatVector q3 = FloatVector.broadcast(FS, width > 3 ? q.getAtIndex(F32, qRow + 3 * qj) : 0f);
            s00 = p0.fma(q0, s00);
            s01 = p1.fma(q0, s01);
            s10 = p0.fma(q1, s10);
            s11 = p1.fma(q1, s11);
            s20 = p0.fma(q2, s20);
            s21 = p1.fma(q2, s21);
            s30 = p0.fma(q3, s30);
            s31 = p1.fma(q3, s31);
        }
        storeBlock(c, cOff + i * ci + j * cj, ci, s00, s01, alpha, beta);
        storeBlock(c, cOff + i * ci + (j + 1) * cj, ci, s10, s11, alpha, beta);
        if (width > 2) storeBlock(c, cOff + i * ci + (j + 2) * cj, ci, s20, s21, alpha, beta);
        if (width > 3) storeBlock(c, cOff + i * ci + (j + 3) * cj, ci, s30, s31, alpha, beta);
    }

    /** Column j of C's block at i. */
    private static void oneColumn(int i, int j, int k, float alpha, MemorySegment p, long pOff, long pk,
                                  MemorySegment q, long qOff, long qk, long qj, float beta, MemorySegment c, long cOff, long ci, long cj) {
        FloatVector s0 = FloatVector.zero(FS), s1 = s0;
        long row = (pOff + i) * Float.BYTES, rowStep = pk * Float.BYTES;
        long qAt = qOff + j * qj;
        for (int t = 0; t < k; t++, row += rowStep, qAt += qk) {
            FloatVector v = FloatVector.broadcast(FS, q.getAtIndex(F32, qAt));
            s0 = FloatVector.fromMemorySegment(FS, p, row, NO).fma(v, s0);
            s1 = FloatVector.fromMemorySegment(FS, p, row + (long) L * Float.BYTES, NO).fma(v, s1);
        }
        storeBlock(c, cOff + i * ci + j * cj, ci, s0, s1, alpha, beta);
    }

    /** Two vectors of sums into C's elements {@code at + e * step}, e < 2L: {@code alpha * sum + beta * C}. */
    private static void storeBlock(MemorySegment c, long at, long step, FloatVector s0, FloatVector s1, float alpha, float beta) {
        if (step == 1) {
            long bytes = at * Float.BYTES;
            storeVector(c, bytes, s0, alpha, beta);
            storeVector(c, bytes + (long) L * Float.BYTES, s1, alpha, beta);
            return;
        }
        for (int e = 0; e < L; e++) store(c, at + e * step, s0.lane(e), alpha, beta);
        for (int e = 0; e < L; e++) store(c, at + (L + e) * step, s1.lane(e), alpha, beta);
    }

    private static void storeVector(MemorySegment c, long bytes, FloatVector s, float alpha, float beta) {
        FloatVector v = s.mul(alpha);
        if (beta != 0f) v = v.add(FloatVector.fromMemorySegment(FS, c, bytes, NO).mul(beta));
        v.intoMemorySegment(c, bytes, NO);
    }

    /** {@code C = alpha * sum + beta * C}, rounded as {@link #storeVector}; C is not read when beta is 0 (it may hold NaN). */
    private static void store(MemorySegment c, long index, float sum, float alpha, float beta) {
        float v = alpha * sum;
        if (beta != 0f) v += beta * c.getAtIndex(F32, index);
        c.setAtIndex(F32, index, v);
    }
}
