package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.types.Device;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class KernelProfilerTest {
    @AfterEach
    void stop() {
        KernelProfiler.stop();
        KernelProfiler.reset();
    }

    private static KernelProfiler.Entry find(String kernel) {
        List<KernelProfiler.Entry> found = KernelProfiler.entries().stream().filter(e -> e.kernel().equals(kernel)).toList();
        assertEquals(1, found.size(), "entries named " + kernel + " in " + KernelProfiler.entries());
        return found.get(0);
    }

    @Test
    void timesEachKernelByShapeWhileStarted() {
        try (Tensor x = Torch.randn(2, 3, 8, 8); Tensor w = Torch.randn(4, 3, 3, 3)) {
            KernelProfiler.start();
            for (int i = 0; i < 3; i++) {
                try (Tensor y = F.conv2d(x, w, null, new int[] {1}, new int[] {1}, new int[] {1}, 1); Tensor r = y.relu()) {
                    assertEquals(4, r.size(1));
                }
            }
            KernelProfiler.stop();
            try (Tensor y = F.conv2d(x, w, null, new int[] {1}, new int[] {1}, new int[] {1}, 1)) {
                assertEquals(8, y.size(2));
            }
        }
        // Structured ops (docs/OPS.md) are recorded under their kernel name and result shape, as pointwise ops.
        KernelProfiler.Entry conv = find("convolution [2, 4, 8, 8]");
        assertEquals(3, conv.calls(), "calls after stop() are not recorded");
        assertTrue(conv.totalMillis() > 0);
        // Pointwise ops are recorded under their kernel name in the op registry (docs/OPS.md).
        assertEquals(3, find("relu [2, 4, 8, 8]").calls());
        assertTrue(KernelProfiler.table(3).contains("convolution [2, 4, 8, 8]"));
        KernelProfiler.reset();
        assertTrue(KernelProfiler.entries().isEmpty());
    }

    @Test
    void threadCpuTimeIsWhatTheCallingThreadSpentInTheKernels() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        try (Tensor x = Torch.randn(8, 16, 16, 16); Tensor w = Torch.randn(16, 16, 3, 3)) {
            KernelProfiler.start(true);
            long c0 = threads.getCurrentThreadCpuTime();
            try (Tensor y = F.conv2d(x, w, null, new int[] {1}, new int[] {1}, new int[] {1}, 1)) {
                assertEquals(16, y.size(1));
            }
            long spent = threads.getCurrentThreadCpuTime() - c0;
            KernelProfiler.stop();
            // The kernel's CPU time is part of the calling thread's (with more kernel threads, the others' is not counted).
            double ms = find("convolution [8, 16, 16, 16]").totalMillis();
            assertTrue(ms > 0 && ms <= spent / 1e6 + 1e-9, ms + " ms recorded, the thread spent " + spent / 1e6);
        }
        // start() is wall-clock time again.
        KernelProfiler.start();
        assertTrue(Math.abs(KernelProfiler.clock() - System.nanoTime()) < 60_000_000_000L);
    }

    @Test
    void backendsAreWrappedOnlyWhileStarted() {
        Backend plain = Backends.of(Device.cpu());
        assertTrue(plain instanceof HoldingBackend);
        KernelProfiler.start();
        Backend wrapped = Backends.of(Device.cpu());
        assertTrue(wrapped instanceof ProfilingBackend);
        assertSame(wrapped, Backends.of(Device.cpu()), "one wrapper per backend");
        KernelProfiler.stop();
        assertSame(plain, Backends.of(Device.cpu()));
    }

    @Test
    void kernelErrorsPassThroughUnchanged() {
        KernelProfiler.start();
        try (Tensor x = Torch.randn(4, 5); Tensor bad = Torch.tensor(new long[] {0, 7}, 2)) {
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> x.indexSelect(1, bad).close());
            assertTrue(e.getMessage().contains("7"), e.getMessage());
        }
    }

    /** Spins until the calling thread has spent {@code millis} more of its CPU time. */
    private static void burnCpu(double millis) {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = threads.getCurrentThreadCpuTime() + (long) (millis * 1e6);
        double x = 1;
        while (threads.getCurrentThreadCpuTime() < end) {
            for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        }
        if (x == 0) throw new AssertionError();
    }

    private static KernelProfiler.Balance balanceOf(String kernel) {
        List<KernelProfiler.Balance> found = KernelProfiler.balanceEntries(2).stream().filter(b -> b.kernel().equals(kernel)).toList();
        assertEquals(1, found.size(), "balance entries named " + kernel + " in " + KernelProfiler.balanceEntries(2));
        return found.get(0);
    }

    @Test
    void balanceReportSeesSerialOneChunkAndSplitWork() {
        int threads = org.jtorch.backend.cpu.Parallel.numThreads();
        org.jtorch.backend.cpu.Parallel.setNumThreads(2);
        try {
            KernelProfiler.start(true, true);
            // Work that never enters the pool: all serial, none of it in a one-chunk region.
            long t0 = KernelProfiler.begin();
            burnCpu(20);
            KernelProfiler.end("outside the pool", (org.jtorch.op.StridedView) null, t0);
            // A region with one chunk (n below the grain): serial, and counted as one chunk.
            t0 = KernelProfiler.begin();
            org.jtorch.backend.cpu.Parallel.forRange(1, 1, (b, e) -> burnCpu(20));
            KernelProfiler.end("one chunk", (org.jtorch.op.StridedView) null, t0);
            // Two chunks that wait for each other to start, so each runs on its own thread whatever the machine's load.
            java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(2);
            t0 = KernelProfiler.begin();
            org.jtorch.backend.cpu.Parallel.forRange(2, 1, (b, e) -> {
                started.countDown();
                try {
                    assertTrue(started.await(60, java.util.concurrent.TimeUnit.SECONDS), "the second chunk never started");
                } catch (InterruptedException ex) {
                    throw new AssertionError(ex);
                }
                burnCpu(20);
            });
            KernelProfiler.end("two chunks", (org.jtorch.op.StridedView) null, t0);
            // Three equal chunks on two threads: had each thread a core, one takes two, so a third of the work is uneven.
            t0 = KernelProfiler.begin();
            org.jtorch.backend.cpu.Parallel.forRangeBalanced(3, 1, (b, e) -> burnCpu(10 * (e - b)));
            KernelProfiler.end("three chunks", (org.jtorch.op.StridedView) null, t0);
            KernelProfiler.stop();

            KernelProfiler.Balance outside = balanceOf("outside the pool");
            assertTrue(outside.serialMs() >= 19 && outside.serialMs() <= outside.callerMs(), outside.toString());
            assertEquals(0, outside.oneChunkMs(), 1e-9, outside.toString());
            assertEquals(0, outside.workersMs(), 1e-9, outside.toString());
            assertEquals(1, outside.largestShare(), 1e-6, outside.toString());
            assertTrue(outside.unbalancedMs(2) >= 9.5, outside.toString());

            KernelProfiler.Balance oneChunk = balanceOf("one chunk");
            assertTrue(oneChunk.oneChunkMs() >= 19 && oneChunk.serialMs() >= oneChunk.oneChunkMs(), oneChunk.toString());
            assertEquals(0, oneChunk.workersMs(), 1e-9, oneChunk.toString());
            assertEquals(1, oneChunk.largestShare(), 1e-6, oneChunk.toString());

            KernelProfiler.Balance split = balanceOf("two chunks");
            assertTrue(split.workersMs() >= 19, split.toString());
            assertTrue(split.callerMs() - split.waitMs() - split.serialMs() >= 19, "the caller's own chunk: " + split);
            assertTrue(split.largestShare() < 0.7, split.toString());
            assertTrue(split.serialMs() < 5, split.toString());
            assertTrue(split.bestSplitMs() >= 19 && split.unbalancedMs(2) < 5, split.toString());

            KernelProfiler.Balance three = balanceOf("three chunks");
            assertTrue(three.workMs() >= 29 && three.bestSplitMs() >= 19, three.toString());
            assertEquals(three.workMs() / 3, three.unbalancedMs(2) * 2, 4, three.toString());
            // The serial kernels lead the report; a kernel's line shows its share.
            assertEquals(java.util.Set.of("outside the pool", "one chunk"), java.util.Set.of(
                    KernelProfiler.balanceEntries(2).get(0).kernel(), KernelProfiler.balanceEntries(2).get(1).kernel()));
            String table = KernelProfiler.balanceTable(1, 2, 10);
            assertTrue(table.contains("100%") && table.contains("two chunks"), table);
        } finally {
            KernelProfiler.stop();
            org.jtorch.backend.cpu.Parallel.setNumThreads(threads);
        }
    }

    @Test
    void balanceReportCoversDispatchedKernelsOnlyWhileOn() {
        int threads = org.jtorch.backend.cpu.Parallel.numThreads();
        org.jtorch.backend.cpu.Parallel.setNumThreads(2);
        try (Tensor x = Torch.randn(1 << 20)) {
            KernelProfiler.start(true);
            x.relu().close();
            KernelProfiler.stop();
            assertTrue(KernelProfiler.balanceEntries(2).isEmpty(), "no balance report without asking");
            KernelProfiler.reset();
            KernelProfiler.start(false, true);
            x.relu().close();
            KernelProfiler.stop();
            KernelProfiler.Balance relu = balanceOf("relu [1048576]");
            assertEquals(1, relu.calls());
            assertTrue(relu.callerMs() > 0 && relu.workMs() > 0, relu.toString());
        } finally {
            org.jtorch.backend.cpu.Parallel.setNumThreads(threads);
        }
    }
}
