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

    /** The size set by the system property {@code property}, else the environment variable {@code variable}. */
    public static long configuredBytes(String property, String variable, long fallback) {
        nonNull("configuredBytes", "property", property);
        nonNull("configuredBytes", "variable", variable);
        String p = System.getProperty(property);
        if (p != null) return parseBytes(property, p);
        String v = System.getenv(variable);
        if (v != null && !v.isBlank()) return parseBytes(variable, v);
        return fallback;
    }

    /** Bytes from {@code 1073741824}, {@code 512m}, {@code 4g}, {@code 4GiB}, {@code 1.5GB} (binary units). */
    public static long parseBytes(String name, String text) {
        nonNull("parseBytes", "name", name);
        nonNull("parseBytes", "text", text);
        String t = text.strip().toLowerCase(java.util.Locale.ROOT).replace("ib", "").replace("b", "");
        long unit = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k' -> unit = 1L << 10;
                case 'm' -> unit = 1L << 20;
                case 'g' -> unit = 1L << 30;
                case 't' -> unit = 1L << 40;
                default -> unit = 1;
            }
            if (unit != 1) t = t.substring(0, t.length() - 1).strip();
        }
        try {
            double value = Double.parseDouble(t);
            if (value > 0 && value * unit < Long.MAX_VALUE) return (long) (value * unit);
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new IllegalArgumentException(name + ": cannot read '" + text + "' as a positive size in bytes"
                + " (examples: 1073741824, 512m, 4g, 4GiB)");
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

    /**
     * {@code value}, or {@code "op: param must not be null"} as {@code ops.Arguments.nonNull} words it: the memory
     * package checks its arguments without importing the front end's helper (which sits above it).
     */
    static <T> T nonNull(String op, String param, T value) {
        if (value == null) throw new NullPointerException(op + ": " + param + " must not be null");
        return value;
    }
}
