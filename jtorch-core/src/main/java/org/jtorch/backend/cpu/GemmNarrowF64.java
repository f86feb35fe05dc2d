package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.DKC;
import static org.jtorch.backend.cpu.Gemm.DL;
import static org.jtorch.backend.cpu.Gemm.DMR;
import static org.jtorch.backend.cpu.Gemm.DS;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * Float64 products into a narrow C ({@link Gemm#DL} to {@value #MAX_N} columns) from a row-major op(B): B's rows are read
 * in place, not packed, and each {@link Gemm#DMR}-row block of C is computed across its whole width, three vectors of
 * columns at a time, the columns past the last whole vector as one vector ending at C's last column. The packed path
 * packed B for every call and padded C's columns to whole 16-column strips: time_sequence_prediction's backward
 * products {@code g W} ({@code [97, 204] x [204, 51]}) and {@code g^T h} ({@code [204, 97] x [97, 51]}) did a quarter
 * more multiply-adds than they needed and packed 10,000 doubles of B each call.
 *
 * <p>Every element of C gets {@link Gemm#kernelD}'s bits: per {@link Gemm#DKC}-deep block one chain of fused
 * multiply-adds over p ascending, applied to C as {@link Gemm#updateCD} applies a tile (beta 0: the first block's
 * {@code alpha * sum} stored; else C scaled by beta first, then {@code fma(alpha, sum, C)} per block). So the results
 * are those of the packed path, on any thread count.
 */
final class GemmNarrowF64 {
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Widest C taken: every row block of C reads all of B's depth block, which must stay in the caches. */
    static final int MAX_N = 8 * DL;
    /** Columns of the wide register tile: three vectors. */
    private static final int WIDE = 3 * DL;
    private static final DoubleVector IOTA = DoubleVector.zero(DS).addIndex(1);

    private GemmNarrowF64() {}

    /** Per-thread packed rows of A and the register tile's spill. */
    private static final class Workspace {
        final double[] ap = new double[DMR * DKC];
        final double[] tile = new double[DMR * WIDE];
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    /** Whether op(B)'s and C's columns are contiguous and C is at least one vector and at most {@value #MAX_N} wide. */
    static boolean serves(int m, int n, long bColStride) {
        return m > 1 && n >= DL && n <= MAX_N && bColStride == 1;
    }

    /** C's element (i, j) at {@code cOff + i * ldc + j}; op(B)'s (p, j) at {@code bOff + p * brs + j}; k >= 1, alpha != 0. */
    static void dgemm(int m, int n, int k, double alpha, MemorySegment a, long aOff, long ars, long acs,
                      MemorySegment b, long bOff, long brs, double beta, MemorySegment c, long cOff, long ldc) {
        boolean overwrite = beta == 0d;
        if (!overwrite) Gemm.scaleD(m, n, beta, c, cOff, ldc);
        int rowBlocks = (m + DMR - 1) / DMR;
        long brsBytes = brs * Double.BYTES, ldcBytes = ldc * Double.BYTES;
        Parallel.RangeBody body = (t0, t1) -> {
            Workspace ws = WORKSPACE.get();
            for (int blk = (int) t0; blk < t1; blk++) {
                int i0 = blk * DMR, rows = Math.min(DMR, m - i0);
                for (int pc = 0; pc < k; pc += DKC) {
                    int kc = Math.min(DKC, k - pc);
                    boolean store = overwrite && pc == 0;
                    Gemm.packDA(a, aOff + i0 * ars + pc * acs, ars, acs, rows, kc, ws.ap);
                    long bBlock = (bOff + pc * brs) * Double.BYTES, cRow = (cOff + i0 * ldc) * Double.BYTES;
                    int j = 0;
                    for (; j + WIDE <= n; j += WIDE) {
                        threeVectors(kc, ws.ap, b, bBlock + j * 8L, brsBytes, ws.tile);
                        update(ws.tile, 3, c, cRow + j * 8L, ldcBytes, rows, alpha, store, 0);
                    }
                    for (; j + DL <= n; j += DL) {
                        oneVector(kc, ws.ap, b, bBlock + j * 8L, brsBytes, ws.tile);
                        update(ws.tile, 1, c, cRow + j * 8L, ldcBytes, rows, alpha, store, 0);
                    }
                    if (j < n) {
                        int w = n - DL;
                        oneVector(kc, ws.ap, b, bBlock + w * 8L, brsBytes, ws.tile);
                        update(ws.tile, 1, c, cRow + w * 8L, ldcBytes, rows, alpha, store, j - w);
                    }
                }
            }
        };
        if (Parallel.numThreads() > 1 && (long) m * n * k >= Gemm.PARALLEL_MIN_WORK && !Parallel.inParallelRegion()) {
            Parallel.forRange(rowBlocks, 1, body);
        } else {
            body.run(0, rowBlocks);
        }
    }

    /** A DMR x 3-vector tile over depth {@code kc} from packed A and B's rows at {@code bByte + p * brsBytes}, into {@code tile}. */
    private static void threeVectors(int kc, double[] ap, MemorySegment b, long bByte, long brsBytes, double[] tile) {
        DoubleVector c00 = DoubleVector.zero(DS), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
        DoubleVector c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
        DoubleVector c40 = c00, c41 = c00, c42 = c00, c50 = c00, c51 = c00, c52 = c00;
        DoubleVector c60 = c00, c61 = c00, c62 = c00, c70 = c00, c71 = c00, c72 = c00;
        for (int p = 0; p < kc; p++) {
            long bi = bByte + p * brsBytes;
            int ai = p * DMR;
            DoubleVector b0 = DoubleVector.fromMemorySegment(DS, b, bi, NO);
            DoubleVector b1 = DoubleVector.fromMemorySegment(DS, b, bi + DL * 8L, NO);
            DoubleVector b2 = DoubleVector.fromMemorySegment(DS, b, bi + 2 * DL * 8L, NO);
            DoubleVector av = DoubleVector.broadcast(DS, ap[ai]);
            c00 = b0.fma(av, c00); c01 = b1.fma(av, c01); c02 = b2.fma(av, c02);
            av = DoubleVector.broadcast(DS, ap[ai + 1]);
            c10 = b0.fma(av, c10); c11 = b1.fma(av, c11); c12 = b2.fma(av, c12);
            av = DoubleVector.broadcast(DS, ap[ai + 2]);
            c20 = b0.fma(av, c20); c21 = b1.fma(av, c21); c22 = b2.fma(av, c22);
            av = DoubleVector.broadcast(DS, ap[ai + 3]);
            c30 = b0.fma(av, c30); c31 = b1.fma(av, c31); c32 = b2.fma(av, c32);
            av = DoubleVector.broadcast(DS, ap[ai + 4]);
            c40 = b0.fma(av, c40); c41 = b1.fma(av, c41); c42 = b2.fma(av, c42);
            av = DoubleVector.broadcast(DS, ap[ai + 5]);
            c50 = b0.fma(av, c50); c51 = b1.fma(av, c51); c52 = b2.fma(av, c52);
            av = DoubleVector.broadcast(DS, ap[ai + 6]);
            c60 = b0.fma(av, c60); c61 = b1.fma(av, c61); c62 = b2.fma(av, c62);
            av = DoubleVector.broadcast(DS, ap[ai + 7]);
            c70 = b0.fma(av, c70); c71 = b1.fma(av, c71); c72 = b2.fma(av, c72);
        }
        c00.intoArray(tile, 0); c01.intoArray(tile, DL); c02.intoArray(tile, 2 * DL);
        c10.intoArray(tile, WIDE); c11.intoArray(tile, WIDE + DL); c12.intoArray(tile, WIDE + 2 * DL);
        c20.intoArray(tile, 2 * WIDE); c21.intoArray(tile, 2 * WIDE + DL); c22.intoArray(tile, 2 * WIDE + 2 * DL);
        c30.intoArray(tile, 3 * WIDE); c31.intoArray(tile, 3 * WIDE + DL); c32.intoArray(tile, 3 * WIDE + 2 * DL);
        c40.intoArray(tile, 4 * WIDE); c41.intoArray(tile, 4 * WIDE + DL); c42.intoArray(tile, 4 * WIDE + 2 * DL);
        c50.intoArray(tile, 5 * WIDE); c51.intoArray(tile, 5 * WIDE + DL); c52.intoArray(tile, 5 * WIDE + 2 * DL);
        c60.intoArray(tile, 6 * WIDE); c61.intoArray(tile, 6 * WIDE + DL); c62.intoArray(tile, 6 * WIDE + 2 * DL);
        c70.intoArray(tile, 7 * WIDE); c71.intoArray(tile, 7 * WIDE + DL); c72.intoArray(tile, 7 * WIDE + 2 * DL);
    }

    /** {@link #threeVectors} for one vector of columns; row r's sums at {@code tile[r * WIDE]}. */
    private static void oneVector(int kc, double[] ap, MemorySegment b, long bByte, long brsBytes, double[] tile) {
        DoubleVector c0 = DoubleVector.zero(DS), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
        for (int p = 0; p < kc; p++) {
            DoubleVector bv = DoubleVector.fromMemorySegment(DS, b, bByte + p * brsBytes, NO);
            int ai = p * DMR;
            c0 = bv.fma(DoubleVector.broadcast(DS, ap[ai]), c0);
            c1 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 1]), c1);
            c2 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 2]), c2);
            c3 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 3]), c3);
            c4 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 4]), c4);
            c5 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 5]), c5);
            c6 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 6]), c6);
            c7 = bv.fma(DoubleVector.broadcast(DS, ap[ai + 7]), c7);
        }
        c0.intoArray(tile, 0); c1.intoArray(tile, WIDE); c2.intoArray(tile, 2 * WIDE); c3.intoArray(tile, 3 * WIDE);
        c4.intoArray(tile, 4 * WIDE); c5.intoArray(tile, 5 * WIDE); c6.intoArray(tile, 6 * WIDE); c7.intoArray(tile, 7 * WIDE);
    }

    /**
     * {@link Gemm#updateCD}'s update of {@code rows} rows of {@code vectors} vectors of C from the tile; lanes below
     * {@code keep} of a one-vector update are left as they are (the last columns' window, whose first lanes the vector
     * before it has written).
     */
    private static void update(double[] tile, int vectors, MemorySegment c, long cByte, long ldcBytes, int rows, double alpha,
                               boolean store, int keep) {
        DoubleVector alv = DoubleVector.broadcast(DS, alpha);
        VectorMask<Double> fresh = IOTA.compare(VectorOperators.GE, keep);
        for (int r = 0; r < rows; r++) {
            for (int v = 0; v < vectors; v++) {
                long at = cByte + r * ldcBytes + v * DL * 8L;
                DoubleVector t = DoubleVector.fromArray(DS, tile, r * WIDE + v * DL);
                if (store && keep == 0) {
                    t.mul(alv).intoMemorySegment(c, at, NO);
                    continue;
                }
                DoubleVector old = DoubleVector.fromMemorySegment(DS, c, at, NO);
                DoubleVector sum = store ? t.mul(alv) : t.fma(alv, old);
                (keep == 0 ? sum : old.blend(sum, fresh)).intoMemorySegment(c, at, NO);
            }
        }
    }
}
