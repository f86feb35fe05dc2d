package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.FS;
import static org.jtorch.backend.cpu.Gemm.L;
import static org.jtorch.backend.cpu.Gemm.NR;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;

/**
 * {@link Gemm#sgemm}'s path for a short op(A) (some of {@value #MIN_M} to {@value #MAX_M} rows: a recurrent layer's
 * batch, a 10-class layer's weight gradient), where the general path ran at 57-68 GFLOP/s on one core against
 * PyTorch's 81-88: it packed all of op(B), whose elements are then used by only m multiply-adds, and its 8-row tiles
 * computed m = 20 as 24 rows. At m = 10 the unpacked rows of {@code Gemm.sgemmRowsDirect} read a transposed A element
 * by element (10 x 512 x 128: 41 GFLOP/s there, 94-98 here).
 *
 * <p>Here op(A) is packed once, whole, into {@value #R}-row blocks (it is small), and op(B) is walked one {@code NR}-wide
 * column panel at a time, over all of k: read in place where its rows are contiguous, else packed one panel at a time
 * (a transposed B, a linear layer's weight; the row blocks then read the panel from L1/L2). Each panel is finished
 * before the next, so an epilogue sees it while it is in cache. Panels are split between threads; each panel's result
 * is computed the same way on any thread count.
 */
final class GemmShortM {
    /** Rows of the register tile: 10 x 2 vectors is 20 accumulators, 2 B vectors and a broadcast in 32 registers. */
    static final int R = 10;
    static final int MIN_M = 9;
    static final int MAX_M = 30;
    /** op(A) is packed whole and op(B) a whole-k panel at a time, in KC-deep buffers; deeper products take the general path. */
    static final int MAX_K = Gemm.KC;

    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private GemmShortM() {}

    /**
     * Whether this path serves the product: only where its 10-row blocks pad m less than the general path's 8-row tiles
     * (m = 9-10, 17-20, 25-30). At m = 24 or 32 the packed 8-row path measured 10-25% faster (512-bit vectors, one
     * thread).
     */
    static boolean serves(int m, int n, int k) {
        return L == 16 && m >= MIN_M && m <= MAX_M && n >= NR && k <= MAX_K && roundUp(m, R) < roundUp(m, Gemm.MR);
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }

    private static final class Workspace {
        float[] a = new float[0];
        float[] panel = new float[0];
        final float[] tile = new float[R * NR];
        final float[] scratch = new float[NR * Gemm.KC];

        float[] a(int size) {
            if (a.length < size) a = new float[size];
            return a;
        }

        float[] panel(int size) {
            if (panel.length < size) panel = new float[size];
            return panel;
        }
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    static void sgemm(int m, int n, int k, float alpha, MemorySegment a, long aOff, long ars, long acs,
                      MemorySegment b, long bOff, long brs, long bcs, float beta, MemorySegment c, long cOff, long ldc,
                      Gemm.Epilogue epilogue) {
        int blocks = (m + R - 1) / R;
        Workspace own = WORKSPACE.get();
        float[] ap = own.a(blocks * R * k);
        packRows(a, aOff, ars, acs, m, k, ap, own.scratch);
        int panels = (n + NR - 1) / NR;
        long work = (long) m * n * k;
        Parallel.RangeBody body = (t0, t1) -> {
            Workspace ws = WORKSPACE.get();
            for (long t = t0; t < t1; t++) {
                int j0 = (int) t * NR, nr = Math.min(NR, n - j0);
                long cCol = (cOff + j0) * Float.BYTES, ldcBytes = ldc * Float.BYTES;
                if (bcs == 1 && nr == NR) {
                    long bByte = (bOff + j0) * Float.BYTES, rowBytes = brs * Float.BYTES;
                    for (int i0 = 0; i0 < m; i0 += R) {
                        kernelInPlace(k, ap, i0 * k, b, bByte, rowBytes, ws.tile);
                        Gemm.updateC(ws.tile, c, cCol + i0 * ldcBytes, ldcBytes, Math.min(R, m - i0), nr, alpha, beta);
                    }
                } else {
                    float[] bp = ws.panel(k * NR);
                    Gemm.packB(b, bOff + j0 * bcs, brs, bcs, k, nr, bp, ws.scratch);
                    for (int i0 = 0; i0 < m; i0 += R) {
                        kernelPacked(k, ap, i0 * k, bp, 0, ws.tile);
                        Gemm.updateC(ws.tile, c, cCol + i0 * ldcBytes, ldcBytes, Math.min(R, m - i0), nr, alpha, beta);
                    }
                }
                if (epilogue != null) epilogue.block(0, m, j0, j0 + nr);
            }
        };
        if (Parallel.numThreads() > 1 && work >= Gemm.PARALLEL_MIN_WORK && !Parallel.inParallelRegion()) {
            Parallel.forRange(panels, 1, body);
        } else {
            body.run(0, panels);
        }
    }

    /**
     * op(A) ({@code m x k}) as R-row blocks {@code dst[block*R*k + p*R + r]}, rows past m zero. A plain A's rows are
     * bulk-copied to the heap first and interleaved there, as {@link Gemm#packA} does.
     */
    static void packRows(MemorySegment a, long off, long rs, long cs, int m, int k, float[] dst, float[] scratch) {
        int blocks = (m + R - 1) / R;
        for (int blk = 0; blk < blocks; blk++) {
            int base = blk * R * k;
            for (int r = 0; r < R; r++) {
                int i = blk * R + r, to = base + r;
                if (i >= m) {
                    for (int p = 0; p < k; p++) dst[to + p * R] = 0f;
                } else if (cs == 1) {
                    MemorySegment.copy(a, F32, (off + i * rs) * Float.BYTES, scratch, 0, k);
                    for (int p = 0; p < k; p++) dst[to + p * R] = scratch[p];
                } else {
                    long row = off + i * rs;
                    for (int p = 0; p < k; p++) dst[to + p * R] = a.get(F32, (row + p * cs) * Float.BYTES);
                }
            }
        }
    }

    /** An R x NR tile of {@code A_block B_panel} over depth k, B's rows read in place ({@code rowBytes} apart). */
    private static void kernelInPlace(int k, float[] ap, int aBase, MemorySegment b, long bByte, long rowBytes, float[] tile) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS), c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS), c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        FloatVector c80 = FloatVector.zero(FS), c81 = FloatVector.zero(FS), c90 = FloatVector.zero(FS), c91 = FloatVector.zero(FS);
        for (int p = 0; p < k; p++) {
            long bi = bByte + p * rowBytes;
            int ai = aBase + p * R;
            FloatVector b0 = FloatVector.fromMemorySegment(FS, b, bi, NO);
            FloatVector b1 = FloatVector.fromMemorySegment(FS, b, bi + 4L * L, NO);
            FloatVector av = FloatVector.broadcast(FS, ap[ai]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(FS, ap[ai + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(FS, ap[ai + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(FS, ap[ai + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(FS, ap[ai + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(FS, ap[ai + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            av = FloatVector.broadcast(FS, ap[ai + 6]);
            c60 = b0.fma(av, c60);
            c61 = b1.fma(av, c61);
            av = FloatVector.broadcast(FS, ap[ai + 7]);
            c70 = b0.fma(av, c70);
            c71 = b1.fma(av, c71);
            av = FloatVector.broadcast(FS, ap[ai + 8]);
            c80 = b0.fma(av, c80);
            c81 = b1.fma(av, c81);
            av = FloatVector.broadcast(FS, ap[ai + 9]);
            c90 = b0.fma(av, c90);
            c91 = b1.fma(av, c91);
        }
        c00.intoArray(tile, 0);
        c01.intoArray(tile, L);
        c10.intoArray(tile, NR);
        c11.intoArray(tile, NR + L);
        c20.intoArray(tile, 2 * NR);
        c21.intoArray(tile, 2 * NR + L);
        c30.intoArray(tile, 3 * NR);
        c31.intoArray(tile, 3 * NR + L);
        c40.intoArray(tile, 4 * NR);
        c41.intoArray(tile, 4 * NR + L);
        c50.intoArray(tile, 5 * NR);
        c51.intoArray(tile, 5 * NR + L);
        c60.intoArray(tile, 6 * NR);
        c61.intoArray(tile, 6 * NR + L);
        c70.intoArray(tile, 7 * NR);
        c71.intoArray(tile, 7 * NR + L);
        c80.intoArray(tile, 8 * NR);
        c81.intoArray(tile, 8 * NR + L);
        c90.intoArray(tile, 9 * NR);
        c91.intoArray(tile, 9 * NR + L);
    }

    /**
     * As {@link #kernelInPlace} over a packed panel {@code bp[bBase + p*NR + j]} ({@link GemmPackedB} keeps whole panel sets). A separate copy on purpose, as Gemm's three
     * tile kernels are: reading the panel through a heap segment instead would mix heap and native segments at one
     * load site (C2 then compiles for both), and copying it into native memory would add a bulk copy per panel.
     */
    static void kernelPacked(int k, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS), c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS), c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        FloatVector c80 = FloatVector.zero(FS), c81 = FloatVector.zero(FS), c90 = FloatVector.zero(FS), c91 = FloatVector.zero(FS);
        for (int p = 0; p < k; p++) {
            int bi = bBase + p * NR;
            int ai = aBase + p * R;
            FloatVector b0 = FloatVector.fromArray(FS, bp, bi);
            FloatVector b1 = FloatVector.fromArray(FS, bp, bi + L);
            FloatVector av = FloatVector.broadcast(FS, ap[ai]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(FS, ap[ai + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(FS, ap[ai + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(FS, ap[ai + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(FS, ap[ai + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(FS, ap[ai + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            av = FloatVector.broadcast(FS, ap[ai + 6]);
            c60 = b0.fma(av, c60);
            c61 = b1.fma(av, c61);
            av = FloatVector.broadcast(FS, ap[ai + 7]);
            c70 = b0.fma(av, c70);
            c71 = b1.fma(av, c71);
            av = FloatVector.broadcast(FS, ap[ai + 8]);
            c80 = b0.fma(av, c80);
            c81 = b1.fma(av, c81);
            av = FloatVector.broadcast(FS, ap[ai + 9]);
            c90 = b0.fma(av, c90);
            c91 = b1.fma(av, c91);
        }
        c00.intoArray(tile, 0);
        c01.intoArray(tile, L);
        c10.intoArray(tile, NR);
        c11.intoArray(tile, NR + L);
        c20.intoArray(tile, 2 * NR);
        c21.intoArray(tile, 2 * NR + L);
        c30.intoArray(tile, 3 * NR);
        c31.intoArray(tile, 3 * NR + L);
        c40.intoArray(tile, 4 * NR);
        c41.intoArray(tile, 4 * NR + L);
        c50.intoArray(tile, 5 * NR);
        c51.intoArray(tile, 5 * NR + L);
        c60.intoArray(tile, 6 * NR);
        c61.intoArray(tile, 6 * NR + L);
        c70.intoArray(tile, 7 * NR);
        c71.intoArray(tile, 7 * NR + L);
        c80.intoArray(tile, 8 * NR);
        c81.intoArray(tile, 8 * NR + L);
        c90.intoArray(tile, 9 * NR);
        c91.intoArray(tile, 9 * NR + L);
    }
}
