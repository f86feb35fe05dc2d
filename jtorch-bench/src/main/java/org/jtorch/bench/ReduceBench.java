package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;

/**
 * Reductions and softmax on 16M floats (64 MiB), matching {@code python/bench_reduce.py}: over everything, along
 * the rows and along the columns of a 4096x4096 matrix. Prints GB/s (bytes read, plus bytes written for softmax)
 * and, for jtorch, each figure as a fraction of this machine's read or copy bandwidth at the same 64 MiB
 * ({@code *_of_ceiling}, {@link PeakBench#bandwidthAt}: a large last-level cache holds part of it).
 */
final class ReduceBench {
    private static final int BIG = 1 << 24;

    private ReduceBench() {}

    /**
     * With {@code cpuTime} (meant for {@code JTORCH_NUM_THREADS=1}), times in the calling thread's CPU time, which a
     * loaded machine disturbs less than wall time; {@code bench_reduce.py --cputime} does the same on one thread.
     */
    static Map<String, Double> run(boolean quick, boolean cpuTime) {
        int reps = quick ? 5 : 15;
        PeakBench.Timer timing = cpuTime ? Timing::medianCpu : Timing::median;
        Map<String, Double> r = new LinkedHashMap<>();
        Map<String, Boolean> writes = new LinkedHashMap<>();
        try (Tensor a = Torch.rand(BIG); Tensor m = a.view(4096, 4096)) {
            Map<String, Supplier<Tensor>> reads = new LinkedHashMap<>();
            reads.put("sum_16M", a::sum);
            reads.put("sum_rows_4096x4096", () -> m.sum(new int[] {1}, false));
            reads.put("sum_cols_4096x4096", () -> m.sum(new int[] {0}, false));
            reads.put("mean_16M", a::mean);
            reads.put("amax_16M", a::max);
            reads.put("amax_rows_4096x4096", () -> m.amax(new int[] {1}, false));
            reads.put("argmax_16M", a::argmax);
            reads.put("argmax_rows_4096x4096", () -> m.argmax(1, false));
            reads.put("argmax_cols_4096x4096", () -> m.argmax(0, false));
            reads.put("var_16M", a::var);
            reads.put("var_rows_4096x4096", () -> m.var(new int[] {1}, 1, false));
            reads.put("norm_16M", a::norm);
            reads.put("softmax_rows_4096x4096", () -> m.softmax(1));
            reads.put("log_softmax_rows_4096x4096", () -> m.logSoftmax(1));
            reads.put("softmax_cols_4096x4096", () -> m.softmax(0));
            reads.put("log_softmax_cols_4096x4096", () -> m.logSoftmax(0));
            reads.forEach((name, op) -> {
                boolean softmax = name.contains("softmax");
                // A second of warm-up (at least 5 calls), so that C2 has compiled the kernel before the timed runs;
                // slow ops (a generic path) get fewer timed runs, about two seconds' worth.
                long t0 = System.nanoTime();
                int calls = 0;
                while (calls < 5 || System.nanoTime() - t0 < 1_000_000_000L) {
                    op.get().close();
                    calls++;
                }
                double once = (System.nanoTime() - t0) * 1e-9 / calls;
                double t = timing.median(0, (int) Math.max(5, Math.min(reps, 2 / once)), () -> op.get().close());
                r.put(name + "_GBps", (softmax ? 8.0 : 4.0) * BIG / t / 1e9);
                writes.put(name, softmax);
            });
        }
        PeakBench.Bandwidth ceiling = PeakBench.bandwidthAt(4L * BIG, quick, cpuTime);
        writes.forEach((name, softmax) -> r.put(name + "_of_ceiling",
                r.get(name + "_GBps") / (softmax ? ceiling.copyGBps() : ceiling.readGBps())));
        return r;
    }
}
