package org.jtorch.backend;

import java.util.Arrays;

/**
 * Where the calling thread's regions' CPU time went while split accounting was on, as running totals (take the
 * difference of two readings): in the chunks it ran itself ({@code chunkCpu}), waiting for the chunks other threads
 * took ({@code waitCpu}), in regions that had one chunk though the pool had more threads ({@code oneChunkCpu}), and in
 * the chunks each pool worker took ({@code workerCpu[i]}, worker i), and the sum over its regions of the time their
 * chunks would take on the region's threads had each its own core ({@code spanCpu}: the chunks' CPU times placed as
 * the threads take them; unlike the workers' part, the machine's load hardly changes it). Nanoseconds of thread CPU time.
 */
public record SplitCpu(long chunkCpu, long waitCpu, long oneChunkCpu, long spanCpu, long[] workerCpu) {
    /** This reading less an earlier one. */
    public SplitCpu minus(SplitCpu earlier) {
        long[] w = Arrays.copyOf(workerCpu, workerCpu.length);
        for (int i = 0; i < Math.min(w.length, earlier.workerCpu.length); i++) w[i] -= earlier.workerCpu[i];
        return new SplitCpu(chunkCpu - earlier.chunkCpu, waitCpu - earlier.waitCpu, oneChunkCpu - earlier.oneChunkCpu,
                spanCpu - earlier.spanCpu, w);
    }

    /** The pool workers' CPU nanoseconds together. */
    public long workersCpu() {
        long sum = 0;
        for (long w : workerCpu) sum += w;
        return sum;
    }

    /** The intra-op pool's side of split accounting: {@code backend.cpu.Parallel} installs itself when it loads. */
    public interface Source {
        void setAccounting(boolean on);

        /** The calling thread's totals so far. */
        SplitCpu current();
    }

    private static final SplitCpu NONE = new SplitCpu(0, 0, 0, 0, new long[0]);
    private static volatile Source source;
    private static volatile boolean accounting;

    /**
     * Installs the pool's accounting, passing it the state asked for so far. Through this hook the kernel profiler
     * ({@code backend}) reaches the CPU pool ({@code backend.cpu}) without naming it: backend names no implementation.
     */
    public static void install(Source pool) {
        source = pool;
        pool.setAccounting(accounting);
    }

    /**
     * Switches split accounting on or off for every thread's later regions: each region's caller then adds up the CPU
     * time of its chunks, of waiting for the other threads' chunks, of the pool workers' chunks, and of regions that ran
     * as one chunk. The kernel profiler's balance report; off, a region pays one volatile read for it.
     */
    public static void setAccounting(boolean on) {
        accounting = on;
        Source pool = source;
        if (pool != null) pool.setAccounting(on);
    }

    /** The calling thread's totals so far: zeros before the pool has loaded (no region has run). */
    public static SplitCpu current() {
        Source pool = source;
        return pool == null ? NONE : pool.current();
    }
}
