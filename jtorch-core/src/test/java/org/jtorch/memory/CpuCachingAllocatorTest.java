package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Statistics and caching of the CPU allocator: allocated/reserved/peak move with tensors' lifetimes,
 * freed blocks are reused (cache hits) and {@code emptyCache} returns exactly the cached bytes.
 * Sizes are large and unusual (40 MiB rounds to 40 MiB, 3 MiB to 4 MiB) so other tests' blocks do not interfere.
 */
class CpuCachingAllocatorTest {
    private static final long MIB = 1L << 20;
    private final CpuCachingAllocator alloc = CpuCachingAllocator.get();

    @BeforeEach
    void settleCleaners() throws InterruptedException {
        // Let unreachable tensors from earlier tests return their blocks before counting.
        System.gc();
        Thread.sleep(50);
    }

    private static Tensor floats(long bytes) {
        return Tensor.empty(new long[] {bytes / 4}, DType.FLOAT32, Device.cpu());
    }

    @Test
    void roundsSmallSizesToPowersOfTwoAndLargeOnesTo2MiB() {
        assertEquals(64, CpuCachingAllocator.roundSize(0));
        assertEquals(64, CpuCachingAllocator.roundSize(1));
        assertEquals(64, CpuCachingAllocator.roundSize(64));
        assertEquals(128, CpuCachingAllocator.roundSize(65));
        assertEquals(4096, CpuCachingAllocator.roundSize(4000));
        assertEquals(MIB, CpuCachingAllocator.roundSize(MIB));
        assertEquals(2 * MIB, CpuCachingAllocator.roundSize(MIB + 1));
        assertEquals(4 * MIB, CpuCachingAllocator.roundSize(3 * MIB));
        assertEquals(40 * MIB, CpuCachingAllocator.roundSize(40 * MIB));
    }

    @Test
    void allocatedReservedAndPeakFollowTensorLifetimes() {
        alloc.emptyCache();
        MemoryStats s0 = alloc.stats();
        Tensor t = floats(3 * MIB);
        MemoryStats s1 = alloc.stats();
        assertEquals(4 * MIB, s1.allocatedBytes() - s0.allocatedBytes(), "allocated counts the rounded block");
        assertEquals(4 * MIB, s1.reservedBytes() - s0.reservedBytes(), "a fresh block is reserved from the system");
        assertTrue(s1.peakAllocatedBytes() >= s1.allocatedBytes());
        assertEquals(1, s1.activeBlocks() - s0.activeBlocks());
        t.close();
        MemoryStats s2 = alloc.stats();
        assertEquals(s0.allocatedBytes(), s2.allocatedBytes(), "closing returns the block");
        assertEquals(s1.reservedBytes(), s2.reservedBytes(), "the block stays cached");
        assertEquals(4 * MIB, s2.cachedBytes() - s0.cachedBytes());
        assertTrue(s2.peakAllocatedBytes() >= s1.allocatedBytes(), "peak remembers the high-water mark");
    }

    @Test
    void freedBlocksAreReusedAsCacheHits() {
        try (Tensor warm = floats(40 * MIB)) {
            assertEquals(40 * MIB, warm.storage().byteSize());
        }
        MemoryStats s0 = alloc.stats();
        Tensor t = floats(40 * MIB);
        MemoryStats s1 = alloc.stats();
        assertEquals(1, s1.cacheHits() - s0.cacheHits());
        assertEquals(1, s1.allocations() - s0.allocations());
        assertEquals(s0.reservedBytes(), s1.reservedBytes(), "no new memory reserved for a cache hit");
        t.close();
    }

    @Test
    void viewsShareTheBlockUntilTheLastReferenceCloses() {
        MemoryStats s0 = alloc.stats();
        Tensor t = floats(3 * MIB);
        Tensor v = t.narrow(0, 0, 10);
        t.close();
        assertEquals(4 * MIB, alloc.stats().allocatedBytes() - s0.allocatedBytes(), "the view still holds it");
        v.close();
        assertEquals(s0.allocatedBytes(), alloc.stats().allocatedBytes());
    }

    @Test
    void emptyCacheReturnsExactlyTheCachedBytes() {
        floats(3 * MIB).close();
        floats(40 * MIB).close();
        MemoryStats s0 = alloc.stats();
        assertTrue(s0.cachedBytes() >= 44 * MIB, s0.toString());
        Torch.emptyCache(Device.cpu());
        MemoryStats s1 = alloc.stats();
        assertEquals(0, s1.cachedBytes(), "nothing cached after emptyCache");
        assertEquals(s0.allocatedBytes(), s1.allocatedBytes(), "live blocks untouched");
        assertEquals(s0.reservedBytes() - s0.cachedBytes(), s1.reservedBytes());
    }

    @Test
    void resetPeakStatsSetsPeakToCurrent() {
        floats(40 * MIB).close();
        alloc.resetPeakStats();
        MemoryStats s = alloc.stats();
        assertEquals(s.allocatedBytes(), s.peakAllocatedBytes());
    }

    @Test
    void statsAreReachableFromTorch() {
        MemoryStats s = Torch.memoryStats(Device.cpu());
        assertTrue(s.reservedBytes() >= s.allocatedBytes());
        assertTrue(s.toString().contains("allocated"));
    }
}
