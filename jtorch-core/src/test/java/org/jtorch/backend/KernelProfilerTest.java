package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
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
}
