package org.jtorch.bench;

import java.util.Arrays;

/** Wall-clock timing with warm-up and medians: benchmarks on a shared 2-core machine are noisy. */
final class Timing {
    private Timing() {}

    /** Median seconds per call of {@code body} over {@code reps} timed runs after {@code warmup} runs. */
    static double median(int warmup, int reps, Runnable body) {
        for (int i = 0; i < warmup; i++) body.run();
        double[] t = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            body.run();
            t[i] = (System.nanoTime() - t0) * 1e-9;
        }
        Arrays.sort(t);
        return t[reps / 2];
    }

    /**
     * As {@link #median}, in CPU seconds of the calling thread: on a loaded machine, with one intra-op thread
     * ({@code JTORCH_NUM_THREADS=1}), what the work costs rather than how long it waited for a core.
     */
    static double medianCpu(int warmup, int reps, Runnable body) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int i = 0; i < warmup; i++) body.run();
        double[] t = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = mx.getCurrentThreadCpuTime();
            body.run();
            t[i] = (mx.getCurrentThreadCpuTime() - t0) * 1e-9;
        }
        Arrays.sort(t);
        return t[reps / 2];
    }

    /** Median seconds per iteration, timing batches of {@code inner} iterations (for sub-microsecond ops). */
    static double medianPerIteration(int batches, int inner, Runnable body) {
        return median(Math.max(3, batches / 4), batches, () -> {
            for (int i = 0; i < inner; i++) body.run();
        }) / inner;
    }

    /**
     * {@code --balance}: the kernel profiles also list how each kernel's CPU work split over the intra-op threads
     * ({@code KernelProfiler.balanceTable}).
     */
    static volatile boolean balanceReport;

    /** Kernels the balance report lists: those with the most CPU time above an even split. */
    private static final int BALANCE_ROWS = 40;

    /** Profiled steps run before the recorded ones (see {@link #kernelProfile(int, int, Runnable, boolean)}). */
    private static final int PROFILED_WARMUP_STEPS = 5;

    /** Each kernel's host time per step ({@code KernelProfiler}'s table) over {@code steps} steps after {@code warmup}. */
    static String kernelProfile(int warmup, int steps, Runnable step) {
        return kernelProfile(warmup, steps, step, false);
    }

    /**
     * {@link #kernelProfile(int, int, Runnable)}, in the calling thread's CPU time with {@code threadCpuTime}.
     *
     * <p>A few profiled steps run and are forgotten before the timed ones: switching the profiler on sends every kernel
     * call through new timing code, and a kernel called once a step (a pool, the loss, the stem) otherwise reads several
     * times its cost while that code is compiled (ResNet-20's global average pool: 1.25 ms in the first profiled steps,
     * 0.17 ms after).
     */
    static String kernelProfile(int warmup, int steps, Runnable step, boolean threadCpuTime) {
        for (int i = 0; i < warmup; i++) step.run();
        org.jtorch.backend.KernelProfiler.start(threadCpuTime, balanceReport);
        try {
            for (int i = 0; i < PROFILED_WARMUP_STEPS; i++) step.run();
            org.jtorch.backend.KernelProfiler.reset();
            for (int i = 0; i < steps; i++) step.run();
        } finally {
            org.jtorch.backend.KernelProfiler.stop();
        }
        String table = org.jtorch.backend.KernelProfiler.table(steps);
        if (!balanceReport) return table;
        int threads = org.jtorch.backend.cpu.Parallel.numThreads();
        return table + "how the kernels' CPU work split over " + threads + " intra-op threads (thread CPU time, ms per step;"
                + " best: the kernel's time had each thread its own core, its serial part then its chunks as the threads take"
                + " them; uneven: best less an even split of the work; serial: the caller's ms outside parallel chunks, of which"
                + " 1-chunk in regions of one chunk; as the threads ran at this load, max%: the busiest thread's share, wait:"
                + " the caller spinning for the others' chunks, workers: the pool threads' chunks):\n" + org.jtorch.backend.KernelProfiler.balanceTable(steps, threads, BALANCE_ROWS);
    }
}
