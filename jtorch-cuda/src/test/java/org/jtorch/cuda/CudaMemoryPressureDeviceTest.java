package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.memory.StorageCleaner;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 19 on cuda:0: CUDA tensors dropped without close are collected when the device bytes handed out grow past
 * the collection threshold ({@code JTORCH_CUDA_GC_THRESHOLD}, by default an eighth of the device's memory), so a
 * loop that closes nothing holds about its live memory plus the threshold.
 */
class CudaMemoryPressureDeviceTest {
    private static final Device CUDA = Device.cuda(0);
    private static final long MiB = 1L << 20;

    @BeforeEach
    void cuda() {
        assumeTrue(Cuda.isAvailable(), () -> "cuda:0 unavailable: " + Cuda.unavailableReason());
    }

    @Test
    void theDefaultThresholdIsAnEighthOfTheDevicesMemory() {
        assumeTrue(System.getenv(CudaBackend.GC_THRESHOLD_VARIABLE) == null && System.getProperty(CudaBackend.GC_THRESHOLD_PROPERTY) == null,
                "the threshold is configured");
        long total = CudaRuntime.system().devices().get(0).totalMemory();
        assertEquals(total / 8, Cuda.allocator(CUDA).collectionThreshold());
    }

    private static void step(int i) {
        Torch.full(new long[] {MiB}, i, DType.FLOAT32, CUDA).mul(2.0); // 4 MiB, a 4 MiB temporary and a wrapped scalar
    }

    /** The target: under twice the scoped step's peak plus the threshold. */
    @Test
    void aLoopThatClosesNothingStaysUnderTheThresholdPlusTwiceItsScopedPeak() {
        CudaCachingAllocator alloc = Cuda.allocator(CUDA);
        long threshold = alloc.collectionThreshold();
        StorageCleaner.collect();
        alloc.emptyCache(); // earlier tests' cached blocks would serve the loop without a miss, which is when pressure is checked
        long base = alloc.stats().allocatedBytes();
        long scopedPeak;
        try (MemoryScope scope = new MemoryScope()) {
            alloc.resetPeakStats();
            step(0);
            scopedPeak = alloc.maxMemoryAllocated() - base;
        }
        long collections = alloc.garbageCollections();
        long most = 0;
        try {
            alloc.setCollectionThreshold(64 * MiB);
            for (int i = 0; i < 100; i++) { // 800 MiB without collections
                step(i);
                most = Math.max(most, alloc.stats().allocatedBytes() - base);
            }
        } finally {
            alloc.setCollectionThreshold(threshold);
        }
        long bound = 64 * MiB + 2 * scopedPeak + 64 * 1024; // 64 KiB: the wrapped scalars' small blocks
        assertTrue(alloc.garbageCollections() - collections >= 5, "collections: " + (alloc.garbageCollections() - collections));
        assertTrue(most <= bound, "peak " + most + " over the start, bound " + bound + " (scoped peak " + scopedPeak + ")");
        System.out.println("no-close CUDA loop: peak " + most + " B above the start, bound " + bound + " B, scoped step peak "
                + scopedPeak + " B, " + (alloc.garbageCollections() - collections) + " collections");
    }
}
