package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.FS;
import static org.jtorch.backend.cpu.Gemm.L;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;

/**
 * {@link Gemm#sgemm}'s path for a very short op(A) (at most {@value #MAX_M} rows) against a transposed op(B) whose
 * columns are contiguous: a linear layer's forward at batch 1-8 ({@code x W^T}, W stored {@code [n, k]}); and, through
 * {@code C^T = B^T A^T}, a matrix times at most {@value #MAX_M} columns ({@code W x}, a matrix-vector product). Each
 * element of C is a dot product of two contiguous rows, so the long operand is streamed once, in place, with no
 * packing: the general path packed all of it for one or two rows and ran at 3-6 GFLOP/s where this reaches the
 * memory's rate.
 *
 * <p>Four columns of C at a time, two rows of A at a time (eight vector accumulators, six loads a step), each
 * accumulator reduced across its lanes at the end. A thread's share is a run of whole four-column groups, so every
 * element is summed in the same order on any thread count.
 */
final class GemmDot {
    static final int MAX_M = 8;

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private GemmDot() {}

    /** Rows of op(A) and columns of op(B) contiguous along k, k at least two vectors deep. */
    static boolean serves(int m, int k, long aColStride, long bRowStride) {
        return L >= 4 && L <= 16 && m <= MAX_M && aColStride == 1 && bRowStride == 1 && k >= 2 * L;
    }

    /** C's element (i, j) at {@code cOff + i * crs + j * ccs}; the epilogue gets blocks in these (i, j). */
    static void sgemm(int m, int n, int k, float alpha, MemorySegment a, long aOff, long ars,
                      MemorySegment b, long bOff, long bcs, float beta, MemorySegment c, long cOff, long crs, long ccs,
                      Gemm.Epilogue epilogue) {
        int groups = (n + 3) / 4;
        long work = (long) m * n * k;
        long grain = Math.max(1, groups * Gemm.PARALLEL_MIN_WORK / Math.max(1, work));
        Parallel.forRange(groups, grain, (g0, g1) -> {
            int j1 = (int) Math.min(n, g1 * 4);
            for (int j = (int) g0 * 4; j < j1; j += 4) {
                int width = Math.min(4, j1 - j);
                for (int i = 0; i < m; i += 2) {
                    long aRow0 = (aOff + i * ars) * Float.BYTES;
                    if (width < 4) {
                        for (int r = i; r < Math.min(m, i + 2); r++) {
                            long aRow = (aOff + r * ars) * Float.BYTES;
                            for (int jj = j; jj < j + width; jj++) single(aRow, r, jj, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                        }
                    } else if (i + 1 < m) {
                        pairByFour(aRow0, aRow0 + ars * Float.BYTES, i, j, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                    } else {
                        oneByFour(aRow0, i, j, k, alpha, a, b, bOff, bcs, beta, c, cOff, crs, ccs);
                    }
                }
            }
            if (epilogue != null) epilogue.block(0, m, (int) g0 * 4, j1);
        });
    }

    /** Rows i and i + 1 of C, columns j to j + 3. */
    private static void pairByFour(long aRow0, long aRow1, int i, int j, int k, float alpha, MemorySegment a,
                                   MemorySegment b, long bOff, long bcs, float beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col0 = (bOff + j * bcs) * Float.BYTES, step = bcs * Float.BYTES;
        long col1 = col0 + step, col2 = col1 + step, col3 = col2 + step;
        FloatVector s00 = FloatVector.zero(FS), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00, s13 = s00;
        int p = 0;
        for (; p + L <= k; p += L) {
            long o = 4L * p;
            FloatVector a0 = FloatVector.fromMemorySegment(FS, a, aRow0 + o, NO);
            FloatVector a1 = FloatVector.fromMemorySegment(FS, a, aRow1 + o, NO);
            FloatVector b0 = FloatVector.fromMemorySegment(FS, b, col0 + o, NO);
            FloatVector b1 = FloatVector.fromMemorySegment(FS, b, col1 + o, NO);
            FloatVector b2 = FloatVector.fromMemorySegment(FS, b, col2 + o, NO);
            FloatVector b3 = FloatVector.fromMemorySegment(FS, b, col3 + o, NO);
            s00 = a0.fma(b0, s00); s01 = a0.fma(b1, s01); s02 = a0.fma(b2, s02); s03 = a0.fma(b3, s03);
            s10 = a1.fma(b0, s10); s11 = a1.fma(b1, s11); s12 = a1.fma(b2, s12); s13 = a1.fma(b3, s13);
        }
        if (p < k) {
            // The last k - p products from one window ending at k, its lanes before p (already summed) masked off.
            long o = 4L * (k - L);
            VectorMask<Float> fresh = FS.indexInRange(k - L - p, L);
            FloatVector a0 = FloatVector.fromMemorySegment(FS, a, aRow0 + o, NO);
            FloatVector a1 = FloatVector.fromMemorySegment(FS, a, aRow1 + o, NO);
            FloatVector b0 = FloatVector.fromMemorySegment(FS, b, col0 + o, NO);
            FloatVector b1 = FloatVector.fromMemorySegment(FS, b, col1 + o, NO);
            FloatVector b2 = FloatVector.fromMemorySegment(FS, b, col2 + o, NO);
            FloatVector b3 = FloatVector.fromMemorySegment(FS, b, col3 + o, NO);
            s00 = s00.add(a0.mul(b0), fresh); s01 = s01.add(a0.mul(b1), fresh); s02 = s02.add(a0.mul(b2), fresh); s03 = s03.add(a0.mul(b3), fresh);
            s10 = s10.add(a1.mul(b0), fresh); s11 = s11.add(a1.mul(b1), fresh); s12 = s12.add(a1.mul(b2), fresh); s13 = s13.add(a1.mul(b3), fresh);
        }
        // Four accumulators' lane sums at once, in a fixed order (see SWAP_HALVES), written out here: a vector passed to a
        // call that C2 does not inline is boxed.
        FloatVector r001 = s00.add(s00.rearrange(SWAP_HALVES)).blend(s01.add(s01.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r023 = s02.add(s02.rearrange(SWAP_HALVES)).blend(s03.add(s03.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r0 = r001.add(r001.rearrange(SWAP_QUARTERS)).blend(r023.add(r023.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (L >= 8) r0 = r0.add(r0.rearrange(SWAP_EIGHTHS));
        if (L >= 16) r0 = r0.add(r0.rearrange(SWAP_SIXTEENTHS));
        FloatVector r101 = s10.add(s10.rearrange(SWAP_HALVES)).blend(s11.add(s11.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r123 = s12.add(s12.rearrange(SWAP_HALVES)).blend(s13.add(s13.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r1 = r101.add(r101.rearrange(SWAP_QUARTERS)).blend(r123.add(r123.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (L >= 8) r1 = r1.add(r1.rearrange(SWAP_EIGHTHS));
        if (L >= 16) r1 = r1.add(r1.rearrange(SWAP_SIXTEENTHS));
        long c0 = (cOff + i * crs + j * ccs) * Float.BYTES, c1 = c0 + crs * Float.BYTES, cs = ccs * Float.BYTES;
        storeFour(c, c0, cs, r0.lane(0), r0.lane(L / 2), r0.lane(L / 4), r0.lane(3 * L / 4), alpha, beta);
        storeFour(c, c1, cs, r1.lane(0), r1.lane(L / 2), r1.lane(L / 4), r1.lane(3 * L / 4), alpha, beta);
    }

    /** Row i of C, columns j to j + 3. */
    private static void oneByFour(long aRow, int i, int j, int k, float alpha, MemorySegment a,
                                  MemorySegment b, long bOff, long bcs, float beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col0 = (bOff + j * bcs) * Float.BYTES, step = bcs * Float.BYTES;
        long col1 = col0 + step, col2 = col1 + step, col3 = col2 + step;
        FloatVector s0 = FloatVector.zero(FS), s1 = s0, s2 = s0, s3 = s0;
        int p = 0;
        for (; p + L <= k; p += L) {
            long o = 4L * p;
            FloatVector a0 = FloatVector.fromMemorySegment(FS, a, aRow + o, NO);
            s0 = a0.fma(FloatVector.fromMemorySegment(FS, b, col0 + o, NO), s0);
            s1 = a0.fma(FloatVector.fromMemorySegment(FS, b, col1 + o, NO), s1);
            s2 = a0.fma(FloatVector.fromMemorySegment(FS, b, col2 + o, NO), s2);
            s3 = a0.fma(FloatVector.fromMemorySegment(FS, b, col3 + o, NO), s3);
        }
        if (p < k) {
            long o = 4L * (k - L);
            VectorMask<Float> fresh = FS.indexInRange(k - L - p, L);
            FloatVector a0 = FloatVector.fromMemorySegment(FS, a, aRow + o, NO);
            s0 = s0.add(a0.mul(FloatVector.fromMemorySegment(FS, b, col0 + o, NO)), fresh);
            s1 = s1.add(a0.mul(FloatVector.fromMemorySegment(FS, b, col1 + o, NO)), fresh);
            s2 = s2.add(a0.mul(FloatVector.fromMemorySegment(FS, b, col2 + o, NO)), fresh);
            s3 = s3.add(a0.mul(FloatVector.fromMemorySegment(FS, b, col3 + o, NO)), fresh);
        }
        FloatVector r01 = s0.add(s0.rearrange(SWAP_HALVES)).blend(s1.add(s1.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r23 = s2.add(s2.rearrange(SWAP_HALVES)).blend(s3.add(s3.rearrange(SWAP_HALVES)), UPPER_HALF);
        FloatVector r = r01.add(r01.rearrange(SWAP_QUARTERS)).blend(r23.add(r23.rearrange(SWAP_QUARTERS)), ODD_QUARTERS);
        if (L >= 8) r = r.add(r.rearrange(SWAP_EIGHTHS));
        if (L >= 16) r = r.add(r.rearrange(SWAP_SIXTEENTHS));
        long c0 = (cOff + i * crs + j * ccs) * Float.BYTES, cs = ccs * Float.BYTES;
        storeFour(c, c0, cs, r.lane(0), r.lane(L / 2), r.lane(L / 4), r.lane(3 * L / 4), alpha, beta);
    }

    /** One element of C. */
    private static void single(long aRow, int i, int j, int k, float alpha, MemorySegment a, MemorySegment b, long bOff,
                               long bcs, float beta, MemorySegment c, long cOff, long crs, long ccs) {
        long col = (bOff + j * bcs) * Float.BYTES;
        FloatVector s = FloatVector.zero(FS);
        int p = 0;
        for (; p + L <= k; p += L) {
            s = FloatVector.fromMemorySegment(FS, a, aRow + 4L * p, NO).fma(FloatVector.fromMemorySegment(FS, b, col + 4L * p, NO), s);
        }
        if (p < k) {
            long o = 4L * (k - L);
            s = s.add(FloatVector.fromMemorySegment(FS, a, aRow + o, NO).mul(FloatVector.fromMemorySegment(FS, b, col + o, NO)),
                    FS.indexInRange(k - L - p, L));
        }
        store(c, (cOff + i * crs + j * ccs) * Float.BYTES, VectorF32.sumLanes(s), alpha, beta);
    }

    /**
     * The lane sums of four accumulators s0..s3 in one vector: fold each onto itself across halves and keep s0's in the
     * lower half, s1's in the upper (likewise s2, s3); fold across quarters and interleave the two, then fold the rest.
     * s0's sum ends in lane 0, s1's in L/2, s2's in L/4, s3's in 3L/4. Lanewise adds and exact permutations only, so the
     * result is the same whether C2 has compiled the kernel or not, which {@code reduceLanes(ADD)} does not promise
     * (C2's intrinsic and the interpreter sum in different orders). Static finals: the intrinsic needs each shuffle
     * and mask as a constant of its exact class.
     */
    private static final VectorShuffle<Float> SWAP_HALVES = xor(L / 2), SWAP_QUARTERS = xor(L / 4);
    private static final VectorShuffle<Float> SWAP_EIGHTHS = L >= 8 ? xor(L / 8) : null, SWAP_SIXTEENTHS = L >= 16 ? xor(L / 16) : null;
    private static final VectorMask<Float> UPPER_HALF = lanes(i -> i >= L / 2), ODD_QUARTERS = lanes(i -> (i & (L / 4)) != 0);

    private static VectorShuffle<Float> xor(int distance) {
        return VectorShuffle.fromOp(FS, i -> i ^ distance);
    }

    private static VectorMask<Float> lanes(java.util.function.IntPredicate which) {
        boolean[] bits = new boolean[L];
        for (int i = 0; i < L; i++) bits[i] = which.test(i);
        return VectorMask.fromArray(FS, bits, 0);
    }

    private static void storeFour(MemorySegment c, long at, long step, float s0, float s1, float s2, float s3, float alpha, float beta) {
        store(c, at, s0, alpha, beta);
        store(c, at + step, s1, alpha, beta);
        store(c, at + 2 * step, s2, alpha, beta);
        store(c, at + 3 * step, s3, alpha, beta);
    }

    /** {@code C = alpha * sum + beta * C}; C is not read when beta is 0 (it may hold NaN). */
    private static void store(MemorySegment c, long at, float sum, float alpha, float beta) {
        float v = alpha * sum;
        if (beta != 0f) v += beta * c.get(F32, at);
        c.set(F32, at, v);
    }
}
