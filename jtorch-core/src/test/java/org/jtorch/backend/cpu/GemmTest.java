package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Gemm against the definition {@code C[i][j] = alpha * sum_p A[i][p] * B[p][j] + beta * C[i][j]},
 * evaluated by a naive triple loop in double. Tolerance: relative 1e-5 * sqrt(k) of the largest
 * |term| sum (float accumulation error grows like sqrt(k) for random data).
 */
class GemmTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout.OfDouble D = ValueLayout.JAVA_DOUBLE;
    private final Arena arena = Arena.ofShared();
    private final int savedThreads = Parallel.numThreads();

    @AfterEach
    void tearDown() {
        Parallel.setNumThreads(savedThreads);
        arena.close();
    }

    /** A strided view: element (i, j) at offset + i*rowStride + j*colStride of seg. */
    record View(MemorySegment seg, long offset, long rowStride, long colStride) {}

    /** Lays out a rows x cols matrix as: 0 row-major, 1 column-major (transposed), 2 row-major padded with offset, 3 both strides non-unit. */
    private View randomMatrix(int rows, int cols, int layout, SplittableRandom rnd, boolean dbl) {
        long offset, rs, cs, size;
        switch (layout) {
            case 0 -> { offset = 0; rs = cols; cs = 1; }
            case 1 -> { offset = 0; rs = 1; cs = rows; }
            case 2 -> { offset = 3; rs = cols + 5; cs = 1; }
            case 4 -> { offset = 1; rs = 1; cs = rows + 3; } // transposed with padded columns
            default -> { offset = 2; rs = 2L * cols + 3; cs = 2; }
        }
        size = offset + Math.max(0, rows - 1) * rs + Math.max(0, cols - 1) * cs + 1;
        MemorySegment seg = arena.allocate(size * (dbl ? 8 : 4), 64);
        for (long e = 0; e < size; e++) {
            // Fill everything (gaps too) so that reading outside the view would show up.
            double v = rnd.nextDouble() * 2 - 1;
            if (dbl) seg.setAtIndex(D, e, v); else seg.setAtIndex(F, e, (float) v);
        }
        return new View(seg, offset, rs, cs);
    }

    private static double get(View v, int i, int j, boolean dbl) {
        long e = v.offset + i * v.rowStride + j * v.colStride;
        return dbl ? v.seg.getAtIndex(D, e) : v.seg.getAtIndex(F, e);
    }

    /** Runs sgemm (or dgemm) and checks every element of C against the double reference, and C's padding untouched. */
    private void check(int m, int n, int k, float alpha, float beta, int layoutA, int layoutB, long seed, boolean dbl) {
        SplittableRandom rnd = new SplittableRandom(seed);
        View a = randomMatrix(m, k, layoutA, rnd, dbl);
        View b = randomMatrix(k, n, layoutB, rnd, dbl);
        long cOff = 1, ldc = n + 2;
        long cSize = cOff + m * ldc + 1;
        MemorySegment c = arena.allocate(cSize * (dbl ? 8 : 4), 64);
        double[] old = new double[(int) cSize];
        for (int e = 0; e < cSize; e++) {
            old[e] = rnd.nextDouble() * 2 - 1;
            if (dbl) c.setAtIndex(D, e, old[e]); else c.setAtIndex(F, e, (float) old[e]);
            if (!dbl) old[e] = (float) old[e];
        }
        if (dbl) {
            Gemm.dgemm(m, n, k, alpha, a.seg, a.offset, a.rowStride, a.colStride,
                    b.seg, b.offset, b.rowStride, b.colStride, beta, c, cOff, ldc);
        } else {
            Gemm.sgemm(m, n, k, alpha, a.seg, a.offset, a.rowStride, a.colStride,
                    b.seg, b.offset, b.rowStride, b.colStride, beta, c, cOff, ldc);
        }
        double tol = (dbl ? 1e-12 : 1e-5) * Math.sqrt(Math.max(k, 1));
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0, mag = 0;
                for (int p = 0; p < k; p++) {
                    double t = get(a, i, p, dbl) * get(b, p, j, dbl);
                    sum += t;
                    mag += Math.abs(t);
                }
                long e = cOff + i * ldc + j;
                double want = alpha * sum + (beta == 0 ? 0 : beta * old[(int) e]);
                double scale = Math.abs(alpha) * mag + Math.abs(beta * old[(int) e]) + 1e-30;
                double got = dbl ? c.getAtIndex(D, e) : c.getAtIndex(F, e);
                if (!(Math.abs(got - want) <= tol * scale)) {
                    fail(String.format("%s m=%d n=%d k=%d alpha=%s beta=%s layouts=%d/%d: C[%d][%d]=%s, want %s",
                            dbl ? "dgemm" : "sgemm", m, n, k, alpha, beta, layoutA, layoutB, i, j, got, want));
                }
            }
        }
        for (int e = 0; e < cSize; e++) {
            long col = (e - cOff) % ldc;
            boolean inside = e >= cOff && e < cOff + m * ldc && col < n;
            double got = dbl ? c.getAtIndex(D, e) : c.getAtIndex(F, e);
            if (!inside) assertEquals(old[e], got, 0.0, "C element " + e + " outside the matrix was written");
        }
    }

    @Test
    void oneByOneByOne() {
        check(1, 1, 1, 1f, 0f, 0, 0, 1, false);
        check(1, 1, 1, 2f, 0.5f, 0, 0, 2, false);
    }

    @Test
    void kZeroScalesCByBeta() {
        check(5, 7, 0, 1f, 0.5f, 0, 0, 3, false);
        check(5, 7, 0, 1f, 0f, 0, 0, 4, false);
        check(5, 7, 0, 1f, 0.5f, 0, 0, 5, true);
    }

    @Test
    void emptyMatricesAreNoOps() {
        check(0, 7, 3, 1f, 0f, 0, 0, 6, false);
        check(4, 0, 3, 1f, 0f, 0, 0, 7, false);
    }

    @Test
    void oddSizesAllLayouts() {
        // Includes narrow shapes (n < 16 with k >= 32: the dot-product path), odd m for its row pairs.
        int[][] sizes = {{7, 13, 5}, {257, 129, 31}, {9, 33, 300}, {17, 17, 17}, {3, 50, 1}, {37, 10, 300}, {128, 10, 512},
                {33, 3, 40}, {18, 15, 33}};
        long seed = 10;
        for (int[] s : sizes) {
            for (int la = 0; la < 4; la++) {
                for (int lb = 0; lb < 4; lb++) check(s[0], s[1], s[2], 1f, 0f, la, lb, seed++, false);
            }
        }
    }

    /**
     * Short m (4-16 rows: four-row blocks of three vectors, then row tails; 9-10 rows from 32 columns the short-m path)
     * with every layout, column tail and alpha/beta.
     */
    @Test
    void shortRowsWithColumnTails() {
        long seed = 500;
        for (int m : new int[] {4, 5, 7, 8, 9, 10, 13, 16}) {
            for (int n : new int[] {16, 47, 48, 49, 100, 200}) {
                for (int lb = 0; lb < 4; lb++) check(m, n, 33, 1f, 0f, lb, lb, seed++, false);
                check(m, n, 200, -0.5f, 2f, 1, 0, seed++, false);
            }
        }
    }

    /** Short k with a longer m (a 10-class layer's input gradient): packed tiles of depth 1-16, row and column tails. */
    @Test
    void shortDepthLongRowsAgainstTheReference() {
        long seed = 900;
        for (int m : new int[] {17, 33, 128}) {
            for (int n : new int[] {16, 47, 100}) {
                for (int k : new int[] {1, 3, 10, 16}) {
                    for (int l = 0; l < 4; l++) check(m, n, k, 1f, 0f, l, (l + 1) % 4, seed++, false);
                    check(m, n, k, -0.5f, 2f, 0, 0, seed++, false);
                }
            }
        }
    }

    /**
     * The short-m path (GemmShortM: 10-row blocks, B's panels read in place or packed): every row count it serves, partial
     * last blocks, column tails, k from 1 to its limit and just past it, every layout of A and B.
     */
    @Test
    void shortMRowBlocksAgainstTheReference() {
        assertTrue(GemmShortM.serves(20, 200, 800) || Gemm.L != 16, "the LSTM's m = 20 products take the short-m path");
        assertTrue(GemmShortM.serves(10, 512, 128) || Gemm.L != 16, "a 10-class weight gradient takes the short-m path");
        long seed = 700;
        for (int m : new int[] {9, 10, 17, 19, 20, 25, 28, 30}) {
            for (int n : new int[] {32, 33, 47, 64, 100, 200}) {
                for (int l = 0; l < 4; l++) check(m, n, 37, 1f, 0f, l, 3 - l, seed++, false);
                check(m, n, 1, 1f, 0.5f, 0, 0, seed++, false);
                check(m, n, 200, -0.5f, 2f, 1, 2, seed++, false);
            }
        }
        for (int k : new int[] {Gemm.KC, Gemm.KC + 1}) check(20, 50, k, 1f, 0f, 0, 0, seed++, false);
        check(21, 64, 40, 1f, 0f, 0, 0, seed++, false); // m = 21-24: the general path's 8-row tiles
        check(20, 31, 40, 1f, 0f, 0, 0, seed++, false); // n under one panel: the general path
    }

    /**
     * The dot-product path (GemmDot: at most 8 rows of A against a transposed B, a linear layer at batch 1-8): every row
     * count, column counts around its groups of four, depths with and without a vector tail, padded rows of A.
     */
    @Test
    void shortMAgainstATransposedBAgainstTheReference() {
        assertTrue(GemmDot.serves(1, 512, 1, 1) || Gemm.L > 16 || Gemm.L < 4, "x W^T at batch 1 takes the dot-product path");
        shortMAgainstATransposedB(false, 2 * Gemm.L, 900);
    }

    /** The same shapes through dgemm's dot-product path (GemmDotF64, a float64 linear layer at batch 1-8). */
    @Test
    void dgemmShortMAgainstATransposedBAgainstTheReference() {
        assertTrue(GemmDotF64.serves(1, 512, 1, 1) || Gemm.DL > 8 || Gemm.DL < 4, "x W^T at batch 1 takes the dot-product path");
        shortMAgainstATransposedB(true, 2 * Gemm.DL, 1900);
    }

    private void shortMAgainstATransposedB(boolean dbl, int minDepth, long seed) {
        for (int m = 1; m <= GemmDot.MAX_M; m++) {
            for (int n : new int[] {1, 3, 4, 5, 9, 66}) {
                for (int k : new int[] {minDepth, minDepth + 1, 77, 300}) {
                    check(m, n, k, 1f, 0f, (m + n) % 2 == 0 ? 0 : 2, 1, seed++, dbl);
                }
                check(m, n, 100, -0.5f, 2f, 0, 1, seed++, dbl);
            }
        }
        check(9, 40, 64, 1f, 0f, 0, 1, seed++, dbl); // m = 9: past the path
        check(4, 40, minDepth - 1, 1f, 0f, 0, 1, seed++, dbl); // too shallow for it
        // C^T = B^T A^T: a long A against at most 8 columns (a matrix-vector product when n = 1, B's one column contiguous).
        for (int m : new int[] {1, 5, 37, 100}) {
            for (int n = 1; n <= GemmDot.MAX_M; n++) {
                check(m, n, 77, 1f, 0f, m % 2 == 0 ? 0 : 2, 1, seed++, dbl);
                check(m, n, minDepth, -0.5f, 2f, 0, 1, seed++, dbl);
            }
            check(m, 1, 300, 1f, 0.5f, 2, 0, seed++, dbl);
        }
    }

    /**
     * The streamed path ({@link GemmStream}): A^T (A stored [k, m], layout 1) times at most four columns of B in any layout,
     * and the shapes just past it (five to eight columns, the general path); long-side tails past the last two-vector
     * block, alpha and beta, padded and strided operands, one and two threads (bit for bit equal).
     */
    @Test
    void fewColumnsAlongTheLongOperandsRowsAgainstTheReference() {
        int L = Gemm.L;
        org.junit.jupiter.api.Assumptions.assumeTrue(L >= 4 && L <= 16, "the streamed path needs 4 to 16 float lanes");
        assertTrue(GemmStream.serves(4096, 1, 1), "A^T x takes the streamed path");
        long seed = 1200;
        for (int threads : new int[] {1, 2}) {
            Parallel.setNumThreads(threads);
            for (int longSide : new int[] {2 * L, 2 * L + 3, 5 * L + 1, 300}) {
                for (int few = 1; few <= 2 * GemmStream.MAX_N; few++) {
                    for (int k : new int[] {1, 3, 50}) check(longSide, few, k, 1f, 0f, 1, (few + k) % 2 == 0 ? 0 : 2, seed++, false);
                    check(longSide, few, 33, -0.5f, 2f, 1, 3, seed++, false);
                }
            }
        }
        SplittableRandom rnd = new SplittableRandom(12);
        for (int[] s : new int[][] {{1000, 3, 77}, {4096, 1, 128}, {999, 4, 128}, {333, 2, 1}}) {
            int m = s[0], n = s[1], k = s[2];
            View a = randomMatrix(m, k, 1, rnd, false), b = randomMatrix(k, n, 0, rnd, false);
            MemorySegment c1 = arena.allocate((long) m * n * 4), c2 = arena.allocate((long) m * n * 4);
            Parallel.setNumThreads(1);
            Gemm.sgemm(m, n, k, 1f, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0f, c1, 0, n);
            Parallel.setNumThreads(2);
            Gemm.sgemm(m, n, k, 1f, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0f, c2, 0, n);
            assertArrayEquals(c1.toArray(F), c2.toArray(F), "m=" + m + " n=" + n + " k=" + k);
        }
    }

    /**
     * The dot-product path sums in one documented order, whether its kernels run compiled or not: per lane a chain of
     * FMAs over the full vectors, the depth's tail added lane by lane, then the lanes folded pairwise (halves onto
     * halves). {@code reduceLanes(ADD)} would not do (C2's order and the interpreter's differ), and the same layer's
     * gradients once differed in their last bits between two calls (DistributedDataParallelLocalTest).
     */
    @Test
    void dotProductsSumInTheDocumentedOrder() {
        int L = Gemm.L;
        org.junit.jupiter.api.Assumptions.assumeTrue(L >= 4 && L <= 16, "the dot-product path needs 4 to 16 float lanes");
        SplittableRandom rnd = new SplittableRandom(11);
        for (int m : new int[] {1, 2, 3}) {
            for (int k : new int[] {2 * L, 2 * L + 5, 3 * L + L - 1}) {
                int n = 6;
                float[] a = new float[m * k], b = new float[n * k];
                for (int e = 0; e < a.length; e++) a[e] = (float) ((rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(7) - 3));
                for (int e = 0; e < b.length; e++) b[e] = (float) ((rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(7) - 3));
                MemorySegment as = arena.allocate(a.length * 4L, 64), bs = arena.allocate(b.length * 4L, 64), cs = arena.allocate(m * n * 4L, 64);
                MemorySegment.copy(a, 0, as, F, 0, a.length);
                MemorySegment.copy(b, 0, bs, F, 0, b.length);
                assertTrue(GemmDot.serves(m, k, 1, 1));
                Gemm.sgemm(m, n, k, 1f, as, 0, k, 1, bs, 0, 1, k, 0f, cs, 0, n);
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        float[] lanes = new float[L];
                        int p = 0;
                        for (; p + L <= k; p += L) {
                            for (int l = 0; l < L; l++) lanes[l] = Math.fma(a[i * k + p + l], b[j * k + p + l], lanes[l]);
                        }
                        for (int l = 0, w = k - L; p < k && l < L; l++) {
                            if (w + l >= p) lanes[l] = lanes[l] + a[i * k + w + l] * b[j * k + w + l];
                        }
                        for (int half = L / 2; half >= 1; half /= 2) {
                            for (int l = 0; l < half; l++) lanes[l] = lanes[l] + lanes[l + half];
                        }
                        assertEquals(Float.floatToIntBits(lanes[0]), Float.floatToIntBits(cs.getAtIndex(F, (long) i * n + j)),
                                "C[" + i + "][" + j + "] of " + m + "x" + n + "x" + k);
                    }
                }
            }
        }
    }

    /** {@link #dotProductsSumInTheDocumentedOrder}'s order for dgemm's dot-product path, in double lanes. */
    @Test
    void dgemmDotProductsSumInTheDocumentedOrder() {
        int L = Gemm.DL;
        org.junit.jupiter.api.Assumptions.assumeTrue(L >= 4 && L <= 8, "the float64 dot-product path needs 4 to 8 double lanes");
        SplittableRandom rnd = new SplittableRandom(13);
        for (int m : new int[] {1, 2, 3}) {
            for (int k : new int[] {2 * L, 2 * L + 3, 3 * L + L - 1}) {
                int n = 6;
                double[] a = new double[m * k], b = new double[n * k];
                for (int e = 0; e < a.length; e++) a[e] = (rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(15) - 7);
                for (int e = 0; e < b.length; e++) b[e] = (rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(15) - 7);
                MemorySegment as = arena.allocate(a.length * 8L, 64), bs = arena.allocate(b.length * 8L, 64), cs = arena.allocate(m * n * 8L, 64);
                MemorySegment.copy(a, 0, as, D, 0, a.length);
                MemorySegment.copy(b, 0, bs, D, 0, b.length);
                assertTrue(GemmDotF64.serves(m, k, 1, 1));
                Gemm.dgemm(m, n, k, 1.0, as, 0, k, 1, bs, 0, 1, k, 0.0, cs, 0, n);
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double[] lanes = new double[L];
                        int p = 0;
                        for (; p + L <= k; p += L) {
                            for (int l = 0; l < L; l++) lanes[l] = Math.fma(a[i * k + p + l], b[j * k + p + l], lanes[l]);
                        }
                        for (int l = 0, w = k - L; p < k && l < L; l++) {
                            if (w + l >= p) lanes[l] = lanes[l] + a[i * k + w + l] * b[j * k + w + l];
                        }
                        for (int half = L / 2; half >= 1; half /= 2) {
                            for (int l = 0; l < half; l++) lanes[l] = lanes[l] + lanes[l + half];
                        }
                        assertEquals(Double.doubleToLongBits(lanes[0]), Double.doubleToLongBits(cs.getAtIndex(D, (long) i * n + j)),
                                "C[" + i + "][" + j + "] of " + m + "x" + n + "x" + k);
                    }
                }
            }
        }
    }

    @Test
    void alphaAndBetaValues() {
        float[][] ab = {{1, 1}, {-0.5f, 2}, {3, -1}, {0, 0.5f}, {0, 0}};
        long seed = 100;
        for (boolean dbl : new boolean[] {false, true}) {
            for (float[] v : ab) check(37, 45, 29, v[0], v[1], 0, 1, seed++, dbl);
        }
    }

    @Test
    void transposeFlagsMatchStridedForm() {
        // C = op(A) op(B) through the BLAS-style entry point, for every combination of flags.
        int m = 19, n = 37, k = 23;
        SplittableRandom rnd = new SplittableRandom(7);
        for (boolean ta : new boolean[] {false, true}) {
            for (boolean tb : new boolean[] {false, true}) {
                View a = randomMatrix(m, k, ta ? 1 : 0, rnd, false);
                View b = randomMatrix(k, n, tb ? 1 : 0, rnd, false);
                MemorySegment c1 = arena.allocate((long) m * n * 4), c2 = arena.allocate((long) m * n * 4);
                Gemm.sgemm(ta, tb, m, n, k, 1f, a.seg, 0, ta ? m : k, b.seg, 0, tb ? k : n, 0f, c1, 0, n);
                Gemm.sgemm(m, n, k, 1f, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0f, c2, 0, n);
                assertArrayEquals(c2.toArray(F), c1.toArray(F), "transA=" + ta + " transB=" + tb);
            }
        }
    }

    @Test
    void betaZeroIgnoresNaNInC() {
        int m = 20, n = 40, k = 10;
        SplittableRandom rnd = new SplittableRandom(8);
        View a = randomMatrix(m, k, 0, rnd, false), b = randomMatrix(k, n, 0, rnd, false);
        MemorySegment c = arena.allocate((long) m * n * 4);
        for (int e = 0; e < m * n; e++) c.setAtIndex(F, e, Float.NaN);
        Gemm.sgemm(false, false, m, n, k, 1f, a.seg, 0, k, b.seg, 0, n, 0f, c, 0, n);
        for (int e = 0; e < m * n; e++) assertEquals(false, Float.isNaN(c.getAtIndex(F, e)), "NaN survived at " + e);
        MemorySegment cd = arena.allocate((long) m * n * 8);
        for (int e = 0; e < m * n; e++) cd.setAtIndex(D, e, Double.NaN);
        View ad = randomMatrix(m, k, 0, rnd, true), bd = randomMatrix(k, n, 0, rnd, true);
        Gemm.dgemm(false, false, m, n, k, 1.0, ad.seg, 0, k, bd.seg, 0, n, 0.0, cd, 0, n);
        for (int e = 0; e < m * n; e++) assertEquals(false, Double.isNaN(cd.getAtIndex(D, e)), "NaN survived at " + e);
    }

    @Test
    void largeAcrossCacheBlocks() {
        // k > KC, m > MC, n > NR strips: exercises beta applied once across k blocks.
        // Sizes follow the blocking constants so the test keeps covering several k and m blocks.
        check(Gemm.MC + 72, 300, 2 * Gemm.KC + 88, 1.5f, 0.25f, 0, 0, 200, false);
        check(Gemm.MC + 72, 70, Gemm.KC + 88, 1f, 1f, 1, 1, 201, false);
    }

    @Test
    void multiThreadedEqualsSingleThreaded() {
        int[][] sizes = {{300, 200, 150}, {64, 1000, 70}, {1000, 20, 90}, {128, 10, 512}, {20, 200, 800}, {20, 810, 200},
                {10, 800, 200}, {1, 4096, 64}, {3, 1001, 200}, {8, 513, 100}, {4097, 1, 300}, {1001, 5, 77}};
        SplittableRandom rnd = new SplittableRandom(9);
        for (int[] s : sizes) {
            int m = s[0], n = s[1], k = s[2];
            View a = randomMatrix(m, k, 0, rnd, false), b = randomMatrix(k, n, 1, rnd, false);
            MemorySegment c1 = arena.allocate((long) m * n * 4), c2 = arena.allocate((long) m * n * 4);
            Parallel.setNumThreads(1);
            Gemm.sgemm(m, n, k, 1f, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0f, c1, 0, n);
            Parallel.setNumThreads(2);
            Gemm.sgemm(m, n, k, 1f, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0f, c2, 0, n);
            // Each thread computes whole tiles with the same blocking, so results are bitwise equal.
            assertArrayEquals(c1.toArray(F), c2.toArray(F), "m=" + m + " n=" + n + " k=" + k);
        }
        Parallel.setNumThreads(2);
        check(300, 200, 150, 1f, 0.5f, 0, 0, 300, false);
        check(1000, 20, 90, 1f, 0f, 1, 0, 301, false);
        check(300, 200, 150, 1f, 0.5f, 0, 1, 302, true);
    }

    @Test
    void batchedMatchesLoopOfSingles() {
        int batch = 6, m = 9, n = 21, k = 13;
        SplittableRandom rnd = new SplittableRandom(11);
        View a = randomMatrix(batch * m, k, 0, rnd, false), b = randomMatrix(batch * k, n, 0, rnd, false);
        MemorySegment c1 = arena.allocate((long) batch * m * n * 4), c2 = arena.allocate((long) batch * m * n * 4);
        Parallel.setNumThreads(2);
        Gemm.sgemmBatched(batch, m, n, k, 1f, a.seg, 0, (long) m * k, k, 1, b.seg, 0, (long) k * n, n, 1,
                0f, c1, 0, (long) m * n, n);
        for (int t = 0; t < batch; t++) {
            Gemm.sgemm(false, false, m, n, k, 1f, a.seg, (long) t * m * k, k, b.seg, (long) t * k * n, n, 0f,
                    c2, (long) t * m * n, n);
        }
        assertArrayEquals(c2.toArray(F), c1.toArray(F));
    }

    @Test
    void dgemmOddSizesAndLayouts() {
        long seed = 400;
        for (int[] s : new int[][] {{1, 1, 1}, {7, 13, 5}, {33, 17, 40}}) {
            for (int la = 0; la < 4; la++) {
                for (int lb = 0; lb < 4; lb++) check(s[0], s[1], s[2], -1.5f, 0.5f, la, lb, seed++, true);
            }
        }
    }

    @Test
    void dgemmAcrossCacheBlocksAndPartialTiles() {
        // m > DMC with a partial row strip, n > DNC with a partial column strip, k > DKC: beta applied once,
        // then every k block added.
        check(Gemm.DMC + Gemm.DMR + 3, Gemm.DNC + Gemm.DNR + 5, 2 * Gemm.DKC + 17, 1.5f, 0.25f, 0, 0, 500, true);
        check(Gemm.DMC + 1, 70, Gemm.DKC + 1, 1f, 1f, 1, 1, 501, true);
        check(97, 204, 51, 1f, 0f, 2, 3, 502, true);
        // beta 0 over several k blocks: the first block's tiles overwrite C (full and partial tiles), the later ones add.
        check(Gemm.DMC + 5, 3 * Gemm.DNR + 3, Gemm.DKC + 9, -0.75f, 0f, 1, 2, 503, true);
    }

    /**
     * dgemm's packing of a transposed B (a Linear weight, op(B)'s columns contiguous: plain and padded), as
     * time_sequence_prediction's gate products {@code h [97, 51] W [204, 51]^T} use it: whole and partial 16-column strips,
     * n below one strip, depths of one, past a depth block, beta 0 over NaN-free and accumulating C, every layout of A.
     */
    @Test
    void dgemmTransposedBAgainstTheReference() {
        long seed = 3300;
        for (int n : new int[] {1, Gemm.DNR - 1, Gemm.DNR, Gemm.DNR + 1, 204}) {
            for (int k : new int[] {1, 51, Gemm.DKC + 3}) {
                for (int lb : new int[] {1, 4}) {
                    check(97, n, k, 1f, 0f, (n + k) % 4, lb, seed++, true);
                    check(Gemm.DMC + 3, n, k, -0.5f, 1.5f, (n + k + 1) % 4, lb, seed++, true);
                }
            }
        }
    }

    /**
     * dgemm's path for a short A against a row-major B read in place (a float64 convolution's weights against its im2col
     * matrix): row counts around its 8-row strips and up to its limit, whole 16-column strips plus a tail, depths past a
     * depth block, beta 0 and not, every layout of A, B's rows padded or not.
     */
    @Test
    void dgemmShortAAgainstRowsOfBAgainstTheReference() {
        long seed = 2900;
        for (int m : new int[] {1, 7, 8, 9, 16, Gemm.DMC}) {
            for (int n : new int[] {Gemm.DNR, Gemm.DNR + 1, 3 * Gemm.DNR + 5}) {
                for (int k : new int[] {1, 5, 144, Gemm.DKC + 44}) {
                    check(m, n, k, 1f, 0f, (m + k) % 4, n % 2 == 0 ? 0 : 2, seed++, true);
                }
                check(m, n, 37, -0.5f, 1.5f, 1, 0, seed++, true);
                check(m, n, Gemm.DKC + 3, 2f, 1f, 3, 2, seed++, true);
            }
        }
        check(Gemm.DMC, 1030, 144, 1f, 0f, 0, 0, seed++, true);
        // Strips split over threads: the same bits as on one.
        SplittableRandom rnd = new SplittableRandom(seed);
        int m = 16, n = 1030, k = 144;
        View a = randomMatrix(m, k, 0, rnd, true), b = randomMatrix(k, n, 0, rnd, true);
        MemorySegment c1 = arena.allocate((long) m * n * 8), c2 = arena.allocate((long) m * n * 8);
        Parallel.setNumThreads(1);
        Gemm.dgemm(m, n, k, 1.0, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0.0, c1, 0, n);
        Parallel.setNumThreads(2);
        Gemm.dgemm(m, n, k, 1.0, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0.0, c2, 0, n);
        assertArrayEquals(c1.toArray(D), c2.toArray(D));
    }

    /**
     * dgemm's rows-of-B path ({@link GemmRowsF64}: outer products with k <= 2, one row of C, and through C^T = B^T A^T a
     * transposed matrix times one contiguous column, as a float64 linear layer from or to one feature and its gradients
     * use them): every element is {@code alpha * fma-chain over p ascending + beta * C}, bit for bit, at widths around its
     * four-vector chunks, one vector and the scalar tail, on every layout the path takes (A transposed, padded, strided;
     * B's rows padded), beta 0 over NaN (not read) and 1.5, and C's padding untouched. The shapes of other paths are
     * skipped; enough must be left.
     */
    @Test
    void dgemmRowsOfBSumInTheDocumentedOrder() {
        int l = Gemm.DL, tested = 0;
        long seed = 7100;
        int[][] shapes = {{97, 204, 1}, {97, 2 * 4 * l + 3, 1}, {5, 2 * 4 * l + l + 3, 2}, {3, 2 * 4 * l, 1}, {1, 51, 97}, {1, 204, 1}, {1, l - 1, 5},
            {1, 4 * l, 300}, {204, 1, 97}, {51, 1, 97}, {l + 3, 1, 2}, {1, 1, 1}, {1, 1, 40}};
        for (int[] s : shapes) {
            int m = s[0], n = s[1], k = s[2];
            for (int la = 0; la <= 4; la++) {
                for (int lb : new int[] {0, 1, 2, 3}) {
                    for (double[] ab : new double[][] {{1, 0}, {-0.5, 1.5}}) {
                        SplittableRandom rnd = new SplittableRandom(seed++);
                        View a = randomMatrix(m, k, la, rnd, true), b = randomMatrix(k, n, lb, rnd, true);
                        long cOff = 1, ldc = n == 1 ? 1 : n + 2, cSize = cOff + (m - 1) * ldc + n + 1;
                        boolean rows = GemmRowsF64.serves(m, n, k, b.colStride, 1) || GemmRowsF64.serves(n, m, k, a.rowStride, ldc);
                        boolean dots = GemmDotF64.serves(m, k, a.colStride, b.rowStride) || GemmDotF64.serves(n, k, b.rowStride, a.colStride);
                        if (!rows || dots) continue;
                        tested++;
                        double alpha = ab[0], beta = ab[1];
                        MemorySegment c = arena.allocate(cSize * 8, 64);
                        double[] old = new double[(int) cSize];
                        for (int e = 0; e < cSize; e++) {
                            old[e] = beta == 0 && e >= cOff && e < cSize - 1 ? Double.NaN : rnd.nextDouble() * 2 - 1;
                            c.setAtIndex(D, e, old[e]);
                        }
                        Gemm.dgemm(m, n, k, alpha, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride,
                                beta, c, cOff, ldc);
                        for (int e = 0; e < cSize; e++) {
                            long i = (e - cOff) / ldc, j = (e - cOff) % ldc;
                            double got = c.getAtIndex(D, e);
                            if (e < cOff || i >= m || j >= n) {
                                assertEquals(Double.doubleToLongBits(old[e]), Double.doubleToLongBits(got), "C element " + e + " outside the matrix");
                                continue;
                            }
                            double sum = 0;
                            for (int p = 0; p < k; p++) sum = Math.fma(get(a, (int) i, p, true), get(b, p, (int) j, true), sum);
                            double want = beta == 0 ? alpha * sum : alpha * sum + beta * old[e];
                            assertEquals(Double.doubleToLongBits(want), Double.doubleToLongBits(got),
                                    m + "x" + n + "x" + k + " layouts " + la + "/" + lb + " beta " + beta + ": C[" + i + "][" + j + "]");
                        }
                    }
                }
            }
        }
        assertTrue(tested >= 60, "only " + tested + " cases took the rows-of-B path");
        // Split over threads: the same bits as on one.
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int[] s : new int[][] {{1000, 700, 1}, {1, 4096, 300}, {4096, 1, 300}}) {
            int m = s[0], n = s[1], k = s[2];
            View a = randomMatrix(m, k, m == 4096 ? 1 : 0, rnd, true), b = randomMatrix(k, n, 0, rnd, true);
            MemorySegment c1 = arena.allocate((long) m * n * 8), c2 = arena.allocate((long) m * n * 8);
            Parallel.setNumThreads(1);
            Gemm.dgemm(m, n, k, 1.0, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride, 0.0, c1, 0, n);
            Parallel.setNumThreads(2);
            Gemm.dgemm(m, n, k, 1.0, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride, 0.0, c2, 0, n);
            assertArrayEquals(c1.toArray(D), c2.toArray(D), "m=" + m + " n=" + n + " k=" + k);
        }
    }

    /**
     * dgemm's narrow-C path ({@link GemmNarrowF64}: a row-major op(B) read in place, C one vector to eight vectors wide, as
     * time_sequence_prediction's backward products {@code g W [97, 204] x [204, 51]} and {@code g^T h [204, 97] x [97, 51]}
     * use it) gives the packed path's bits: per {@link Gemm#DKC}-deep block one fma chain over p ascending, the first
     * block's {@code alpha * sum} stored when beta is 0 (C's NaN not read), else C scaled by beta (1 leaves it) and then
     * {@code fma(alpha, sum, C)} per block. Row counts around its 8-row blocks, widths around its three-vector tiles, one
     * vector and the last columns' overlapping window, depths of one, odd and past a depth block, every layout of A, B's
     * rows padded or not, C's padding untouched; then split over threads, the one-thread bits.
     */
    @Test
    void dgemmNarrowCSumsAsThePackedPath() {
        int l = Gemm.DL, tested = 0;
        long seed = 8100;
        int[] widths = {l, l + 1, 3 * l - 1, 3 * l, 3 * l + 1, 51, 4 * l + 3, GemmNarrowF64.MAX_N};
        int[] depths = {1, 5, 51, 204, Gemm.DKC + 3};
        double[][] alphaBetas = {{1, 0}, {-0.5, 1.5}, {0.75, 1}};
        for (int m : new int[] {2, 7, 8, 9, 97, 204}) {
            for (int n : widths) {
                for (int k : depths) {
                    int la = (int) (seed % 5), lb = seed % 2 == 0 ? 0 : 2;
                    double alpha = alphaBetas[(int) (seed % 3)][0], beta = alphaBetas[(int) (seed % 3)][1];
                    SplittableRandom rnd = new SplittableRandom(seed++);
                    if (!GemmNarrowF64.serves(m, n, 1) || GemmRowsF64.serves(m, n, k, 1, 1)) continue; // k <= 2 at 8 vectors: rows of B
                    tested++;
                    View a = randomMatrix(m, k, la, rnd, true), b = randomMatrix(k, n, lb, rnd, true);
                    long cOff = 1, ldc = n + 2, cSize = cOff + (m - 1) * ldc + n + 1;
                    MemorySegment c = arena.allocate(cSize * 8, 64);
                    double[] old = new double[(int) cSize];
                    for (int e = 0; e < cSize; e++) {
                        old[e] = beta == 0 && e >= cOff && e < cSize - 1 ? Double.NaN : rnd.nextDouble() * 2 - 1;
                        c.setAtIndex(D, e, old[e]);
                    }
                    Gemm.dgemm(m, n, k, alpha, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride,
                            beta, c, cOff, ldc);
                    for (int e = 0; e < cSize; e++) {
                        long i = (e - cOff) / ldc, j = (e - cOff) % ldc;
                        double got = c.getAtIndex(D, e);
                        if (e < cOff || i >= m || j >= n) {
                            assertEquals(Double.doubleToLongBits(old[e]), Double.doubleToLongBits(got), "C element " + e + " outside the matrix");
                            continue;
                        }
                        double want = beta == 1 ? old[e] : beta * old[e];
                        for (int pc = 0; pc < k; pc += Gemm.DKC) {
                            double sum = 0;
                            for (int p = pc; p < Math.min(k, pc + Gemm.DKC); p++) sum = Math.fma(get(a, (int) i, p, true), get(b, p, (int) j, true), sum);
                            want = beta == 0 && pc == 0 ? alpha * sum : Math.fma(alpha, sum, want);
                        }
                        assertEquals(Double.doubleToLongBits(want), Double.doubleToLongBits(got),
                                m + "x" + n + "x" + k + " layouts " + la + "/" + lb + " beta " + beta + ": C[" + i + "][" + j + "]");
                    }
                }
            }
        }
        assertTrue(tested >= 200, "only " + tested + " cases took the narrow-C path");
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int[] s : new int[][] {{97, 51, 204}, {204, 51, 97}, {1000, 3 * l + 5, 300}}) {
            int m = s[0], n = s[1], k = s[2];
            View a = randomMatrix(m, k, m == 204 ? 1 : 0, rnd, true), b = randomMatrix(k, n, 0, rnd, true);
            MemorySegment c1 = arena.allocate((long) m * n * 8), c2 = arena.allocate((long) m * n * 8);
            Parallel.setNumThreads(1);
            Gemm.dgemm(m, n, k, 1.0, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride, 0.0, c1, 0, n);
            Parallel.setNumThreads(2);
            Gemm.dgemm(m, n, k, 1.0, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride, 0.0, c2, 0, n);
            assertArrayEquals(c1.toArray(D), c2.toArray(D), "m=" + m + " n=" + n + " k=" + k);
        }
    }

    @Test
    void dgemmMultiThreadedEqualsSingleThreadedBitwise() {
        SplittableRandom rnd = new SplittableRandom(12);
        for (int[] s : new int[][] {{300, 200, 300}, {8, 1100, 70}, {1000, 20, 90}, {97, 204, 51}}) {
            int m = s[0], n = s[1], k = s[2];
            View a = randomMatrix(m, k, 0, rnd, true), b = randomMatrix(k, n, 1, rnd, true);
            MemorySegment c1 = arena.allocate((long) m * n * 8), c2 = arena.allocate((long) m * n * 8);
            Parallel.setNumThreads(1);
            Gemm.dgemm(m, n, k, 1.0, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0.0, c1, 0, n);
            Parallel.setNumThreads(2);
            Gemm.dgemm(m, n, k, 1.0, a.seg, 0, a.rowStride, a.colStride, b.seg, 0, b.rowStride, b.colStride, 0.0, c2, 0, n);
            assertArrayEquals(c1.toArray(D), c2.toArray(D), "m=" + m + " n=" + n + " k=" + k);
        }
    }

    @Test
    void batchedEmptyMatricesAreNoOps() {
        // Issue 19: with more than one thread the batched entry divided by the work of an empty matrix.
        MemorySegment a = arena.allocate(64), b = arena.allocate(64), c = arena.allocate(64);
        c.fill((byte) 7);
        Parallel.setNumThreads(2);
        for (int[] mn : new int[][] {{0, 5}, {4, 0}, {0, 0}}) {
            Gemm.sgemmBatched(3, mn[0], mn[1], 3, 1f, a, 0, 0, 3, 1, b, 0, 0, 1, 1, 0f, c, 0, 0, 1);
            Gemm.sgemmBatched(0, 4, 5, 3, 1f, a, 0, 0, 3, 1, b, 0, 0, 1, 1, 0f, c, 0, 0, 1);
        }
        for (byte x : c.toArray(ValueLayout.JAVA_BYTE)) assertEquals(7, x, "an empty product wrote into C");
    }

    @Test
    void cpuBmmNamesASizeBeyondTheGemmsIntCounts() {
        // An expanded output stands in for 2^31 rows: the size is refused before any memory is touched.
        try (org.jtorch.Tensor base = org.jtorch.Torch.zeros(1, 1, 1); org.jtorch.Tensor out = base.expand(1, 1L << 31, 1);
             org.jtorch.Tensor a = org.jtorch.Torch.zeros(1, 1, 0); org.jtorch.Tensor ae = a.expand(1, 1L << 31, 0);
             org.jtorch.Tensor b = org.jtorch.Torch.zeros(1, 0, 1)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new CpuLinalgKernels().bmm(org.jtorch.ops.Dispatcher.view(ae),
                    org.jtorch.ops.Dispatcher.view(b), org.jtorch.ops.Dispatcher.view(out), 1, 0));
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("bmm:") && e.getMessage().contains("m = 2147483648"),
                    e.getMessage());
        }
    }

    @Test
    void negativeSizesAreRejected() {
        MemorySegment s = arena.allocate(64);
        assertThrows(IllegalArgumentException.class,
                () -> Gemm.sgemm(false, false, -1, 1, 1, 1f, s, 0, 1, s, 0, 1, 0f, s, 0, 1));
    }

    /**
     * The packed product's threads split C by rows or by columns ({@link Gemm#splitsColumns}), at tile boundaries: each
     * element is summed in the same order either way, so two and three threads give the one-thread bits. The word LM's
     * 200 x 200 weight gradient (k 700) now splits rows; odd sizes leave a short last tile and chunk, beta 1 adds to C.
     */
    @Test
    void packedSplitsGiveTheOneThreadBits() {
        assertTrue(!Gemm.splitsColumns(200, 200, 25, 7, 2), "200 x 200: 13 and 12 row tiles, not 4 and 3 column tiles");
        assertTrue(Gemm.splitsColumns(128, 512, 16, 16, 2), "a short wide C still splits its columns (A packed twice is small)");
        assertTrue(!Gemm.splitsColumns(700, 200, 88, 7, 2), "a tall C splits its rows");
        assertTrue(!Gemm.splitsColumns(200, 20, 25, 1, 2), "one column tile: rows");
        assertTrue(Gemm.splitsColumns(4, 200, 1, 7, 2), "one row tile: columns");
        SplittableRandom rnd = new SplittableRandom(21);
        for (int[] s : new int[][] {{200, 200, 700, 0}, {203, 197, 61, 1}, {200, 200, 70, 1}, {130, 515, 40, 0}, {517, 90, 33, 0}}) {
            int m = s[0], n = s[1], k = s[2];
            float beta = s[3];
            View a = randomMatrix(m, k, 1, rnd, false), b = randomMatrix(k, n, 0, rnd, false);
            float[] start = new float[m * n];
            for (int e = 0; e < start.length; e++) start[e] = (float) (rnd.nextDouble() - 0.5);
            float[] one = null;
            for (int threads : new int[] {1, 2, 3}) {
                Parallel.setNumThreads(threads);
                MemorySegment c = arena.allocate((long) m * n * 4);
                MemorySegment.copy(start, 0, c, F, 0, start.length);
                Gemm.sgemm(m, n, k, 1f, a.seg, a.offset, a.rowStride, a.colStride, b.seg, b.offset, b.rowStride, b.colStride, beta, c, 0, n);
                float[] got = c.toArray(F);
                if (one == null) one = got;
                else assertArrayEquals(one, got, "m=" + m + " n=" + n + " k=" + k + " at " + threads + " threads");
            }
        }
    }
}
