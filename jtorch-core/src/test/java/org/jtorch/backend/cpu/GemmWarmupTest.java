package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The GEMM warm-up's products take the paths it is there to warm up, and it runs to its end. */
class GemmWarmupTest {
    @Test
    void itsProductsRunThePackedSingleThreadPathWithPartialTilesANarrowStripAndTheShortMPath() {
        int m = GemmWarmup.M, n = GemmWarmup.N, k = GemmWarmup.K, narrow = GemmWarmup.NARROW;
        // Not one of the unpacked paths that sgemm tries first.
        assertFalse(GemmShortM.serves(m, n, k));
        assertFalse(GemmShortM.serves(m, narrow, k));
        assertTrue(m > Gemm.SMALL_SIDE && m > GemmDot.MAX_M && n > GemmDot.MAX_M && narrow > GemmDot.MAX_M);
        // One thread: below the work that is split over the pool.
        assertTrue((long) m * n * k < Gemm.PARALLEL_MIN_WORK);
        // Full 8 x 32 tiles and a partial row tile; a 16-column strip after the full ones; a B one vector wide.
        assertTrue(m > Gemm.MR && m % Gemm.MR != 0);
        assertTrue(n > Gemm.NR && n % Gemm.NR > 0 && n % Gemm.NR <= Gemm.L);
        assertTrue(narrow <= Gemm.L);
        // And the short-m path, B read in place and packed (transposed).
        assertTrue(GemmShortM.serves(GemmWarmup.SHORT_M, n, k));
        assertTrue(GemmWarmup.SHORT_M * k <= m * n);
    }

    @Test
    void runReturnsWithinItsBudget() {
        long t0 = System.nanoTime();
        GemmWarmup.run();
        // Its CPU budget, with room for a loaded machine's waiting: it stops, it does not loop on.
        assertTrue(System.nanoTime() - t0 < 60 * GemmWarmup.MAX_CPU_NANOS, "the warm-up did not stop");
    }
}
