package org.jtorch.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.SteadyState;
import org.jtorch.examples.TextData;
import org.jtorch.examples.dcgan.DcganExample;
import org.jtorch.examples.gpt.CharGpt;
import org.jtorch.examples.mnist.MnistExample;
import org.jtorch.examples.timeseq.TimeSequencePrediction;
import org.jtorch.examples.vae.VaeExample;
import org.jtorch.examples.wordlm.WordLanguageModel;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.optim.LBFGS;
import org.jtorch.optim.SGD;
import org.jtorch.vision.models.Models;

/**
 * {@code jtorch bench examples}: training steps of the pytorch/examples ports (jtorch-examples) and three
 * classic CNNs, matching {@code python/bench_examples.py} model for model and step for step, on synthetic
 * data of each program's shapes. Each program runs in a fresh JVM, so that its time to the first step and to
 * the steady state are what a user sees: it steps for a fixed time budget, and reports
 * <ul>
 *   <li>{@code NAME_step_ms}: the steady-state step, the median of the last 40% of the steps;</li>
 *   <li>{@code NAME_first_step_s}: from the launch of the process to the end of the first step (JVM start,
 *       class loading, model and data set-up, the first step);</li>
 *   <li>{@code NAME_steady_s}: from the launch to the start of the first run of five steps whose mean
 *       throughput is at least 90% of the steady state's (NaN: not reached within the run);</li>
 *   <li>with {@code --cputime}, the same two times in CPU rather than wall time, which a loaded machine changes
 *       little: {@code NAME_first_step_cpu_s} and {@code NAME_steady_cpu_s} in the main thread's CPU (from its start
 *       with the JVM's, set-up included), {@code NAME_process_cpu_first_step_s} and {@code NAME_process_cpu_steady_s}
 *       in the whole process's (the JIT compilers, the collector and the warm-up thread included).</li>
 * </ul>
 */
final class ExamplesBench {
    private ExamplesBench() {}

    /** One benchmarked program: {@code setUp} builds the model, optimizer and a batch, and returns one training step. */
    record Program(String name, Supplier<Runnable> setUp) {}

    static final List<Program> PROGRAMS = List.of(
            new Program("mnist", ExamplesBench::mnist),
            new Program("vae", ExamplesBench::vae),
            new Program("dcgan", ExamplesBench::dcgan),
            new Program("word_lm_lstm", () -> wordLanguageModel(false)),
            new Program("word_lm_transformer", () -> wordLanguageModel(true)),
            new Program("char_gpt", ExamplesBench::charGpt),
            new Program("time_seq_f64", ExamplesBench::timeSequencePrediction),
            new Program("lenet5", () -> classifier("lenet5", 1, 28, 64)),
            new Program("resnet20", () -> classifier("resnet20", 3, 32, 128)),
            new Program("resnet18_64px", () -> classifier("resnet18", 3, 64, 32)));

    /**
     * Seconds of steps per program after the first ({@code -Djtorch.bench.examples.seconds} sets it): long enough for
     * several steady steps of the slowest, and for C2 to finish compiling the kernels in two threads, where its thread
     * takes a core from the pool while it works (DCGAN's step read 220-320 ms at 10 s and 181-209 ms at 30 s; at 20 s
     * the median of the last 40% is within about 10% of the 30 s figure).
     */
    static double budgetSeconds(boolean quick) {
        return Double.parseDouble(System.getProperty("jtorch.bench.examples.seconds", quick ? "4" : "20"));
    }

    static final int MIN_STEPS = 8, MAX_STEPS = 5000;

    /** Steps the kernel profile averages over: enough that one stray compile or collection does not lead the table. */
    static final int PROFILED_STEPS = 10;

    /** Runs each program (or only {@code only}) in a child JVM with this JVM's flags; their lines go to stdout. */
    static void runAll(boolean quick, String only, boolean profile, boolean cpuTime) {
        List<String> failed = new ArrayList<>();
        for (Program p : PROGRAMS) {
            if (only != null && !only.equals(p.name())) continue;
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), BenchMain.class.getName(), "examples",
                    "--program", p.name(), "--launched-at", Long.toString(epochMicros())));
            if (quick) cmd.add("--quick");
            if (profile) cmd.add("--profile");
            if (Timing.balanceReport) cmd.add("--balance");
            if (cpuTime) cmd.add("--cputime");
            try {
                System.out.flush();
                int status = new ProcessBuilder(cmd).inheritIO().start().waitFor();
                if (status != 0) failed.add(p.name() + " (exit status " + status + ")");
            } catch (IOException e) {
                failed.add(p.name() + " (" + e.getMessage() + ")");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        if (only != null && PROGRAMS.stream().noneMatch(p -> p.name().equals(only))) {
            failed.add(only + " (unknown program; known: " + String.join(", ", PROGRAMS.stream().map(Program::name).toList()) + ")");
        }
        if (!failed.isEmpty()) {
            System.err.println("jtorch bench examples: failed: " + String.join(", ", failed));
            System.exit(1);
        }
    }

    /**
     * The child's part: one program's steps, timed from {@code launchedAtMicros} (epoch microseconds); with {@code profile},
     * then each kernel's host time over {@link #PROFILED_STEPS} more steps, to stderr. With {@code cpuTime} the step times
     * (and so {@code NAME_step_ms}) and the kernel times are the calling thread's CPU time: with
     * {@code JTORCH_NUM_THREADS=1} on a loaded machine, what a step costs rather than how long it waited for a core.
     */
    static Map<String, Double> runOne(String name, boolean quick, long launchedAtMicros, boolean profile, boolean cpuTime) {
        Program program = PROGRAMS.stream().filter(p -> p.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("jtorch bench examples: unknown program '" + name + "'"));
        long anchorMicros = epochMicros(), anchorNanos = System.nanoTime();
        double launchToAnchor = (anchorMicros - launchedAtMicros) * 1e-6;
        Torch.manualSeed(0);
        Runnable step = program.setUp().get();
        List<Double> stepSeconds = new ArrayList<>(), endSeconds = new ArrayList<>();
        List<Double> startCpu = new ArrayList<>(), startProcessCpu = new ArrayList<>();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long start = System.nanoTime();
        double budget = budgetSeconds(quick);
        // With cpuTime the budget is the main thread's CPU: on a loaded machine a wall-time budget ends before the steady state.
        long cpuStart = cpuTime ? threads.getCurrentThreadCpuTime() : 0;
        while (stepSeconds.size() < MAX_STEPS && (stepSeconds.size() < MIN_STEPS
                || ((cpuTime ? threads.getCurrentThreadCpuTime() - cpuStart : System.nanoTime() - start) * 1e-9) < budget)) {
            if (cpuTime) startProcessCpu.add(os.getProcessCpuTime() * 1e-9);
            long t0 = System.nanoTime(), c0 = cpuTime ? threads.getCurrentThreadCpuTime() : 0;
            step.run();
            long t1 = System.nanoTime(), c1 = cpuTime ? threads.getCurrentThreadCpuTime() : 0;
            stepSeconds.add((cpuTime ? c1 - c0 : t1 - t0) * 1e-9);
            endSeconds.add(launchToAnchor + (t1 - anchorNanos) * 1e-9);
            if (cpuTime) startCpu.add(c0 * 1e-9);
        }
        if (profile) {
            System.err.print(name + ", kernels per step" + (cpuTime ? " (thread CPU time)" : "") + ":\n"
                    + Timing.kernelProfile(0, PROFILED_STEPS, step, cpuTime));
        }
        Map<String, Double> r = summary(name, stepSeconds, endSeconds);
        if (cpuTime) r.putAll(cpuSummary(name, stepSeconds, startCpu, startProcessCpu));
        return r;
    }

    /**
     * The CPU figures of a {@code --cputime} run (at least two steps): step i took {@code stepSeconds[i]} of the main
     * thread's CPU and started when it had spent {@code startCpu[i]} and the process {@code startProcessCpu[i]}.
     */
    static Map<String, Double> cpuSummary(String name, List<Double> stepSeconds, List<Double> startCpu,
            List<Double> startProcessCpu) {
        SteadyState st = SteadyState.of(stepSeconds.stream().mapToDouble(Double::doubleValue).toArray());
        int k = st.warmupSteps();
        Map<String, Double> r = new LinkedHashMap<>();
        r.put(name + "_first_step_cpu_s", startCpu.get(0) + stepSeconds.get(0));
        r.put(name + "_steady_cpu_s", st.reached() ? startCpu.get(k) : Double.NaN);
        r.put(name + "_process_cpu_first_step_s", startProcessCpu.get(1));
        r.put(name + "_process_cpu_steady_s", st.reached() ? startProcessCpu.get(k) : Double.NaN);
        return r;
    }

    /** The three figures of a run from its step times and the launch-relative time at which each step ended. */
    static Map<String, Double> summary(String name, List<Double> stepSeconds, List<Double> endSeconds) {
        SteadyState st = SteadyState.of(stepSeconds.stream().mapToDouble(Double::doubleValue).toArray());
        int k = st.warmupSteps();
        Map<String, Double> r = new LinkedHashMap<>();
        r.put(name + "_step_ms", st.steadyStepSeconds() * 1e3);
        r.put(name + "_first_step_s", endSeconds.get(0));
        r.put(name + "_steady_s", st.reached() ? endSeconds.get(k) - stepSeconds.get(k) : Double.NaN);
        return r;
    }

    private static long epochMicros() {
        Instant now = Instant.now();
        return ChronoUnit.MICROS.between(Instant.EPOCH, now);
    }

    // The programs. Batches are drawn once, outside the timed steps; each step is the port's own Training.step.

    private static Runnable mnist() {
        var t = new MnistExample.Training(1.0);
        Tensor x = Torch.randn(64, 1, 28, 28), y = Torch.randint(0, 10, 64);
        return () -> t.step(x, y);
    }

    private static Runnable vae() {
        var t = new VaeExample.Training(1e-3);
        Tensor x = Torch.rand(128, 1, 28, 28);
        return () -> t.step(x);
    }

    private static Runnable dcgan() {
        var t = new DcganExample.Training(DcganExample.NZ, 64, 64, 1, 2e-4);
        Tensor real = Torch.rand(64, 1, 32, 32).mul(2).sub(1);
        return () -> t.step(real);
    }

    /** main.py's defaults (batch 20, bptt 35, 200 wide, 2 layers), the vocabulary of the port's default text. */
    private static Runnable wordLanguageModel(boolean transformer) {
        int ntoken;
        try {
            ntoken = WordLanguageModel.Corpus.of(TextData.read(null)).idx2word().size();
        } catch (IOException e) {
            throw new IllegalStateException("jtorch bench examples: " + e.getMessage(), e);
        }
        WordLanguageModel.WordModel model = transformer
                ? new WordLanguageModel.TransformerModel(ntoken, 200, 2, 200, 2, 0.2)
                : new WordLanguageModel.RNNModel(ntoken, 200, 200, 2, 0.2);
        var t = new WordLanguageModel.Training(model, 20, 20);
        Tensor data = Torch.randint(0, ntoken, 35, 20), targets = Torch.randint(0, ntoken, 35 * 20);
        return () -> t.step(data, targets);
    }

    /** nanoGPT's CPU configuration (block 64, batch 12, 4 layers, 4 heads, 128 wide) on the port's default text's characters. */
    private static Runnable charGpt() {
        int vocab;
        try {
            vocab = CharGpt.Corpus.of(TextData.read(null)).chars().size();
        } catch (IOException e) {
            throw new IllegalStateException("jtorch bench examples: " + e.getMessage(), e);
        }
        var t = new CharGpt.Training(new CharGpt.Config(64, vocab, 4, 4, 128, 0.0), 1e-3);
        Tensor x = Torch.randint(0, vocab, 12, 64), y = Torch.randint(0, vocab, 12, 64);
        return () -> t.step(x, y, 1e-3);
    }

    /**
     * train.py's model and loss in float64 on 97 waves of 100 points (the original: 1,000), one L-BFGS
     * iteration per step (the original: 20), so that a step is one closure evaluation and one L-BFGS update.
     */
    private static Runnable timeSequencePrediction() {
        Tensor data = TimeSequencePrediction.sineWaves(100, 100, 2);
        Tensor input = data.narrow(0, 3, 97).narrow(1, 0, 99), target = data.narrow(0, 3, 97).narrow(1, 1, 99);
        var t = new TimeSequencePrediction.Training(LBFGS.options().lr(0.8).maxIter(1));
        return () -> t.step(input, target, loss -> {});
    }

    /** A 10-class classifier step as {@link CnnBench}'s: cross entropy, SGD with momentum and weight decay. */
    private static Runnable classifier(String model, int channels, int size, int batch) {
        Module m = Models.create(model, 10, channels);
        SGD opt = new SGD(m.parameters(), SGD.options().lr(0.05).momentum(0.9).weightDecay(5e-4));
        Tensor x = Torch.randn(batch, channels, size, size), y = Torch.randint(0, 10, batch);
        return () -> {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor loss = F.crossEntropy(m.forward(x), y);
                opt.zeroGrad();
                loss.backward();
                opt.step();
            }
        };
    }
}
