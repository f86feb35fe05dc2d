package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link GemmPackedB}: products on a right operand packed once against the unpacked {@link Gemm} on the same operands and
 * against the definition {@code C = alpha * A B + beta * C} in double (GemmTest's tolerance, relative 1e-5 * sqrt(k) of the
 * term sums in float32, 1e-13 in float64), on random shapes around the tile sizes: m from 1 (the unpacked hand-off) through
 * both row tilings, odd n with partial panels, k past one depth block, B transposed (a layer's {@code W_hh^T}), plain
 * ({@code W_hh}) and strided, with beta 0 over NaN and with accumulation.
 */
class GemmPackedBTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout.OfDouble D = ValueLayout.JAVA_DOUBLE;
    private final Arena arena = Arena.ofShared();
    private final int savedThreads = Parallel.numThreads();

    @AfterEach
    void tearDown() {
        Parallel.setNumThreads(savedThreads);
        arena.close();
    }

    /** Element (i, j) at {@code offset + i * rs + j * cs} of {@code seg}. */
    private record View(MemorySegment seg, long offset, long rs, long cs) {}

    /** Layout 0 row-major, 1 transposed, 2 both strides non-unit with an offset; the gaps filled too. */
    private View random(int rows, int cols, int layout, SplittableRandom rnd, boolean dbl) {
        long offset = layout == 2 ? 3 : 0;
        long rs = switch (layout) { case 0 -> cols; case 1 -> 1; default -> 2L * cols + 1; };
        long cs = switch (layout) { case 0 -> 1; case 1 -> rows; default -> 2; };
        long size = offset + Math.max(0, rows - 1) * rs + Math.max(0, cols - 1) * cs + 1;
        MemorySegment seg = arena.allocate(size * (dbl ? 8 : 4), 64);
        for (long e = 0; e < size; e++) {
            double v = rnd.nextDouble() * 2 - 1;
            if (dbl) seg.setAtIndex(D, e, v);
            else seg.setAtIndex(F, e, (float) v);
        }
        return new View(seg, offset, rs, cs);
    }

    private static double get(View v, long i, long j, boolean dbl) {
        long e = v.offset + i * v.rs + j * v.cs;
        return dbl ? v.seg.getAtIndex(D, e) : v.seg.getAtIndex(F, e);
    }

    /** C ({@code m x n}, leading dimension n + 3, one element before it) filled with {@code fill}. */
    private MemorySegment c(int m, int n, boolean dbl, double fill) {
        long size = 1 + (long) m * (n + 3);
        MemorySegment c = arena.allocate(size * (dbl ? 8 : 4), 64);
        for (long e = 0; e < size; e++) {
            double v = Double.isNaN(fill) ? Double.NaN : fill + e % 7 * 0.25;
            if (dbl) c.setAtIndex(D, e, v);
            else c.setAtIndex(F, e, (float) v);
        }
        return c;
    }

    private static double[] read(MemorySegment c, boolean dbl) {
        int size = (int) (c.byteSize() / (dbl ? 8 : 4));
        double[] out = new double[size];
        for (int e = 0; e < size; e++) out[e] = dbl ? c.getAtIndex(D, e) : c.getAtIndex(F, e);
        return out;
    }

    private void check(int m, int n, int k, int layoutB, double alpha, double beta, boolean dbl, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        View a = random(m, k, seed % 3 == 0 ? 1 : 0, rnd, dbl), b = random(k, n, layoutB, rnd, dbl);
        long ldc = n + 3;
        double fill = beta == 0 ? Double.NaN : 0.5;
        MemorySegment packedC = c(m, n, dbl, fill), plainC = c(m, n, dbl, fill);
        double[] before = read(plainC, dbl);
        GemmPackedB packed = dbl ? GemmPackedB.f64(k, n, b.seg, b.offset, b.rs, b.cs) : GemmPackedB.f32(k, n, b.seg, b.offset, b.rs, b.cs);
        try (packed) {
            packed.multiply(m, alpha, a.seg, a.offset, a.rs, a.cs, beta, packedC, 1, ldc);
        }
        if (dbl) Gemm.dgemm(m, n, k, alpha, a.seg, a.offset, a.rs, a.cs, b.seg, b.offset, b.rs, b.cs, beta, plainC, 1, ldc);
        else Gemm.sgemm(m, n, k, (float) alpha, a.seg, a.offset, a.rs, a.cs, b.seg, b.offset, b.rs, b.cs, (float) beta, plainC, 1, ldc);
        double[] got = read(packedC, dbl), plain = read(plainC, dbl);
        String what = (dbl ? "f64" : "f32") + " m=" + m + " n=" + n + " k=" + k + " B layout " + layoutB + " alpha=" + alpha + " beta=" + beta;
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0, magnitude = 0;
                for (int p = 0; p < k; p++) {
                    double t = get(a, i, p, dbl) * get(b, p, j, dbl);
                    sum += t;
                    magnitude += Math.abs(t);
                }
                int at = 1 + i * (int) ldc + j;
                double expected = alpha * sum + (beta == 0 ? 0 : beta * before[at]);
                double tol = (dbl ? 1e-13 : 1e-5 * Math.sqrt(k + 1)) * (Math.abs(alpha) * magnitude + Math.abs(beta) + 1);
                assertEquals(expected, got[at], tol, what + " at (" + i + ", " + j + ")");
                assertEquals(plain[at], got[at], 2 * tol, what + " against the unpacked GEMM at (" + i + ", " + j + ")");
            }
        }
        // Nothing written outside C's m x n elements.
        for (int e = 0; e < got.length; e++) {
            int col = (e - 1) % (int) ldc;
            if (e == 0 || col >= n) assertEquals(Double.doubleToLongBits(before[e]), Double.doubleToLongBits(got[e]), what + " wrote padding " + e);
        }
    }

    @Test
    void packedProductsMatchTheUnpackedGemmAndTheDefinitionOnRandomShapes() {
        Parallel.setNumThreads(1);
        SplittableRandom shapes = new SplittableRandom(20);
        int[] ms = {1, 5, 8, 9, 10, 13, 17, 20, 24, 27, 31, 45};
        int[] ns = {1, 3, 17, 33, 68, 95, 129};
        int[] ks = {1, 2, 7, 33, 200, 261};
        for (boolean dbl : new boolean[] {false, true}) {
            for (int trial = 0; trial < 60; trial++) {
                int m = ms[shapes.nextInt(ms.length)], n = ns[shapes.nextInt(ns.length)], k = ks[shapes.nextInt(ks.length)];
                double[] alphaBeta = switch (trial % 3) { case 0 -> new double[] {1, 0}; case 1 -> new double[] {1, 1}; default -> new double[] {-1.5, 0.75}; };
                check(m, n, k, trial % 3 == 2 ? 2 : trial % 2, alphaBeta[0], alphaBeta[1], dbl, trial);
            }
        }
    }

    /** float32 depth blocks are Gemm.KC (1024) deep, float64's Gemm.DKC (256): products deeper than one block. */
    @Test
    void productsDeeperThanOneBlockAccumulateTheBlocks() {
        Parallel.setNumThreads(1);
        check(20, 40, Gemm.KC + 37, 1, 1, 1, false, 1);
        check(12, 33, Gemm.KC + 5, 0, 1, 0, false, 2);
        check(20, 40, 2 * Gemm.DKC + 37, 1, 1, 1, true, 3);
        check(9, 17, Gemm.DKC + 1, 0, 1, 0, true, 4);
    }

    /** A layer's forward shape (batch 20, hidden 200, {@code h W_hh^T}) and backward shape ({@code g W_hh}). */
    @Test
    void theWordLanguageModelsShapes() {
        Parallel.setNumThreads(1);
        check(20, 800, 200, 1, 1, 1, false, 5);
        check(20, 200, 800, 0, 1, 0, false, 6);
        check(20, 800, 200, 1, 1, 1, true, 7);
    }

    @Test
    void theResultDoesNotDependOnTheThreadCount() {
        SplittableRandom rnd = new SplittableRandom(9);
        for (boolean dbl : new boolean[] {false, true}) {
            int m = 20, n = 800, k = 200;
            View a = random(m, k, 0, rnd, dbl), b = random(k, n, 1, rnd, dbl);
            GemmPackedB packed = dbl ? GemmPackedB.f64(k, n, b.seg, b.offset, b.rs, b.cs) : GemmPackedB.f32(k, n, b.seg, b.offset, b.rs, b.cs);
            double[][] results = new double[2][];
            try (packed) {
                for (int threads = 1; threads <= 2; threads++) {
                    Parallel.setNumThreads(threads);
                    MemorySegment c = c(m, n, dbl, 0.5);
                    packed.multiply(m, 1, a.seg, a.offset, a.rs, a.cs, 1, c, 1, n + 3);
                    results[threads - 1] = read(c, dbl);
                }
            }
            assertArrayEquals(results[0], results[1], dbl ? "f64" : "f32");
        }
    }
}
