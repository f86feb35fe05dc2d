package org.jtorch.backend;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jtorch.op.StridedView;

/**
 * Host time spent in each backend kernel, keyed by kernel and operand shapes (the first two tensor
 * or view arguments): where a training step's time goes, like {@code torch.profiler}'s operator table. While
 * {@linkplain #start() started}, {@link Backends#of} hands out backends whose every kernel call is timed,
 * and the dispatcher times each declared op's kernel under its registry kernel name ({@code relu},
 * {@code add}, {@code div_floor}: docs/OPS.md's kernel names) and output shape.
 * On CUDA the times are those of enqueueing: kernels run asynchronously.
 *
 * <p>With the balance report on ({@link #start(boolean, boolean)}) each kernel call also records how its CPU work split
 * over the intra-op pool's threads ({@link SplitCpu#current}): the calling thread's CPU time, the part of it outside
 * the parallel chunks (serial), the pool workers' chunks, and the largest thread's part; {@link #balanceTable} lists
 * the kernels by the CPU time a perfect split would have taken off the largest thread.
 */
public final class KernelProfiler {
    private static volatile boolean active;
    private static volatile boolean threadCpuTime;
    private static volatile boolean balance;
    /** The calling thread's open kernel calls while the balance report is on: nested calls (a kernel timed inside another). */
    private static final ThreadLocal<ArrayDeque<Frame>> OPEN = ThreadLocal.withInitial(ArrayDeque::new);
    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();
    private static final Map<String, Totals> TOTALS = new ConcurrentHashMap<>();
    private static final Map<Backend, Backend> WRAPPED = new ConcurrentHashMap<>();

    private KernelProfiler() {}

    /** One kernel and shape: how often it ran and its total host time. */
    public record Entry(String kernel, long calls, double totalMillis) {}

    private static final class Totals {
        final AtomicLong calls = new AtomicLong();
        final AtomicLong nanos = new AtomicLong();
        // The balance report's sums over calls, CPU nanoseconds (see Balance).
        final AtomicLong callerCpu = new AtomicLong();
        final AtomicLong serialCpu = new AtomicLong();
        final AtomicLong oneChunkCpu = new AtomicLong();
        final AtomicLong waitCpu = new AtomicLong();
        final AtomicLong workersCpu = new AtomicLong();
        final AtomicLong largestThreadCpu = new AtomicLong();
        final AtomicLong spanCpu = new AtomicLong();
    }

    /** A kernel call in progress under the balance report: its start on the profiler's clock and the CPU counters then. */
    private record Frame(long t0, long callerCpu, SplitCpu split) {}

    /**
     * How one kernel's CPU work split over the intra-op threads, in ms summed over its calls (thread CPU time): the calling
     * thread's ({@code callerMs}: its chunks, its serial part and its wait), the part of it outside any parallel chunk
     * ({@code serialMs}, of which {@code oneChunkMs} in regions that had one chunk though the pool had more threads), the
     * caller's spinning for the other threads' chunks ({@code waitMs}), the pool workers' chunks ({@code workersMs}), the
     * sum over calls of the busiest thread's CPU ({@code largestThreadMs}: as the machine's load let the threads run), and
     * the time of the parallel regions' chunks had each thread its own core ({@code spanMs}, {@link SplitCpu#spanCpu}).
     */
    public record Balance(String kernel, long calls, double callerMs, double serialMs, double oneChunkMs, double waitMs,
                          double workersMs, double largestThreadMs, double spanMs) {
        /** The work of all threads: the caller's CPU less its waiting, plus the workers'. */
        public double workMs() {
            return callerMs - waitMs + workersMs;
        }

        /** The busiest thread's part of the work as the threads ran (1/threads when split evenly, 1 when serial). */
        public double largestShare() {
            return workMs() > 0 ? largestThreadMs / workMs() : 0;
        }

        /** The kernel's time had each thread its own core: its serial part, then its regions' chunks as the threads take them. */
        public double bestSplitMs() {
            return serialMs + spanMs;
        }

        /**
         * CPU ms of {@link #bestSplitMs} above an even split of the work over {@code threads}: what the split itself (serial
         * parts, too few or uneven chunks) keeps from the other threads, whatever the machine's load.
         */
        public double unbalancedMs(int threads) {
            return Math.max(0, bestSplitMs() - workMs() / threads);
        }
    }

    /** Starts timing kernel calls in wall-clock time (adding to what was recorded before; see {@link #reset}). */
    public static void start() {
        start(false);
    }

    /**
     * Starts timing kernel calls, in the calling thread's CPU time with {@code threadCpuTime}: on a loaded machine with
     * one kernel thread ({@code JTORCH_NUM_THREADS=1}) what each kernel costs rather than how long it waited for a core.
     */
    public static void start(boolean threadCpuTime) {
        start(threadCpuTime, false);
    }

    /**
     * {@link #start(boolean)}, and with {@code balance} the balance report as well ({@link #balanceEntries}): the intra-op
     * pool then reads its threads' CPU clocks around each chunk (about a microsecond each), so the kernel times grow a little.
     */
    public static void start(boolean threadCpuTime, boolean balance) {
        KernelProfiler.threadCpuTime = threadCpuTime;
        KernelProfiler.balance = balance;
        SplitCpu.setAccounting(balance);
        active = true;
    }

    /** The clock the recorded times are differences of: {@link System#nanoTime} or the thread's CPU time (see {@link #start(boolean)}). */
    public static long clock() {
        return threadCpuTime ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    /** Stops timing; the recorded totals stay until {@link #reset}. */
    public static void stop() {
        active = false;
        balance = false;
        SplitCpu.setAccounting(false);
    }

    /**
     * Starts timing one kernel call: returns its start on {@link #clock()}, to pass to {@link #end}. With the balance
     * report on it also notes the calling thread's CPU counters.
     */
    public static long begin() {
        if (!balance) return clock();
        // The counters first and the clock last, so the profiler's own work falls outside the call.
        SplitCpu split = SplitCpu.current();
        long callerCpu = THREADS.getCurrentThreadCpuTime();
        long t0 = clock();
        OPEN.get().push(new Frame(t0, callerCpu, split));
        return t0;
    }

    /** Records the kernel call that {@link #begin} started at {@code t0}, keyed by name and output shape. */
    public static void end(String kernel, StridedView out, long t0) {
        end(kernel, new Object[] {out}, t0);
    }

    static void end(String kernel, Object[] args, long t0) {
        long nanos = clock() - t0;
        if (!balance) {
            record(kernel, args, nanos);
            return;
        }
        long callerCpu = THREADS.getCurrentThreadCpuTime();
        SplitCpu split = SplitCpu.current();
        Totals t = record(kernel, args, nanos);
        ArrayDeque<Frame> open = OPEN.get();
        // Frames above this call's are of calls that threw before recording: drop them.
        Frame f;
        do {
            f = open.poll();
        } while (f != null && f.t0() != t0);
        if (f == null) return;
        SplitCpu d = split.minus(f.split());
        long caller = callerCpu - f.callerCpu();
        long callerBusy = caller - d.waitCpu();
        long largest = callerBusy;
        for (long w : d.workerCpu()) largest = Math.max(largest, w);
        t.callerCpu.addAndGet(caller);
        t.serialCpu.addAndGet(Math.max(0, caller - d.chunkCpu() - d.waitCpu()));
        t.oneChunkCpu.addAndGet(d.oneChunkCpu());
        t.waitCpu.addAndGet(d.waitCpu());
        t.workersCpu.addAndGet(d.workersCpu());
        t.largestThreadCpu.addAndGet(largest);
        t.spanCpu.addAndGet(d.spanCpu());
    }

    public static boolean isActive() {
        return active;
    }

    /** Forgets everything recorded. */
    public static void reset() {
        TOTALS.clear();
    }

    /** The recorded kernels, most total time first. */
    public static List<Entry> entries() {
        List<Entry> list = new ArrayList<>();
        TOTALS.forEach((k, t) -> list.add(new Entry(k, t.calls.get(), t.nanos.get() / 1e6)));
        list.sort((a, b) -> Double.compare(b.totalMillis(), a.totalMillis()));
        return list;
    }

    /** The entries as a table with times and call counts divided by {@code perRuns} (say, the steps timed). */
    public static String table(int perRuns) {
        StringBuilder sb = new StringBuilder(String.format("%10s %8s  %s%n", "ms", "calls", "kernel [shapes]"));
        double total = 0;
        for (Entry e : entries()) {
            sb.append(String.format("%10.3f %8.1f  %s%n", e.totalMillis() / perRuns, (double) e.calls() / perRuns, e.kernel()));
            total += e.totalMillis();
        }
        sb.append(String.format("%10.3f %8s  total%n", total / perRuns, ""));
        return sb.toString();
    }

    static Backend wrapIfActive(Backend backend) {
        return active ? WRAPPED.computeIfAbsent(backend, ProfilingBackend::new) : backend;
    }

    /** Records one call of a registered kernel (the dispatcher's profiling layer), keyed by name and output shape. */
    public static void recordKernel(String kernel, StridedView out, long nanos) {
        record(kernel, new Object[] {out}, nanos);
    }

    static Totals record(String kernel, Object[] args, long nanos) {
        Totals t = TOTALS.computeIfAbsent(key(kernel, args), k -> new Totals());
        t.calls.incrementAndGet();
        t.nanos.addAndGet(nanos);
        return t;
    }

    /** The balance report's kernels (recorded while it was on), most CPU time above an even split over {@code threads} first. */
    public static List<Balance> balanceEntries(int threads) {
        List<Balance> list = new ArrayList<>();
        TOTALS.forEach((k, t) -> {
            if (t.callerCpu.get() > 0) {
                list.add(new Balance(k, t.calls.get(), t.callerCpu.get() / 1e6, t.serialCpu.get() / 1e6,
                        t.oneChunkCpu.get() / 1e6, t.waitCpu.get() / 1e6, t.workersCpu.get() / 1e6, t.largestThreadCpu.get() / 1e6,
                        t.spanCpu.get() / 1e6));
            }
        });
        list.sort((a, b) -> Double.compare(b.unbalancedMs(threads), a.unbalancedMs(threads)));
        return list;
    }

    /**
     * The balance report as a table, ms (thread CPU time) and calls divided by {@code perRuns}, for {@code threads} intra-op
     * threads: the work of all threads; the kernel's time had each thread its own core (best) and its ms above an even
     * split (uneven, the list's order); the caller's serial part (and of it the one-chunk regions); as the threads ran, the
     * busiest one's share, the caller's waiting and the workers' part. The {@code top} kernels with the most uneven ms.
     */
    public static String balanceTable(int perRuns, int threads, int top) {
        StringBuilder sb = new StringBuilder(String.format("%9s %9s %9s %9s %9s %6s %8s %9s %7s  %s%n", "work ms", "best ms",
                "uneven ms", "serial ms", "1-chunk", "max%", "wait ms", "workers", "calls", "kernel [shapes]"));
        double work = 0, best = 0, uneven = 0, serial = 0, oneChunk = 0, largest = 0, wait = 0, workers = 0;
        List<Balance> all = balanceEntries(threads);
        for (int i = 0; i < all.size(); i++) {
            Balance b = all.get(i);
            work += b.workMs();
            best += b.bestSplitMs();
            uneven += b.unbalancedMs(threads);
            serial += b.serialMs();
            oneChunk += b.oneChunkMs();
            largest += b.largestThreadMs();
            wait += b.waitMs();
            workers += b.workersMs();
            if (i < top) {
                sb.append(String.format("%9.3f %9.3f %9.3f %9.3f %9.3f %5.0f%% %8.3f %9.3f %7.1f  %s%n", b.workMs() / perRuns,
                        b.bestSplitMs() / perRuns, b.unbalancedMs(threads) / perRuns, b.serialMs() / perRuns, b.oneChunkMs() / perRuns,
                        100 * b.largestShare(), b.waitMs() / perRuns, b.workersMs() / perRuns, (double) b.calls() / perRuns, b.kernel()));
            }
        }
        sb.append(String.format("%9.3f %9.3f %9.3f %9.3f %9.3f %5.0f%% %8.3f %9.3f %7s  total (%d kernels; nested kernels count in both)%n",
                work / perRuns, best / perRuns, uneven / perRuns, serial / perRuns, oneChunk / perRuns, work > 0 ? 100 * largest / work : 0,
                wait / perRuns, workers / perRuns, "", all.size()));
        return sb.toString();
    }

    private static String key(String kernel, Object[] args) {
        StringBuilder sb = new StringBuilder(kernel);
        int shown = 0;
        if (args != null) {
            for (Object a : args) {
                if (a instanceof StridedView v && shown++ < 2) sb.append(' ').append(Arrays.toString(v.shape()));
            }
        }
        return sb.toString();
    }

    /** {@code family}'s calls timed under "name.method", for the kernel families of {@link ProfilingBackend}. */
    @SuppressWarnings("unchecked")
    static <T> T timed(Class<T> family, T target, String name) {
        return (T) Proxy.newProxyInstance(family.getClassLoader(), new Class<?>[] {family}, (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) return method.invoke(target, args);
            long t0 = begin();
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                end(name + "." + method.getName(), args, t0);
            }
        });
    }
}
