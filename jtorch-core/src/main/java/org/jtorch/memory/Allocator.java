package org.jtorch.memory;

/**
 * Source of device memory blocks for storages. Implementations cache freed blocks for reuse and keep
 * {@link MemoryStats}. Thread-safe: blocks may be freed from any thread, including the Cleaner's.
 */
public interface Allocator {
    /** Returns a block of at least {@code bytes} bytes; throws {@link OutOfMemoryException} when none can be had. */
    MemoryBlock allocate(long bytes);

    /** Returns a block obtained from {@link #allocate} to the cache. */
    void free(MemoryBlock block);

    /** Gives every cached (unused) block back to the system. */
    void emptyCache();

    MemoryStats stats();

    /** Resets the peak counter to the current allocation. */
    void resetPeakStats();

    /** Counts a storage that was released by the garbage collector rather than closed. */
    void recordLeak();
}
