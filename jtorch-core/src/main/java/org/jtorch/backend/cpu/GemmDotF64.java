package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.DL;
import static org.jtorch.backend.cpu.Gemm.DS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;

/**
 * {@link GemmDot}'s float64 form, for {@link Gemm#dgemm}: at most {@value GemmDot#MAX_M} rows of op(A) against an op(B)
 * whose columns are contiguous (a float64 linear layer at batch 1-8), and through {@code C^T = B^T A^T} a matrix times at
 * most that many columns. The general path packed all of B for one row of A: {@code 1 x 512 x 512} took 0.6 ms, 30x
 * float32's time through {@link GemmDot}.
 *
 * <p>The same blocking (two rows by four columns, eight accumulators, the depth's tail as one overlapping window with its
 * already-summed lanes masked off by an add, not a masked load, which C1 cannot compile in a kernel this size) and the
 * same fixed lane-sum order, so every element is summed alike on any thread count and before and after C2 compiles.
 */
final class GemmDotF64 {
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    private GemmDotF64() {}

    /** Rows of op(A) and columns of op(B) contiguous along k, k at least two vectors deep. */
    static boolean serves(int m, int k, long aColStride, long bRowStride) {
        return DL >= 4 && DL <= 8 && m <= GemmDot.MAX_M && aColStride == 1 && bRowStride == 1 && k >= 2 * DL;
    }

    /** C's element (i, j) at {@code cOff + i * crs + j * ccs}. */
    static void dgemm(int m, int n, int k, double alpha, MemorySegment a, long aOff, long ars,
                      MemorySegment b, long bOff, long bcs, double beta, MemorySegment c, long cOff, long crs, long ccs) {
        int groups = (n + 3) / 4;
        long work = (long) m * n * k;
        long grain = Math.max(1, groups * Gemm.PARALLEL_MIN_WORK / Math.max(1, work));
        Parallel.forRange(groups, grain, (g0, g1) -> {
            int j1 = (int) Math.min(n, g1 * 4);
            for (int j = (int) g0 * 4; j < j1; j += 4) {
                int width = Math.min(4, j1 - j);
                for (int i = 0; i < m; i += 2) {
                    long aRow0 = (aOff + i * ars) * Double.BYTES;
                    if (width < 4) {
                        for (int r = i; r < Math.min(m, i + 2); r++) {
                            long aRow = (aOff + r * ars) * Double.BYTES;
                            for (int jj = j; jj < j + width; jj++) single(aRow, r, jj, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                        }
                    } else if (i + 1 < m) {
                        pairByFour(aRow0, aRow0 + ars * Double.BYTES, i, j, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                    } else {
                        oneByFour(aRow0, i, j, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                    }
                }
            }
        });
    }

    /** Rows i and i + 1 of C, columns j to j + 3. */
    private static void pairByFour(long aRow0, long aRow1, int i, int j, int k, double alpha, MemorySegment a,
                                   MemorySegment b, long bOff, long bcs, double beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col0 = (bOff + j * bcs) * Double.BYTES, step = bcs * Double.BYTES;
        long col1 = col0 + step, col2 = col1 + step, col3 = col2 + step;
        DoubleVector s00 = DoubleVector.zero(DS), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
        int p = 0;
        for (; p + DL <= k; p += DL) {
            long o = 8L * p;
            DoubleVector a0 = DoubleVector.fromMemorySegment(DS, a, aRow0 + o, NO);
            DoubleVector a1 = DoubleVector.fromMemorySegment(DS, a, aRow1 + o, NO);
            DoubleVector b0 = DoubleVector.fromMemorySegment(DS, b, col0 + o, NO);
            DoubleVector b1 = DoubleVector.fromMemorySegment(DS, b, col1 + o, NO);
            DoubleVector b2 = DoubleVector.fromMemorySegment(DS, b, col2 + o, NO);
            DoubleVector b3 = DoubleVector.fromMemorySegment(DS, b, col3 + o, NO);
            s00 = a0.fma(b0, s00); s01 = a0.fma(b1, s01); s02 = a0.fma(b2, s02); s03 = a0.fma(b3, s03);
            s10 = a1.fma(b0, s10); s11 = a1.fma(b1, s11); s12 = a1.fma(b2, s12); s13 = a1.fma(b3, s13);
        }
        if (p < k) {
            long o = 8L * (k - DL);
            VectorMask<Double> fresh = DS.indexInRange(k - DL - p, DL);
            DoubleVector a0 = DoubleVector.fromMemorySegment(DS, a, aRow0 + o, NO);
            DoubleVector a1 = DoubleVector.fromMemorySegment(DS, a, aRow1 + o, NO);
            DoubleVector b0 = DoubleVector.fromMemorySegment(DS, b, col0 + o, NO);
            DoubleVector b1 = DoubleVector.fromMemorySegment(DS, b, col1 + o, NO);
            DoubleVector b2 = DoubleVector.fromMemorySegment(DS, b, col2 + o, NO);
            DoubleVector b3 = DoubleVector.fromMemorySegment(DS, b, col3 + o, NO);
            s00 = s00.add(a0.mul(b0), fresh); s01 = s01.add(a0.mul(b1), fresh); s02 = s02.add(a0.mul(b2), fresh); s03 = s03.add(a0.mul(b3), fresh);
            s10 = s10.add(a1.mul(b0), fresh); s11 = s11.add(a1.mul(b1), fresh); s12 = s12.add(a1.mul(b2), fresh); s13 = s13.add(a1.mul(b3), fresh);
        }
        // GemmDot's fixed fold of four accumulators into one vector, written out (a vector passed to a call is boxed).
        DoubleVector r001 = s00.add(s00.rearrange(SWAP_HALVES)).blend(s01.add(s01.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r023 = s02.add(s02.rearrange(SWAP_HALVES)).blend(s03.add(s03.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r0 = r001.add(r001.rearrange(SWAP_QUARTERS)).blend(r023.add(r023.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (DL >= 8) r0 = r0.add(r0.rearrange(SWAP_EIGHTHS));
        DoubleVector r101 = s10.add(s10.rearrange(SWAP_HALVES)).blend(s11.add(s11.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r123 = s12.add(s12.rearrange(SWAP_HALVES)).blend(s13.add(s13.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r1 = r101.add(r101.rearrange(SWAP_QUARTERS)).blend(r123.add(r123.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (DL >= 8) r1 = r1.add(r1.rearrange(SWAP_EIGHTHS));
        long c0 = (cOff + i * crs + j * ccs) * Double.BYTES, c1 = c0 + crs * Double.BYTES, cs = ccs * Double.BYTES;
        storeFour(c, c0, cs, r0.lane(0), r0.lane(DL / 2), r0.lane(DL / 4), r0.lane(3 * DL / 4), alpha, beta);
        storeFour(c, c1, cs, r1.lane(0), r1.lane(DL / 2), r1.lane(DL / 4), r1.lane(3 * DL / 4), alpha, beta);
    }

    /** Row i of C, columns j to j + 3. */
    private static void oneByFour(long aRow, int i, int j, int k, double alpha, MemorySegment a,
                                  MemorySegment b, long bOff, long bcs, double beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col0 = (bOff + j * bcs) * Double.BYTES, step = bcs * Double.BYTES;
        long col1 = col0 + step, col2 = col1 + step, col3 = col2 + step;
        DoubleVector s0 = DoubleVector.zero(DS), s1 = s0, s2 = s0, s3 = s0;
        int p = 0;
        for (; p + DL <= k; p += DL) {
            long o = 8L * p;
            DoubleVector a0 = DoubleVector.fromMemorySegment(DS, a, aRow + o, NO);
            s0 = a0.fma(DoubleVector.fromMemorySegment(DS, b, col0 + o, NO), s0);
            s1 = a0.fma(DoubleVector.fromMemorySegment(DS, b, col1 + o, NO), s1);
            s2 = a0.fma(DoubleVector.fromMemorySegment(DS, b, col2 + o, NO), s2);
            s3 = a0.fma(DoubleVector.fromMemorySegment(DS, b, col3 + o, NO), s3);
        }
        if (p < k) {
            long o = 8L * (k - DL);
            VectorMask<Double> fresh = DS.indexInRange(k - DL - p, DL);
            DoubleVector a0 = DoubleVector.fromMemorySegment(DS, a, aRow + o, NO);
            s0 = s0.add(a0.mul(DoubleVector.fromMemorySegment(DS, b, col0 + o, NO)), fresh);
            s1 = s1.add(a0.mul(DoubleVector.fromMemorySegment(DS, b, col1 + o, NO)), fresh);
            s2 = s2.add(a0.mul(DoubleVector.fromMemorySegment(DS, b, col2 + o, NO)), fresh);
            s3 = s3.add(a0.mul(DoubleVector.fromMemorySegment(DS, b, col3 + o, NO)), fresh);
        }
        DoubleVector r01 = s0.add(s0.rearrange(SWAP_HALVES)).blend(s1.add(s1.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r23 = s2.add(s2.rearrange(SWAP_HALVES)).blend(s3.add(s3.rearrange(SWAP_HALVES)), UPPER_HALF);
        DoubleVector r = r01.add(r01.rearrange(SWAP_QUARTERS)).blend(r23.add(r23.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (DL >= 8) r = r.add(r.rearrange(SWAP_EIGHTHS));
        long c0 = (cOff + i * crs + j * ccs) * Double.BYTES, cs = ccs * Double.BYTES;
        storeFour(c, c0, cs, r.lane(0), r.lane(DL / 2), r.lane(DL / 4), r.lane(3 * DL / 4), alpha, beta);
    }

    /** One element of C. */
    private static void single(long aRow, int i, int j, int k, double alpha, MemorySegment a, MemorySegment b, long bOff,
                               long bcs, double beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col = (bOff + j * bcs) * Double.BYTES;
        DoubleVector s = DoubleVector.zero(DS);
        int p = 0;
        for (; p + DL <= k; p += DL) {
            s = DoubleVector.fromMemorySegment(DS, a, aRow + 8L * p, NO).fma(DoubleVector.fromMemorySegment(DS, b, col + 8L * p, NO), s);
        }
        if (p < k) {
            long o = 8L * (k - DL);
            s = s.add(DoubleVector.fromMemorySegment(DS, a, aRow + o, NO).mul(DoubleVector.fromMemorySegment(DS, b, col + o, NO)),
                    DS.indexInRange(k - DL - p, DL));
        }
        // VectorF64.sumLanes' order (halves, then quarters, ...), on this class's species.
        s = s.add(s.rearrange(SWAP_HALVES));
        s = s.add(s.rearrange(SWAP_QUARTERS));
        if (DL >= 8) s = s.add(s.rearrange(SWAP_EIGHTHS));
        store(c, (cOff + i * crs + j * ccs) * Double.BYTES, s.lane(0), alpha, beta);
    }

    /** {@link GemmDot}'s shuffles and masks for double lanes (static finals: the intrinsics need them constant). */
    private static final VectorShuffle<Double> SWAP_HALVES = xor(DL / 2), SWAP_QUARTERS = xor(DL / 4);
    private static final VectorShuffle<Double> SWAP_EIGHTHS = DL >= 8 ? xor(DL / 8) : null;
    private static final VectorMask<Double> UPPER_HALF = lanes(i -> i >= DL / 2), ODD_QUARTERS = lanes(i -> (i & (DL / 4)) != 0);

    private static VectorShuffle<Double> xor(int distance) {
        return VectorShuffle.fromOp(DS, i -> i ^ distance);
    }

    private static VectorMask<Double> lanes(java.util.function.IntPredicate which) {
        boolean[] bits = new boolean[DL];
        for (int i = 0; i < DL; i++) bits[i] = which.test(i);
        return VectorMask.fromArray(DS, bits, 0);
    }

    private static void storeFour(MemorySegment c, long at, long step, double s0, double s1, double s2, double s3, double alpha, double beta) {
        store(c, at, s0, alpha, beta);
        store(c, at + step, s1, alpha, beta);
        store(c, at + 2 * step, s2, alpha, beta);
        store(c, at + 3 * step, s3, alpha, beta);
    }

    /** {@code C = alpha * sum + beta * C}; C is not read when beta is 0 (it may hold NaN). */
    private static void store(MemorySegment c, long at, double sum, double alpha, double beta) {
        double v = alpha * sum;
        if (beta != 0d) v += beta * c.get(F64, at);
        c.set(F64, at, v);
    }
}
