package org.jtorch.backend.cpu;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.jtorch.backend.SplitCpu;

/**
 * Intra-op parallelism over a fixed pool of worker threads, like ATen's {@code parallel_for}.
 *
 * <p>The caller takes part in the work, so {@code numThreads() == 1} runs everything inline. Workers
 * spin briefly after each job before parking: back-to-back ops (the common case in training) then
 * start in a fraction of a microsecond instead of paying a park/unpark round trip each.
 *
 * <p>Thread safety: {@link #forRange} may be called from any thread; calls from different threads are
 * serialised (one parallel region at a time), and a nested call from inside a body runs inline.
 *
 * <p>A thread can turn intra-op parallelism off for itself ({@link #setSerialOnThisThread}): its
 * regions then run inline. DataLoader workers do (as PyTorch's workers call {@code torch.set_num_threads(1)}):
 * several threads that load data at once would otherwise queue for the one pool, and wake its threads to
 * compete with them for the cores.
 */
public final class Parallel {
    /** Body of a parallel loop: process indices {@code [begin, end)}. Must not throw checked exceptions. */
    @FunctionalInterface
    public interface RangeBody {
        void run(long begin, long end);
    }

    private static final long SPIN_NANOS = 200_000;
    /** Per-thread state: inside a parallel region (pool workers always are), or parallelism turned off. */
    private static final class ThreadState {
        boolean inRegion;
        boolean serial;
        /** While split accounting is on: this thread's regions' CPU nanoseconds, by where they went ({@link SplitCpu}). */
        long chunkCpu, waitCpu, oneChunkCpu, spanCpu;
        long[] workerCpu = new long[0];

        boolean runsInline() {
            return inRegion || serial;
        }
    }

    private static final ThreadLocal<ThreadState> STATE = ThreadLocal.withInitial(ThreadState::new);
    private static final Object REGION_LOCK = new Object();

    private static volatile int numThreads = defaultThreads();
    private static final ThreadMXBean THREAD_CPU = ManagementFactory.getThreadMXBean();
    /** Whether regions record where their CPU time went ({@link #setSplitAccounting}); read once a region. */
    private static volatile boolean splitAccounting;

    static {
        // The kernel profiler (backend) reaches this pool's accounting through SplitCpu's hook, naming no CPU class.
        SplitCpu.install(new SplitCpu.Source() {
            @Override
            public void setAccounting(boolean on) {
                splitAccounting = on;
            }

            @Override
            public SplitCpu current() {
                return splitCpu();
            }
        });
    }
    private static Worker[] workers = new Worker[0];

    /**
     * One parallel region. Its counters live in the job, not in statics: a worker that read the
     * previous job and was descheduled must not take a chunk index of the next one.
     */
    private static final class Job {
        final RangeBody body;
        final long n;
        final int chunks;
        final Thread owner;
        final AtomicInteger nextChunk = new AtomicInteger();
        final AtomicInteger pendingChunks;
        volatile Throwable error;
        /** With split accounting on: each pool worker's CPU nanoseconds in this job's chunks (slot = worker index). */
        final long[] workerCpu;
        /** With split accounting on: each chunk's CPU nanoseconds, whichever thread ran it. */
        final long[] chunkCpu;

        Job(RangeBody body, long n, int chunks, Thread owner, boolean accounted) {
            this.body = body;
            this.n = n;
            this.chunks = chunks;
            this.owner = owner;
            this.pendingChunks = new AtomicInteger(chunks);
            // Sized to every worker: one woken for an earlier job may take a chunk of this one.
            this.workerCpu = accounted ? new long[workers.length] : null;
            this.chunkCpu = accounted ? new long[chunks] : null;
        }
    }

    // The job being run; null between jobs.
    private static volatile Job currentJob;

    private Parallel() {}

    private static int defaultThreads() {
        String env = System.getenv("JTORCH_NUM_THREADS");
        if (env == null) env = System.getenv("OMP_NUM_THREADS");
        if (env != null) {
            try {
                return Math.max(1, Integer.parseInt(env.trim()));
            } catch (NumberFormatException ignored) {
                // fall through to the processor count
            }
        }
        return Runtime.getRuntime().availableProcessors();
    }

    /** Number of threads (including the caller) that a parallel region uses. */
    public static int numThreads() {
        return numThreads;
    }

    /** Sets the number of intra-op threads, as {@code torch.set_num_threads}. */
    public static void setNumThreads(int n) {
        if (n < 1) throw new IllegalArgumentException("setNumThreads: expected a positive thread count, got " + n);
        synchronized (REGION_LOCK) {
            numThreads = n;
        }
    }

    /**
     * True when a parallel region started on this thread would run inline: inside a parallel region
     * (nested regions run inline), or on a thread whose intra-op parallelism is off
     * ({@link #setSerialOnThisThread}). Kernels that choose their own thread count use 1 then.
     */
    public static boolean inParallelRegion() {
        return STATE.get().runsInline();
    }

    /**
     * Turns intra-op parallelism off ({@code true}) or back on for the calling thread only: while off,
     * {@link #forRange} runs its body inline on this thread and {@link #inParallelRegion()} is true.
     * Other threads, and {@link #numThreads()}, are unaffected.
     */
    public static void setSerialOnThisThread(boolean serial) {
        STATE.get().serial = serial;
    }

    /** Whether {@link #setSerialOnThisThread} turned intra-op parallelism off for the calling thread. */
    public static boolean serialOnThisThread() {
        return STATE.get().serial;
    }

    /**
     * Runs {@code body} over {@code [0, n)} split into contiguous chunks of at least {@code grain}
     * indices, one chunk per thread at most. Returns when every chunk has finished; the first
     * exception thrown by a chunk is rethrown in the caller.
     */
    public static void forRange(long n, long grain, RangeBody body) {
        if (n <= 0) return;
        int threads = numThreads;
        long chunksWanted = Math.min(threads, Math.max(1, n / Math.max(1, grain)));
        ThreadState state = STATE.get();
        if (chunksWanted <= 1 || state.runsInline()) {
            runInline(n, body, state, threads);
            return;
        }
        synchronized (REGION_LOCK) {
            ensureWorkers((int) chunksWanted - 1);
            runJob(n, (int) chunksWanted, (int) chunksWanted - 1, body, state);
        }
    }

    /**
     * Like {@link #forRange}, but {@code [0, n)} goes in up to {@link #chunksPerThread()} chunks per thread (of at
     * least {@code grain} indices), which the threads take from a shared counter as each finishes its last. With
     * one chunk per thread, a thread slowed by its busy sibling hardware thread (or descheduled) leaves the others
     * idle at the end; with several, the others take its remaining chunks. For bodies whose per-chunk setup is
     * small against a chunk's work (a convolution's images), and whose results do not depend on which thread runs
     * a chunk.
     */
    public static void forRangeBalanced(long n, long grain, RangeBody body) {
        if (n <= 0) return;
        int threads = numThreads;
        ThreadState state = STATE.get();
        long pieces = Math.max(1, n / Math.max(1, grain));
        if (threads <= 1 || pieces <= 1 || state.runsInline()) {
            runInline(n, body, state, threads);
            return;
        }
        int chunks = (int) Math.min(pieces, (long) threads * CHUNKS_PER_THREAD);
        synchronized (REGION_LOCK) {
            ensureWorkers(Math.min(chunks, threads) - 1);
            runJob(n, chunks, Math.min(chunks, threads) - 1, body, state);
        }
    }

    /**
     * Chunks per thread that {@link #forRangeBalanced} (and kernels sizing their own chunk counts for it) aim at;
     * {@code -Djtorch.parallel.chunksPerThread=1} gives the one fixed chunk per thread of {@link #forRange}.
     */
    public static int chunksPerThread() {
        return CHUNKS_PER_THREAD;
    }

    private static final int CHUNKS_PER_THREAD = Math.max(1, Integer.getInteger("jtorch.parallel.chunksPerThread", 8));

    /** Like {@link #forRange} but with exactly {@code chunks} equal chunks of {@code [0, n)}; chunk i gets index i. */
    public static void forChunks(int chunks, RangeBody body) {
        forRange(chunks, 1, body);
    }

    /**
     * A region's body on the calling thread alone. With split accounting on, a top-level region that the pool could
     * have shared (more than one thread) but that had one chunk counts as {@link SplitCpu#oneChunkCpu}.
     */
    private static void runInline(long n, RangeBody body, ThreadState state, int threads) {
        if (!splitAccounting || threads <= 1 || state.runsInline()) {
            body.run(0, n);
            return;
        }
        long c0 = THREAD_CPU.getCurrentThreadCpuTime();
        try {
            body.run(0, n);
        } finally {
            state.oneChunkCpu += THREAD_CPU.getCurrentThreadCpuTime() - c0;
        }
    }

    private static void runJob(long n, int chunks, int helpers, RangeBody body, ThreadState state) {
        boolean accounted = splitAccounting;
        Job job = new Job(body, n, chunks, Thread.currentThread(), accounted);
        currentJob = job;
        for (int i = 0; i < helpers; i++) workers[i].wake();
        state.inRegion = true;
        try {
            long chunkCpu = drainChunks(job, -1);
            if (accounted) state.chunkCpu += chunkCpu;
        } finally {
            state.inRegion = false;
        }
        // Wait for the chunks other threads took; spin first, they are short.
        long waitStart = accounted ? THREAD_CPU.getCurrentThreadCpuTime() : 0;
        long spins = 0;
        while (job.pendingChunks.get() > 0) {
            if (++spins < 20_000) Thread.onSpinWait();
            else LockSupport.parkNanos(10_000);
        }
        currentJob = null;
        if (accounted) {
            state.waitCpu += THREAD_CPU.getCurrentThreadCpuTime() - waitStart;
            if (state.workerCpu.length < job.workerCpu.length) state.workerCpu = Arrays.copyOf(state.workerCpu, job.workerCpu.length);
            for (int i = 0; i < job.workerCpu.length; i++) state.workerCpu[i] += job.workerCpu[i];
            state.spanCpu += span(job.chunkCpu, Math.min(chunks, helpers + 1));
        }
        Throwable err = job.error;
        if (err != null) {
            if (err instanceof RuntimeException re) throw re;
            if (err instanceof Error e) throw e;
            throw new RuntimeException(err);
        }
    }

    /**
     * Takes chunks of {@code job} until none are left, on pool worker {@code worker} (-1: the region's caller). Returns
     * the CPU nanoseconds its chunks took when the job is accounted (a worker's go to its slot of the job first), else 0.
     */
    private static long drainChunks(Job job, int worker) {
        boolean accounted = job.workerCpu != null;
        // One clock reading a chunk: each chunk's time runs from the previous reading (the clock costs about 0.6 µs).
        long before = accounted ? THREAD_CPU.getCurrentThreadCpuTime() : 0, first = before;
        int c;
        while ((c = job.nextChunk.getAndIncrement()) < job.chunks) {
            long begin = job.n * c / job.chunks;
            long end = job.n * (c + 1) / job.chunks;
            try {
                job.body.run(begin, end);
            } catch (Throwable t) {
                if (job.error == null) job.error = t;
            } finally {
                if (accounted) {
                    long after = THREAD_CPU.getCurrentThreadCpuTime();
                    job.chunkCpu[c] = after - before;
                    // Written before the count below drops: the caller reads the slot once the count is zero.
                    if (worker >= 0) job.workerCpu[worker] += after - before;
                    before = after;
                }
                if (job.pendingChunks.decrementAndGet() == 0 && job.owner != Thread.currentThread()) {
                    LockSupport.unpark(job.owner);
                }
            }
        }
        return before - first;
    }

    /**
     * How long {@code threads} threads that each take the next chunk as they finish their last (as the pool's do) would take
     * over chunks of these CPU times, had each its own core: the region's time if the load let every thread run.
     */
    static long span(long[] chunkCpu, int threads) {
        long[] busyUntil = new long[threads];
        for (long c : chunkCpu) {
            int first = 0;
            for (int t = 1; t < threads; t++) if (busyUntil[t] < busyUntil[first]) first = t;
            busyUntil[first] += c;
        }
        long span = 0;
        for (long b : busyUntil) span = Math.max(span, b);
        return span;
    }

    /**
     * Switches split accounting on or off for every thread's later regions: each region's caller then adds up the CPU
     * time of its chunks, of waiting for the other threads' chunks, of the pool workers' chunks, and of regions that ran
     * as one chunk ({@link #splitCpu}). The kernel profiler's balance report ({@code KernelProfiler.start(cpu, true)}); off,
     * a region pays one volatile read for it.
     */
    public static void setSplitAccounting(boolean on) {
        splitAccounting = on;
    }

    /** The calling thread's {@link SplitCpu} totals so far. */
    public static SplitCpu splitCpu() {
        ThreadState s = STATE.get();
        return new SplitCpu(s.chunkCpu, s.waitCpu, s.oneChunkCpu, s.spanCpu, s.workerCpu.clone());
    }

    private static void ensureWorkers(int count) {
        if (workers.length >= count) return;
        Worker[] grown = new Worker[count];
        System.arraycopy(workers, 0, grown, 0, workers.length);
        for (int i = workers.length; i < count; i++) {
            grown[i] = new Worker(i);
            grown[i].thread.start();
        }
        workers = grown;
    }

    private static final class Worker implements Runnable {
        final Thread thread;
        final int index;
        private final AtomicInteger signals = new AtomicInteger();

        Worker(int index) {
            this.index = index;
            thread = new Thread(this, "jtorch-intraop-" + index);
            thread.setDaemon(true);
        }

        void wake() {
            signals.incrementAndGet();
            LockSupport.unpark(thread);
        }

        @Override
        public void run() {
            STATE.get().inRegion = true;
            while (true) {
                long idleSince = System.nanoTime();
                while (signals.get() == 0) {
                    if (System.nanoTime() - idleSince < SPIN_NANOS) Thread.onSpinWait();
                    else LockSupport.park(this);
                }
                signals.decrementAndGet();
                Job job = currentJob;
                if (job != null) drainChunks(job, index);
            }
        }
    }
}
