package org.jtorch.cuda;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongSupplier;
import org.jtorch.memory.Allocator;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.MemoryStats;
import org.jtorch.memory.OutOfMemoryException;

/**
 * A caching allocator for device memory after PyTorch's {@code CUDACachingAllocator}.
 *
 * <ul>
 *   <li>Sizes round up to multiples of 512 bytes. Requests up to 1 MiB come from the small pool,
 *       carved from 2 MiB segments; larger ones from the large pool, whose segments are 20 MiB for
 *       requests under 10 MiB and the request rounded up to 2 MiB otherwise.</li>
 *   <li>A request takes the best fit (smallest sufficient, then lowest address) among free blocks of
 *       its stream; the rest of the block is split off when it is at least 512 bytes (small pool) or
 *       more than 1 MiB (large pool). Freed blocks merge with free neighbours of the same segment.</li>
 *   <li>Per-stream reuse: a block freed on stream A is reused by requests on A at once (stream order
 *       makes it safe). Requests on another stream may take it only after an event recorded on A when
 *       it was freed has completed, i.e. once A's kernels that used it are done. (So once a second
 *       stream has allocated, each free records one event; PyTorch instead never shares blocks
 *       between streams until {@code emptyCache}.)</li>
 *   <li>{@link #recordStream}: a block used by other streams too is held back at free time until events
 *       recorded on each of those streams complete.</li>
 *   <li>CUDA graphs ({@link CudaGraph}), as PyTorch's private pools: while a stream is being captured
 *       ({@link #beginAllocateToPool}), its requests are served from the graph's pool only, new segments
 *       included, and blocks of that pool never serve anything else; blocks freed during the capture are
 *       reused within it, so the replayed work finds its memory where the capture left it. A pool lives
 *       while a graph uses it ({@link #releasePool}); graphs may share one. While any capture is under way
 *       the allocator queries and synchronises no event and frees no segment (the driver forbids both),
 *       and blocks of the ordinary pool freed meanwhile wait for the end of the capture.</li>
 *   <li>Off-heap pressure: once the bytes handed out have grown by the collection threshold since the last
 *       collection, a request the cache cannot serve first runs the garbage collector and looks in the cache
 *       again, so that tensors dropped without close come back before the device fills (as the CPU allocator
 *       does; {@link #setCollectionThreshold}, none by default here, the backend's from the device's memory).
 *       Not during a CUDA graph capture, which serves its requests from its pool only.</li>
 *   <li>Out of memory: wait for the streams using cached blocks, coalesce, release every wholly free
 *       cached segment and retry; then run the garbage
 *       collector once ({@link org.jtorch.memory.StorageCleaner#collect()}: the blocks of unreachable tensors are
 *       back when it returns), look in the cache again, release what is wholly free and retry; then throw
 *       {@link OutOfMemoryException} with {@link #memorySummary()}.</li>
 * </ul>
 * Thread-safe: every method locks the allocator (frees come from any thread, including the Cleaner's).
 */
public final class CudaCachingAllocator implements Allocator {
    static final long ROUND = 512;
    static final long SMALL_REQUEST = 1L << 20;
    static final long SMALL_SEGMENT = 2L << 20;
    static final long MIN_LARGE_ALLOC = 10L << 20;
    static final long LARGE_SEGMENT = 20L << 20;
    static final long LARGE_ROUND = 2L << 20;

    /** A piece of a segment; free blocks live in a pool ordered by (stream, size, address). */
    static final class Block {
        final long segment;
        final boolean small;
        /** 0: the ordinary pool; else the graph pool ({@link #newPool}) the segment belongs to. */
        final long pool;
        long address;
        long size;
        long stream;
        long requested;
        boolean allocated;
        Block prev;
        Block next;
        /** Streams other than {@link #stream} that used the block ({@link #recordStream}). */
        Set<Long> streamUses;
        /**
         * Allocated and freed: events of the other streams that used it, all to complete before it is
         * free. Free: an event on its own stream, to complete before another stream may reuse it.
         */
        final List<Long> events = new ArrayList<>();

        Block(long segment, boolean small, long pool, long address, long size, long stream) {
            this.segment = segment;
            this.small = small;
            this.pool = pool;
            this.address = address;
            this.size = size;
            this.stream = stream;
        }

        boolean wholeSegment() {
            return prev == null && next == null;
        }
    }

    private static final Comparator<Block> POOL_ORDER = Comparator.<Block>comparingLong(b -> b.pool).thenComparingLong(b -> b.stream)
            .thenComparingLong(b -> b.size).thenComparingLong(b -> b.address);

    private final DeviceMemory device;
    private final LongSupplier currentStream;
    private final Runnable garbageCollection;
    private final TreeSet<Block> smallPool = new TreeSet<>(POOL_ORDER);
    private final TreeSet<Block> largePool = new TreeSet<>(POOL_ORDER);
    private final Map<Long, Block> active = new HashMap<>();
    /** Blocks freed by their owner but still awaiting events of other streams that used them. */
    private final List<Block> pendingFree = new ArrayList<>();
    private final Set<Long> streamsSeen = new LinkedHashSet<>();
    /** Streams being captured, each to the graph pool its requests come from. */
    private final Map<Long, Long> captureStreams = new HashMap<>();
    /** Live graph pools and how many graphs use each. */
    private final Map<Long, Integer> poolUses = new HashMap<>();
    /** Ordinary blocks freed during a capture: freed for real (with their events) once no capture is under way. */
    private final List<Block> freedDuringCapture = new ArrayList<>();
    private long nextPool = 1;

    private long allocatedBytes, reservedBytes, activeBytes, requestedBytes;
    private long peakAllocatedBytes, peakReservedBytes, peakActiveBytes;
    private long activeBlocks, segments, allocations, cacheHits, segmentAllocs, segmentFrees, retries, ooms;
    private long collectionThreshold = Long.MAX_VALUE;
    /** A cache miss with more than this many bytes handed out collects garbage first. */
    private long collectionTrigger = Long.MAX_VALUE;
    private long garbageCollections;
    private final Object collecting = new Object();
    private volatile long leakedStorages;

    /**
     * @param currentStream the stream a plain {@link #allocate(long)} serves (the thread's current stream)
     * @param garbageCollection run once on out-of-memory before the last retry ({@code StorageCleaner::collect}
     *     in production; tests free blocks from it)
     */
    public CudaCachingAllocator(DeviceMemory device, LongSupplier currentStream, Runnable garbageCollection) {
        this.device = device;
        this.currentStream = currentStream;
        this.garbageCollection = garbageCollection;
    }

    static long roundSize(long bytes) {
        if (bytes < ROUND) return ROUND;
        return (bytes + ROUND - 1) / ROUND * ROUND;
    }

    static long segmentSize(long rounded) {
        if (rounded <= SMALL_REQUEST) return SMALL_SEGMENT;
        if (rounded < MIN_LARGE_ALLOC) return LARGE_SEGMENT;
        return (rounded + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
    }

    @Override
    public MemoryBlock allocate(long bytes) {
        return allocate(bytes, currentStream.getAsLong());
    }

    /** A block of at least {@code bytes} bytes for use on {@code stream}. */
    public MemoryBlock allocate(long bytes, long stream) {
        if (bytes < 0) throw new IllegalArgumentException("allocate: negative size " + bytes);
        long size = roundSize(bytes);
        // A block is marked allocated in the same critical section that takes it, so a concurrent
        // free never sees it as a free neighbour to merge with.
        boolean pressure;
        synchronized (this) {
            allocations++;
            streamsSeen.add(stream);
            long pool = captureStreams.getOrDefault(stream, 0L);
            boolean capturing = !captureStreams.isEmpty();
            if (!capturing) processEvents();
            Block block = takeCached(size, stream, pool, capturing);
            if (block != null) {
                cacheHits++;
                return handOut(block, size, bytes, stream);
            }
            if (capturing) {
                block = newSegment(size, stream, pool, true);
                if (block == null) {
                    ooms++;
                    throw new OutOfMemoryException(device.name() + " out of memory during CUDA graph capture: tried to allocate "
                            + MemoryStats.formatBytes(size) + " (the cache cannot be freed while a capture is under way)\n" + memorySummary());
                }
                return handOut(block, size, bytes, stream);
            }
            pressure = underPressure(size);
        }
        if (pressure) collectGarbage(size);
        synchronized (this) {
            Block block = null;
            if (pressure) {
                processEvents();
                block = takeCached(size, stream, 0, false);
                if (block != null) {
                    cacheHits++;
                    return handOut(block, size, bytes, stream);
                }
            }
            block = newSegment(size, stream, 0, false);
            if (block == null) {
                retries++;
                synchronizeAndCoalesce();
                releaseCachedSegments();
                block = newSegment(size, stream, 0, false);
            }
            if (block != null) return handOut(block, size, bytes, stream);
        }
        garbageCollection.run(); // outside the lock: Cleaners free blocks through it
        synchronized (this) {
            processEvents();
            Block block = takeCached(size, stream, 0, false);
            if (block == null) {
                synchronizeAndCoalesce();
                releaseCachedSegments();
                block = newSegment(size, stream, 0, false);
            }
            if (block == null) {
                ooms++;
                throw new OutOfMemoryException(device.name() + " out of memory: tried to allocate "
                        + MemoryStats.formatBytes(size) + " (after freeing the cache and one garbage collection)\n"
                        + memorySummary());
            }
            return handOut(block, size, bytes, stream);
        }
    }

    private synchronized boolean underPressure(long size) {
        return allocatedBytes + size > collectionTrigger;
    }

    /** Runs a garbage collection (outside the allocator's lock) unless another thread just relieved the pressure. */
    private void collectGarbage(long size) {
        synchronized (collecting) {
            if (!underPressure(size)) return;
            garbageCollection.run();
            synchronized (this) {
                garbageCollections++;
                collectionTrigger = collectionThreshold == Long.MAX_VALUE ? Long.MAX_VALUE : allocatedBytes + collectionThreshold;
            }
        }
    }

    /** The growth of bytes handed out that triggers a garbage collection ({@code Long.MAX_VALUE}: none). */
    public synchronized long collectionThreshold() {
        return collectionThreshold;
    }

    public synchronized void setCollectionThreshold(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("setCollectionThreshold: expected a positive size, got " + bytes);
        collectionThreshold = bytes;
        collectionTrigger = bytes == Long.MAX_VALUE ? Long.MAX_VALUE : allocatedBytes + bytes;
    }

    /** The collections that off-heap pressure ran (not those of out-of-memory). */
    public synchronized long garbageCollections() {
        return garbageCollections;
    }

    /**
     * A free block of {@code graphPool} (0: the ordinary pool) for {@code stream}. Only ordinary blocks move
     * between streams, and not during a capture: that needs event queries.
     */
    private Block takeCached(long size, long stream, long graphPool, boolean capturing) {
        TreeSet<Block> pool = size <= SMALL_REQUEST ? smallPool : largePool;
        Block probe = new Block(0, false, graphPool, Long.MIN_VALUE, size, stream);
        Block best = pool.ceiling(probe);
        if (best != null && best.pool == graphPool && best.stream == stream) {
            pool.remove(best);
            releaseEvents(best);
            return best;
        }
        if (graphPool != 0 || capturing) return null;
        // Another stream's free block, once the work that used it is known to be complete.
        Block crossStream = null;
        for (Block b : pool) {
            if (b.pool != 0 || b.stream == stream || b.size < size) continue;
            if (b.events.isEmpty()) {
                // Freed while one stream was in use: an event recorded now on its stream covers that work.
                b.events.add(device.recordEvent(b.stream));
                continue;
            }
            boolean better = crossStream == null || b.size < crossStream.size
                    || (b.size == crossStream.size && b.address < crossStream.address);
            if (better && eventsCompleted(b)) crossStream = b;
        }
        if (crossStream != null) {
            pool.remove(crossStream);
            releaseEvents(crossStream);
            crossStream.stream = stream;
        }
        return crossStream;
    }

    private boolean eventsCompleted(Block b) {
        for (long e : b.events) if (!device.eventCompleted(e)) return false;
        return true;
    }

    private void releaseEvents(Block b) {
        for (long e : b.events) device.releaseEvent(e);
        b.events.clear();
    }

    private Block newSegment(long size, long stream, long graphPool, boolean capturing) {
        long segmentSize = segmentSize(size);
        long address = capturing ? device.mallocDuringCapture(segmentSize) : device.malloc(segmentSize);
        if (address == 0) return null;
        segments++;
        segmentAllocs++;
        reservedBytes += segmentSize;
        peakReservedBytes = Math.max(peakReservedBytes, reservedBytes);
        return new Block(address, size <= SMALL_REQUEST, graphPool, address, segmentSize, stream);
    }

    private MemoryBlock handOut(Block block, long size, long requested, long stream) {
        long remaining = block.size - size;
        boolean split = block.small ? remaining >= ROUND : remaining > SMALL_REQUEST;
        if (split) {
            Block rest = new Block(block.segment, block.small, block.pool, block.address + size, remaining, stream);
            rest.prev = block;
            rest.next = block.next;
            if (block.next != null) block.next.prev = rest;
            block.next = rest;
            block.size = size;
            pool(rest).add(rest);
        }
        block.allocated = true;
        block.requested = requested;
        block.stream = stream;
        active.put(block.address, block);
        allocatedBytes += block.size;
        activeBytes += block.size;
        requestedBytes += requested;
        activeBlocks++;
        peakAllocatedBytes = Math.max(peakAllocatedBytes, allocatedBytes);
        peakActiveBytes = Math.max(peakActiveBytes, activeBytes);
        return new MemoryBlock(block.address, block.size, requested);
    }

    private TreeSet<Block> pool(Block b) {
        return b.small ? smallPool : largePool;
    }

    /** Marks the block at {@code address} as used by {@code stream} as well as the one it was allocated on. */
    public synchronized void recordStream(long address, long stream) {
        Block b = active.get(address);
        if (b == null) throw new IllegalArgumentException("recordStream: 0x" + Long.toHexString(address) + " is not an allocated block");
        if (stream == b.stream) return;
        if (b.streamUses == null) b.streamUses = new LinkedHashSet<>();
        b.streamUses.add(stream);
    }

    @Override
    public void free(MemoryBlock memoryBlock) {
        free(memoryBlock.address());
    }

    public synchronized void free(long address) {
        Block b = active.remove(address);
        if (b == null) throw new IllegalArgumentException("free: 0x" + Long.toHexString(address) + " is not an allocated block");
        allocatedBytes -= b.size;
        requestedBytes -= b.requested;
        if (b.pool == 0 && !captureStreams.isEmpty()) {
            freedDuringCapture.add(b); // its events must wait for the end of the capture
            return;
        }
        release(b);
    }

    private void release(Block b) {
        if (b.streamUses != null && !b.streamUses.isEmpty()) {
            for (long s : b.streamUses) b.events.add(device.recordEvent(s));
            b.streamUses = null;
            pendingFree.add(b); // still active until the other streams are done with it
            return;
        }
        makeFree(b);
    }

    private void makeFree(Block b) {
        b.allocated = false;
        activeBytes -= b.size;
        activeBlocks--;
        b = merge(b, b.prev);
        b = merge(b, b.next);
        // One event recorded now on the block's stream covers all earlier work on it, both halves' of a merge.
        releaseEvents(b);
        // A graph pool's blocks are reused only by captures into it, in stream order (no events).
        if (streamsSeen.size() > 1 && b.pool == 0) b.events.add(device.recordEvent(b.stream));
        pool(b).add(b);
    }

    /**
     * Merges {@code neighbour} with {@code b} when it is free and either of the same stream or idle (its
     * stream's event completed: then the merged block may take {@code b}'s stream); returns the merged block.
     */
    private Block merge(Block b, Block neighbour) {
        if (neighbour == null || neighbour.allocated) return b;
        if (neighbour.stream != b.stream && (neighbour.events.isEmpty() || !eventsCompleted(neighbour))) return b;
        pool(neighbour).remove(neighbour);
        Block first = neighbour == b.prev ? neighbour : b;
        absorb(first, first == b ? neighbour : b);
        first.stream = b.stream;
        return first;
    }

    /** {@code first} takes over its free successor {@code second}. */
    private void absorb(Block first, Block second) {
        first.next = second.next;
        if (second.next != null) second.next.prev = first;
        first.size += second.size;
        first.events.addAll(second.events);
        second.events.clear();
    }

    /**
     * Waits until no stream uses any cached block, then merges every run of free neighbours (whatever
     * their streams): afterwards each segment without live blocks is one free block that can be released.
     */
    private void synchronizeAndCoalesce() {
        for (Block b : pendingFree) for (long e : b.events) device.synchronizeEvent(e);
        processEvents();
        List<Block> free = new ArrayList<>(smallPool);
        free.addAll(largePool);
        Set<Block> heads = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Block b : free) {
            // With one stream, stream order alone makes merging safe; otherwise wait for the block's stream too.
            if (b.events.isEmpty() && streamsSeen.size() > 1) b.events.add(device.recordEvent(b.stream));
            for (long e : b.events) device.synchronizeEvent(e);
            Block head = b;
            while (head.prev != null) head = head.prev;
            heads.add(head);
        }
        smallPool.clear();
        largePool.clear();
        for (Block head : heads) {
            for (Block cur = head; cur != null; cur = cur.next) {
                if (cur.allocated) continue;
                while (cur.next != null && !cur.next.allocated) absorb(cur, cur.next);
                releaseEvents(cur); // all complete: the block is idle on every stream
                pool(cur).add(cur);
            }
        }
    }

    /** Frees blocks whose recordStream events have all completed. */
    private void processEvents() {
        for (Iterator<Block> it = pendingFree.iterator(); it.hasNext(); ) {
            Block b = it.next();
            if (eventsCompleted(b)) {
                it.remove();
                releaseEvents(b);
                makeFree(b);
            }
        }
    }

    /** Returns every wholly free segment of the ordinary pool and of graph pools no graph uses any more to the device. */
    private void releaseCachedSegments() {
        for (TreeSet<Block> pool : List.of(smallPool, largePool)) {
            for (Iterator<Block> it = pool.iterator(); it.hasNext(); ) {
                Block b = it.next();
                if (b.wholeSegment() && (b.pool == 0 || !poolUses.containsKey(b.pool))) {
                    it.remove();
                    releaseEvents(b);
                    device.free(b.address);
                    reservedBytes -= b.size;
                    segments--;
                    segmentFrees++;
                }
            }
        }
    }

    /** Waits for the streams that used cached blocks, coalesces, then returns every wholly free segment to the device. */
    @Override
    public synchronized void emptyCache() {
        if (!captureStreams.isEmpty()) {
            throw new IllegalStateException("emptyCache on " + device.name() + " during CUDA graph capture: freeing device memory"
                    + " synchronises, which a capture cannot record");
        }
        synchronizeAndCoalesce();
        releaseCachedSegments();
    }

    // ------------------------------------------------------------------ graph pools

    /** A new graph pool's id ({@code torch.cuda.graph_pool_handle()}); it lives once a capture uses it. */
    public synchronized long newPool() {
        return nextPool++;
    }

    /**
     * Serves {@code stream}'s requests from graph pool {@code pool} until {@link #endAllocateToPool}, and
     * counts one more graph using the pool (released by {@link #releasePool}).
     */
    public synchronized void beginAllocateToPool(long pool, long stream) {
        if (pool <= 0 || pool >= nextPool) throw new IllegalArgumentException("beginAllocateToPool: " + pool + " is not a pool of " + device.name());
        if (captureStreams.containsKey(stream)) {
            throw new IllegalStateException("beginAllocateToPool: stream 0x" + Long.toHexString(stream) + " already allocates to a graph pool");
        }
        captureStreams.put(stream, pool);
        poolUses.merge(pool, 1, Integer::sum);
    }

    /** Ends {@link #beginAllocateToPool}; once no capture is under way, the ordinary blocks freed meanwhile are freed. */
    public synchronized void endAllocateToPool(long stream) {
        captureStreams.remove(stream);
        if (!captureStreams.isEmpty()) return;
        for (Block b : freedDuringCapture) release(b);
        freedDuringCapture.clear();
    }

    /**
     * One graph fewer uses {@code pool}; when none does, its wholly free segments go back to the device (blocks
     * still held, such as a graph's outputs kept by the caller, follow when freed and the cache is emptied).
     */
    public synchronized void releasePool(long pool) {
        Integer uses = poolUses.get(pool);
        if (uses == null) throw new IllegalArgumentException("releasePool: " + pool + " is not a live pool of " + device.name());
        if (uses > 1) {
            poolUses.put(pool, uses - 1);
            return;
        }
        poolUses.remove(pool);
        if (captureStreams.isEmpty()) releaseCachedSegments();
    }

    /** Bytes reserved in segments of graph pool {@code pool} (for tests and the memory summary). */
    public synchronized long poolReservedBytes(long pool) {
        long bytes = 0;
        Set<Long> seen = new java.util.HashSet<>();
        List<Block> blocks = new ArrayList<>(active.values());
        blocks.addAll(smallPool);
        blocks.addAll(largePool);
        blocks.addAll(pendingFree);
        blocks.addAll(freedDuringCapture);
        for (Block b : blocks) {
            if (b.pool != pool || !seen.add(b.segment)) continue;
            Block head = b;
            while (head.prev != null) head = head.prev;
            for (Block cur = head; cur != null; cur = cur.next) bytes += cur.size;
        }
        return bytes;
    }

    @Override
    public synchronized MemoryStats stats() {
        return new MemoryStats(allocatedBytes, reservedBytes, peakAllocatedBytes, activeBlocks, allocations, cacheHits, leakedStorages);
    }

    /**
     * The CUDA-specific counters ({@code torch.cuda.memory_stats}).
     *
     * @param activeBytes allocated plus freed blocks still awaiting other streams' events
     * @param inactiveSplitBytes free bytes in segments that also hold active blocks (fragmentation)
     */
    public record CudaMemoryStats(long allocatedBytes, long requestedBytes, long reservedBytes, long activeBytes,
                                  long inactiveSplitBytes, long peakAllocatedBytes, long peakReservedBytes,
                                  long peakActiveBytes, long activeBlocks, long segments, long allocations,
                                  long cacheHits, long segmentAllocs, long segmentFrees, long allocRetries, long ooms) {
        /** Share of reserved memory that is free but stuck in partly used segments. */
        public double fragmentation() {
            return reservedBytes == 0 ? 0 : (double) inactiveSplitBytes / reservedBytes;
        }
    }

    public synchronized CudaMemoryStats cudaStats() {
        long inactiveSplit = 0;
        for (TreeSet<Block> pool : List.of(smallPool, largePool)) {
            for (Block b : pool) if (!b.wholeSegment()) inactiveSplit += b.size;
        }
        return new CudaMemoryStats(allocatedBytes, requestedBytes, reservedBytes, activeBytes, inactiveSplit,
                peakAllocatedBytes, peakReservedBytes, peakActiveBytes, activeBlocks, segments, allocations, cacheHits,
                segmentAllocs, segmentFrees, retries, ooms);
    }

    /** {@code torch.cuda.max_memory_allocated}. */
    public synchronized long maxMemoryAllocated() {
        return peakAllocatedBytes;
    }

    @Override
    public synchronized void resetPeakStats() {
        peakAllocatedBytes = allocatedBytes;
        peakReservedBytes = reservedBytes;
        peakActiveBytes = activeBytes;
    }

    @Override
    public synchronized void recordLeak() {
        leakedStorages++;
    }

    /** A table of the counters, like {@code torch.cuda.memory_summary()}. */
    public synchronized String memorySummary() {
        CudaMemoryStats s = cudaStats();
        StringBuilder sb = new StringBuilder();
        sb.append("caching allocator of ").append(device.name()).append('\n');
        sb.append(String.format("  %-22s %12s %12s%n", "", "current", "peak"));
        sb.append(String.format("  %-22s %12s %12s%n", "allocated memory", MemoryStats.formatBytes(s.allocatedBytes()), MemoryStats.formatBytes(s.peakAllocatedBytes())));
        sb.append(String.format("  %-22s %12s %12s%n", "active memory", MemoryStats.formatBytes(s.activeBytes()), MemoryStats.formatBytes(s.peakActiveBytes())));
        sb.append(String.format("  %-22s %12s %12s%n", "reserved memory", MemoryStats.formatBytes(s.reservedBytes()), MemoryStats.formatBytes(s.peakReservedBytes())));
        sb.append(String.format("  %-22s %12s%n", "requested memory", MemoryStats.formatBytes(s.requestedBytes())));
        sb.append(String.format("  %-22s %12s  (%.1f%% of reserved)%n", "inactive split memory", MemoryStats.formatBytes(s.inactiveSplitBytes()), 100 * s.fragmentation()));
        sb.append(String.format("  %-22s %12d%n", "active blocks", s.activeBlocks()));
        sb.append(String.format("  %-22s %12d  (%d allocated, %d freed)%n", "segments", s.segments(), s.segmentAllocs(), s.segmentFrees()));
        sb.append(String.format("  %-22s %12d  (%d from the cache)%n", "allocation requests", s.allocations(), s.cacheHits()));
        sb.append(String.format("  %-22s %12d  (%d out-of-memory errors)%n", "alloc retries", s.allocRetries(), s.ooms()));
        sb.append(String.format("  %-22s %12d%n", "leaked storages", leakedStorages));
        return sb.toString();
    }
}
