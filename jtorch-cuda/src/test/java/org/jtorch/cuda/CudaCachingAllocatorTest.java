package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.OutOfMemoryException;
import org.junit.jupiter.api.Test;

/**
 * The caching allocator's algorithm against {@link SimulatedDevice} (no GPU involved). The expected
 * sizes and rules are PyTorch's CUDACachingAllocator: 512-byte rounding, 1 MiB small-request limit,
 * 2 MiB small segments, 20 MiB segments for large requests under 10 MiB, 2 MiB rounding above.
 */
class CudaCachingAllocatorTest {
    private static final long KiB = 1024, MiB = 1024 * KiB;
    private static final long A = 11, B = 22; // stream handles

    private final SimulatedDevice device = new SimulatedDevice(64 * MiB);
    private final AtomicInteger gcRuns = new AtomicInteger();
    private final CudaCachingAllocator allocator = new CudaCachingAllocator(device, () -> A, gcRuns::incrementAndGet);

    private long alloc(long bytes, long stream) {
        return allocator.allocate(bytes, stream).address();
    }

    @Test
    void sizesRoundUpToMultiplesOf512Bytes() {
        assertEquals(512, allocator.allocate(1, A).size());
        assertEquals(512, allocator.allocate(512, A).size());
        assertEquals(1024, allocator.allocate(513, A).size());
        assertEquals(512, allocator.allocate(0, A).size());
    }

    @Test
    void smallRequestsAreCarvedFromOne2MiBSegment() {
        long a = alloc(1000, A), b = alloc(1000, A), c = alloc(1000, A);
        assertEquals(List.of(2 * MiB), device.mallocSizes);
        assertEquals(a + 1024, b);
        assertEquals(b + 1024, c);
        assertEquals(2 * MiB, allocator.stats().reservedBytes());
        assertEquals(3 * 1024, allocator.stats().allocatedBytes());
    }

    @Test
    void largeRequestsUnder10MiBGet20MiBSegmentsThatLaterRequestsShare() {
        long a = alloc(3 * MiB, A), b = alloc(3 * MiB, A);
        assertEquals(List.of(20 * MiB), device.mallocSizes);
        assertEquals(a + 3 * MiB, b);
    }

    @Test
    void largeRequestsOf10MiBOrMoreGetSegmentsRoundedTo2MiB() {
        alloc(11 * MiB + 1, A);
        assertEquals(List.of(12 * MiB), device.mallocSizes);
    }

    @Test
    void aRequestTakesTheSmallestFreeBlockThatFits() {
        long big = alloc(4 * KiB, A);
        alloc(512, A); // keeps the two free blocks apart
        long small = alloc(2 * KiB, A);
        alloc(512, A);
        allocator.free(big);
        allocator.free(small);
        assertEquals(small, alloc(1536, A));
        assertEquals(big, alloc(3 * KiB, A));
    }

    @Test
    void largeBlocksAreNotSplitForARemainderOf1MiBOrLess() {
        alloc(3 * MiB, A); // 20 MiB segment: 17 MiB stay free
        MemoryBlock rest = allocator.allocate(16 * MiB + 512 * KiB, A);
        assertEquals(17 * MiB, rest.size()); // a 0.5 MiB remainder is not worth a block
        assertEquals(16 * MiB + 512 * KiB, rest.requested());
    }

    @Test
    void smallBlocksAreSplitDownTo512ByteRemainders() {
        MemoryBlock b = allocator.allocate(2 * MiB - 512, A);
        assertEquals(2 * MiB - 512, b.size());
    }

    @Test
    void freedNeighboursCoalesceSoEmptyCacheReleasesTheWholeSegment() {
        long a = alloc(1000, A), b = alloc(1000, A), c = alloc(1000, A);
        allocator.free(a);
        allocator.free(c);
        allocator.free(b);
        assertEquals(0, allocator.stats().allocatedBytes());
        allocator.emptyCache();
        assertTrue(device.live.isEmpty(), "segment returned to the device");
        assertEquals(0, allocator.stats().reservedBytes());
    }

    @Test
    void coalescedBlockServesARequestLargerThanEitherPiece() {
        long a = alloc(1 * KiB, A), b = alloc(1 * KiB, A);
        alloc(512, A);
        allocator.free(a);
        allocator.free(b);
        assertEquals(a, alloc(2 * KiB, A));
        assertEquals(1, device.mallocSizes.size());
    }

    @Test
    void emptyCacheKeepsSegmentsThatStillHoldLiveBlocksAndThatIsFragmentation() {
        long a = alloc(1 * MiB, A);
        alloc(512, A);
        allocator.free(a);
        allocator.emptyCache();
        assertEquals(2 * MiB, allocator.stats().reservedBytes());
        CudaCachingAllocator.CudaMemoryStats s = allocator.cudaStats();
        assertEquals(2 * MiB - 512, s.inactiveSplitBytes());
        assertEquals((2.0 * MiB - 512) / (2 * MiB), s.fragmentation(), 1e-12);
    }

    @Test
    void aBlockFreedOnAStreamIsReusedOnThatStreamAtOnce() {
        long a = alloc(4 * KiB, A);
        allocator.free(a);
        assertEquals(a, alloc(4 * KiB, A));
        assertEquals(1, allocator.cudaStats().cacheHits());
    }

    @Test
    void anotherStreamReusesAFreedBlockOnlyAfterTheEventRecordedAtFreeCompletes() {
        alloc(512, B); // stream B is in use, so frees record events
        long a = alloc(12 * MiB, A); // a 12 MiB segment, no remainder
        allocator.free(a);
        long onB = alloc(12 * MiB, B);
        assertNotEquals(a, onB, "A's kernels may still use the block");
        device.finishStream(A);
        assertEquals(a, alloc(12 * MiB, B));
    }

    @Test
    void aBlockFreedWhileOneStreamWasInUseGetsItsEventWhenAnotherStreamAsks() {
        long a = alloc(12 * MiB, A);
        allocator.free(a); // no event: only stream A so far
        int before = device.eventsRecorded;
        assertNotEquals(a, alloc(12 * MiB, B));
        assertEquals(before + 1, device.eventsRecorded, "an event recorded on A when B first asked");
        device.finishStream(A);
        assertEquals(a, alloc(12 * MiB, B));
    }

    @Test
    void aSegmentSharedByTwoStreamsCoalescesOnceBothAreIdleAndEmptyCacheReleasesIt() {
        alloc(1 * MiB, B);
        alloc(1 * MiB, B); // B's own segment is full
        long a = alloc(1 * KiB, A);
        long rest = alloc(1 * KiB, A);
        allocator.free(rest); // A's free remainder of the segment, guarded by an event on A
        device.finishStream(A);
        long onB = alloc(1 * KiB, B); // B takes A's idle remainder
        assertEquals(rest, onB);
        allocator.free(onB);
        allocator.free(a); // neighbours of different streams, B's work still pending: not merged yet
        assertEquals(2 * MiB + 2 * MiB, allocator.stats().reservedBytes());
        allocator.emptyCache(); // waits for both streams, merges, releases A's segment (B's stays in use)
        assertEquals(2 * MiB, allocator.stats().reservedBytes());
    }

    @Test
    void recordStreamHoldsAFreedBlockUntilTheOtherStreamsWorkCompletes() {
        long a = alloc(4 * KiB, A);
        allocator.recordStream(a, B);
        allocator.free(a);
        assertEquals(4 * KiB, allocator.cudaStats().activeBytes(), "still active: B may use it");
        assertNotEquals(a, alloc(4 * KiB, A));
        device.finishStream(B);
        assertEquals(a, alloc(4 * KiB, A));
    }

    @Test
    void emptyCacheWaitsForRecordStreamEventsAndThenReleases() {
        long a = alloc(4 * KiB, A);
        allocator.recordStream(a, B);
        allocator.free(a);
        allocator.emptyCache();
        assertEquals(1, device.eventsSynchronized);
        assertEquals(0, allocator.stats().reservedBytes());
        assertTrue(device.live.isEmpty());
    }

    @Test
    void outOfMemoryFirstReleasesCachedSegmentsAndRetries() {
        SimulatedDevice small = new SimulatedDevice(40 * MiB);
        CudaCachingAllocator alloc = new CudaCachingAllocator(small, () -> A, gcRuns::incrementAndGet);
        alloc.free(alloc.allocate(3 * MiB, A)); // a cached 20 MiB segment
        alloc.allocate(25 * MiB, A); // needs a 26 MiB segment: 20 + 26 > 40
        assertEquals(26 * MiB, alloc.stats().reservedBytes());
        assertEquals(1, alloc.cudaStats().allocRetries());
        assertEquals(0, gcRuns.get(), "the cache sufficed; no garbage collection");
    }

    @Test
    void outOfMemoryThenRunsTheGarbageCollectorOnceToReclaimEscapedBlocks() {
        SimulatedDevice small = new SimulatedDevice(20 * MiB);
        long[] escaped = new long[1];
        AtomicInteger runs = new AtomicInteger();
        CudaCachingAllocator[] ref = new CudaCachingAllocator[1];
        ref[0] = new CudaCachingAllocator(small, () -> A, () -> {
            runs.incrementAndGet();
            ref[0].free(escaped[0]); // what a Cleaner does for an unreachable tensor
        });
        escaped[0] = ref[0].allocate(15 * MiB, A).address();
        MemoryBlock b = ref[0].allocate(15 * MiB, A);
        assertEquals(1, runs.get());
        assertEquals(escaped[0], b.address(), "the reclaimed block is reused");
    }

    /** Issue 19: blocks of tensors dropped without close come back once the bytes handed out pass the threshold. */
    @Test
    void droppedBlocksAreCollectedOnceTheThresholdIsPassed() {
        List<Long> escaped = new ArrayList<>();
        AtomicInteger runs = new AtomicInteger();
        CudaCachingAllocator[] ref = new CudaCachingAllocator[1];
        ref[0] = new CudaCachingAllocator(new SimulatedDevice(1L << 30), () -> A, () -> { // the Cleaners' work
            runs.incrementAndGet();
            escaped.forEach(ref[0]::free);
            escaped.clear();
        });
        ref[0].setCollectionThreshold(64 * MiB);
        long most = 0;
        for (int i = 0; i < 100; i++) { // 12 MiB each, never freed by the loop: 1.2 GiB without collections
            escaped.add(ref[0].allocate(12 * MiB, A).address());
            most = Math.max(most, ref[0].stats().allocatedBytes());
        }
        assertTrue(runs.get() >= 10 && ref[0].garbageCollections() == runs.get(), "collections: " + runs.get());
        assertTrue(most <= 64 * MiB + 12 * MiB, "at most the threshold and one block: " + most);
        assertTrue(ref[0].stats().reservedBytes() <= 2 * (64 * MiB + 12 * MiB), "reserved " + ref[0].stats().reservedBytes());
    }

    @Test
    void withoutAThresholdOnlyOutOfMemoryCollects() {
        assertEquals(Long.MAX_VALUE, allocator.collectionThreshold());
        for (int i = 0; i < 5; i++) allocator.allocate(12 * MiB, A); // 60 MiB of the device's 64
        assertEquals(0, gcRuns.get());
    }

    @Test
    void outOfMemoryFinallyThrowsWithTheMemorySummary() {
        SimulatedDevice small = new SimulatedDevice(20 * MiB);
        CudaCachingAllocator alloc = new CudaCachingAllocator(small, () -> A, gcRuns::incrementAndGet);
        alloc.allocate(15 * MiB, A);
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> alloc.allocate(15 * MiB, A));
        assertTrue(e.getMessage().startsWith("cuda-sim out of memory: tried to allocate 15.0 MiB"), e.getMessage());
        assertTrue(e.getMessage().contains("reserved memory"), e.getMessage());
        assertEquals(1, gcRuns.get());
        assertEquals(1, alloc.cudaStats().ooms());
    }

    @Test
    void statisticsTrackCurrentPeakAndCounts() {
        long a = alloc(1000, A);
        long b = alloc(3 * MiB, A);
        allocator.free(a);
        var s = allocator.cudaStats();
        assertEquals(3 * MiB, s.allocatedBytes());
        assertEquals(3 * MiB + 1024, s.peakAllocatedBytes());
        assertEquals(22 * MiB, s.reservedBytes());
        assertEquals(1, s.activeBlocks());
        assertEquals(2, s.segments());
        assertEquals(2, s.allocations());
        assertEquals(3 * MiB, s.requestedBytes());
        allocator.resetPeakStats();
        assertEquals(3 * MiB, allocator.maxMemoryAllocated());
        allocator.free(b);
        assertEquals(0, allocator.stats().activeBlocks());
        String summary = allocator.memorySummary();
        assertTrue(summary.contains("allocated memory") && summary.contains("reserved memory") && summary.contains("22.0 MiB"), summary);
    }

    @Test
    void plainAllocateServesTheCurrentStream() {
        long a = allocator.allocate(4 * KiB).address();
        allocator.free(allocator.allocate(1, B).address());
        allocator.free(a);
        assertEquals(a, alloc(4 * KiB, A));
    }

    @Test
    void freeingAnAddressThatIsNotAllocatedIsAnError() {
        long a = alloc(512, A);
        allocator.free(a);
        assertThrows(IllegalArgumentException.class, () -> allocator.free(a));
        assertThrows(IllegalArgumentException.class, () -> allocator.recordStream(a, B));
    }

    @Test
    void concurrentAllocationsAndFreesFromManyThreadsKeepTheBooksBalanced() throws Exception {
        SimulatedDevice device = new SimulatedDevice(4096 * MiB);
        CudaCachingAllocator allocator = new CudaCachingAllocator(device, () -> A, gcRuns::incrementAndGet);
        java.util.concurrent.ConcurrentLinkedQueue<Long> addresses = new java.util.concurrent.ConcurrentLinkedQueue<>();
        List<Thread> threads = new java.util.ArrayList<>();
        for (int t = 0; t < 4; t++) {
            long stream = t % 2 == 0 ? A : B;
            java.util.Random rnd = new java.util.Random(t);
            threads.add(Thread.ofPlatform().start(() -> {
                java.util.ArrayDeque<Long> mine = new java.util.ArrayDeque<>();
                for (int i = 0; i < 3000; i++) {
                    if (mine.isEmpty() || rnd.nextInt(3) > 0) {
                        long a = allocator.allocate(1 + rnd.nextInt(rnd.nextBoolean() ? 8192 : 3 * 1024 * 1024), stream).address();
                        mine.add(a);
                        addresses.add(a);
                    } else {
                        allocator.free(rnd.nextBoolean() ? mine.pollFirst() : mine.pollLast());
                    }
                }
                for (long a : mine) allocator.free(a);
            }));
        }
        for (Thread t : threads) t.join();
        assertEquals(0, allocator.stats().allocatedBytes());
        assertEquals(0, allocator.stats().activeBlocks());
        allocator.emptyCache();
        assertEquals(0, allocator.stats().reservedBytes());
        assertTrue(device.live.isEmpty());
    }

    @Test
    void manyRandomAllocationsAndFreesKeepTheBooksBalanced() {
        SimulatedDevice device = new SimulatedDevice(1024 * MiB);
        CudaCachingAllocator allocator = new CudaCachingAllocator(device, () -> A, gcRuns::incrementAndGet);
        java.util.Random rnd = new java.util.Random(42);
        java.util.List<Long> live = new java.util.ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            if (live.isEmpty() || rnd.nextInt(3) > 0) {
                long bytes = rnd.nextBoolean() ? 1 + rnd.nextInt(64 * 1024) : 1 + rnd.nextInt(4 * 1024 * 1024);
                live.add(allocator.allocate(bytes, rnd.nextBoolean() ? A : B).address());
            } else {
                allocator.free(live.remove(rnd.nextInt(live.size())));
            }
            if (i % 97 == 0) {
                device.finishStream(A);
                device.finishStream(B);
            }
        }
        for (long a : live) allocator.free(a);
        assertEquals(0, allocator.stats().allocatedBytes());
        device.finishStream(A);
        device.finishStream(B);
        allocator.emptyCache();
        assertEquals(0, allocator.stats().reservedBytes(), "every segment coalesced back to one free block");
        assertTrue(device.live.isEmpty());
    }

    // ---- graph pools (PyTorch's private pools for CUDA graphs)

    private long beginCapture(long pool, long stream) {
        allocator.beginAllocateToPool(pool, stream);
        device.capturing = true;
        return pool;
    }

    private void endCapture(long stream) {
        device.capturing = false;
        allocator.endAllocateToPool(stream);
    }

    @Test
    void aCaptureAllocatesFromItsOwnPoolWithoutTouchingTheOrdinaryCache() {
        long before = alloc(1000, A);
        allocator.free(before); // a free ordinary block the capture must not take
        long pool = beginCapture(allocator.newPool(), A);
        long inCapture = alloc(1000, A);
        endCapture(A);
        assertNotEquals(before, inCapture);
        assertEquals(1, device.mallocsDuringCapture, "the pool's segment was allocated in relaxed capture mode");
        assertEquals(2 * MiB, allocator.poolReservedBytes(pool));
        assertEquals(before, alloc(1000, A), "eager requests keep using the ordinary pool");
    }

    @Test
    void blocksFreedDuringACaptureAreReusedWithinItButNeverOutsideIt() {
        long pool = beginCapture(allocator.newPool(), A);
        long temp = alloc(4 * KiB, A);
        allocator.free(temp);
        assertEquals(temp, alloc(4 * KiB, A), "reused within the capture");
        long temp2 = alloc(8 * KiB, A);
        allocator.free(temp2);
        endCapture(A);
        long eager = alloc(8 * KiB, A);
        assertNotEquals(temp2, eager, "a block the graph replays into is never handed to eager work");
        beginCapture(pool, A);
        assertEquals(temp2, alloc(8 * KiB, A), "a later capture into the same pool may reuse it");
        endCapture(A);
    }

    @Test
    void aPoolsSegmentsReturnToTheDeviceOnlyWhenNoGraphUsesIt() {
        long pool = beginCapture(allocator.newPool(), A);
        long out1 = alloc(1000, A);
        endCapture(A);
        beginCapture(pool, A); // a second graph shares the pool
        long out2 = alloc(1000, A);
        endCapture(A);
        allocator.free(out1);
        allocator.free(out2);
        allocator.releasePool(pool);
        allocator.emptyCache();
        assertEquals(2 * MiB, allocator.poolReservedBytes(pool), "the second graph still uses the pool");
        allocator.releasePool(pool);
        assertEquals(0, allocator.poolReservedBytes(pool));
        assertTrue(device.live.isEmpty());
    }

    @Test
    void ordinaryBlocksFreedDuringACaptureWaitForItsEndAndNoEventIsTouchedMeanwhile() {
        alloc(512, B); // two streams seen: frees record events
        long ordinary = alloc(1000, A);
        int events = device.eventsRecorded;
        beginCapture(allocator.newPool(), A);
        allocator.free(ordinary);
        long inCapture = alloc(1000, A);
        assertNotEquals(ordinary, inCapture);
        allocator.free(inCapture);
        assertEquals(events, device.eventsRecorded);
        endCapture(A);
        assertEquals(events + 1, device.eventsRecorded, "the deferred free records its event after the capture");
        assertEquals(ordinary, alloc(1000, A));
    }

    @Test
    void emptyCacheDuringACaptureIsRefused() {
        beginCapture(allocator.newPool(), A);
        IllegalStateException e = assertThrows(IllegalStateException.class, allocator::emptyCache);
        assertTrue(e.getMessage().contains("during CUDA graph capture"), e.getMessage());
        endCapture(A);
    }
}
