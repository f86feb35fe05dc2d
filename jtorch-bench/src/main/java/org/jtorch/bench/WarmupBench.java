package org.jtorch.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;
import org.jtorch.backend.SteadyState;

/**
 * {@code jtorch bench warmup}: how long a fresh JVM takes to reach its steady state, and why. Each workload (the
 * training benchmark's MLP step, ResNet-20 at batch 128) runs in a child JVM with this JVM's flags, which records
 * itself with JFR (no flag needed: compilations, execution samples every 10 ms, the compile queues) and reports
 * <ul>
 *   <li>{@code NAME_first_step_s}: from the launch to the end of the first step;</li>
 *   <li>{@code NAME_steady_s}: from the start of the first step to the start of the steady state
 *       ({@link SteadyState}: the first five steps that average 90% of the steady throughput), and
 *       {@code NAME_steady_steps}, the steps before it;</li>
 *   <li>{@code NAME_step_ms}: the steady step; {@code NAME_target_met}: 1 when the target holds (MLP:
 *       within 2 s of the first step; ResNet-20: within 10 steps);</li>
 *   <li>{@code NAME_vector_fallback_share}: the share of the execution samples before the steady state that ran the
 *       Vector API's Java fallbacks (vector code not yet compiled by C2);</li>
 *   <li>{@code NAME_compilations}: JIT compilations (any tier) during the run, from JFR; {@code
 *       NAME_c2_compilations_to_steady}: C2's before the steady state;</li>
 *   <li>{@code NAME_warmup_compiler_cpu_s} and {@code NAME_warmup_process_cpu_s}: the CPU seconds the JIT compiler
 *       threads (Linux only) and the whole process spent from the set-up to the steady state (the whole run if it was
 *       not reached).</li>
 * </ul>
 * and, to stderr, the per-step curve, where each half second went (interpreter, C1, C2, the fallbacks, compilations
 * finished, the C2 queue), the steady state's hottest methods with the times C2 compiled them, the longest C2
 * compilations before the steady state, and C2 recompilations in the steady state. {@code --aot}: first records an
 * AOT cache with the same workload ({@code -XX:AOTCacheOutput}), then alternates runs without and with it
 * ({@code --rounds N}), so that the two are measured at the same load.
 * {@code --cputime}: the steps (and so the curve and {@code NAME_steady_s}) in the main thread's CPU time, for
 * {@code JTORCH_NUM_THREADS=1} on a loaded machine: what the warm-up costs rather than how long it waited for a core
 * (the compilers run beside it, on another core if there is one).
 */
final class WarmupBench {
    private WarmupBench() {}

    /**
     * A workload: {@code withStep} sets up its model and data, hands its training step to the timing loop and
     * releases them after; how long to run it, and the target for its warm-up.
     */
    record Workload(String name, Function<Function<Runnable, List<Double>>, List<Double>> withStep, double seconds,
            int minSteps, Target target) {}

    /** The warm-up target: at most {@code seconds} from the first step, or at most {@code steps} steps. */
    record Target(double seconds, int steps) {
        boolean met(double steadySeconds, int steadySteps) {
            return steadySteps >= 0 && steadySeconds <= seconds && steadySteps <= steps;
        }
    }

    static final List<Workload> WORKLOADS = List.of(
            new Workload("mlp", loop -> TrainingBench.mlpSteps(false, loop), 20, 50,
                    new Target(2, Integer.MAX_VALUE)),
            example("resnet20"));

    /**
     * {@code bench examples}' program {@code name} as a workload (with {@code --only}; the default run has only the two
     * above), with ResNet-20's target of at most 10 steps.
     */
    static Workload example(String name) {
        ExamplesBench.Program p = ExamplesBench.PROGRAMS.stream().filter(x -> x.name().equals(name)).findFirst().orElse(null);
        if (p == null) return null;
        return new Workload(name, loop -> loop.apply(p.setUp().get()), 20, 40, new Target(Double.POSITIVE_INFINITY, 10));
    }

    /** The workload named {@code name}: one of {@link #WORKLOADS}, or an example program; null if none. */
    static Workload workload(String name) {
        return WORKLOADS.stream().filter(w -> w.name().equals(name)).findFirst().orElseGet(() -> example(name));
    }

    /** Runs each workload (or only {@code only}) in child JVMs; with {@code aot}, alternating without and with a cache. */
    static void runAll(String only, boolean aot, int rounds, String seconds, boolean cpuTime) {
        List<String> base = new ArrayList<>();
        base.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        base.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> !a.startsWith("-XX:AOTCache")).toList());
        String classPath = System.getProperty("java.class.path");
        if (only != null && workload(only) == null) {
            System.err.println("jtorch bench warmup: unknown workload '" + only + "' (known: "
                    + String.join(", ", WORKLOADS.stream().map(Workload::name).toList()) + " and the examples' programs)");
            System.exit(2);
        }
        if (aot && !List.of(classPath.split(java.io.File.pathSeparator)).stream().allMatch(p -> p.endsWith(".jar"))) {
            System.err.println("jtorch bench warmup --aot: an AOT cache needs jars on the class path (run it through ./jtorch "
                    + "after 'mvn -DskipTests package')");
            System.exit(2);
        }
        for (Workload w : only != null ? List.of(workload(only)) : WORKLOADS) {
            Path cache = Path.of(System.getProperty("java.io.tmpdir"), "jtorch-warmup-" + w.name() + ".aot");
            if (aot) {
                System.err.println("== " + w.name() + ": recording " + cache);
                run(base, List.of("-XX:AOTCacheOutput=" + cache), classPath, w.name(), "record", seconds, cpuTime);
            }
            for (int r = 0; r < (aot ? rounds : 1); r++) {
                System.err.println("== " + w.name() + (aot ? ", round " + (r + 1) + ", without the cache" : ""));
                run(base, List.of(), classPath, w.name(), aot ? "nocache" : null, seconds, cpuTime);
                if (aot) {
                    System.err.println("== " + w.name() + ", round " + (r + 1) + ", with the cache");
                    run(base, List.of("-XX:AOTCache=" + cache), classPath, w.name(), "cache", seconds, cpuTime);
                }
            }
        }
    }

    private static void run(List<String> base, List<String> extra, String classPath, String workload, String tag,
            String seconds, boolean cpuTime) {
        List<String> cmd = new ArrayList<>(base);
        cmd.addAll(extra);
        cmd.addAll(List.of("-cp", classPath, BenchMain.class.getName(), "warmup", "--workload", workload,
                "--launched-at", Long.toString(epochMicros())));
        if (tag != null) cmd.addAll(List.of("--tag", tag));
        if (seconds != null) cmd.addAll(List.of("--seconds", seconds));
        if (cpuTime) cmd.add("--cputime");
        try {
            System.out.flush();
            int status = new ProcessBuilder(cmd).inheritIO().start().waitFor();
            if (status != 0) {
                System.err.println("jtorch bench warmup: " + workload + " failed (exit status " + status + ")");
                System.exit(1);
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The child's part: one workload's steps under a JFR recording; figures to stdout, the analysis to stderr. */
    static Map<String, Double> runOne(String name, long launchedAtMicros, String tag, Double seconds, boolean cpuTime)
            throws IOException {
        Workload w = workload(name);
        if (w == null) throw new IllegalArgumentException("jtorch bench warmup: unknown workload '" + name + "'");
        return measure(w, launchedAtMicros, tag, seconds != null ? seconds : w.seconds(), cpuTime);
    }

    /** Runs {@code w} for {@code budget} seconds (and its minimum steps) under JFR and reports it. */
    static Map<String, Double> measure(Workload w, long launchedAtMicros, String tag, double budget, boolean cpuTime)
            throws IOException {
        String key = tag == null ? w.name() : w.name() + "_" + tag;
        try (Recording rec = new Recording()) {
            rec.enable("jdk.Compilation").withThreshold(Duration.ZERO);
            rec.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(10)).withStackTrace();
            rec.enable("jdk.CompilerQueueUtilization").withPeriod(Duration.ofMillis(500));
            rec.start();
            double launchToNow = (epochMicros() - launchedAtMicros) * 1e-6;
            var threads = ManagementFactory.getThreadMXBean();
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            double[] before = {compilerCpuSeconds(), os.getProcessCpuTime() * 1e-9};
            long anchor = System.nanoTime();
            Instant[] first = new Instant[1];
            double[] firstStepEnd = new double[1];
            List<double[]> costs = new ArrayList<>();
            List<Double> wallEnds = new ArrayList<>();
            List<Double> stepSeconds = w.withStep().apply(step -> {
                first[0] = Instant.now();
                long start = System.nanoTime();
                List<Double> times = new ArrayList<>();
                while (times.size() < w.minSteps() || (System.nanoTime() - start) * 1e-9 < budget) {
                    long t0 = cpuTime ? threads.getCurrentThreadCpuTime() : System.nanoTime();
                    step.run();
                    times.add(((cpuTime ? threads.getCurrentThreadCpuTime() : System.nanoTime()) - t0) * 1e-9);
                    costs.add(new double[] {compilerCpuSeconds(), os.getProcessCpuTime() * 1e-9});
                    wallEnds.add((System.nanoTime() - start) * 1e-9);
                    if (times.size() == 1) firstStepEnd[0] = (System.nanoTime() - anchor) * 1e-9;
                }
                return times;
            });
            rec.stop();
            Path file = Files.createTempFile("jtorch-warmup", ".jfr");
            try {
                rec.dump(file);
                WarmupTimeline timeline = timeline(file, first[0], Thread.currentThread().threadId());
                Map<String, Double> r = report(key, w.target(), stepSeconds, wallEnds,
                        launchToNow + firstStepEnd[0], timeline);
                // Where the warm-up's CPU went: the JIT compilers' threads against the whole process.
                int k = r.get(key + "_steady_steps").intValue();
                double[] at = k == 0 ? before : costs.get(k > 0 ? k - 1 : costs.size() - 1);
                r.put(key + "_warmup_compiler_cpu_s", at[0] - before[0]);
                r.put(key + "_warmup_process_cpu_s", at[1] - before[1]);
                return r;
            } finally {
                Files.deleteIfExists(file);
            }
        }
    }

    /**
     * The figures, and the analysis to stderr. {@code wallEnds}: when each step ended, in wall seconds from the first
     * step's start (the timeline's clock, which the steps' own times are not under {@code --cputime}).
     */
    static Map<String, Double> report(String key, Target target, List<Double> stepSeconds, List<Double> wallEnds,
            double firstStepFromLaunch, WarmupTimeline timeline) {
        double[] steps = stepSeconds.stream().mapToDouble(Double::doubleValue).toArray();
        Curve curve = Curve.of(steps);
        Map<String, Double> r = new LinkedHashMap<>();
        r.put(key + "_first_step_s", firstStepFromLaunch);
        r.put(key + "_first_step_ms", steps[0] * 1e3);
        r.put(key + "_step_ms", curve.steady().steadyStepSeconds() * 1e3);
        r.put(key + "_steady_s", curve.steadySeconds());
        r.put(key + "_steady_steps", (double) curve.steady().warmupSteps());
        r.put(key + "_target_met", target.met(curve.steadySeconds(), curve.steady().warmupSteps()) ? 1.0 : 0.0);
        int k = curve.steady().warmupSteps();
        double wallTotal = wallEnds.get(wallEnds.size() - 1);
        double until = k < 0 ? wallTotal : k == 0 ? 0 : wallEnds.get(k - 1);
        r.put(key + "_vector_fallback_share", timeline.vectorFallbackShare(0, until));
        r.put(key + "_compilations", (double) timeline.compilations(0, 4, Double.POSITIVE_INFINITY));
        r.put(key + "_c2_compilations_to_steady", (double) timeline.compilations(4, 4, until));
        StringBuilder sb = new StringBuilder();
        sb.append(key).append(": per-step curve (ms)\n").append(curve.describe());
        double shown = Math.min(wallTotal, Math.max(6, 1.5 * until));
        sb.append(key).append(": where the time went, per half second from the first step (samples' tier; vec-fallb: Vector "
                + "API Java fallbacks; C1+/C2+: compilations finished; C2 queue: its length)\n");
        sb.append(timeline.table(0.5, shown));
        sb.append(key).append(": C2 compilations of org.jtorch methods per second: ")
                .append(timeline.c2PerSecond("org.jtorch.", wallTotal + 1)).append('\n');
        sb.append(key).append(": hottest methods of the first step\n").append(timeline.hotMethods(0, wallEnds.get(0), 15));
        sb.append(key).append(": hottest methods from the second step to the steady state\n")
                .append(timeline.hotMethods(wallEnds.get(0), Math.max(until, wallEnds.get(0)), 15));
        sb.append(key).append(": hottest methods of the steady state\n").append(timeline.hotMethods(wallEnds.get(wallEnds.size() * 3 / 5), 15));
        sb.append(key).append(": the longest C2 compilations before the steady state\n").append(timeline.longestC2(until, 12));
        String re = timeline.recompilations(until);
        sb.append(key).append(": C2 recompilations in the steady state").append(re.isEmpty() ? ": none\n" : "\n" + re);
        System.err.print(sb);
        return r;
    }

    /**
     * A run's step times: its steady state, the seconds from the first step's start to the steady state's
     * ({@code NaN}: not reached) and a short description (the first steps one by one, then medians per second).
     */
    record Curve(double[] steps, SteadyState steady, double steadySeconds, double totalSeconds) {
        static Curve of(double[] steps) {
            SteadyState st = SteadyState.of(steps);
            double before = 0, total = 0;
            for (int i = 0; i < steps.length; i++) {
                if (i < st.warmupSteps()) before += steps[i];
                total += steps[i];
            }
            return new Curve(steps, st, st.reached() ? before : Double.NaN, total);
        }

        String describe() {
            StringBuilder sb = new StringBuilder("  steps 1-10:");
            for (int i = 0; i < Math.min(10, steps.length); i++) sb.append(String.format(" %.1f", steps[i] * 1e3));
            sb.append("\n  median step per second from the first step:");
            double t = 0;
            List<Double> bucket = new ArrayList<>();
            int second = 0;
            for (double s : steps) {
                if (t >= second + 1 && !bucket.isEmpty()) {
                    sb.append(String.format(" [%ds] %.1f", second, median(bucket) * 1e3));
                    bucket.clear();
                    second = (int) Math.floor(t);
                }
                bucket.add(s);
                t += s;
            }
            if (!bucket.isEmpty()) sb.append(String.format(" [%ds] %.1f", second, median(bucket) * 1e3));
            sb.append(String.format("%n  steady %.2f ms after %d steps, %.2f s; %d steps in %.1f s%n", steady.steadyStepSeconds() * 1e3,
                    steady.warmupSteps(), steadySeconds, steps.length, totalSeconds));
            return sb.toString();
        }

        private static double median(List<Double> xs) {
            double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            return a[a.length / 2];
        }
    }

    /**
     * The recording's compilations, samples (of thread {@code steppingThread}) and queue lengths, timed from
     * {@code origin} (the first step's start).
     */
    private static WarmupTimeline timeline(Path file, Instant origin, long steppingThread) throws IOException {
        List<WarmupTimeline.Compile> compiles = new ArrayList<>();
        List<WarmupTimeline.Sample> samples = new ArrayList<>();
        List<WarmupTimeline.Queue> queues = new ArrayList<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            switch (e.getEventType().getName()) {
                case "jdk.Compilation" -> {
                    if (e.getBoolean("succeded")) {
                        compiles.add(new WarmupTimeline.Compile(name(e.getValue("method")), e.getShort("compileLevel"),
                                e.getBoolean("isOsr"), seconds(origin, e.getEndTime()), e.getDuration().toNanos() * 1e-9));
                    }
                }
                case "jdk.ExecutionSample" -> {
                    // The stepping thread's only: a warm-up thread's samples would pass for the program's.
                    if (e.getStackTrace() == null || e.getThread("sampledThread") == null
                            || e.getThread("sampledThread").getJavaThreadId() != steppingThread) continue;
                    List<WarmupTimeline.Frame> frames = new ArrayList<>();
                    for (RecordedFrame f : e.getStackTrace().getFrames()) {
                        frames.add(new WarmupTimeline.Frame(name(f.getMethod()), f.getType()));
                    }
                    samples.add(new WarmupTimeline.Sample(seconds(origin, e.getStartTime()), frames));
                }
                case "jdk.CompilerQueueUtilization" -> queues.add(new WarmupTimeline.Queue(seconds(origin, e.getStartTime()),
                        String.valueOf(e.getString("compiler")), e.getLong("queueSize")));
                default -> {}
            }
        }
        return new WarmupTimeline(compiles, samples, queues);
    }

    /**
     * The CPU seconds of this JVM's JIT compiler threads so far, from Linux's per-thread counters (the JVM hides them
     * from ThreadMXBean); NaN elsewhere. Read at most every 50 ms, so that it costs the steps nothing.
     */
    private static double compilerCpuSeconds() {
        long now = System.nanoTime();
        if (now - compilerCpuReadAt < 50_000_000L && !Double.isNaN(compilerCpu)) return compilerCpu;
        compilerCpuReadAt = now;
        Path tasks = Path.of("/proc/self/task");
        if (!Files.isDirectory(tasks)) return compilerCpu = Double.NaN;
        long ticks = 0;
        try (var threads = Files.list(tasks)) {
            for (Path t : threads.toList()) {
                try {
                    if (!Files.readString(t.resolve("comm")).contains("CompilerThre")) continue;
                    // Fields 14 and 15 of stat, counted after the command name's closing parenthesis: user and system ticks.
                    String stat = Files.readString(t.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                } catch (IOException | RuntimeException e) {
                    // the thread ended between the listing and the read
                }
            }
        } catch (IOException e) {
            return compilerCpu = Double.NaN;
        }
        return compilerCpu = ticks / 100.0;   // USER_HZ is 100 on Linux
    }

    private static double compilerCpu = Double.NaN;
    private static long compilerCpuReadAt;

    private static String name(RecordedMethod m) {
        return m == null ? "?" : m.getType().getName() + "." + m.getName() + m.getDescriptor();
    }

    private static double seconds(Instant origin, Instant t) {
        return Duration.between(origin, t).toNanos() * 1e-9;
    }

    private static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
