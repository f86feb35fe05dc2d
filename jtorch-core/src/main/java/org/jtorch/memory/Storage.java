package org.jtorch.memory;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import org.jtorch.types.Device;

/**
 * The bytes behind one or more tensors (a tensor and its views share one storage).
 *
 * <p>Ownership: every tensor that refers to a storage holds one reference ({@link #retain()} when a
 * view is made, {@link #release()} when the tensor is closed), and so does every kernel running on it
 * (the backends take one with {@link #tryRetain()} around each kernel call). The block goes back to its
 * allocator when the count reaches zero: a tensor closed while another thread computes on it keeps its
 * memory until that kernel returns, as in PyTorch, where a running op holds a reference to its operands.
 * A storage that becomes unreachable without being released is returned by the {@link StorageCleaner} and
 * counted as a leak in {@link MemoryStats#leakedStorages()}.
 *
 * <p>After release, {@link #segment()} throws instead of exposing freed memory: use after close is an
 * exception, never a crash. The version counter is shared by all views, as PyTorch's.
 */
public final class Storage {
    private final Device device;
    private final long byteSize;
    private final AtomicInteger refCount = new AtomicInteger(1);
    private final Release release;
    private final StorageCleaner.Cleanable cleanable;
    private final boolean pinned;
    private final External external;
    private volatile MemorySegment segment;
    private int version;

    /**
     * The owner of a storage's memory that lives outside the allocators (a file mapping): it says when the
     * memory cannot be read or written, so that ops fail with a sentence about the file instead of the
     * JDK's "Already closed" or a fault on a truncated mapping. Each reason continues "tensor of shape
     * [...] and dtype ... ", e.g. "is a view of the memory-mapped file f, which was closed".
     */
    public interface External {
        /** Null while the memory can be read; else why not. Called by every op on such a tensor: keep it cheap. */
        String unreadableReason();

        /** Null when the memory may be written; else why not and how to get a writable copy. */
        String unwritableReason();
    }

    /** Returns the block when released explicitly, or counts a leak when run for an unreachable storage. */
    private static final class Release implements Runnable {
        private final Allocator allocator;
        private final MemoryBlock block;
        volatile boolean explicit;

        Release(Allocator allocator, MemoryBlock block) {
            this.allocator = allocator;
            this.block = block;
        }

        @Override
        public void run() {
            if (!explicit) allocator.recordLeak();
            allocator.free(block);
        }
    }

    private Storage(Device device, long byteSize, MemorySegment segment, Allocator allocator, MemoryBlock block) {
        this(device, byteSize, segment, allocator, block, false, null);
    }

    private Storage(Device device, long byteSize, MemorySegment segment, Allocator allocator, MemoryBlock block, boolean pinned,
                    External external) {
        this.device = device;
        this.pinned = pinned;
        this.external = external;
        this.byteSize = byteSize;
        this.segment = segment;
        if (allocator != null) {
            this.release = new Release(allocator, block);
            this.cleanable = StorageCleaner.register(this, release);
        } else {
            this.release = null;
            this.cleanable = null;
        }
    }

    /** A new CPU storage of {@code byteSize} bytes from the CPU caching allocator; contents undefined. */
    public static Storage allocateCpu(long byteSize) {
        CpuCachingAllocator allocator = CpuCachingAllocator.get();
        MemoryBlock block = allocator.allocate(byteSize);
        MemorySegment seg = MemorySegment.ofAddress(block.address()).reinterpret(byteSize);
        return new Storage(Device.cpu(), byteSize, seg, allocator, block);
    }

    /** A storage for device memory obtained from another backend's allocator. */
    public static Storage ofBlock(Device device, long byteSize, Allocator allocator, MemoryBlock block,
                                  MemorySegment hostView) {
        return new Storage(device, byteSize, hostView, allocator, block);
    }

    /**
     * A CPU storage in page-locked host memory from an accelerator backend's pinned allocator (the block's
     * address is host memory of at least {@code byteSize} bytes): CPU kernels use it as any CPU storage, and
     * that backend may copy from it to a device asynchronously ({@link #isPinned()}).
     */
    public static Storage ofPinnedHost(long byteSize, Allocator allocator, MemoryBlock block) {
        MemorySegment seg = MemorySegment.ofAddress(block.address()).reinterpret(byteSize);
        return new Storage(Device.cpu(), byteSize, seg, allocator, block, true, null);
    }

    /**
     * A CPU storage over a heap segment; the garbage collector owns its memory. Not for operands of kernels: see
     * {@link ScalarCells} for why, and {@link #wrapConstant} for small constants.
     */
    public static Storage wrapHeap(MemorySegment heapSegment) {
        return wrapConstant(heapSegment);
    }

    /**
     * A CPU storage over memory the garbage collector owns (a heap segment, or a {@link ScalarCells} cell for small
     * constants): never freed by this storage.
     */
    public static Storage wrapConstant(MemorySegment segment) {
        return new Storage(Device.cpu(), segment.byteSize(), segment, null, null);
    }

    /**
     * A CPU storage over memory owned elsewhere (a file mapping whose arena a loader closes): never
     * freed by this storage. {@code owner} says when the memory can no longer be read (closed, file
     * truncated) or cannot be written; ops then fail with its reason instead of crashing.
     */
    public static Storage wrapExternal(MemorySegment segment, External owner) {
        return new Storage(Device.cpu(), segment.byteSize(), segment, null, null, false, owner);
    }

    public Device device() {
        return device;
    }

    public long byteSize() {
        return byteSize;
    }

    /** The memory, for CPU kernels. Throws {@link IllegalStateException} once released or no longer readable. */
    public MemorySegment segment() {
        MemorySegment s = segment;
        if (s == null) throw new IllegalStateException("storage used after its tensors were closed");
        if (external != null) {
            String why = external.unreadableReason();
            if (why != null) throw new IllegalStateException("a tensor " + why);
        }
        return s;
    }

    /**
     * The memory, or null once released (without throwing: a kernel view taken just as another thread closes the
     * tensor is refused by the backend's hold with the closed-tensor error naming the op). Throws as {@link #segment()}
     * when memory owned outside jtorch can no longer be read.
     */
    public MemorySegment segmentIfLive() {
        MemorySegment s = segment;
        if (s != null && external != null) {
            String why = external.unreadableReason();
            if (why != null) throw new IllegalStateException("a tensor " + why);
        }
        return s;
    }

    /** Null while the memory can be read, else why not (memory owned outside jtorch: see {@link External}). */
    public String unreadableReason() {
        return external == null ? null : external.unreadableReason();
    }

    /** Null when the memory may be written, else why not (a read-only file mapping). */
    public String unwritableReason() {
        return external == null ? null : external.unwritableReason();
    }

    /** Device address of the first byte (CUDA and FFM callers). */
    public long address() {
        return segment().address();
    }

    /** Whether this is page-locked host memory ({@link #ofPinnedHost}). */
    public boolean isPinned() {
        return pinned;
    }

    /**
     * Whether the last release frees memory (an allocator's block). Heap storages ({@link #wrapHeap}) and
     * external ones ({@link #wrapExternal}) do not: the garbage collector or their owner frees that memory.
     */
    public boolean ownsMemory() {
        return release != null;
    }

    public boolean isReleased() {
        return segment == null;
    }

    /** Number of live tensors referring to this storage. */
    public int refCount() {
        return refCount.get();
    }

    /** Adds a reference for a new view. */
    public void retain() {
        if (!tryRetain()) throw new IllegalStateException("storage used after its tensors were closed");
    }

    /**
     * Adds a reference unless the storage was already released (then returns false and changes nothing).
     * Uncontended, one compare-and-set: cheap enough to wrap every kernel call.
     */
    public boolean tryRetain() {
        int prev;
        do {
            prev = refCount.get();
            if (prev <= 0) return false;
        } while (!refCount.compareAndSet(prev, prev + 1));
        return true;
    }

    /** Drops a reference; the last one returns the memory to its allocator. */
    public void release() {
        if (refCount.decrementAndGet() == 0) {
            segment = null;
            if (release != null) {
                release.explicit = true;
                cleanable.clean();
            }
        }
    }

    /** Version counter shared by all views; bumped by every in-place write. */
    public int version() {
        return version;
    }

    public void bumpVersion() {
        version++;
    }
}
