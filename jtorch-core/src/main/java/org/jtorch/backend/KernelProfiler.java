package org.jtorch.backend;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
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
 */
public final class KernelProfiler {
    private static volatile boolean active;
    private static volatile boolean threadCpuTime;
    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();
    private static final Map<String, Totals> TOTALS = new ConcurrentHashMap<>();
    private static final Map<Backend, Backend> WRAPPED = new ConcurrentHashMap<>();

    private KernelProfiler() {}

    /** One kernel and shape: how often it ran and its total host time. */
    public record Entry(String kernel, long calls, double totalMillis) {}

    private static final class Totals {
        final AtomicLong calls = new AtomicLong();
        final AtomicLong nanos = new AtomicLong();
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
        KernelProfiler.threadCpuTime = threadCpuTime;
        active = true;
    }

    /** The clock the recorded times are differences of: {@link System#nanoTime} or the thread's CPU time (see {@link #start(boolean)}). */
    public static long clock() {
        return threadCpuTime ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    /** Stops timing; the recorded totals stay until {@link #reset}. */
    public static void stop() {
        active = false;
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

    static void record(String kernel, Object[] args, long nanos) {
        Totals t = TOTALS.computeIfAbsent(key(kernel, args), k -> new Totals());
        t.calls.incrementAndGet();
        t.nanos.addAndGet(nanos);
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
            long t0 = clock();
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                record(name + "." + method.getName(), args, clock() - t0);
            }
        });
    }
}
