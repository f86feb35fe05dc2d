package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** {@link Parallel#forRange} runs each job's own body over exactly its range, once, before returning. */
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
}
