package org.jtorch.cuda;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jtorch.memory.Allocator;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.MemoryStats;
import org.jtorch.memory.OutOfMemoryException;

/**
 * A caching allocator for page-locked (pinned) host memory after PyTorch's {@code CachingHostAllocator}.
 *
 * <ul>
 *   <li>Sizes round up to a power of two (at least 512 bytes); a request reuses a free block of exactly
 *       that size, else the memory API allocates one ({@code cuMemHostAlloc} in production). Blocks are
 *       never split or merged.</li>
 *   <li>Copies that read or write a block asynchronously call {@link #recordUse} with the copy's stream:
 *       an event is recorded after the copy. A block freed while such events are pending waits (it is
 *       neither reused nor returned to the driver) until every one of them has completed, so a later
 *       batch can never overwrite host memory that an earlier copy has not finished reading. Completed
 *       events are collected on every allocation and on {@link #emptyCache()}.</li>
 *   <li>Out of memory: release every free cached block and retry; then run the garbage collector once
 *       ({@link org.jtorch.memory.StorageCleaner#collect()}: the blocks of unreachable pinned tensors are back when
 *       it returns), look in the cache again, release what is free and retry, as the CPU allocator does; then
 *       {@link OutOfMemoryException} with the statistics.</li>
 * </ul>
 *
 * <p>The memory API is a {@link DeviceMemory} whose {@code malloc}/{@code free} give host memory (pinned
 * memory in production, an in-process simulation in tests); its events are the copies' streams' events.
 * Thread-safe: every method locks the allocator (frees come from any thread, including the Cleaner's).
 */
public final class PinnedHostAllocator implements Allocator {
    static final long MIN_BLOCK = 512;

    private static final class Block {
        final long address;
        final long size;
        long requested;
        boolean allocated;
        /** Events recorded after asynchronous copies that used the block, not yet seen completed. */
        final List<Long> events = new ArrayList<>();

        Block(long address, long size) {
            this.address = address;
            this.size = size;
        }
    }

    private final DeviceMemory memory;
    private final Runnable garbageCollection;
    private final Map<Long, Block> blocks = new HashMap<>();
    /** Free blocks with no pending events, by size. */
    private final TreeMap<Long, ArrayDeque<Block>> free = new TreeMap<>();
    /** Freed blocks still waiting for events of copies that used them. */
    private final List<Block> pendingFree = new ArrayList<>();

    private long allocatedBytes, reservedBytes, peakAllocatedBytes, activeBlocks, allocations, cacheHits;
    private volatile long leakedStorages;

    /** An allocator that collects no garbage on out-of-memory (tests of the cache alone). */
    public PinnedHostAllocator(DeviceMemory memory) {
        this(memory, () -> {});
    }

    /**
     * @param garbageCollection run once on out-of-memory before the last retry ({@code StorageCleaner::collect} in
     *     production; tests free blocks from it)
     */
    public PinnedHostAllocator(DeviceMemory memory, Runnable garbageCollection) {
        this.memory = memory;
        this.garbageCollection = garbageCollection;
    }

    /** {@code bytes} rounded up to a power of two, at least {@value #MIN_BLOCK}. */
    static long roundSize(long bytes) {
        if (bytes <= MIN_BLOCK) return MIN_BLOCK;
        long p = Long.highestOneBit(bytes);
        return p == bytes ? p : p << 1;
    }

    @Override
    public MemoryBlock allocate(long bytes) {
        if (bytes < 0) throw new IllegalArgumentException("pinned allocate: negative size " + bytes);
        CudaGraph.refuseDuringAnyCapture("a pinned host allocation (pinMemory(), a pinning DataLoader)");
        long size = roundSize(bytes);
        synchronized (this) {
            allocations++;
            MemoryBlock block = cachedOrNew(size, bytes);
            if (block != null) return block;
        }
        garbageCollection.run(); // outside the lock: Cleaners free blocks through it
        synchronized (this) {
            MemoryBlock block = cachedOrNew(size, bytes);
            if (block != null) return block;
            throw new OutOfMemoryException("pinned host memory: cannot allocate " + MemoryStats.formatBytes(size) + " ("
                    + MemoryStats.formatBytes(bytes) + " requested) after freeing the cache and one garbage collection; " + stats());
        }
    }

    /** Under the lock: a cached block of {@code size}, else a new one (the free cache released if needed), or null. */
    private MemoryBlock cachedOrNew(long size, long bytes) {
        processEvents();
        Block block = takeFree(size);
        if (block != null) {
            cacheHits++;
        } else {
            long address = memory.malloc(size);
            if (address == 0) {
                releaseFreeBlocks();
                address = memory.malloc(size);
            }
            if (address == 0) return null;
            block = new Block(address, size);
            blocks.put(address, block);
            reservedBytes += size;
        }
        block.allocated = true;
        block.requested = bytes;
        allocatedBytes += size;
        activeBlocks++;
        peakAllocatedBytes = Math.max(peakAllocatedBytes, allocatedBytes);
        return new MemoryBlock(block.address, size, bytes);
    }

    private Block takeFree(long size) {
        ArrayDeque<Block> q = free.get(size);
        if (q == null) return null;
        Block b = q.pollFirst();
        if (q.isEmpty()) free.remove(size);
        return b;
    }

    @Override
    public void free(MemoryBlock block) {
        free(block.address());
    }

    /** Returns the block at {@code address}: to the cache at once, or once the copies recorded on it have completed. */
    public synchronized void free(long address) {
        Block b = blocks.get(address);
        if (b == null || !b.allocated) throw new IllegalArgumentException("pinned free: 0x" + Long.toHexString(address) + " is not an allocated block");
        b.allocated = false;
        allocatedBytes -= b.size;
        activeBlocks--;
        dropCompletedEvents(b);
        if (b.events.isEmpty()) addFree(b);
        else pendingFree.add(b);
    }

    /**
     * An asynchronous copy using the block at {@code address} was enqueued on {@code stream}: records an event
     * there after it, and the block is not reused (nor released) until that event has completed. The
     * stream's device must be current (the event belongs to its context).
     */
    public synchronized void recordUse(long address, long stream) {
        Block b = blocks.get(address);
        if (b == null || !b.allocated) {
            throw new IllegalArgumentException("pinned recordUse: 0x" + Long.toHexString(address) + " is not an allocated pinned block");
        }
        dropCompletedEvents(b);
        b.events.add(memory.recordEvent(stream));
    }

    /** Whether {@code address} is the start of a block of this allocator that is handed out. */
    public synchronized boolean isAllocated(long address) {
        Block b = blocks.get(address);
        return b != null && b.allocated;
    }

    private void addFree(Block b) {
        free.computeIfAbsent(b.size, s -> new ArrayDeque<>()).addLast(b);
    }

    private void dropCompletedEvents(Block b) {
        for (Iterator<Long> it = b.events.iterator(); it.hasNext(); ) {
            long e = it.next();
            if (memory.eventCompleted(e)) {
                memory.releaseEvent(e);
                it.remove();
            }
        }
    }

    /** Moves freed blocks whose copies have all completed to the cache. */
    private void processEvents() {
        for (Iterator<Block> it = pendingFree.iterator(); it.hasNext(); ) {
            Block b = it.next();
            dropCompletedEvents(b);
            if (b.events.isEmpty()) {
                it.remove();
                addFree(b);
            }
        }
    }

    private void releaseFreeBlocks() {
        for (ArrayDeque<Block> q : free.values()) {
            for (Block b : q) {
                memory.free(b.address);
                blocks.remove(b.address);
                reservedBytes -= b.size;
            }
        }
        free.clear();
    }

    /** Returns every free cached block whose copies have completed to the driver; blocks in use or awaiting copies stay. */
    @Override
    public synchronized void emptyCache() {
        processEvents();
        releaseFreeBlocks();
    }

    /** Freed blocks still waiting for copies (for tests and the memory summary). */
    synchronized int pendingBlocks() {
        return pendingFree.size();
    }

    @Override
    public synchronized MemoryStats stats() {
        return new MemoryStats(allocatedBytes, reservedBytes, peakAllocatedBytes, activeBlocks, allocations, cacheHits, leakedStorages);
    }

    @Override
    public synchronized void resetPeakStats() {
        peakAllocatedBytes = allocatedBytes;
    }

    @Override
    public void recordLeak() {
        synchronized (this) {
            leakedStorages++;
        }
    }

    @Override
    public String toString() {
        return "pinned host memory (" + memory.name() + "): " + stats();
    }
}
