package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** How {@link PeakBench} sizes its DRAM arrays from the cache sizes Linux lists. */
class PeakBenchTest {
    @Test
    void cacheSizesParseWithTheirUnits() {
        assertEquals(48L << 10, PeakBench.parseCacheSize("48K"));
        assertEquals(300L << 20, PeakBench.parseCacheSize("307200K"));
        assertEquals(32L << 20, PeakBench.parseCacheSize("32M"));
        assertEquals(4096, PeakBench.parseCacheSize("4096"));
    }

    @Test
    void theLastLevelCacheIsTheLargestDataOrUnifiedCacheListed() throws Exception {
        Path size = Path.of("/sys/devices/system/cpu/cpu0/cache/index0/size");
        if (!Files.exists(size)) {
            assertEquals(0, PeakBench.lastLevelCacheBytes());
            return;
        }
        long largest = PeakBench.lastLevelCacheBytes();
        assertTrue(largest >= PeakBench.parseCacheSize(Files.readString(size).strip()), "at least index0's " + largest);
    }
}
