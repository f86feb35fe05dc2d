package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.ChildJvm;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * Issue 19, defect 1: a tensor closed while other threads compute on it, with a third thread emptying the
 * allocator's cache. It crashed the JVM (SIGSEGV in the sum and multiply kernels) or returned wrong sums.
 * In a child JVM, since a regression would crash the JVM.
 */
class CloseWhileComputingTest {
    @Test
    void closingATensorOthersComputeOnGivesRightResultsOrTheClosedTensorErrorNeverACrash() throws Exception {
        // Four intra-op threads on any machine: the kernels' parallel tasks must be covered as well.
        ChildJvm.Result r = ChildJvm.run(Scenario.class, Duration.ofMinutes(3), Map.of("JTORCH_NUM_THREADS", "4"), "3");
        assertFalse(r.timedOut(), "the child JVM hung:\n" + r.output());
        assertFalse(r.crashed(), "the child JVM crashed:\n" + r.output());
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(r.output().contains("allocated after: 0"), r.output());
    }

    /**
     * Rounds of: a 1024x1024 tensor of ones, and a view of its first half; one thread sums the tensor and
     * adds it to itself, another sums the view; the main thread closes the tensor after a random delay, then the
     * view. Meanwhile one thread empties the cache and one allocates and frees tensors of the same size (so a
     * block freed too early is soon overwritten). Every result must be exact, every failure the closed-tensor
     * error of a tensor that was closed, and no memory may be left allocated at the end. Exits 1 otherwise.
     */
    static final class Scenario {
        static final double FULL = 1024 * 1024;
        static final AtomicReference<String> failure = new AtomicReference<>();
        static final AtomicLong results = new AtomicLong();
        static final AtomicLong closedErrors = new AtomicLong();

        public static void main(String[] args) throws InterruptedException {
            long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
            AtomicBoolean done = new AtomicBoolean();
            List<Thread> background = List.of(
                    new Thread(() -> {
                        while (!done.get()) Torch.emptyCache(Device.cpu());
                    }),
                    new Thread(() -> {
                        while (!done.get()) Torch.full(new long[] {1024, 1024}, 7.0).close();
                    }));
            background.forEach(Thread::start);
            int rounds = 0;
            while (System.nanoTime() < deadline && failure.get() == null) {
                round();
                rounds++;
            }
            done.set(true);
            for (Thread t : background) t.join();
            Torch.emptyCache(Device.cpu());
            long allocated = Torch.memoryStats(Device.cpu()).allocatedBytes();
            System.out.println("rounds: " + rounds + ", exact results: " + results + ", closed-tensor errors: "
                    + closedErrors + ", allocated after: " + allocated);
            if (failure.get() != null) {
                System.out.println("FAILED: " + failure.get());
                System.exit(1);
            }
            if (allocated != 0) System.exit(1);
        }

        static void round() throws InterruptedException {
            Tensor t = Torch.ones(1024, 1024);
            Tensor half = t.narrow(0, 0, 512);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicBoolean tensorClosed = new AtomicBoolean();
            AtomicBoolean viewClosed = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            workers.add(new Thread(() -> compute(stop, tensorClosed, () -> {
                check("sum", t.sum().item(), FULL);
                check("add", t.add(t).sum().item(), 2 * FULL);
            })));
            workers.add(new Thread(() -> compute(stop, viewClosed, () -> check("view sum", half.sum().item(), FULL / 2))));
            workers.forEach(Thread::start);
            Thread.sleep(ThreadLocalRandom.current().nextInt(4));
            tensorClosed.set(true);
            t.close();
            Thread.sleep(ThreadLocalRandom.current().nextInt(4));
            viewClosed.set(true);
            half.close();
            Thread.sleep(2);
            stop.set(true);
            for (Thread w : workers) w.join();
        }

        /**
         * Runs {@code body} until stopped, each time in a scope (which also closes the result an op allocated before
         * its kernel found the input closed); a closed-tensor error is right only once a tensor it uses was closed.
         */
        static void compute(AtomicBoolean stop, AtomicBoolean closedWhen, Runnable body) {
            while (!stop.get()) {
                try (MemoryScope scope = new MemoryScope()) {
                    body.run();
                    results.incrementAndGet();
                } catch (IllegalStateException e) {
                    if (e.getMessage() != null && e.getMessage().contains("was used after close()") && closedWhen.get()) {
                        closedErrors.incrementAndGet();
                    } else {
                        fail(e);
                    }
                } catch (RuntimeException | Error e) {
                    fail(e);
                }
            }
        }

        static void check(String what, double got, double expected) {
            if (got != expected) failure.compareAndSet(null, what + " = " + got + ", expected " + expected);
        }

        static void fail(Throwable e) {
            java.io.StringWriter w = new java.io.StringWriter();
            e.printStackTrace(new java.io.PrintWriter(w));
            failure.compareAndSet(null, w.toString());
        }
    }
}
