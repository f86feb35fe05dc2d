package org.jtorch.memory;

/**
 * A snapshot of one allocator's counters (as {@code torch.cuda.memory_stats}, for any device).
 *
 * @param allocatedBytes bytes in blocks handed out to live storages (rounded block sizes)
 * @param reservedBytes bytes obtained from the system: allocated plus cached
 * @param peakAllocatedBytes high-water mark of {@code allocatedBytes} since the last reset
 * @param activeBlocks blocks currently handed out
 * @param allocations total allocation requests served
 * @param cacheHits requests served from the cache without a system call
 * @param leakedStorages storages released by the garbage collector instead of {@code close()}
 */
public record MemoryStats(long allocatedBytes, long reservedBytes, long peakAllocatedBytes, long activeBlocks,
                          long allocations, long cacheHits, long leakedStorages) {

    /** Cached but unused bytes, the allocator's fragmentation overhead. */
    public long cachedBytes() {
        return reservedBytes - allocatedBytes;
    }

    @Override
    public String toString() {
        return String.format(
                "allocated %s, reserved %s (cached %s), peak %s, active blocks %d, allocations %d (cache hits %d), leaked storages %d",
                formatBytes(allocatedBytes), formatBytes(reservedBytes), formatBytes(cachedBytes()),
                formatBytes(peakAllocatedBytes), activeBlocks, allocations, cacheHits, leakedStorages);
    }

    /** Human-readable byte count: {@code 1.5 MiB}. */
    public static String formatBytes(long bytes) {
        if (bytes < 1024) return bytes + " B";
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format("%.1f %s", v, units[u]);
    }
}
