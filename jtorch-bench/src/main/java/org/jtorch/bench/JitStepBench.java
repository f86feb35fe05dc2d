package org.jtorch.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.TextData;
import org.jtorch.examples.gpt.CharGpt;
import org.jtorch.examples.wordlm.WordLanguageModel;
import org.jtorch.backend.Backends;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.Allocator;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.jtorch.types.Device;
import org.jtorch.vision.models.CifarResNet;

/**
 * {@code jtorch bench jit-steps}: the MLP 784-512-512-10 (batch 128), ResNet-20 (batch 32), the LSTM word language
 * model (main.py's defaults, 2 layers of 200, bptt 35, batch 20, but dropout 0) and the char GPT (nanoGPT's CPU
 * configuration: 4 layers, 128 wide, block 64, batch 12) training steps (cross entropy, or the word model's NLL of its
 * log-probabilities; backward, SGD with momentum), eager against the model compiled by {@link Jit#compile}, in alternating
 * rounds in one JVM (medians of 5 rounds; the ratio is the figure to trust on a loaded machine), and the CPU
 * allocator's peak bytes during one step each way; and the MLP's forward in inference, where its linear layers'
 * bias and ReLU run as GEMM epilogues writing into the product.
 */
final class JitStepBench {
    private JitStepBench() {}

    private interface Forward {
        Tensor apply(Tensor x);
    }

    /** The step's loss of the model's output against the targets. */
    private interface Loss {
        Tensor apply(Tensor out, Tensor y);
    }

    private static final Loss CROSS_ENTROPY = F::crossEntropy;

    /** Whether steps are timed in the calling thread's CPU time ({@code --cputime}, for {@code JTORCH_NUM_THREADS=1}). */
    private static boolean cpuTime;

    /** {@code only}: the models to run ({@code mlp, resnet20, wordlm, chargpt}, comma-separated), or null for all. */
    static Map<String, Double> run(boolean quick, boolean cpuTime, String only) {
        JitStepBench.cpuTime = cpuTime;
        java.util.function.Predicate<String> wanted = m -> only == null || Arrays.asList(only.split(",")).contains(m);
        Map<String, Double> out = new LinkedHashMap<>();
        Torch.manualSeed(0);
        if (wanted.test("mlp")) {
            Module mlp = new Sequential(new Linear(784, 512), new ReLU(), new Linear(512, 512), new ReLU(), new Linear(512, 10));
            Tensor batch = Torch.randn(128, 784);
            measure(out, "mlp_b128", mlp, batch, Torch.randint(0, 10, 128), quick ? 10 : 50, quick, CROSS_ENTROPY);
            measureInference(out, "mlp_b128_inference", mlp, batch, quick);
        }
        if (wanted.test("resnet20")) {
            measure(out, "resnet20_b32", CifarResNet.resnet20(10), Torch.randn(32, 3, 32, 32), Torch.randint(0, 10, 32),
                    quick ? 2 : 5, quick, CROSS_ENTROPY);
        }
        if (!wanted.test("wordlm") && !wanted.test("chargpt")) return out;
        String text;
        try {
            text = TextData.read(null);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("jtorch bench jit-steps: " + e.getMessage(), e);
        }
        int ntoken = WordLanguageModel.Corpus.of(text).idx2word().size();
        // Dropout 0: its random mask is made by an op the trace does not see yet (random ops are not registry ops), so at
        // main.py's 0.2 the whole step runs eagerly and the comparison would show nothing.
        if (wanted.test("wordlm")) measure(out, "wordlm_lstm_b20", new WordLanguageModel.RNNModel(ntoken, 200, 200, 2, 0.0), Torch.randint(0, ntoken, 35, 20),
                Torch.randint(0, ntoken, 35 * 20), quick ? 2 : 10, quick, F::nllLoss);
        int vocab = CharGpt.Corpus.of(text).chars().size();
        if (wanted.test("chargpt")) measure(out, "chargpt_b12", new CharGpt.GPT(new CharGpt.Config(64, vocab, 4, 4, 128, 0.0)), Torch.randint(0, vocab, 12, 64),
                Torch.randint(0, vocab, 12 * 64), quick ? 2 : 10, quick, (logits, y) -> F.crossEntropy(logits.view(-1, logits.size(-1)), y));
        return out;
    }

    private static void measure(Map<String, Double> out, String name, Module model, Tensor x, Tensor y, int steps, boolean quick,
                                Loss loss) {
        model.train();
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        // The first compiled step (wall clock: trace, plan, code generation and the step, before any eager step of this
        // model), as bench_jit.py's first torch.compile call; a model run first in a fresh JVM pays the JVM's warm-up too.
        // With --cputime also in CPU time, which a loaded machine does not inflate: this thread's, and the process's (the
        // compiler threads' share of the warm-up is in it).
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long first = System.nanoTime(), firstCpu = mx.getCurrentThreadCpuTime(), firstProcessCpu = os.getProcessCpuTime();
        TensorFunction compiled = Jit.compile(model);
        Forward fused = in -> compiled.apply(in);
        step(fused, opt, x, y, loss);
        out.put(name + "_compiled_first_step_ms", (System.nanoTime() - first) / 1e6);
        if (cpuTime) {
            out.put(name + "_compiled_first_step_cpu_ms", (mx.getCurrentThreadCpuTime() - firstCpu) / 1e6);
            out.put(name + "_compiled_first_step_process_cpu_ms", (os.getProcessCpuTime() - firstProcessCpu) / 1e6);
        }
        Forward eager = model::forward;
        time(eager, opt, x, y, steps, loss);
        time(fused, opt, x, y, steps, loss);
        int rounds = quick ? 3 : 5;
        double[] e = new double[rounds];
        double[] c = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            e[r] = time(eager, opt, x, y, steps, loss);
            c[r] = time(fused, opt, x, y, steps, loss);
        }
        Arrays.sort(e);
        Arrays.sort(c);
        out.put(name + "_eager_ms", e[rounds / 2]);
        out.put(name + "_compiled_ms", c[rounds / 2]);
        out.put(name + "_compiled_speedup", e[rounds / 2] / c[rounds / 2]);
        out.put(name + "_eager_peak_mib", peakBytes(eager, opt, x, y, loss) / 1048576.0);
        out.put(name + "_compiled_peak_mib", peakBytes(fused, opt, x, y, loss) / 1048576.0);
    }

    private static void measureInference(Map<String, Double> out, String name, Module model, Tensor x, boolean quick) {
        try (var g = Grad.noGrad()) {
            TensorFunction compiled = Jit.compile(model);
            Forward plain = model::forward;
            Forward jit = in -> compiled.apply(in);
            Runnable eager = () -> scoped(plain, x);
            Runnable fused = () -> scoped(jit, x);
            int reps = quick ? 20 : 100;
            double e = 0;
            double c = 0;
            for (int r = 0; r < 4; r++) {
                // Round 0 warms both up.
                double re = cpuTime ? Timing.medianCpu(5, reps, eager) : Timing.median(5, reps, eager);
                double rc = cpuTime ? Timing.medianCpu(5, reps, fused) : Timing.median(5, reps, fused);
                if (r > 0) {
                    e += re;
                    c += rc;
                }
            }
            out.put(name + "_eager_ms", e / 3 * 1e3);
            out.put(name + "_compiled_ms", c / 3 * 1e3);
            out.put(name + "_compiled_speedup", e / c);
        }
    }

    private static void scoped(Forward f, Tensor x) {
        try (MemoryScope scope = new MemoryScope()) {
            f.apply(x);
        }
    }

    /** Milliseconds per step over {@code steps} steps, each in a scope (as a jtorch program frees its intermediates). */
    private static double time(Forward f, SGD opt, Tensor x, Tensor y, int steps, Loss loss) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long t0 = cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime();
        for (int i = 0; i < steps; i++) step(f, opt, x, y, loss);
        return ((cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime()) - t0) / 1e6 / steps;
    }

    /** Each kernel's host time per training step, eager and compiled, for the MLP and ResNet-20 ({@code --profile}). */
    static String profile(int steps) {
        StringBuilder s = new StringBuilder();
        Torch.manualSeed(0);
        Module mlp = new Sequential(new Linear(784, 512), new ReLU(), new Linear(512, 512), new ReLU(), new Linear(512, 10));
        profile(s, "MLP 784-512-512-10, batch 128", mlp, Torch.randn(128, 784), Torch.randint(0, 10, 128), steps * 10);
        profile(s, "ResNet-20, batch 32", CifarResNet.resnet20(10), Torch.randn(32, 3, 32, 32), Torch.randint(0, 10, 32), steps);
        return s.toString();
    }

    private static void profile(StringBuilder s, String name, Module model, Tensor x, Tensor y, int steps) {
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        TensorFunction compiled = Jit.compile(model);
        Forward eager = model::forward;
        Forward fused = in -> compiled.apply(in);
        s.append(name).append(", eager:\n").append(Timing.kernelProfile(steps, steps, () -> step(eager, opt, x, y, CROSS_ENTROPY)));
        s.append(name).append(", compiled:\n").append(Timing.kernelProfile(steps, steps, () -> step(fused, opt, x, y, CROSS_ENTROPY)));
    }

    /**
     * The MLP step's phases ({@code --phases}): forward, loss, backward and optimizer step, eager against compiled in
     * alternating rounds of {@code steps} steps, medians of the rounds, in the calling thread's CPU time with
     * {@code --cputime}. Says which phase a difference between the two steps is in.
     */
    static String phases(boolean quick, boolean cpuTime) {
        JitStepBench.cpuTime = cpuTime;
        Torch.manualSeed(0);
        Module mlp = new Sequential(new Linear(784, 512), new ReLU(), new Linear(512, 512), new ReLU(), new Linear(512, 10));
        Tensor x = Torch.randn(128, 784);
        Tensor y = Torch.randint(0, 10, 128);
        SGD opt = new SGD(mlp.parameters(), SGD.options().lr(0.01).momentum(0.9));
        TensorFunction compiled = Jit.compile(mlp);
        Forward eager = mlp::forward;
        Forward fused = compiled::apply;
        int rounds = quick ? 3 : 9;
        int steps = quick ? 10 : 60;
        String[] names = {"forward", "loss", "backward", "optimizer"};
        double[][][] t = new double[2][names.length][rounds];
        for (int r = -2; r < rounds; r++) {  // two rounds of warm-up
            for (int w = 0; w < 2; w++) {
                long[] sum = new long[names.length];
                for (int i = 0; i < steps; i++) phasedStep(w == 0 ? eager : fused, opt, x, y, sum);
                if (r >= 0) for (int p = 0; p < names.length; p++) t[w][p][r] = sum[p] / 1e6 / steps;
            }
        }
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "MLP 784-512-512-10, batch 128: ms per step (%s), medians of %d rounds of %d steps%n",
                cpuTime ? "thread CPU time" : "wall clock", rounds, steps));
        double[] total = new double[2];
        for (int p = 0; p < names.length; p++) {
            double[] m = new double[2];
            for (int w = 0; w < 2; w++) {
                Arrays.sort(t[w][p]);
                m[w] = t[w][p][rounds / 2];
                total[w] += m[w];
            }
            s.append(String.format(Locale.ROOT, "  %-10s eager %7.3f  compiled %7.3f  (%+.3f)%n", names[p], m[0], m[1], m[1] - m[0]));
        }
        s.append(String.format(Locale.ROOT, "  %-10s eager %7.3f  compiled %7.3f  (eager / compiled %.3f)%n", "sum", total[0], total[1],
                total[0] / total[1]));
        return s.toString();
    }

    private static long now(java.lang.management.ThreadMXBean mx) {
        return cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime();
    }

    private static void phasedStep(Forward f, SGD opt, Tensor x, Tensor y, long[] sum) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        try (MemoryScope s = new MemoryScope()) {
            long t0 = now(mx);
            opt.zeroGrad();
            Tensor out = f.apply(x);
            long t1 = now(mx);
            Tensor loss = F.crossEntropy(out, y);
            long t2 = now(mx);
            loss.backward();
            long t3 = now(mx);
            opt.step();
            long t4 = now(mx);
            sum[0] += t1 - t0;
            sum[1] += t2 - t1;
            sum[2] += t3 - t2;
            sum[3] += t4 - t3;
        }
    }

    private static void step(Forward f, SGD opt, Tensor x, Tensor y, Loss loss) {
        try (MemoryScope s = new MemoryScope()) {
            opt.zeroGrad();
            loss.apply(f.apply(x), y).backward();
            opt.step();
        }
    }

    /**
     * The CPU allocator's peak of bytes in use during one step: the model's parameters, gradients, momentum and the
     * batch (the same either way) and the step's activations and temporaries.
     */
    private static long peakBytes(Forward f, SGD opt, Tensor x, Tensor y, Loss loss) {
        Allocator cpu = Backends.of(Device.cpu()).allocator(Device.cpu());
        cpu.resetPeakStats();
        step(f, opt, x, y, loss);
        return cpu.stats().peakAllocatedBytes();
    }
}
