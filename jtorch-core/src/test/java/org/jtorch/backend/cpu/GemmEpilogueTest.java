package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The GEMM's epilogue (the JIT's fused bias/activation on the product's blocks): every element of C is handed to it
 * exactly once, only once its value is final (after the last pass over k), on every path of the driver (short sides
 * unpacked, narrow strips, packed blocks, one thread or split over rows or columns, k over one cache block).
 */
class GemmEpilogueTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private final Arena arena = Arena.ofShared();
    private final int savedThreads = Parallel.numThreads();

    @AfterEach
    void tearDown() {
        Parallel.setNumThreads(savedThreads);
        arena.close();
    }

    private MemorySegment random(long n, SplittableRandom rnd) {
        MemorySegment s = arena.allocate(n * 4, 64);
        for (long e = 0; e < n; e++) s.setAtIndex(F, e, (float) (rnd.nextDouble() * 2 - 1));
        return s;
    }

    private void check(int m, int n, int k, float beta, int threads) {
        check(m, n, k, beta, threads, false);
    }

    /** sgemm with the epilogue {@code c = 2c + 1} against sgemm without it, C with a padded leading dimension. */
    private void check(int m, int n, int k, float beta, int threads, boolean transposedB) {
        long brs = transposedB ? 1 : n, bcs = transposedB ? k : 1;
        Parallel.setNumThreads(threads);
        SplittableRandom rnd = new SplittableRandom(m * 31L + n * 7L + k);
        MemorySegment a = random((long) m * k, rnd);
        MemorySegment b = random((long) k * n, rnd);
        long ldc = n + 3;
        MemorySegment plain = random(m * ldc, rnd);
        MemorySegment fused = arena.allocate(m * ldc * 4, 64);
        fused.copyFrom(plain);
        Gemm.sgemm(m, n, k, 1f, a, 0, k, 1, b, 0, brs, bcs, beta, plain, 0, ldc);
        AtomicIntegerArray seen = new AtomicIntegerArray(m * n);
        Gemm.sgemm(m, n, k, 1f, a, 0, k, 1, b, 0, brs, bcs, beta, fused, 0, ldc, (i0, i1, j0, j1) -> {
            for (int i = i0; i < i1; i++) {
                for (int j = j0; j < j1; j++) {
                    seen.incrementAndGet(i * n + j);
                    long at = i * ldc + j;
                    float v = fused.getAtIndex(F, at);
                    assertEquals(plain.getAtIndex(F, at), v, "C[" + i + "][" + j + "] before its last pass over k");
                    fused.setAtIndex(F, at, 2 * v + 1);
                }
            }
        });
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                assertEquals(1, seen.get(i * n + j), "C[" + i + "][" + j + "] epilogue runs, " + m + "x" + n + "x" + k);
                assertEquals(2 * plain.getAtIndex(F, i * ldc + j) + 1, fused.getAtIndex(F, i * ldc + j));
            }
        }
    }

    @Test
    void everyPathHandsEachFinishedElementOverOnce() {
        for (int threads : new int[] {1, 2}) {
            check(64, 200, 8, 0f, threads);      // k short: packed tiles of depth 8
            check(5, 300, 40, 1f, threads);      // m short
            check(40, 7, 50, 0f, threads);       // one narrow strip of columns
            check(300, 70, 60, 1f, threads);     // packed blocks, split over rows
            check(24, 900, 60, 0f, threads);     // split over columns
            check(20, 250, 300, 1f, threads);    // m = 20: short-m panels, the last (26 columns) packed
            check(10, 100, 64, 0f, threads);     // m = 10: one short-m block
            check(130, 96, 1100, 0f, threads);   // k over one cache block: two passes, the epilogue after the last
            check(9, 33, 0, 1f, threads);        // k = 0: C = beta * C, then the epilogue
            check(3, 1030, 70, 1f, threads, true); // m <= 8 against a transposed B: dot products
            check(8, 6, 33, 0f, threads, true);
            check(300, 3, 70, 1f, threads, true); // a long A against 3 columns: the transposed product's dot products
            check(1030, 1, 64, 0f, threads, false); // a matrix-vector product
        }
    }
}
