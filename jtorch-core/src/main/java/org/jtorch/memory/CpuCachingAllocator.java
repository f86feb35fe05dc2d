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
 * calls. On failure the cache is emptied, then the garbage collector is asked once to run the
 * Cleaners of unreachable tensors, then {@link OutOfMemoryException} is thrown with a summary.
 */
public final class CpuCachingAllocator implements Allocator {
    private static final CpuCachingAllocator INSTANCE = new CpuCachingAllocator();
    private static final long ALIGNMENT = 64;
    private static final long SMALL_LIMIT = 1L << 20;
    private static final long LARGE_ROUNDING = 2L << 20;

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
    private long allocatedBytes;
    private long reservedBytes;
    private long peakAllocatedBytes;
    private long activeBlocks;
    private long allocations;
    private long cacheHits;
    private volatile long leakedStorages;

    private CpuCachingAllocator() {}

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
            ArrayDeque<MemoryBlock> cached = freeList(size, false);
            MemoryBlock reused = cached == null ? null : cached.pollLast();
            if (reused != null) {
                cacheHits++;
                return handOut(new MemoryBlock(reused.address(), size, bytes));
            }
        }
        long address = systemAlloc(size);
        if (address == 0) {
            emptyCache();
            address = systemAlloc(size);
        }
        if (address == 0) {
            // Unreachable tensors may still hold blocks: let their Cleaners return them, once.
            System.gc();
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            emptyCache();
            address = systemAlloc(size);
        }
        if (address == 0) {
            throw new OutOfMemoryException("CPU out of memory: tried to allocate " + MemoryStats.formatBytes(size)
                    + "; " + stats());
        }
        synchronized (this) {
            reservedBytes += size;
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
