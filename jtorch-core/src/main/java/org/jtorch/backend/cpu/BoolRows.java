package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;

/** Bool rows written from comparison masks: mask bits spread into bytes of 0 and 1, 8 at a time. */
final class BoolRows {
    private BoolRows() {}

    /** Byte i of entry b is bit i of b. */
    private static final long[] BITS_TO_BYTES = new long[256];

    static {
        for (int b = 0; b < 256; b++) {
            long v = 0;
            for (int i = 0; i < 8; i++) if ((b & (1 << i)) != 0) v |= 1L << (8 * i);
            BITS_TO_BYTES[b] = v;
        }
    }

    /** Writes the low {@code n} bits of {@code bits} as {@code n} bool bytes at byte offset {@code off}. */
    static void store(long bits, int n, MemorySegment s, long off) {
        int k = 0;
        for (; k + 8 <= n; k += 8) s.set(ElementIO.I64, off + k, BITS_TO_BYTES[(int) ((bits >>> k) & 0xff)]);
        for (; k < n; k++) s.set(ElementIO.I8, off + k, (byte) ((bits >>> k) & 1));
    }
}
