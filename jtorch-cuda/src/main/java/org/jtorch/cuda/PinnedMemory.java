package org.jtorch.cuda;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.Storage;

/**
 * Page-locked host memory for CUDA copies ({@code Tensor.pinMemory()}, {@code DataLoader.pinMemory(true)}):
 * one process-wide {@link PinnedHostAllocator} over {@code cuMemHostAlloc}. Pinned tensors are CPU tensors
 * ({@link Tensor#isPinned()}) that CPU kernels use as any other; {@code to(cuda, true)} from them is
 * asynchronous. Every method throws {@link IllegalStateException} with the reason when CUDA is unavailable.
 */
public final class PinnedMemory {
    private static volatile PinnedHostAllocator allocator;

    private PinnedMemory() {}

    /** The pinned host allocator (created on first use). */
    public static PinnedHostAllocator allocator() {
        PinnedHostAllocator a = allocator;
        if (a == null) {
            synchronized (PinnedMemory.class) {
                CudaRuntime rt = CudaRuntime.system();
                rt.requireAvailable();
                if (allocator == null) {
                    allocator = new PinnedHostAllocator(new DriverPinnedMemory(rt), org.jtorch.memory.StorageCleaner::collect);
                }
                a = allocator;
            }
        }
        return a;
    }

    /** A new pinned CPU storage of {@code bytes} bytes; contents undefined. */
    public static Storage allocate(long bytes) {
        PinnedHostAllocator a = allocator();
        MemoryBlock block = a.allocate(bytes);
        return Storage.ofPinnedHost(bytes, a, block);
    }

    /** Returns every pinned block that no tensor uses and no copy still reads to the driver. */
    public static void emptyCache() {
        allocator().emptyCache();
    }
}
