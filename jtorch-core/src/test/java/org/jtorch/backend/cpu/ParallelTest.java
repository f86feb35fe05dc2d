package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link Parallel#forRange} runs each job's own body over exactly its range, once, before returning; a
 * thread can turn its own parallelism off; {@link Parallel#forRangeBalanced} splits finer than one chunk a thread.
 */
class ParallelTest {
    @Test
    void everyChunkRunsTheCurrentJobsBodyBeforeForRangeReturns() {
        int saved = Parallel.numThreads();
        Parallel.setNumThreads(2);
        try {
            int n = 64;
            int[] owner = new int[n];
            for (int job = 1; job <= 20_000; job++) {
                int id = job;
                // A worker woken for an earlier job must not run that job's body on this job's chunks.
                Parallel.forRange(n, 1, (begin, end) -> {
                    for (long i = begin; i < end; i++) owner[(int) i] = id;
                });
                for (int i = 0; i < n; i++) {
                    if (owner[i] != id) {
                        assertEquals(id, owner[i], "job " + id + " index " + i + ": " + Arrays.toString(owner));
                    }
                }
            }
        } finally {
            Parallel.setNumThreads(saved);
        }
    }

    @Test
    void aThreadCanTurnItsOwnParallelismOff() throws Exception {
        int saved = Parallel.numThreads();
        Parallel.setNumThreads(2);
        try {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread serial = new Thread(() -> {
                try {
                    Parallel.setSerialOnThisThread(true);
                    assertTrue(Parallel.serialOnThisThread());
                    assertTrue(Parallel.inParallelRegion(), "kernels choosing their thread count see 1 thread");
                    Thread self = Thread.currentThread();
                    int[] chunks = new int[1];
                    Parallel.forChunks(2, (b, e) -> {
                        assertSame(self, Thread.currentThread(), "the body runs inline");
                        assertEquals(0, b);
                        assertEquals(2, e);
                        chunks[0]++;
                    });
                    assertEquals(1, chunks[0], "one inline call over the whole range");
                    Parallel.setSerialOnThisThread(false);
                    assertFalse(Parallel.inParallelRegion());
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            serial.start();
            serial.join();
            if (failure.get() != null) throw new AssertionError("on the serial thread", failure.get());
            // Other threads keep their parallelism: two chunks, two calls.
            assertFalse(Parallel.serialOnThisThread());
            assertFalse(Parallel.inParallelRegion());
            Set<String> ranges = ConcurrentHashMap.newKeySet();
            Parallel.forChunks(2, (b, e) -> ranges.add(b + ".." + e));
            assertEquals(Set.of("0..1", "1..2"), ranges);
        } finally {
            Parallel.setNumThreads(saved);
        }
    }

    @Test
    void balancedRangesCoverEveryIndexOnceInMoreChunksThanThreads() {
        int saved = Parallel.numThreads();
        Parallel.setNumThreads(2);
        try {
            int n = 128;
            for (int job = 0; job < 2_000; job++) {
                int[] visits = new int[n];
                Set<String> chunks = ConcurrentHashMap.newKeySet();
                Parallel.forRangeBalanced(n, 1, (begin, end) -> {
                    chunks.add(begin + ".." + end);
                    for (long i = begin; i < end; i++) visits[(int) i]++;
                });
                for (int i = 0; i < n; i++) assertEquals(1, visits[i], "job " + job + " index " + i);
                assertEquals(Math.min(n, 2 * Parallel.chunksPerThread()), chunks.size(), "chunks of job " + job + ": " + chunks);
            }
            // The grain bounds the chunk count: 10 indices in chunks of at least 4 make two.
            Set<String> coarse = ConcurrentHashMap.newKeySet();
            Parallel.forRangeBalanced(10, 4, (b, e) -> coarse.add(b + ".." + e));
            assertEquals(Set.of("0..5", "5..10"), coarse);
            // A chunk's exception reaches the caller, after every other chunk has finished.
            int[] ran = new int[1];
            IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> Parallel.forRangeBalanced(n, 1, (b, e) -> {
                synchronized (ran) {
                    ran[0] += (int) (e - b);
                }
                if (b == 0) throw new IllegalStateException("chunk 0");
            }));
            assertEquals("chunk 0", thrown.getMessage());
            assertEquals(n, ran[0]);
        } finally {
            Parallel.setNumThreads(saved);
        }
    }
}
