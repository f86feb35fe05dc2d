package org.jtorch.memory;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Host memory for CPU storages: 64-byte aligned blocks from {@code aligned_alloc}, cached by rounded
 * size for reuse.
 *
 * <p>Why cache: on these machines the first touch of fresh memory costs ~12 µs per 4 KiB page, and a
 * training step frees and re-requests the same sizes every iteration. Sizes up to 1 MiB round up to a
 * power of two (at least 64 bytes); larger ones to a multiple of 2 MiB. Requests are served from the
 * free list of exactly that rounded size, so the steady state of a training loop makes no system
 * calls.
 *
 * <p>Reclamation. Tensors that are never closed hold their blocks until the garbage collector finds them,
 * and the Java heap they occupy is too small to make it look. So off-heap pressure drives it: a request the
 * cache cannot serve first runs a collection ({@link StorageCleaner#collect()}, which waits until the
 * unreachable storages are back in the cache) when the bytes handed out have grown by more than the
 * <em>collection threshold</em> since the last one; memory held by such a program thus stays within its
 * live bytes plus the threshold. The threshold is {@value #THRESHOLD_VARIABLE} (or the system property
 * {@value #THRESHOLD_PROPERTY}), by default a sixteenth of the machine's memory (or of the limit below, if
 * lower). An optional <em>memory limit</em>, {@value #LIMIT_VARIABLE} (or {@value #LIMIT_PROPERTY}), caps
 * the bytes reserved from the system. Sizes are bytes or a number with a unit: {@code 512m}, {@code 4g},
 * {@code 4GiB}.
 *
 * <p>When a request cannot be had (the limit, or the system refusing), as PyTorch's caching allocator does:
 * the cache is emptied and the request retried; then the garbage is collected, the cache looked at again
 * (blocks of unreachable tensors come back there), emptied and the request retried, waiting briefly for
 * blocks still being returned; then {@link OutOfMemoryException} is thrown with a summary.
 */
public final class CpuCachingAllocator implements Allocator {
    /** Environment variable of the limit on the bytes reserved from the system. */
    public static final String LIMIT_VARIABLE = "JTORCH_CPU_MEMORY_LIMIT";
    /** System property of the limit; wins over the environment variable. */
    public static final String LIMIT_PROPERTY = "jtorch.cpuMemoryLimit";
    /** Environment variable of the collection threshold. */
    public static final String THRESHOLD_VARIABLE = "JTORCH_CPU_GC_THRESHOLD";
    /** System property of the collection threshold; wins over the environment variable. */
    public static final String THRESHOLD_PROPERTY = "jtorch.cpuGcThreshold";

    private static final CpuCachingAllocator INSTANCE = new CpuCachingAllocator();
    private static final long ALIGNMENT = 64;
    private static final long SMALL_LIMIT = 1L << 20;
    private static final long LARGE_ROUNDING = 2L << 20;
    /** Waits in ms for blocks still being returned after a collection, before giving up on a request. */
    private static final long[] STRAGGLER_WAITS = {1, 4, 16, 64};

    private static final MethodHandle ALIGNED_ALLOC;
    private static final MethodHandle FREE;

    static {
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        ALIGNED_ALLOC = linker.downcallHandle(libc.find("aligned_alloc").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
        FREE = linker.downcallHandle(libc.find("free").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    }

    /** Free small blocks by size class (index log2(size)); large ones by exact rounded size. */
    private final ArrayDeque<MemoryBlock>[] smallFree = newSmallClasses();
    private final Map<Long, ArrayDeque<MemoryBlock>> freeBlocks = new HashMap<>();
    /** Held while collecting garbage, so that threads under pressure together share one collection. */
    private final Object collecting = new Object();
    private long allocatedBytes;
    private long reservedBytes;
    private long peakAllocatedBytes;
    private long activeBlocks;
    private long allocations;
    private long cacheHits;
    private volatile long leakedStorages;
    private long memoryLimit;
    private String limitOrigin;
    private long collectionThreshold;
    /** A cache miss with more than this many bytes handed out collects garbage first. */
    private long collectionTrigger;
    private long garbageCollections;

    private CpuCachingAllocator() {
        memoryLimit = MemoryStats.configuredBytes(LIMIT_PROPERTY, LIMIT_VARIABLE, Long.MAX_VALUE);
        limitOrigin = memoryLimit == Long.MAX_VALUE ? null
                : System.getProperty(LIMIT_PROPERTY) != null ? LIMIT_PROPERTY : LIMIT_VARIABLE;
        collectionThreshold = MemoryStats.configuredBytes(THRESHOLD_PROPERTY, THRESHOLD_VARIABLE,
                Math.min(physicalMemory(), memoryLimit) / 16);
        collectionTrigger = collectionThreshold;
    }

    public static CpuCachingAllocator get() {
        return INSTANCE;
    }

    static long roundSize(long bytes) {
        if (bytes <= ALIGNMENT) return ALIGNMENT;
        if (bytes <= SMALL_LIMIT) return Long.highestOneBit(bytes - 1) << 1;
        return (bytes + LARGE_ROUNDING - 1) / LARGE_ROUNDING * LARGE_ROUNDING;
    }

    @Override
    public MemoryBlock allocate(long bytes) {
        if (bytes < 0) throw new IllegalArgumentException("allocate: negative size " + bytes);
        long size = roundSize(bytes);
        synchronized (this) {
            allocations++;
            MemoryBlock reused = takeCached(size, bytes);
            if (reused != null) return reused;
        }
        return allocateUncached(size, bytes);
    }

    /** Under the lock: a cached block of the rounded {@code size}, or null. */
    private MemoryBlock takeCached(long size, long bytes) {
        ArrayDeque<MemoryBlock> cached = freeList(size, false);
        MemoryBlock reused = cached == null ? null : cached.pollLast();
        if (reused == null) return null;
        cacheHits++;
        return handOut(new MemoryBlock(reused.address(), size, bytes));
    }

    private MemoryBlock allocateUncached(long size, long bytes) {
        if (underPressure(size)) {
            collectGarbage(size, false);
            synchronized (this) {
                MemoryBlock reused = takeCached(size, bytes);
                if (reused != null) return reused;
            }
        }
        MemoryBlock block = reserve(size, bytes);
        if (block != null) return block;
        emptyCache();
        block = reserve(size, bytes);
        if (block != null) return block;
        // Unreachable tensors may still hold blocks: collect them, then look in the cache again before
        // emptying it, since their blocks come back there.
        collectGarbage(size, true);
        for (int attempt = 0; ; attempt++) {
            synchronized (this) {
                block = takeCached(size, bytes);
            }
            if (block != null) return block;
            emptyCache();
            block = reserve(size, bytes);
            if (block != null) return block;
            if (attempt == STRAGGLER_WAITS.length) break;
            StorageCleaner.awaitStragglers(STRAGGLER_WAITS[attempt]);
        }
        String limit = memoryLimit == Long.MAX_VALUE ? "the system refused it"
                : "limit " + MemoryStats.formatBytes(memoryLimit) + " set by " + limitOrigin;
        throw new OutOfMemoryException("CPU out of memory: tried to allocate " + MemoryStats.formatBytes(size) + " ("
                + limit + ") after emptying the cache and collecting garbage; " + stats());
    }

    private synchronized boolean underPressure(long size) {
        return allocatedBytes + size > collectionTrigger;
    }

    /** Runs a garbage collection unless another thread just ran one that relieved the pressure. */
    private void collectGarbage(long size, boolean always) {
        synchronized (collecting) {
            if (!always && !underPressure(size)) return;
            StorageCleaner.collect();
            synchronized (this) {
                garbageCollections++;
                collectionTrigger = allocatedBytes + collectionThreshold;
            }
        }
    }

    /** A fresh block from the system within the limit, or null. */
    private MemoryBlock reserve(long size, long bytes) {
        synchronized (this) {
            if (size > memoryLimit - reservedBytes) return null;
            reservedBytes += size; // before the system call, so that concurrent requests respect the limit
        }
        long address = systemAlloc(size);
        synchronized (this) {
            if (address == 0) {
                reservedBytes -= size;
                return null;
            }
            return handOut(new MemoryBlock(address, size, bytes));
        }
    }

    private MemoryBlock handOut(MemoryBlock block) {
        allocatedBytes += block.size();
        activeBlocks++;
        if (allocatedBytes > peakAllocatedBytes) peakAllocatedBytes = allocatedBytes;
        return block;
    }

    @Override
    public void free(MemoryBlock block) {
        synchronized (this) {
            allocatedBytes -= block.size();
            activeBlocks--;
            freeList(block.size(), true).addLast(block);
        }
    }

    @SuppressWarnings("unchecked")
    private static ArrayDeque<MemoryBlock>[] newSmallClasses() {
        ArrayDeque<MemoryBlock>[] classes = new ArrayDeque[64];
        for (int i = 0; i < classes.length; i++) classes[i] = new ArrayDeque<>();
        return classes;
    }

    /** The free list for a rounded size; small sizes index an array (no boxing on the hot path). */
    private ArrayDeque<MemoryBlock> freeList(long size, boolean create) {
        if (size <= SMALL_LIMIT) return smallFree[63 - Long.numberOfLeadingZeros(size)];
        ArrayDeque<MemoryBlock> list = freeBlocks.get(size);
        if (list == null && create) {
            list = new ArrayDeque<>();
            freeBlocks.put(size, list);
        }
        return list;
    }

    @Override
    public void emptyCache() {
        synchronized (this) {
            for (ArrayDeque<MemoryBlock> list : smallFree) {
                for (MemoryBlock b : list) {
                    systemFree(b.address());
                    reservedBytes -= b.size();
                }
                list.clear();
            }
            for (ArrayDeque<MemoryBlock> list : freeBlocks.values()) {
                for (MemoryBlock b : list) {
                    systemFree(b.address());
                    reservedBytes -= b.size();
                }
            }
            freeBlocks.clear();
        }
    }

    @Override
    public synchronized MemoryStats stats() {
        return new MemoryStats(allocatedBytes, reservedBytes, peakAllocatedBytes, activeBlocks, allocations, cacheHits,
                leakedStorages);
    }

    @Override
    public synchronized void resetPeakStats() {
        peakAllocatedBytes = allocatedBytes;
    }

    @Override
    public synchronized void recordLeak() {
        leakedStorages++;
    }

    /** The cap on bytes reserved from the system ({@link Long#MAX_VALUE}: none). */
    public synchronized long memoryLimit() {
        return memoryLimit;
    }

    /**
     * Caps the bytes reserved from the system (cached ones included): a request beyond it frees the cache and
     * collects garbage, then throws {@link OutOfMemoryException}. {@link Long#MAX_VALUE} removes the cap. Blocks
     * already reserved are kept. Overrides {@value #LIMIT_VARIABLE}.
     */
    public synchronized void setMemoryLimit(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("setMemoryLimit: the limit must be positive, got " + bytes);
        memoryLimit = bytes;
        limitOrigin = "setMemoryLimit";
    }

    /** Growth of the bytes handed out after which a cache miss first collects garbage (see the class comment). */
    public synchronized long collectionThreshold() {
        return collectionThreshold;
    }

    /** Sets the collection threshold, counted from the bytes handed out now. Overrides {@value #THRESHOLD_VARIABLE}. */
    public synchronized void setCollectionThreshold(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("setCollectionThreshold: the threshold must be positive, got " + bytes);
        }
        collectionThreshold = bytes;
        collectionTrigger = allocatedBytes + bytes;
    }

    /** How many garbage collections this allocator ran, for pressure or before failing a request. */
    public synchronized long garbageCollections() {
        return garbageCollections;
    }

    /** The machine's (or container's) memory; 16 GiB if the JVM cannot tell. */
    private static long physicalMemory() {
        try {
            if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                    instanceof com.sun.management.OperatingSystemMXBean os && os.getTotalMemorySize() > 0) {
                return os.getTotalMemorySize();
            }
        } catch (RuntimeException | LinkageError ignored) {
            // not available in this runtime
        }
        return 16L << 30;
    }

    private static long systemAlloc(long size) {
        try {
            return ((MemorySegment) ALIGNED_ALLOC.invokeExact(ALIGNMENT, size)).address();
        } catch (Throwable t) {
            throw new IllegalStateException("aligned_alloc failed", t);
        }
    }

    private static void systemFree(long address) {
        try {
            FREE.invokeExact(MemorySegment.ofAddress(address));
        } catch (Throwable t) {
            throw new IllegalStateException("free failed", t);
        }
    }
}
