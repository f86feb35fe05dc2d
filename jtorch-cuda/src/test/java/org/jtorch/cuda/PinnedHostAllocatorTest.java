package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.OutOfMemoryException;
import org.junit.jupiter.api.Test;

/**
 * The pinned host allocator's algorithm against {@link SimulatedDevice} standing in for {@code cuMemHostAlloc}
 * and the copies' events (no GPU involved). The rules are PyTorch's {@code CachingHostAllocator}: sizes rounded
 * to powers of two, a free block of the same size reused, and a block used by an asynchronous copy reused only
 * after the event recorded after that copy has completed.
 */
class PinnedHostAllocatorTest {
    private static final long KiB = 1024, MiB = 1024 * KiB;
    private static final long COPY = 11, OTHER = 22; // stream handles

    private final SimulatedDevice host = new SimulatedDevice(16 * MiB);
    private final PinnedHostAllocator allocator = new PinnedHostAllocator(host);

    @Test
    void sizesRoundUpToPowersOfTwoOfAtLeast512Bytes() {
        assertEquals(512, allocator.allocate(0).size());
        assertEquals(512, allocator.allocate(1).size());
        assertEquals(512, allocator.allocate(512).size());
        assertEquals(1024, allocator.allocate(513).size());
        assertEquals(4 * MiB, allocator.allocate(3 * MiB + 1).size());
        assertEquals(List.of(512L, 512L, 512L, 1024L, 4 * MiB), host.mallocSizes);
        assertEquals(3 * MiB + 1, allocator.allocate(3 * MiB + 1).requested());
    }

    @Test
    void aFreedBlockWithoutCopiesIsReusedAtOnceForTheSameRoundedSize() {
        MemoryBlock a = allocator.allocate(3000);
        allocator.free(a);
        assertEquals(a.address(), allocator.allocate(4096).address());
        assertEquals(1, host.mallocSizes.size());
        assertEquals(1, allocator.stats().cacheHits());
    }

    @Test
    void aFreeBlockOfAnotherSizeIsNotUsed() {
        MemoryBlock a = allocator.allocate(8 * KiB);
        allocator.free(a);
        MemoryBlock b = allocator.allocate(4 * KiB);
        assertNotEquals(a.address(), b.address());
        assertEquals(List.of(8 * KiB, 4 * KiB), host.mallocSizes);
    }

    @Test
    void aBlockFreedWhileItsCopyRunsIsNotReusedUntilTheCopysEventCompletes() {
        MemoryBlock a = allocator.allocate(MiB);
        allocator.recordUse(a.address(), COPY);
        assertEquals(1, host.eventsRecorded);
        allocator.free(a);
        assertEquals(1, allocator.pendingBlocks());
        MemoryBlock b = allocator.allocate(MiB);
        assertNotEquals(a.address(), b.address(), "the copy may still be reading a");
        host.finishStream(COPY);
        allocator.free(b);
        MemoryBlock c = allocator.allocate(MiB);
        MemoryBlock d = allocator.allocate(MiB);
        assertEquals(Set.of(a.address(), b.address()), Set.of(c.address(), d.address()));
        assertEquals(0, allocator.pendingBlocks());
        assertEquals(2, host.mallocSizes.size());
    }

    @Test
    void everyCopyOfABlockMustCompleteBeforeReuse() {
        MemoryBlock a = allocator.allocate(MiB);
        allocator.recordUse(a.address(), COPY);
        allocator.recordUse(a.address(), OTHER);
        allocator.free(a);
        host.finishStream(COPY);
        assertNotEquals(a.address(), allocator.allocate(MiB).address(), "OTHER's copy is still running");
        host.finishStream(OTHER);
        assertEquals(a.address(), allocator.allocate(MiB).address());
    }

    @Test
    void completedEventsAreReleasedOnceAndNotKeptWhileTheBlockIsReusedForManyCopies() {
        MemoryBlock a = allocator.allocate(MiB);
        for (int i = 0; i < 100; i++) {
            allocator.recordUse(a.address(), COPY);
            host.finishStream(COPY);
        }
        allocator.free(a); // SimulatedDevice fails a second release of one event
        assertEquals(0, allocator.pendingBlocks());
        assertEquals(a.address(), allocator.allocate(MiB).address());
    }

    @Test
    void recordUseOfAnUnknownOrFreedAddressIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> allocator.recordUse(0x1234, COPY));
        MemoryBlock a = allocator.allocate(512);
        allocator.free(a);
        assertThrows(IllegalArgumentException.class, () -> allocator.recordUse(a.address(), COPY));
        assertThrows(IllegalArgumentException.class, () -> allocator.free(a));
    }

    @Test
    void emptyCacheReleasesFreeBlocksButNotThoseInUseOrAwaitingCopies() {
        MemoryBlock used = allocator.allocate(MiB);
        MemoryBlock copying = allocator.allocate(MiB);
        MemoryBlock idle = allocator.allocate(MiB);
        allocator.recordUse(copying.address(), COPY);
        allocator.free(copying);
        allocator.free(idle);
        allocator.emptyCache();
        assertEquals(Set.of(used.address(), copying.address()), host.live.keySet());
        assertEquals(2 * MiB, allocator.stats().reservedBytes());
        host.finishStream(COPY);
        allocator.emptyCache();
        assertEquals(Set.of(used.address()), host.live.keySet());
    }

    @Test
    void outOfMemoryReleasesTheCacheAndRetriesThenThrowsWithTheStatistics() {
        PinnedHostAllocator small = new PinnedHostAllocator(new SimulatedDevice(4 * MiB));
        MemoryBlock a = small.allocate(2 * MiB);
        small.free(a);
        MemoryBlock b = small.allocate(4 * MiB); // needs the cached 2 MiB block given back
        assertEquals(4 * MiB, b.size());
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> small.allocate(512));
        assertTrue(e.getMessage().contains("pinned host memory") && e.getMessage().contains("allocated 4.0 MiB"), e.getMessage());
    }

    /** Issue 19: pinned tensors dropped without close hold blocks only a garbage collection returns. */
    @Test
    void outOfMemoryThenCollectsGarbageOnceAndReusesWhatItReturned() {
        long[] escaped = new long[1];
        int[] runs = new int[1];
        PinnedHostAllocator[] ref = new PinnedHostAllocator[1];
        ref[0] = new PinnedHostAllocator(new SimulatedDevice(4 * MiB), () -> {
            runs[0]++;
            ref[0].free(escaped[0]); // what a Cleaner does for an unreachable pinned tensor
        });
        escaped[0] = ref[0].allocate(4 * MiB).address();
        MemoryBlock b = ref[0].allocate(3 * MiB); // would fail: the first block still holds all of the memory
        assertEquals(1, runs[0]);
        assertEquals(escaped[0], b.address(), "the returned block is found in the cache and reused");
        assertEquals(1, ref[0].stats().cacheHits());
    }

    @Test
    void outOfMemoryAfterTheCollectionNamesIt() {
        int[] runs = new int[1];
        PinnedHostAllocator small = new PinnedHostAllocator(new SimulatedDevice(4 * MiB), () -> runs[0]++);
        small.allocate(4 * MiB);
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> small.allocate(512));
        assertEquals(1, runs[0]);
        assertTrue(e.getMessage().contains("after freeing the cache and one garbage collection"), e.getMessage());
    }

    @Test
    void statisticsCountBlocksBytesAndPeaks() {
        MemoryBlock a = allocator.allocate(1000), b = allocator.allocate(MiB);
        allocator.free(a);
        var s = allocator.stats();
        assertEquals(MiB, s.allocatedBytes());
        assertEquals(MiB + 1024, s.reservedBytes());
        assertEquals(MiB + 1024, s.peakAllocatedBytes());
        assertEquals(1, s.activeBlocks());
        assertEquals(2, s.allocations());
        allocator.free(b);
        allocator.resetPeakStats();
        assertEquals(0, allocator.stats().peakAllocatedBytes());
    }

    @Test
    void randomAllocationsAndCopiesNeverReuseABlockWhoseCopyIsRunning() {
        Random r = new Random(5);
        List<MemoryBlock> live = new ArrayList<>();
        Set<Long> copying = new HashSet<>(); // blocks with a copy on COPY that has not finished
        for (int i = 0; i < 3000; i++) {
            int op = r.nextInt(10);
            if (live.size() > 40) op = 7; // keep the live set (and the simulated 16 MiB) bounded
            if (op < 4 || live.isEmpty()) {
                MemoryBlock m = allocator.allocate(1 + r.nextInt(64 * 1024));
                assertTrue(!copying.contains(m.address()), "block 0x" + Long.toHexString(m.address()) + " handed out during its copy");
                live.add(m);
            } else if (op < 7) {
                MemoryBlock m = live.get(r.nextInt(live.size()));
                allocator.recordUse(m.address(), COPY);
                copying.add(m.address());
            } else if (op < 9) {
                allocator.free(live.remove(r.nextInt(live.size())));
            } else {
                host.finishStream(COPY);
                copying.clear();
            }
        }
        for (MemoryBlock m : live) allocator.free(m);
        host.finishStream(COPY);
        allocator.emptyCache();
        assertEquals(0, allocator.stats().allocatedBytes());
        assertEquals(0, allocator.stats().reservedBytes());
        assertTrue(host.live.isEmpty());
    }
}
