package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * General matrix multiply on the CPU: {@code C = alpha * op(A) * op(B) + beta * C}.
 *
 * <p>All matrices are addressed in elements: {@code op(A)[i][p]} is the element at
 * {@code aOffset + i * aRowStride + p * aColStride}, likewise for B, and C is row-major with
 * leading dimension {@code ldc} ({@code C[i][j]} at {@code cOffset + i * ldc + j}). Strides may be
 * anything, so transposed and non-contiguous views need no copy: packing reads through them.
 * C must not overlap A or B.
 *
 * <p>As in BLAS, {@code beta == 0} ignores the old contents of C (NaN in C does not propagate) and
 * {@code alpha == 0} or {@code k == 0} leaves {@code C = beta * C} without reading A or B.
 *
 * <p>The single-precision kernel is Goto/BLIS style: op(B) is packed into {@code NR}-wide strips,
 * op(A) into {@code MR}-tall strips, and a register-blocked Vector API micro-kernel computes an
 * {@code MR x NR} tile of C per call. Pack buffers are heap arrays cached per thread, so a call
 * allocates nothing after the first one of its size on that thread. Large problems are split over
 * {@link Parallel}'s threads; each thread works on its own rows or columns of C, so results do
 * not depend on the thread count.
 *
 * <p>Thread safety: calls from different threads are independent (each uses its own buffers).
 * Large calls read and write the segments from {@link Parallel}'s worker threads, so the segments
 * must be accessible from any thread (global, auto or shared arenas, not confined ones).
 */
public final class Gemm {
    static final VectorSpecies<Float> FS =
            FloatVector.SPECIES_PREFERRED.length() >= 16 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Double> DS =
            DoubleVector.SPECIES_PREFERRED.length() >= 8 ? DoubleVector.SPECIES_512 : DoubleVector.SPECIES_PREFERRED;
    /** MR lanes, for packing MR consecutive rows of a transposed A with one load. */
    private static final VectorSpecies<Float> FS_MR = FloatVector.SPECIES_256;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Lanes of one float vector. */
    static final int L = FS.length();
    /** Rows of the register tile. */
    static final int MR = 8;
    /** Columns of the register tile: two vectors. */
    static final int NR = 2 * L;
    /**
     * Depth of a packed block. Deep blocks pay off more than an L1-resident B strip: every block
     * adds one pass of C updates (through the heap tile) and one set of micro-kernel calls, and at
     * KC = 256 those cost ~10% on Zen 5; at 1024 the B strip (128 KB) streams from L2 with the A
     * block (MC x KC = 512 KB) and square 512-2048 single-thread SGEMM rose from ~0.80-0.87 to
     * ~0.93-0.98 of OpenBLAS's AVX-512 kernels.
     */
    static final int KC = 1024;
    /** Rows of a packed A block (MC x KC floats, kept in L2). */
    static final int MC = 128;
    /** Columns of a packed B block. */
    static final int NC = 2048;
    /** Below this many multiply-adds a call runs on the calling thread only. */
    static final long PARALLEL_MIN_WORK = 64L * 64 * 64;

    private Gemm() {}

    /** Per-thread pack buffers, grown on demand and then reused. */
    private static final class Workspace {
        float[] a = new float[0];
        float[] b = new float[0];
        final float[] tile = new float[MR * NR];
        final float[] scratch = new float[Math.max(MR, NR) * KC];
        double[] da = new double[0];
        /** Packed double B, off-heap: {@link #kernelD} reads its B strip from a segment, packed or in place. */
        MemorySegment db = MemorySegment.NULL;
        final double[] dtile = new double[DMR * DNR];

        float[] a(int size) {
            if (a.length < size) a = new float[size];
            return a;
        }

        float[] b(int size) {
            if (b.length < size) b = new float[size];
            return b;
        }

        double[] da(int size) {
            if (da.length < size) da = new double[size];
            return da;
        }

        double[] dcols = new double[0];
        /** Lane l at {@code l * depth}: a gather of one p from DL consecutive rows {@code depth} apart. */
        final int[] rowLanes = new int[DL];
        int rowLanesDepth = -1;

        int[] rowLanes(int depth) {
            if (rowLanesDepth != depth) {
                for (int l = 0; l < DL; l++) rowLanes[l] = l * depth;
                rowLanesDepth = depth;
            }
            return rowLanes;
        }

        double[] dcols(int size) {
            if (dcols.length < size) dcols = new double[size];
            return dcols;
        }

        MemorySegment db(long doubles) {
            if (db.byteSize() < doubles * Double.BYTES) db = Arena.ofAuto().allocate(doubles * Double.BYTES, 64);
            return db;
        }
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    // ------------------------------------------------------------------------------------------
    // Single precision
    // ------------------------------------------------------------------------------------------

    /**
     * BLAS-style entry point: {@code op(X)} is X or its transpose; A, B and C are row-major with
     * leading dimensions {@code lda}, {@code ldb}, {@code ldc}. op(A) is {@code m x k}, op(B) is
     * {@code k x n}.
     */
    public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOffset, long lda,
                             MemorySegment b, long bOffset, long ldb, float beta,
                             MemorySegment c, long cOffset, long ldc) {
        sgemm(m, n, k, alpha,
                a, aOffset, transA ? 1 : lda, transA ? lda : 1,
                b, bOffset, transB ? 1 : ldb, transB ? ldb : 1,
                beta, c, cOffset, ldc);
    }

    /** General-stride form: {@code op(A)[i][p] = a[aOffset + i*aRowStride + p*aColStride]}, same for B. */
    public static void sgemm(int m, int n, int k, float alpha,
                             MemorySegment a, long aOffset, long aRowStride, long aColStride,
                             MemorySegment b, long bOffset, long bRowStride, long bColStride, float beta,
                             MemorySegment c, long cOffset, long ldc) {
        sgemm(m, n, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, null);
    }

    /**
     * Work run on a finished block of C (rows {@code [i0, i1)}, columns {@code [j0, j1)}) by the thread that computed it,
     * while the block is still in its cache: a fused pointwise epilogue (bias, activation, residual add). Blocks do not
     * overlap and together cover C once.
     */
    @FunctionalInterface
    public interface Epilogue {
        void block(int i0, int i1, int j0, int j1);
    }

    /** {@link #sgemm(int, int, int, float, MemorySegment, long, long, long, MemorySegment, long, long, long, float, MemorySegment, long, long)} with an epilogue (null for none). */
    public static void sgemm(int m, int n, int k, float alpha,
                             MemorySegment a, long aOffset, long aRowStride, long aColStride,
                             MemorySegment b, long bOffset, long bRowStride, long bColStride, float beta,
                             MemorySegment c, long cOffset, long ldc, Epilogue epilogue) {
        checkDims("sgemm", m, n, k);
        if (m == 0 || n == 0) return;
        if (k == 0 || alpha == 0f) {
            scaleF(m, n, beta, c, cOffset, ldc);
            if (epilogue != null) epilogue.block(0, m, 0, n);
            return;
        }
        long work = (long) m * n * k;
        if (GemmDot.serves(m, k, aColStride, bRowStride)) {
            GemmDot.sgemm(m, n, k, alpha, a, aOffset, aRowStride, b, bOffset, bColStride, beta, c, cOffset, ldc, 1, epilogue);
            return;
        }
        if (GemmDot.serves(n, k, bRowStride, aColStride)) { // C^T = B^T A^T: a matrix times a few columns
            GemmDot.sgemm(n, m, k, alpha, b, bOffset, bColStride, a, aOffset, aRowStride, beta, c, cOffset, 1, ldc,
                    epilogue == null ? null : (j0, j1, i0, i1) -> epilogue.block(i0, i1, j0, j1));
            return;
        }
        if (GemmStream.serves(m, n, aRowStride)) { // A^T B with a few columns: rows of A run along C's columns
            GemmStream.sgemm(m, n, k, alpha, a, aOffset, aColStride, b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, 1,
                    epilogue);
            return;
        }
        if (GemmShortM.serves(m, n, k)) {
            GemmShortM.sgemm(m, n, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, epilogue);
            return;
        }
        // Short m only: with short k (a 10-class layer's input gradient, 128 x 512 x 10) and a longer m the packed path
        // below runs 2-2.8x faster than these unpacked rows (its 8 x 32 tiles store C once per 10-16 FMAs per vector).
        if (bColStride == 1 && n >= L && m <= SMALL_SIDE) {
            sgemmRowsDirect(m, n, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, beta, c, cOffset, ldc, epilogue);
            return;
        }
        int threads = Parallel.numThreads();
        if (threads == 1 || work < PARALLEL_MIN_WORK || Parallel.inParallelRegion()) {
            sgemmBlock(0, m, 0, n, k, alpha, a, aOffset, aRowStride, aColStride,
                    b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, epilogue);
            return;
        }
        int mTiles = (m + MR - 1) / MR;
        int nTiles = (n + NR - 1) / NR;
        boolean splitN = splitsColumns(m, n, mTiles, nTiles, threads);
        if (splitN) {
            Parallel.forRange(nTiles, 1, (t0, t1) -> sgemmBlock(0, m, (int) t0 * NR, (int) Math.min(n, t1 * NR), k,
                    alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, epilogue));
        } else {
            Parallel.forRange(mTiles, 1, (t0, t1) -> sgemmBlock((int) t0 * MR, (int) Math.min(m, t1 * MR), 0, n, k,
                    alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, bColStride, beta, c, cOffset, ldc, epilogue));
        }
    }

    /**
     * Whether {@link #sgemm}'s threads split C's columns rather than its rows. Each thread packs its own copy of the
     * operand it does not split (A, m x k, for columns; B, k x n, for rows) and multiplies its largest share of tiles;
     * the split with the smaller such thread (in columns of C times m, with a packed element counted as
     * {@link #PACK_COLUMNS} multiply-adds per row) wins, as long as it has a tile per thread. By operand size alone a square
     * 200 x 200 C took columns: 7 tiles of 32 as 4 and 3, the larger thread 64% above its even share of the work where
     * rows give 13 and 12 tiles of 8.
     */
    static boolean splitsColumns(int m, int n, int mTiles, int nTiles, int threads) {
        if (nTiles < threads) return false;
        if (mTiles < threads) return true;
        long columnsThread = Math.min(n, (long) (nTiles + threads - 1) / threads * NR);
        long rowsThread = Math.min(m, (long) (mTiles + threads - 1) / threads * MR);
        return (long) m * (PACK_COLUMNS + columnsThread) <= (long) n * (PACK_COLUMNS + rowsThread);
    }

    /** A packed element's cost in multiply-adds of one row of C ({@link #splitsColumns}): about a vector load and store. */
    static final int PACK_COLUMNS = 8;

    /**
     * Batched general-stride sgemm: matrix {@code t} of the batch starts at {@code aOffset + t*aBatchStride}
     * (likewise B and C). Small matrices are spread over threads by batch entry; large ones run one
     * after another, each using every thread.
     */
    public static void sgemmBatched(int batch, int m, int n, int k, float alpha,
                                    MemorySegment a, long aOffset, long aBatchStride, long aRowStride, long aColStride,
                                    MemorySegment b, long bOffset, long bBatchStride, long bRowStride, long bColStride,
                                    float beta, MemorySegment c, long cOffset, long cBatchStride, long ldc) {
        if (batch < 0) throw new IllegalArgumentException("sgemmBatched: negative batch " + batch);
        checkDims("sgemmBatched", m, n, k);
        if (batch == 0 || m == 0 || n == 0) return; // an empty C: nothing to write
        long work = (long) m * n * Math.max(k, 1);
        if (batch > 1 && work < 4 * PARALLEL_MIN_WORK && Parallel.numThreads() > 1) {
            long grain = Math.max(1, PARALLEL_MIN_WORK / work);
            Parallel.forRange(batch, grain, (t0, t1) -> {
                for (long t = t0; t < t1; t++) {
                    sgemm(m, n, k, alpha, a, aOffset + t * aBatchStride, aRowStride, aColStride,
                            b, bOffset + t * bBatchStride, bRowStride, bColStride, beta, c, cOffset + t * cBatchStride, ldc);
                }
            });
        } else {
            for (long t = 0; t < batch; t++) {
                sgemm(m, n, k, alpha, a, aOffset + t * aBatchStride, aRowStride, aColStride,
                        b, bOffset + t * bBatchStride, bRowStride, bColStride, beta, c, cOffset + t * cBatchStride, ldc);
            }
        }
    }

    /** An m at most this long makes packing B cost more than it saves. */
    static final int SMALL_SIDE = 16;

    /**
     * Unpacked kernel for a short m (at most {@link #SMALL_SIDE} rows that {@link GemmShortM} does not take: m = 1-8 and
     * 11-16, or fewer than 32 columns) with rows of B contiguous: each row of C is accumulated 64 columns at a time as
     * {@code sum_p A[i][p] * B[p][:]}, with B's rows read in place.
     */
    private static void sgemmRowsDirect(int m, int n, int k, float alpha, MemorySegment a, long aOff, long ars, long acs,
                                        MemorySegment b, long bOff, long brs, float beta, MemorySegment c, long cOff, long ldc,
                                        Epilogue epilogue) {
        if (m >= 4) {
            sgemmRowBlocksDirect(m, n, k, alpha, a, aOff, ars, acs, b, bOff, brs, beta, c, cOff, ldc, epilogue);
            return;
        }
        int chunks = (n + 4 * L - 1) / (4 * L);
        long work = (long) m * n * k;
        long grain = Math.max(1, (long) chunks * m * PARALLEL_MIN_WORK / Math.max(1, work));
        Parallel.forRange((long) chunks * m, grain, (t0, t1) -> {
            for (long t = t0; t < t1; t++) {
                int i = (int) (t / chunks);
                int j0 = (int) (t % chunks) * 4 * L;
                rowChunk(i, j0, Math.min(n, j0 + 4 * L), k, alpha, a, aOff, ars, acs, b, bOff, brs, beta, c, cOff, ldc);
                if (epilogue != null) epilogue.block(i, i + 1, j0, Math.min(n, j0 + 4 * L));
            }
        });
    }

    /**
     * Rows of A taken four at a time against three vectors of B's row: each B load feeds four FMAs, where one row at a
     * time fed one and streamed all of B from L2 once per row of C. Serves the short-m products of recurrent layers
     * (batch 20 x 200 x 800 in the LSTM language model), for which packing B cost more than the multiplications.
     */
    private static void sgemmRowBlocksDirect(int m, int n, int k, float alpha, MemorySegment a, long aOff, long ars, long acs,
                                             MemorySegment b, long bOff, long brs, float beta, MemorySegment c, long cOff, long ldc,
                                             Epilogue epilogue) {
        int wide = 3 * L;
        int chunks = (n + wide - 1) / wide;
        int blocks = (m + 3) / 4;
        long items = (long) blocks * chunks;
        long work = (long) m * n * k;
        long grain = Math.max(1, items * PARALLEL_MIN_WORK / Math.max(1, work));
        Parallel.forRange(items, grain, (t0, t1) -> {
            for (long t = t0; t < t1; t++) {
                int i0 = (int) (t / chunks) * 4;
                int j0 = (int) (t % chunks) * wide;
                int j1 = Math.min(n, j0 + wide);
                if (i0 + 4 <= m && j1 - j0 == wide) {
                    fourRowsChunk(i0, j0, k, alpha, a, aOff, ars, acs, b, bOff, brs, beta, c, cOff, ldc);
                } else {
                    for (int i = i0; i < Math.min(m, i0 + 4); i++) rowChunk(i, j0, j1, k, alpha, a, aOff, ars, acs, b, bOff, brs, beta, c, cOff, ldc);
                }
                if (epilogue != null) epilogue.block(i0, Math.min(m, i0 + 4), j0, j1);
            }
        });
    }

    /** C[i0, i0 + 4)[j0, j0 + 3L): twelve accumulators, three B loads and four A broadcasts per step of k. */
    private static void fourRowsChunk(int i0, int j0, int k, float alpha, MemorySegment a, long aOff, long ars, long acs,
                                      MemorySegment b, long bOff, long brs, float beta, MemorySegment c, long cOff, long ldc) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS), c02 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS), c12 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS), c22 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS), c32 = FloatVector.zero(FS);
        long a0 = (aOff + (long) i0 * ars) * Float.BYTES, rowStep = ars * Float.BYTES, colStep = acs * Float.BYTES;
        for (int p = 0; p < k; p++) {
            long bRow = (bOff + p * brs + j0) * Float.BYTES;
            FloatVector b0 = FloatVector.fromMemorySegment(FS, b, bRow, NO);
            FloatVector b1 = FloatVector.fromMemorySegment(FS, b, bRow + 4L * L, NO);
            FloatVector b2 = FloatVector.fromMemorySegment(FS, b, bRow + 8L * L, NO);
            long ap = a0 + p * colStep;
            FloatVector x0 = FloatVector.broadcast(FS, a.get(F32, ap));
            FloatVector x1 = FloatVector.broadcast(FS, a.get(F32, ap + rowStep));
            FloatVector x2 = FloatVector.broadcast(FS, a.get(F32, ap + 2 * rowStep));
            FloatVector x3 = FloatVector.broadcast(FS, a.get(F32, ap + 3 * rowStep));
            c00 = b0.fma(x0, c00);
            c01 = b1.fma(x0, c01);
            c02 = b2.fma(x0, c02);
            c10 = b0.fma(x1, c10);
            c11 = b1.fma(x1, c11);
            c12 = b2.fma(x1, c12);
            c20 = b0.fma(x2, c20);
            c21 = b1.fma(x2, c21);
            c22 = b2.fma(x2, c22);
            c30 = b0.fma(x3, c30);
            c31 = b1.fma(x3, c31);
            c32 = b2.fma(x3, c32);
        }
        long r0 = (cOff + (long) i0 * ldc + j0) * Float.BYTES, step = ldc * Float.BYTES;
        storeRow(c00, c, r0, alpha, beta);
        storeRow(c01, c, r0 + 4L * L, alpha, beta);
        storeRow(c02, c, r0 + 8L * L, alpha, beta);
        storeRow(c10, c, r0 + step, alpha, beta);
        storeRow(c11, c, r0 + step + 4L * L, alpha, beta);
        storeRow(c12, c, r0 + step + 8L * L, alpha, beta);
        storeRow(c20, c, r0 + 2 * step, alpha, beta);
        storeRow(c21, c, r0 + 2 * step + 4L * L, alpha, beta);
        storeRow(c22, c, r0 + 2 * step + 8L * L, alpha, beta);
        storeRow(c30, c, r0 + 3 * step, alpha, beta);
        storeRow(c31, c, r0 + 3 * step + 4L * L, alpha, beta);
        storeRow(c32, c, r0 + 3 * step + 8L * L, alpha, beta);
    }

    /** C[i][j0, j1) for one row i; up to 4 vectors of columns, then a scalar tail. */
    private static void rowChunk(int i, int j0, int j1, int k, float alpha, MemorySegment a, long aOff, long ars, long acs,
                                 MemorySegment b, long bOff, long brs, float beta, MemorySegment c, long cOff, long ldc) {
        long aRow = aOff + i * ars;
        long cRow = (cOff + (long) i * ldc) * Float.BYTES;
        int j = j0;
        if (j1 - j0 == 4 * L) {
            FloatVector s0 = FloatVector.zero(FS), s1 = FloatVector.zero(FS), s2 = FloatVector.zero(FS), s3 = FloatVector.zero(FS);
            for (int p = 0; p < k; p++) {
                FloatVector av = FloatVector.broadcast(FS, a.get(F32, (aRow + p * acs) * Float.BYTES));
                long bRow = (bOff + p * brs + j0) * Float.BYTES;
                s0 = FloatVector.fromMemorySegment(FS, b, bRow, NO).fma(av, s0);
                s1 = FloatVector.fromMemorySegment(FS, b, bRow + 4L * L, NO).fma(av, s1);
                s2 = FloatVector.fromMemorySegment(FS, b, bRow + 8L * L, NO).fma(av, s2);
                s3 = FloatVector.fromMemorySegment(FS, b, bRow + 12L * L, NO).fma(av, s3);
            }
            storeRow(s0, c, cRow + 4L * j0, alpha, beta);
            storeRow(s1, c, cRow + 4L * (j0 + L), alpha, beta);
            storeRow(s2, c, cRow + 4L * (j0 + 2 * L), alpha, beta);
            storeRow(s3, c, cRow + 4L * (j0 + 3 * L), alpha, beta);
            return;
        }
        for (; j + L <= j1; j += L) {
            FloatVector s0 = FloatVector.zero(FS);
            for (int p = 0; p < k; p++) {
                FloatVector av = FloatVector.broadcast(FS, a.get(F32, (aRow + p * acs) * Float.BYTES));
                s0 = FloatVector.fromMemorySegment(FS, b, (bOff + p * brs + j) * Float.BYTES, NO).fma(av, s0);
            }
            storeRow(s0, c, cRow + 4L * j, alpha, beta);
        }
        if (j < j1) {
            // The last columns in one masked vector (a scalar loop over k per column ran 3x slower).
            VectorMask<Float> last = FS.indexInRange(j, j1);
            FloatVector s0 = FloatVector.zero(FS);
            for (int p = 0; p < k; p++) {
                FloatVector av = FloatVector.broadcast(FS, a.get(F32, (aRow + p * acs) * Float.BYTES));
                s0 = FloatVector.fromMemorySegment(FS, b, (bOff + p * brs + j) * Float.BYTES, NO, last).fma(av, s0);
            }
            FloatVector t = s0.mul(alpha);
            if (beta != 0f) t = FloatVector.fromMemorySegment(FS, c, cRow + 4L * j, NO, last).fma(FloatVector.broadcast(FS, beta), t);
            t.intoMemorySegment(c, cRow + 4L * j, NO, last);
        }
    }

    private static void storeRow(FloatVector acc, MemorySegment c, long at, float alpha, float beta) {
        FloatVector t = acc.mul(alpha);
        if (beta != 0f) t = FloatVector.fromMemorySegment(FS, c, at, NO).fma(FloatVector.broadcast(FS, beta), t);
        t.intoMemorySegment(c, at, NO);
    }

    /** Computes rows {@code [i0, i1)} and columns {@code [j0, j1)} of C on the calling thread. */
    private static void sgemmBlock(int i0, int i1, int j0, int j1, int k, float alpha,
                                   MemorySegment a, long aOff, long ars, long acs,
                                   MemorySegment b, long bOff, long brs, long bcs, float beta,
                                   MemorySegment c, long cOff, long ldc, Epilogue epilogue) {
        Workspace ws = WORKSPACE.get();
        int kcMax = Math.min(KC, k);
        int ncMax = Math.min(NC, roundUp(j1 - j0, NR));
        int mcMax = Math.min(MC, roundUp(i1 - i0, MR));
        float[] bp = ws.b(kcMax * ncMax);
        float[] ap = ws.a(kcMax * mcMax);
        float[] tile = ws.tile;
        long ldcBytes = ldc * Float.BYTES;
        for (int jc = j0; jc < j1; jc += NC) {
            int nc = Math.min(NC, j1 - jc);
            for (int pc = 0; pc < k; pc += KC) {
                int kc = Math.min(KC, k - pc);
                packB(b, bOff + pc * brs + jc * bcs, brs, bcs, kc, nc, bp, ws.scratch);
                float betaHere = pc == 0 ? beta : 1f;
                if (nc <= L) {
                    // One narrow strip: every element of A is used by one micro-kernel call only, so
                    // packing it would cost more than it saves; read it in place.
                    for (int ir = i0; ir < i1; ir += MR) {
                        int mr = Math.min(MR, i1 - ir);
                        kernelHalfDirect(kc, a, (aOff + ir * ars + pc * acs) * Float.BYTES, ars * Float.BYTES,
                                acs * Float.BYTES, mr, bp, tile);
                        updateC(tile, c, (cOff + (long) ir * ldc + jc) * Float.BYTES, ldcBytes, mr, nc, alpha, betaHere);
                    }
                    if (epilogue != null && pc + kc == k) epilogue.block(i0, i1, jc, jc + nc);
                    continue;
                }
                for (int ic = i0; ic < i1; ic += MC) {
                    int mc = Math.min(MC, i1 - ic);
                    packA(a, aOff + ic * ars + pc * acs, ars, acs, mc, kc, ap, ws.scratch);
                    for (int jr = 0; jr < nc; jr += NR) {
                        int nr = Math.min(NR, nc - jr);
                        for (int ir = 0; ir < mc; ir += MR) {
                            int mr = Math.min(MR, mc - ir);
                            long cByte = (cOff + (long) (ic + ir) * ldc + jc + jr) * Float.BYTES;
                            if (mr == MR && nr == NR) {
                                if (betaHere == 0f) kernelStore(kc, ap, ir * kc, bp, jr * kc, c, cByte, ldcBytes, alpha);
                                else kernelUpdate(kc, ap, ir * kc, bp, jr * kc, c, cByte, ldcBytes, alpha, betaHere);
                                continue;
                            }
                            if (nr <= L) kernelHalf(kc, ap, ir * kc, bp, jr * kc, tile);
                            else kernel(kc, ap, ir * kc, bp, jr * kc, tile);
                            updateC(tile, c, cByte, ldcBytes, mr, nr, alpha, betaHere);
                        }
                    }
                    // The last pass over k finished this block of C: it is still in cache.
                    if (epilogue != null && pc + kc == k) epilogue.block(ic, ic + mc, jc, jc + nc);
                }
            }
        }
    }

    /**
     * Packs the {@code kc x nc} block of op(B) starting at element {@code off} into strips of NR
     * columns: strip s holds {@code dst[s*NR*kc + p*NR + j]}; columns past nc are zero.
     */
    static void packB(MemorySegment b, long off, long rs, long cs, int kc, int nc, float[] dst, float[] scratch) {
        for (int jr = 0; jr < nc; jr += NR) {
            int nr = Math.min(NR, nc - jr);
            int base = jr * kc;
            long src = off + jr * cs;
            if (cs == 1 && nr == NR) {
                // Rows of B contiguous: two vector loads per row of the strip.
                for (int p = 0; p < kc; p++) {
                    long byteOff = (src + p * rs) * Float.BYTES;
                    FloatVector.fromMemorySegment(FS, b, byteOff, NO).intoArray(dst, base + p * NR);
                    FloatVector.fromMemorySegment(FS, b, byteOff + (long) L * Float.BYTES, NO).intoArray(dst, base + p * NR + L);
                }
                continue;
            }
            if (rs == 1 && nr == NR && L == 16) {
                // Columns contiguous (transposed B, e.g. a Linear weight): 16x16 blocks transposed in registers.
                packTransposedStrip(b, src, cs, kc, dst, base);
                continue;
            }
            if (rs == 1) {
                // Columns contiguous (transposed B): bulk-copy them, then interleave from the heap.
                for (int j = 0; j < nr; j++) MemorySegment.copy(b, F32, (src + j * cs) * Float.BYTES, scratch, j * kc, kc);
                // p innermost: both indices are then affine in the loop variable with constant scale,
                // so C2 removes the bounds checks.
                for (int j = 0; j < nr; j++) {
                    int from = j * kc, to = base + j;
                    for (int p = 0; p < kc; p++) dst[to + p * NR] = scratch[from + p];
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    long row = (src + p * rs) * Float.BYTES;
                    for (int j = 0; j < nr; j++) dst[base + p * NR + j] = b.get(F32, row + j * cs * Float.BYTES);
                }
            }
            if (nr < NR) {
                for (int p = 0; p < kc; p++) java.util.Arrays.fill(dst, base + p * NR + nr, base + (p + 1) * NR, 0f);
            }
        }
    }

    /**
     * One full strip of a transposed B: {@code dst[base + p * NR + j] = b[src + j * cs + p]} for {@code p < kc},
     * {@code j < NR} (16 float lanes). One 16-column half of the strip at a time: 16 rows of memory read along at once
     * rather than 32, which the prefetchers follow (one thread: ResNet-50's 1x1 weight gradients at 56 px 48-54% ->
     * 63-69% of the FMA peak, the [128x512]x[512x784] B^T product 0.81-0.91x -> 1.00-1.02x OpenBLAS).
     */
    static void packTransposedStrip(MemorySegment b, long src, long cs, int kc, float[] dst, int base) {
        int p = kc / L * L;
        for (int q = 0; q < p; q += L) transposeBlock16(b, (src + q) * Float.BYTES, cs * Float.BYTES, dst, base + q * NR, NR);
        for (int q = 0; q < p; q += L) transposeBlock16(b, (src + L * cs + q) * Float.BYTES, cs * Float.BYTES, dst, base + q * NR + L, NR);
        for (; p < kc; p++) {
            for (int j = 0; j < NR; j++) dst[base + p * NR + j] = b.get(F32, (src + j * cs + p) * Float.BYTES);
        }
    }

    /**
     * Two-source lane selections for an in-register 16x16 transpose: round {@code s} (1, 2, 4, 8)
     * exchanges bit {@code s} of the row index with bit {@code s} of the lane index between vector
     * pairs {@code (i, i+s)}. Index {@code >= 16} selects from the second vector.
     */
    // Constants in static final fields (not array elements), so that C2 treats them as constants.
    static final FloatVector LO1 = transposeIndex(1, true), HI1 = transposeIndex(1, false);
    static final FloatVector LO2 = transposeIndex(2, true), HI2 = transposeIndex(2, false);
    static final FloatVector LO4 = transposeIndex(4, true), HI4 = transposeIndex(4, false);
    static final FloatVector LO8 = transposeIndex(8, true), HI8 = transposeIndex(8, false);

    private static FloatVector transposeIndex(int sft, boolean lowHalf) {
        float[] idx = new float[FS.length()];
        for (int l = 0; l < idx.length; l++) {
            boolean low = (l & sft) == 0;
            idx[l] = lowHalf ? (low ? l : 16 + l - sft) : (low ? l + sft : 16 + l);
        }
        return FloatVector.fromArray(FS, idx, 0);
    }

    /**
     * Reads 16 columns of 16 contiguous floats (column j at {@code srcByte + j * colStrideBytes}) and
     * writes them transposed: row q of the result (element q of every column) at {@code dst[to + q * dstStride]}.
     */
    static void transposeBlock16(MemorySegment b, long srcByte, long colStrideBytes, float[] dst, int to, int dstStride) {
        FloatVector v0 = FloatVector.fromMemorySegment(FS, b, srcByte, NO);
        FloatVector v1 = FloatVector.fromMemorySegment(FS, b, srcByte + colStrideBytes, NO);
        FloatVector v2 = FloatVector.fromMemorySegment(FS, b, srcByte + 2 * colStrideBytes, NO);
        FloatVector v3 = FloatVector.fromMemorySegment(FS, b, srcByte + 3 * colStrideBytes, NO);
        FloatVector v4 = FloatVector.fromMemorySegment(FS, b, srcByte + 4 * colStrideBytes, NO);
        FloatVector v5 = FloatVector.fromMemorySegment(FS, b, srcByte + 5 * colStrideBytes, NO);
        FloatVector v6 = FloatVector.fromMemorySegment(FS, b, srcByte + 6 * colStrideBytes, NO);
        FloatVector v7 = FloatVector.fromMemorySegment(FS, b, srcByte + 7 * colStrideBytes, NO);
        FloatVector v8 = FloatVector.fromMemorySegment(FS, b, srcByte + 8 * colStrideBytes, NO);
        FloatVector v9 = FloatVector.fromMemorySegment(FS, b, srcByte + 9 * colStrideBytes, NO);
        FloatVector v10 = FloatVector.fromMemorySegment(FS, b, srcByte + 10 * colStrideBytes, NO);
        FloatVector v11 = FloatVector.fromMemorySegment(FS, b, srcByte + 11 * colStrideBytes, NO);
        FloatVector v12 = FloatVector.fromMemorySegment(FS, b, srcByte + 12 * colStrideBytes, NO);
        FloatVector v13 = FloatVector.fromMemorySegment(FS, b, srcByte + 13 * colStrideBytes, NO);
        FloatVector v14 = FloatVector.fromMemorySegment(FS, b, srcByte + 14 * colStrideBytes, NO);
        FloatVector v15 = FloatVector.fromMemorySegment(FS, b, srcByte + 15 * colStrideBytes, NO);
        FloatVector t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15;
        // round s = 1: pairs (0,1) (2,3) ...
        FloatVector lo = LO1, hi = HI1;
        t0 = lo.selectFrom(v0, v1); t1 = hi.selectFrom(v0, v1);
        t2 = lo.selectFrom(v2, v3); t3 = hi.selectFrom(v2, v3);
        t4 = lo.selectFrom(v4, v5); t5 = hi.selectFrom(v4, v5);
        t6 = lo.selectFrom(v6, v7); t7 = hi.selectFrom(v6, v7);
        t8 = lo.selectFrom(v8, v9); t9 = hi.selectFrom(v8, v9);
        t10 = lo.selectFrom(v10, v11); t11 = hi.selectFrom(v10, v11);
        t12 = lo.selectFrom(v12, v13); t13 = hi.selectFrom(v12, v13);
        t14 = lo.selectFrom(v14, v15); t15 = hi.selectFrom(v14, v15);
        // round s = 2: pairs (0,2) (1,3) (4,6) (5,7) ...
        lo = LO2; hi = HI2;
        v0 = lo.selectFrom(t0, t2); v2 = hi.selectFrom(t0, t2);
        v1 = lo.selectFrom(t1, t3); v3 = hi.selectFrom(t1, t3);
        v4 = lo.selectFrom(t4, t6); v6 = hi.selectFrom(t4, t6);
        v5 = lo.selectFrom(t5, t7); v7 = hi.selectFrom(t5, t7);
        v8 = lo.selectFrom(t8, t10); v10 = hi.selectFrom(t8, t10);
        v9 = lo.selectFrom(t9, t11); v11 = hi.selectFrom(t9, t11);
        v12 = lo.selectFrom(t12, t14); v14 = hi.selectFrom(t12, t14);
        v13 = lo.selectFrom(t13, t15); v15 = hi.selectFrom(t13, t15);
        // round s = 4: pairs (0,4) (1,5) (2,6) (3,7) (8,12) ...
        lo = LO4; hi = HI4;
        t0 = lo.selectFrom(v0, v4); t4 = hi.selectFrom(v0, v4);
        t1 = lo.selectFrom(v1, v5); t5 = hi.selectFrom(v1, v5);
        t2 = lo.selectFrom(v2, v6); t6 = hi.selectFrom(v2, v6);
        t3 = lo.selectFrom(v3, v7); t7 = hi.selectFrom(v3, v7);
        t8 = lo.selectFrom(v8, v12); t12 = hi.selectFrom(v8, v12);
        t9 = lo.selectFrom(v9, v13); t13 = hi.selectFrom(v9, v13);
        t10 = lo.selectFrom(v10, v14); t14 = hi.selectFrom(v10, v14);
        t11 = lo.selectFrom(v11, v15); t15 = hi.selectFrom(v11, v15);
        // round s = 8: pairs (i, i+8)
        lo = LO8; hi = HI8;
        lo.selectFrom(t0, t8).intoArray(dst, to);
        hi.selectFrom(t0, t8).intoArray(dst, to + 8 * dstStride);
        lo.selectFrom(t1, t9).intoArray(dst, to + dstStride);
        hi.selectFrom(t1, t9).intoArray(dst, to + 9 * dstStride);
        lo.selectFrom(t2, t10).intoArray(dst, to + 2 * dstStride);
        hi.selectFrom(t2, t10).intoArray(dst, to + 10 * dstStride);
        lo.selectFrom(t3, t11).intoArray(dst, to + 3 * dstStride);
        hi.selectFrom(t3, t11).intoArray(dst, to + 11 * dstStride);
        lo.selectFrom(t4, t12).intoArray(dst, to + 4 * dstStride);
        hi.selectFrom(t4, t12).intoArray(dst, to + 12 * dstStride);
        lo.selectFrom(t5, t13).intoArray(dst, to + 5 * dstStride);
        hi.selectFrom(t5, t13).intoArray(dst, to + 13 * dstStride);
        lo.selectFrom(t6, t14).intoArray(dst, to + 6 * dstStride);
        hi.selectFrom(t6, t14).intoArray(dst, to + 14 * dstStride);
        lo.selectFrom(t7, t15).intoArray(dst, to + 7 * dstStride);
        hi.selectFrom(t7, t15).intoArray(dst, to + 15 * dstStride);
    }

    /** Last round for {@link #transposeA8x16}: the s = 8 exchange with lanes reordered from (r, c0) to (c0, r). */
    private static final FloatVector LO8A = interleaveIndex(true), HI8A = interleaveIndex(false);

    private static FloatVector interleaveIndex(boolean lowHalf) {
        float[] base = new float[FS.length()];
        LO8.intoArray(base, 0);
        if (!lowHalf) HI8.intoArray(base, 0);
        float[] idx = new float[FS.length()];
        for (int l = 0; l < idx.length; l++) idx[l] = base[((l & 7) << 1) | (l >> 3)];
        return FloatVector.fromArray(FS, idx, 0);
    }

    /**
     * Reads 8 rows of 16 contiguous floats (row r at {@code srcByte + r * rowStrideBytes}) and writes
     * them in MR = 8 packed order: {@code dst[to + q*8 + r] = row r, element q}. Three rounds of
     * exchanges move the row bits into the lanes and the column bits (but the lowest) into the
     * vector index.
     */
    static void transposeA8x16(MemorySegment a, long srcByte, long rowStrideBytes, float[] dst, int to) {
        FloatVector v0 = FloatVector.fromMemorySegment(FS, a, srcByte, NO);
        FloatVector v1 = FloatVector.fromMemorySegment(FS, a, srcByte + rowStrideBytes, NO);
        FloatVector v2 = FloatVector.fromMemorySegment(FS, a, srcByte + 2 * rowStrideBytes, NO);
        FloatVector v3 = FloatVector.fromMemorySegment(FS, a, srcByte + 3 * rowStrideBytes, NO);
        FloatVector v4 = FloatVector.fromMemorySegment(FS, a, srcByte + 4 * rowStrideBytes, NO);
        FloatVector v5 = FloatVector.fromMemorySegment(FS, a, srcByte + 5 * rowStrideBytes, NO);
        FloatVector v6 = FloatVector.fromMemorySegment(FS, a, srcByte + 6 * rowStrideBytes, NO);
        FloatVector v7 = FloatVector.fromMemorySegment(FS, a, srcByte + 7 * rowStrideBytes, NO);
        // vector bit 0 (row bit 0) <-> lane bit 1
        FloatVector lo = LO2, hi = HI2;
        FloatVector t0 = lo.selectFrom(v0, v1), t1 = hi.selectFrom(v0, v1);
        FloatVector t2 = lo.selectFrom(v2, v3), t3 = hi.selectFrom(v2, v3);
        FloatVector t4 = lo.selectFrom(v4, v5), t5 = hi.selectFrom(v4, v5);
        FloatVector t6 = lo.selectFrom(v6, v7), t7 = hi.selectFrom(v6, v7);
        // vector bit 1 (row bit 1) <-> lane bit 2
        lo = LO4; hi = HI4;
        v0 = lo.selectFrom(t0, t2); v2 = hi.selectFrom(t0, t2);
        v1 = lo.selectFrom(t1, t3); v3 = hi.selectFrom(t1, t3);
        v4 = lo.selectFrom(t4, t6); v6 = hi.selectFrom(t4, t6);
        v5 = lo.selectFrom(t5, t7); v7 = hi.selectFrom(t5, t7);
        // vector bit 2 (row bit 2) <-> lane bit 3, then lanes (r, c0) -> (c0, r): vector j holds columns 2j, 2j+1
        lo = LO8A; hi = HI8A;
        lo.selectFrom(v0, v4).intoArray(dst, to);
        hi.selectFrom(v0, v4).intoArray(dst, to + 4 * 2 * MR);
        lo.selectFrom(v1, v5).intoArray(dst, to + 2 * MR);
        hi.selectFrom(v1, v5).intoArray(dst, to + 5 * 2 * MR);
        lo.selectFrom(v2, v6).intoArray(dst, to + 2 * 2 * MR);
        hi.selectFrom(v2, v6).intoArray(dst, to + 6 * 2 * MR);
        lo.selectFrom(v3, v7).intoArray(dst, to + 3 * 2 * MR);
        hi.selectFrom(v3, v7).intoArray(dst, to + 7 * 2 * MR);
    }

    /**
     * Packs the {@code mc x kc} block of op(A) starting at element {@code off} into strips of MR
     * rows: strip s holds {@code dst[s*MR*kc + p*MR + r]}; rows past mc are zero.
     */
    static void packA(MemorySegment a, long off, long rs, long cs, int mc, int kc, float[] dst, float[] scratch) {
        packA(a, off, rs, cs, mc, kc, dst, 0, scratch);
    }

    /** {@link #packA(MemorySegment, long, long, long, int, int, float[], float[])} into {@code dst} from {@code dstOff} on. */
    static void packA(MemorySegment a, long off, long rs, long cs, int mc, int kc, float[] dst, int dstOff, float[] scratch) {
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = Math.min(MR, mc - ir);
            int base = dstOff + ir * kc;
            long src = off + ir * rs;
            if (rs == 1 && mr == MR) {
                // Columns contiguous (transposed A): one MR-lane vector per p.
                for (int p = 0; p < kc; p++) {
                    FloatVector.fromMemorySegment(FS_MR, a, (src + p * cs) * Float.BYTES, NO).intoArray(dst, base + p * MR);
                }
                continue;
            }
            if (cs == 1 && mr == MR && MR == 8 && L == 16) {
                // Rows contiguous (plain A): 8x16 blocks transposed in registers.
                int p = 0;
                for (; p + L <= kc; p += L) transposeA8x16(a, (src + p) * Float.BYTES, rs * Float.BYTES, dst, base + p * MR);
                for (; p < kc; p++) {
                    for (int r = 0; r < MR; r++) dst[base + p * MR + r] = a.get(F32, (src + r * rs + p) * Float.BYTES);
                }
                continue;
            }
            if (cs == 1) {
                // Rows contiguous (plain A): bulk-copy them, then interleave from the heap.
                for (int r = 0; r < mr; r++) MemorySegment.copy(a, F32, (src + r * rs) * Float.BYTES, scratch, r * kc, kc);
                if (mr == MR) {
                    for (int p = 0; p < kc; p++) {
                        int d = base + p * MR;
                        dst[d] = scratch[p];
                        dst[d + 1] = scratch[kc + p];
                        dst[d + 2] = scratch[2 * kc + p];
                        dst[d + 3] = scratch[3 * kc + p];
                        dst[d + 4] = scratch[4 * kc + p];
                        dst[d + 5] = scratch[5 * kc + p];
                        dst[d + 6] = scratch[6 * kc + p];
                        dst[d + 7] = scratch[7 * kc + p];
                    }
                } else {
                    for (int p = 0; p < kc; p++) {
                        for (int r = 0; r < mr; r++) dst[base + p * MR + r] = scratch[r * kc + p];
                    }
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    long col = (src + p * cs) * Float.BYTES;
                    for (int r = 0; r < mr; r++) dst[base + p * MR + r] = a.get(F32, col + r * rs * Float.BYTES);
                }
            }
            if (mr < MR) {
                for (int p = 0; p < kc; p++) java.util.Arrays.fill(dst, base + p * MR + mr, base + (p + 1) * MR, 0f);
            }
        }
    }

    /**
     * MR x NR micro-kernel: accumulates {@code tile[r*NR + j] = sum_p A[r][p] * B[p][j]} over a packed
     * A strip and a packed B strip in 16 vector registers. The accumulators leave through a heap tile
     * rather than as arguments: vectors passed to a call C2 does not inline would be boxed, and
     * inlining the (looping, edge-handling) C update here made C2 give up intrinsifying the stores.
     * Full tiles instead use {@link #kernelStore} / {@link #kernelUpdate}, whose straight-line
     * stores to C do stay intrinsic; skipping the tile round trip is worth ~5% at k = 256.
     * The three keep separate copies of the same loop on purpose: one kernel with a beta branch and a
     * shared store helper in its epilogue measured 0.79-0.88 of OpenBLAS on squares against 0.97-1.03.
     */
    static void kernel(int kc, float[] ap, int aBase, float[] bp, int bBase,
                               float[] tile) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            int bi = bBase + p * NR;
            int ai = aBase + p * MR;
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
    }

    /**
     * As {@link #kernel}, for a full tile with beta == 0: the accumulators go straight to C (scaled
     * by alpha), skipping the heap tile and {@link #updateC}.
     */
    static void kernelStore(int kc, float[] ap, int aBase, float[] bp, int bBase,
                                    MemorySegment c, long cByte, long ldcBytes, float alpha) {
        FloatVector alv = FloatVector.broadcast(FS, alpha);
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            int bi = bBase + p * NR;
            int ai = aBase + p * MR;
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
        }
        c00.mul(alv).intoMemorySegment(c, cByte, NO);
        c01.mul(alv).intoMemorySegment(c, cByte + 4L * L, NO);
        c10.mul(alv).intoMemorySegment(c, cByte + 1 * ldcBytes, NO);
        c11.mul(alv).intoMemorySegment(c, cByte + 1 * ldcBytes + 4L * L, NO);
        c20.mul(alv).intoMemorySegment(c, cByte + 2 * ldcBytes, NO);
        c21.mul(alv).intoMemorySegment(c, cByte + 2 * ldcBytes + 4L * L, NO);
        c30.mul(alv).intoMemorySegment(c, cByte + 3 * ldcBytes, NO);
        c31.mul(alv).intoMemorySegment(c, cByte + 3 * ldcBytes + 4L * L, NO);
        c40.mul(alv).intoMemorySegment(c, cByte + 4 * ldcBytes, NO);
        c41.mul(alv).intoMemorySegment(c, cByte + 4 * ldcBytes + 4L * L, NO);
        c50.mul(alv).intoMemorySegment(c, cByte + 5 * ldcBytes, NO);
        c51.mul(alv).intoMemorySegment(c, cByte + 5 * ldcBytes + 4L * L, NO);
        c60.mul(alv).intoMemorySegment(c, cByte + 6 * ldcBytes, NO);
        c61.mul(alv).intoMemorySegment(c, cByte + 6 * ldcBytes + 4L * L, NO);
        c70.mul(alv).intoMemorySegment(c, cByte + 7 * ldcBytes, NO);
        c71.mul(alv).intoMemorySegment(c, cByte + 7 * ldcBytes + 4L * L, NO);
    }

    /** As {@link #kernel}, for a full tile with beta != 0: {@code C = alpha * acc + beta * C} straight from the accumulators. */
    static void kernelUpdate(int kc, float[] ap, int aBase, float[] bp, int bBase,
                                     MemorySegment c, long cByte, long ldcBytes, float alpha, float beta) {
        FloatVector alv = FloatVector.broadcast(FS, alpha), bev = FloatVector.broadcast(FS, beta);
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            int bi = bBase + p * NR;
            int ai = aBase + p * MR;
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
        }
        FloatVector.fromMemorySegment(FS, c, cByte, NO).fma(bev, c00.mul(alv)).intoMemorySegment(c, cByte, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 4L * L, NO).fma(bev, c01.mul(alv)).intoMemorySegment(c, cByte + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 1 * ldcBytes, NO).fma(bev, c10.mul(alv)).intoMemorySegment(c, cByte + 1 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 1 * ldcBytes + 4L * L, NO).fma(bev, c11.mul(alv)).intoMemorySegment(c, cByte + 1 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 2 * ldcBytes, NO).fma(bev, c20.mul(alv)).intoMemorySegment(c, cByte + 2 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 2 * ldcBytes + 4L * L, NO).fma(bev, c21.mul(alv)).intoMemorySegment(c, cByte + 2 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 3 * ldcBytes, NO).fma(bev, c30.mul(alv)).intoMemorySegment(c, cByte + 3 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 3 * ldcBytes + 4L * L, NO).fma(bev, c31.mul(alv)).intoMemorySegment(c, cByte + 3 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 4 * ldcBytes, NO).fma(bev, c40.mul(alv)).intoMemorySegment(c, cByte + 4 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 4 * ldcBytes + 4L * L, NO).fma(bev, c41.mul(alv)).intoMemorySegment(c, cByte + 4 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 5 * ldcBytes, NO).fma(bev, c50.mul(alv)).intoMemorySegment(c, cByte + 5 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 5 * ldcBytes + 4L * L, NO).fma(bev, c51.mul(alv)).intoMemorySegment(c, cByte + 5 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 6 * ldcBytes, NO).fma(bev, c60.mul(alv)).intoMemorySegment(c, cByte + 6 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 6 * ldcBytes + 4L * L, NO).fma(bev, c61.mul(alv)).intoMemorySegment(c, cByte + 6 * ldcBytes + 4L * L, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 7 * ldcBytes, NO).fma(bev, c70.mul(alv)).intoMemorySegment(c, cByte + 7 * ldcBytes, NO);
        FloatVector.fromMemorySegment(FS, c, cByte + 7 * ldcBytes + 4L * L, NO).fma(bev, c71.mul(alv)).intoMemorySegment(c, cByte + 7 * ldcBytes + 4L * L, NO);
    }

    /** MR x L micro-kernel for the last strip when at most one vector of columns is left; fills {@code tile[r*NR + j]}, j < L. */
    static void kernelHalf(int kc, float[] ap, int aBase, float[] bp, int bBase,
                                   float[] tile) {
        FloatVector c0 = FloatVector.zero(FS), c1 = FloatVector.zero(FS);
        FloatVector c2 = FloatVector.zero(FS), c3 = FloatVector.zero(FS);
        FloatVector c4 = FloatVector.zero(FS), c5 = FloatVector.zero(FS);
        FloatVector c6 = FloatVector.zero(FS), c7 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            int ai = aBase + p * MR;
            FloatVector b0 = FloatVector.fromArray(FS, bp, bBase + p * NR);
            c0 = b0.fma(FloatVector.broadcast(FS, ap[ai]), c0);
            c1 = b0.fma(FloatVector.broadcast(FS, ap[ai + 1]), c1);
            c2 = b0.fma(FloatVector.broadcast(FS, ap[ai + 2]), c2);
            c3 = b0.fma(FloatVector.broadcast(FS, ap[ai + 3]), c3);
            c4 = b0.fma(FloatVector.broadcast(FS, ap[ai + 4]), c4);
            c5 = b0.fma(FloatVector.broadcast(FS, ap[ai + 5]), c5);
            c6 = b0.fma(FloatVector.broadcast(FS, ap[ai + 6]), c6);
            c7 = b0.fma(FloatVector.broadcast(FS, ap[ai + 7]), c7);
        }
        c0.intoArray(tile, 0);
        c1.intoArray(tile, NR);
        c2.intoArray(tile, 2 * NR);
        c3.intoArray(tile, 3 * NR);
        c4.intoArray(tile, 4 * NR);
        c5.intoArray(tile, 5 * NR);
        c6.intoArray(tile, 6 * NR);
        c7.intoArray(tile, 7 * NR);
    }

    /**
     * As {@link #kernelHalf} with A read in place through byte strides; rows at or past {@code mr}
     * repeat row {@code mr - 1} (never out of bounds; updateC ignores them).
     */
    private static void kernelHalfDirect(int kc, MemorySegment a, long aByte, long rsB, long csB, int mr,
                                         float[] bp, float[] tile) {
        long r0 = aByte, r1 = aByte + Math.min(1, mr - 1) * rsB, r2 = aByte + Math.min(2, mr - 1) * rsB;
        long r3 = aByte + Math.min(3, mr - 1) * rsB, r4 = aByte + Math.min(4, mr - 1) * rsB;
        long r5 = aByte + Math.min(5, mr - 1) * rsB, r6 = aByte + Math.min(6, mr - 1) * rsB;
        long r7 = aByte + Math.min(7, mr - 1) * rsB;
        FloatVector c0 = FloatVector.zero(FS), c1 = FloatVector.zero(FS);
        FloatVector c2 = FloatVector.zero(FS), c3 = FloatVector.zero(FS);
        FloatVector c4 = FloatVector.zero(FS), c5 = FloatVector.zero(FS);
        FloatVector c6 = FloatVector.zero(FS), c7 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            long q = p * csB;
            FloatVector b0 = FloatVector.fromArray(FS, bp, p * NR);
            c0 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r0 + q)), c0);
            c1 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r1 + q)), c1);
            c2 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r2 + q)), c2);
            c3 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r3 + q)), c3);
            c4 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r4 + q)), c4);
            c5 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r5 + q)), c5);
            c6 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r6 + q)), c6);
            c7 = b0.fma(FloatVector.broadcast(FS, a.get(F32, r7 + q)), c7);
        }
        c0.intoArray(tile, 0);
        c1.intoArray(tile, NR);
        c2.intoArray(tile, 2 * NR);
        c3.intoArray(tile, 3 * NR);
        c4.intoArray(tile, 4 * NR);
        c5.intoArray(tile, 5 * NR);
        c6.intoArray(tile, 6 * NR);
        c7.intoArray(tile, 7 * NR);
    }

    /** {@code C[r][j] = alpha * tile[r*NR + j] + beta * C[r][j]} for the {@code mr x nr} corner; beta == 0 does not read C. */
    static void updateC(float[] tile, MemorySegment c, long cByte, long ldcBytes, int mr, int nr,
                                float alpha, float beta) {
        FloatVector av = FloatVector.broadcast(FS, alpha);
        FloatVector bv = FloatVector.broadcast(FS, beta);
        for (int r = 0; r < mr; r++) {
            long off = cByte + r * ldcBytes;
            int j = 0;
            for (; j + L <= nr; j += L) {
                long at = off + (long) j * Float.BYTES;
                FloatVector t = FloatVector.fromArray(FS, tile, r * NR + j).mul(av);
                if (beta != 0f) t = FloatVector.fromMemorySegment(FS, c, at, NO).fma(bv, t);
                t.intoMemorySegment(c, at, NO);
            }
            // Scalar tail: masked segment accesses leave the intrinsic path near a segment's end.
            for (; j < nr; j++) {
                long at = off + (long) j * Float.BYTES;
                float t = alpha * tile[r * NR + j];
                c.set(F32, at, beta == 0f ? t : Math.fma(beta, c.get(F32, at), t));
            }
        }
    }

    /** {@code C = beta * C}, with beta == 0 writing zeros whatever C held. */
    private static void scaleF(int m, int n, float beta, MemorySegment c, long cOff, long ldc) {
        for (int i = 0; i < m; i++) {
            long row = (cOff + i * ldc) * Float.BYTES;
            if (beta == 0f) {
                c.asSlice(row, (long) n * Float.BYTES).fill((byte) 0);
            } else if (beta != 1f) {
                for (int j = 0; j < n; j++) c.set(F32, row + (long) j * Float.BYTES, beta * c.get(F32, row + (long) j * Float.BYTES));
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // Double precision: sgemm's Goto/BLIS blocking with a DMR x DNR register tile of doubles. float64
    // trains real models (time_sequence_prediction) and serves gradcheck; a row-at-a-time kernel ran at a
    // quarter of this once op(B) outgrew the caches (it streamed all of B once per row of C).
    // ------------------------------------------------------------------------------------------

    /** Lanes of one double vector. */
    static final int DL = DS.length();
    /** Rows of the double register tile. */
    static final int DMR = 8;
    /** Columns of the double register tile: two vectors. */
    static final int DNR = 2 * DL;
    /** Depth of a packed double block: a B strip (DKC x DNR doubles, 32 KiB with 8 lanes) stays in L1. */
    static final int DKC = 256;
    /** Rows of a packed double A block (DMC x DKC doubles, 128 KiB, in L2). */
    static final int DMC = 64;
    /** Columns of a packed double B block. */
    static final int DNC = 1024;

    /** BLAS-style double-precision entry point; see {@link #sgemm(boolean, boolean, int, int, int, float, MemorySegment, long, long, MemorySegment, long, long, float, MemorySegment, long, long)}. */
    public static void dgemm(boolean transA, boolean transB, int m, int n, int k, double alpha,
                             MemorySegment a, long aOffset, long lda,
                             MemorySegment b, long bOffset, long ldb, double beta,
                             MemorySegment c, long cOffset, long ldc) {
        dgemm(m, n, k, alpha,
                a, aOffset, transA ? 1 : lda, transA ? lda : 1,
                b, bOffset, transB ? 1 : ldb, transB ? ldb : 1,
                beta, c, cOffset, ldc);
    }

    /**
     * General-stride double-precision form, same contract as the float one. C is scaled by beta first, then
     * each k block's products are added to it; work is split over (row block, strip group) tasks that each
     * compute whole tiles, so results do not depend on the thread count.
     */
    public static void dgemm(int m, int n, int k, double alpha,
                             MemorySegment a, long aOffset, long aRowStride, long aColStride,
                             MemorySegment b, long bOffset, long bRowStride, long bColStride, double beta,
                             MemorySegment c, long cOffset, long ldc) {
        checkDims("dgemm", m, n, k);
        if (m == 0 || n == 0) return;
        if (k == 0 || alpha == 0d) {
            scaleD(m, n, beta, c, cOffset, ldc);
            return;
        }
        if (GemmDotF64.serves(m, k, aColStride, bRowStride)) {
            GemmDotF64.dgemm(m, n, k, alpha, a, aOffset, aRowStride, b, bOffset, bColStride, beta, c, cOffset, ldc, 1);
            return;
        }
        if (GemmDotF64.serves(n, k, bRowStride, aColStride)) { // C^T = B^T A^T: a matrix times a few columns
            GemmDotF64.dgemm(n, m, k, alpha, b, bOffset, bColStride, a, aOffset, aRowStride, beta, c, cOffset, 1, ldc);
            return;
        }
        if (GemmRowsF64.serves(m, n, k, bColStride, 1)) {
            GemmRowsF64.dgemm(m, n, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, beta, c, cOffset, ldc);
            return;
        }
        if (GemmRowsF64.serves(n, m, k, aRowStride, ldc)) { // C^T = B^T A^T: G^T x, C one contiguous column
            GemmRowsF64.dgemm(n, m, k, alpha, b, bOffset, bColStride, bRowStride, a, aOffset, aColStride, beta, c, cOffset, 1);
            return;
        }
        if (GemmNarrowF64.serves(m, n, bColStride)) {
            GemmNarrowF64.dgemm(m, n, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, beta, c, cOffset, ldc);
            return;
        }
        // beta 0: the first k block stores its tiles (NaN in C does not survive) instead of C being zeroed first, a
        // scalar pass that cost as much as the products at time_sequence_prediction's shapes.
        boolean overwrite = beta == 0d;
        if (!overwrite) scaleD(m, n, beta, c, cOffset, ldc);
        boolean parallel = Parallel.numThreads() > 1 && (long) m * n * k >= PARALLEL_MIN_WORK && !Parallel.inParallelRegion();
        if (bColStride == 1 && m <= DMC && n >= DNR) {
            int full = n / DNR * DNR;
            dgemmRowsOfB(m, full, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset, bRowStride, c, cOffset, ldc, overwrite, parallel);
            if (full < n) dgemm(m, n - full, k, alpha, a, aOffset, aRowStride, aColStride, b, bOffset + full, bRowStride, 1,
                    overwrite ? 0d : 1d, c, cOffset + full, ldc);
            return;
        }
        Workspace ws = WORKSPACE.get();
        int rowBlocks = (m + DMC - 1) / DMC;
        for (int jc = 0; jc < n; jc += DNC) {
            // A task packs its row block of A once for its strips, so the strips are split into only as many groups as
            // make the task count a multiple of the thread count (Parallel.forRange gives each thread an equal run of
            // tasks): one group on one thread, or with an even number of row blocks on two. Four-strip groups packed A
            // four times over at n = 204 (time_sequence_prediction's gate products: 72 -> 58 µs on one thread).
            int nc = Math.min(DNC, n - jc), strips = (nc + DNR - 1) / DNR, threads = Parallel.numThreads();
            int wanted = parallel ? Math.min(strips, threads / gcd(rowBlocks, threads)) : 1;
            int perTask = (strips + wanted - 1) / wanted, groups = (strips + perTask - 1) / perTask;
            for (int pc = 0; pc < k; pc += DKC) {
                int kc = Math.min(DKC, k - pc);
                boolean store = overwrite && pc == 0;
                MemorySegment bp = ws.db((long) strips * DNR * kc);
                packDB(b, bOffset + pc * bRowStride + jc * bColStride, bRowStride, bColStride, kc, nc, bp);
                long aBlock = aOffset + pc * aColStride;
                long cBlock = cOffset + jc;
                Parallel.RangeBody tasks = (t0, t1) -> {
                    Workspace own = WORKSPACE.get();
                    for (long t = t0; t < t1; t++) {
                        int i0 = (int) (t / groups) * DMC, mc = Math.min(DMC, m - i0);
                        int s0 = (int) (t % groups) * perTask, s1 = Math.min(strips, s0 + perTask);
                        double[] ap = own.da((mc + DMR - 1) / DMR * DMR * kc);
                        packDA(a, aBlock + i0 * aRowStride, aRowStride, aColStride, mc, kc, ap);
                        for (int s = s0; s < s1; s++) {
                            int nr = Math.min(DNR, nc - s * DNR);
                            for (int ir = 0; ir < mc; ir += DMR) {
                                kernelD(kc, ap, ir * kc, bp, (long) s * DNR * kc * Double.BYTES, DNR * Double.BYTES, own.dtile);
                                updateCD(own.dtile, c, (cBlock + (i0 + ir) * ldc + (long) s * DNR) * Double.BYTES,
                                        ldc * Double.BYTES, Math.min(DMR, mc - ir), nr, alpha, store);
                            }
                        }
                    }
                };
                if (parallel) Parallel.forRange((long) rowBlocks * groups, 1, tasks);
                else tasks.run(0, (long) rowBlocks * groups);
            }
        }
    }

    /**
     * {@link #dgemm} for a short op(A) (at most {@value #DMC} rows, packed once per depth block) against a row-major B of
     * whole {@link #DNR}-wide strips, read in place: B is not packed. At a convolution's shapes (16 output channels
     * against a 144 x 1024 im2col matrix per image) packing B cost a fifth of the float64 product and each packed element
     * was used by only two row strips. C has been scaled by beta already unless {@code overwrite}.
     */
    private static void dgemmRowsOfB(int m, int n, int k, double alpha, MemorySegment a, long aOffset, long aRowStride,
                                     long aColStride, MemorySegment b, long bOffset, long bRowStride, MemorySegment c,
                                     long cOffset, long ldc, boolean overwrite, boolean parallel) {
        int strips = n / DNR, rowStrips = (m + DMR - 1) / DMR;
        for (int pc = 0; pc < k; pc += DKC) {
            int kc = Math.min(DKC, k - pc);
            boolean store = overwrite && pc == 0;
            double[] ap = WORKSPACE.get().da(rowStrips * DMR * kc);
            packDA(a, aOffset + pc * aColStride, aRowStride, aColStride, m, kc, ap);
            long bBlock = (bOffset + pc * bRowStride) * Double.BYTES;
            Parallel.RangeBody tasks = (s0, s1) -> {
                double[] tile = WORKSPACE.get().dtile;
                for (long s = s0; s < s1; s++) {
                    for (int ir = 0; ir < m; ir += DMR) {
                        kernelD(kc, ap, ir * kc, b, bBlock + s * DNR * Double.BYTES, bRowStride * Double.BYTES, tile);
                        updateCD(tile, c, (cOffset + ir * ldc + s * DNR) * Double.BYTES, ldc * Double.BYTES, Math.min(DMR, m - ir), DNR,
                                alpha, store);
                    }
                }
            };
            if (parallel) Parallel.forRange(strips, 1, tasks);
            else tasks.run(0, strips);
        }
    }

    /**
     * A DMR x DNR tile of {@code A_strip B_strip} over depth {@code kc}, into {@code tile} (row-major). B's strip row p is
     * DNR doubles at {@code bByte + p * ldbBytes}: a packed strip ({@code ldbBytes} one strip row) or B's rows in place.
     */
    static void kernelD(int kc, double[] ap, int aBase, MemorySegment b, long bByte, long ldbBytes, double[] tile) {
        DoubleVector c00 = DoubleVector.zero(DS), c01 = DoubleVector.zero(DS);
        DoubleVector c10 = DoubleVector.zero(DS), c11 = DoubleVector.zero(DS);
        DoubleVector c20 = DoubleVector.zero(DS), c21 = DoubleVector.zero(DS);
        DoubleVector c30 = DoubleVector.zero(DS), c31 = DoubleVector.zero(DS);
        DoubleVector c40 = DoubleVector.zero(DS), c41 = DoubleVector.zero(DS);
        DoubleVector c50 = DoubleVector.zero(DS), c51 = DoubleVector.zero(DS);
        DoubleVector c60 = DoubleVector.zero(DS), c61 = DoubleVector.zero(DS);
        DoubleVector c70 = DoubleVector.zero(DS), c71 = DoubleVector.zero(DS);
        for (int p = 0; p < kc; p++) {
            long bi = bByte + p * ldbBytes;
            int ai = aBase + p * DMR;
            DoubleVector b0 = DoubleVector.fromMemorySegment(DS, b, bi, NO);
            DoubleVector b1 = DoubleVector.fromMemorySegment(DS, b, bi + DL * Double.BYTES, NO);
            DoubleVector av = DoubleVector.broadcast(DS, ap[ai]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = DoubleVector.broadcast(DS, ap[ai + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = DoubleVector.broadcast(DS, ap[ai + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = DoubleVector.broadcast(DS, ap[ai + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = DoubleVector.broadcast(DS, ap[ai + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = DoubleVector.broadcast(DS, ap[ai + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            av = DoubleVector.broadcast(DS, ap[ai + 6]);
            c60 = b0.fma(av, c60);
            c61 = b1.fma(av, c61);
            av = DoubleVector.broadcast(DS, ap[ai + 7]);
            c70 = b0.fma(av, c70);
            c71 = b1.fma(av, c71);
        }
        c00.intoArray(tile, 0);
        c01.intoArray(tile, DL);
        c10.intoArray(tile, DNR);
        c11.intoArray(tile, DNR + DL);
        c20.intoArray(tile, 2 * DNR);
        c21.intoArray(tile, 2 * DNR + DL);
        c30.intoArray(tile, 3 * DNR);
        c31.intoArray(tile, 3 * DNR + DL);
        c40.intoArray(tile, 4 * DNR);
        c41.intoArray(tile, 4 * DNR + DL);
        c50.intoArray(tile, 5 * DNR);
        c51.intoArray(tile, 5 * DNR + DL);
        c60.intoArray(tile, 6 * DNR);
        c61.intoArray(tile, 6 * DNR + DL);
        c70.intoArray(tile, 7 * DNR);
        c71.intoArray(tile, 7 * DNR + DL);
    }

    /** {@code C = beta * C}; beta 0 writes zeros (NaN in C does not survive), beta 1 leaves C alone. */
    static void scaleD(int m, int n, double beta, MemorySegment c, long cOffset, long ldc) {
        if (beta == 1d) return;
        for (int i = 0; i < m; i++) {
            long row = (cOffset + i * ldc) * Double.BYTES;
            for (int j = 0; j < n; j++) {
                long at = row + (long) j * Double.BYTES;
                c.set(F64, at, beta == 0d ? 0d : beta * c.get(F64, at));
            }
        }
    }

    /** op(B)'s {@code kc x nc} block into DNR-wide strips, {@code [strip][p][DNR]}, the last strip zero-padded. */
    static void packDB(MemorySegment b, long off, long rs, long cs, int kc, int nc, MemorySegment dst) {
        if (rs == 1 && cs != 1) {
            packDBTransposed(b, off, cs, kc, nc, dst);
            return;
        }
        for (int s = 0, j0 = 0; j0 < nc; s++, j0 += DNR) {
            int w = Math.min(DNR, nc - j0);
            long base = (long) s * kc * DNR;
            for (int p = 0; p < kc; p++) {
                long row = off + p * rs + j0 * cs;
                long at = (base + (long) p * DNR) * Double.BYTES;
                if (w == DNR && cs == 1) {
                    DoubleVector.fromMemorySegment(DS, b, row * Double.BYTES, NO).intoMemorySegment(dst, at, NO);
                    DoubleVector.fromMemorySegment(DS, b, (row + DL) * Double.BYTES, NO).intoMemorySegment(dst, at + DL * Double.BYTES, NO);
                } else {
                    for (int j = 0; j < w; j++) dst.set(F64, at + (long) j * Double.BYTES, b.get(F64, (row + j * cs) * Double.BYTES));
                    for (int j = w; j < DNR; j++) dst.set(F64, at + (long) j * Double.BYTES, 0d);
                }
            }
        }
    }

    /**
     * {@link #packDB} for a transposed B (a Linear weight: op(B)'s columns contiguous): each strip's columns bulk-copied
     * to the heap, and each p's row of the strip gathered from them straight into the packed block. Element-by-element
     * segment reads and writes cost time_sequence_prediction's gate products {@code h [97, 51] W^T} 79 us against 58 on a
     * contiguous {@code W^T}; interleaving the columns on the heap with scalar moves and copying the strip out took
     * 9-16 us a call for {@code W [204, 51]}, gathering 4.7-5.7 (one thread, load 19).
     */
    private static void packDBTransposed(MemorySegment b, long off, long cs, int kc, int nc, MemorySegment dst) {
        Workspace ws = WORKSPACE.get();
        double[] cols = ws.dcols(DNR * kc);
        int[] lanes = ws.rowLanes(kc);
        for (int s = 0, j0 = 0; j0 < nc; s++, j0 += DNR) {
            int w = Math.min(DNR, nc - j0);
            for (int j = 0; j < w; j++) MemorySegment.copy(b, F64, (off + (j0 + j) * cs) * Double.BYTES, cols, j * kc, kc);
            java.util.Arrays.fill(cols, w * kc, DNR * kc, 0d);
            long strip = (long) s * kc * DNR * Double.BYTES;
            for (int p = 0; p < kc; p++) {
                for (int v = 0; v < DNR; v += DL) {
                    DoubleVector.fromArray(DS, cols, p + v * kc, lanes, 0).intoMemorySegment(dst, strip + (long) (p * DNR + v) * Double.BYTES, NO);
                }
            }
        }
    }

    /**
     * op(A)'s {@code mc x kc} block into DMR-tall strips, {@code [strip][p][DMR]}, the last strip zero-padded. A whole
     * strip of a transposed A is DMR contiguous doubles per p, moved as vectors; a plain A's DMR rows are bulk-copied to
     * the heap and each p's column gathered from them. At time_sequence_prediction's shapes a bulk copy per p (transposed,
     * 97 deep) and element-by-element reads (plain, 204 deep) took 0.55-0.8 and 1.1-1.9 us an 8-row strip, as much as a
     * third of the product; now 0.10-0.12 and 0.57-0.64 (one thread, load 19).
     */
    static void packDA(MemorySegment a, long off, long rs, long cs, int mc, int kc, double[] dst) {
        for (int i0 = 0; i0 < mc; i0 += DMR) {
            int base = i0 * kc;
            if (i0 + DMR <= mc && rs == 1) {
                for (int p = 0; p < kc; p++) {
                    long at = (off + i0 + p * cs) * Double.BYTES;
                    for (int v = 0; v < DMR; v += DL) DoubleVector.fromMemorySegment(DS, a, at + v * 8L, NO).intoArray(dst, base + p * DMR + v);
                }
                continue;
            }
            if (i0 + DMR <= mc && cs == 1) {
                gatherRowsDA(a, off + i0 * rs, rs, kc, dst, base);
                continue;
            }
            for (int r = 0; r < DMR; r++) {
                if (i0 + r < mc) {
                    long row = off + (i0 + r) * rs;
                    for (int p = 0; p < kc; p++) dst[base + p * DMR + r] = a.get(F64, (row + p * cs) * Double.BYTES);
                } else {
                    for (int p = 0; p < kc; p++) dst[base + p * DMR + r] = 0d;
                }
            }
        }
    }

    /** DMR rows of a plain A ({@code rs} apart, {@code kc} contiguous doubles each) into one packed strip at {@code dst[base]}. */
    private static void gatherRowsDA(MemorySegment a, long row0, long rs, int kc, double[] dst, int base) {
        Workspace ws = WORKSPACE.get();
        double[] rows = ws.dcols(DMR * kc);
        int[] lanes = ws.rowLanes(kc);
        for (int r = 0; r < DMR; r++) MemorySegment.copy(a, F64, (row0 + r * rs) * Double.BYTES, rows, r * kc, kc);
        for (int p = 0; p < kc; p++) {
            for (int v = 0; v < DMR; v += DL) DoubleVector.fromArray(DS, rows, p + v * kc, lanes, 0).intoArray(dst, base + p * DMR + v);
        }
    }

    /** {@code C[0..mr)[0..nr) += alpha * tile} ({@code = alpha * tile} with {@code overwrite}), C's rows {@code ldcBytes} apart from {@code cByte}. */
    static void updateCD(double[] tile, MemorySegment c, long cByte, long ldcBytes, int mr, int nr, double alpha,
                                 boolean overwrite) {
        DoubleVector alv = DoubleVector.broadcast(DS, alpha);
        for (int r = 0; r < mr; r++) {
            long row = cByte + r * ldcBytes;
            if (nr == DNR) {
                for (int v = 0; v < DNR; v += DL) {
                    long at = row + (long) v * Double.BYTES;
                    DoubleVector t = DoubleVector.fromArray(DS, tile, r * DNR + v);
                    (overwrite ? t.mul(alv) : t.fma(alv, DoubleVector.fromMemorySegment(DS, c, at, NO))).intoMemorySegment(c, at, NO);
                }
            } else {
                for (int j = 0; j < nr; j++) {
                    long at = row + (long) j * Double.BYTES;
                    c.set(F64, at, overwrite ? alpha * tile[r * DNR + j] : Math.fma(alpha, tile[r * DNR + j], c.get(F64, at)));
                }
            }
        }
    }

    private static void checkDims(String op, int m, int n, int k) {
        if (m < 0 || n < 0 || k < 0) {
            throw new IllegalArgumentException(op + ": expected non-negative sizes, got m=" + m + " n=" + n + " k=" + k);
        }
    }

    private static int gcd(int a, int b) {
        return b == 0 ? a : gcd(b, a % b);
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
