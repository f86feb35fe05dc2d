package org.jtorch.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Module;
import org.jtorch.vision.models.CifarResNet;
import org.jtorch.vision.models.ResNet;

/**
 * {@code jtorch bench jit-inference}: ResNet-20 (CIFAR, 32x32) and ResNet-50 (224x224) forwards in evaluation without
 * autograd, batches of 32 and 1, eager against the model compiled by {@link Jit#compile} (batch norms folded into the
 * convolutions, their ReLU or residual add and ReLU as the convolutions' epilogues), in alternating rounds in one JVM:
 * medians of the rounds' milliseconds per forward, in the calling thread's CPU time with {@code --cputime} (for
 * {@code JTORCH_NUM_THREADS=1}). The inputs are {@code Torch.manualSeed(0)}'s normal values; the models are freshly
 * initialised (the time does not depend on the values). {@code jtorch-bench/python/bench_jit.py --models} times the
 * same models in PyTorch, eager and under {@code torch.compile}.
 *
 * <p>Uses only the public API, so that the same source compiles against an older tree for a before/after run.
 */
final class JitInferenceBench {
    private JitInferenceBench() {}

    /** A workload: its name, the model, the input shape, and forwards per timed round (about half a second each). */
    private record Workload(String name, Module model, long[] input, int perRound) {}

    static Map<String, Double> run(boolean quick, boolean cpuTime, String only) {
        Torch.manualSeed(0);
        Module resnet20 = CifarResNet.resnet20(10);
        Module resnet50 = ResNet.resnet50();
        Workload[] all = {
                new Workload("resnet20_b32", resnet20, new long[] {32, 3, 32, 32}, quick ? 2 : 10),
                new Workload("resnet20_b1", resnet20, new long[] {1, 3, 32, 32}, quick ? 20 : 200),
                new Workload("resnet50_b1", resnet50, new long[] {1, 3, 224, 224}, quick ? 1 : 6),
                new Workload("resnet50_b32", resnet50, new long[] {32, 3, 224, 224}, 1),
        };
        Map<String, Double> out = new LinkedHashMap<>();
        for (Workload w : all) {
            if (only != null && !Arrays.asList(only.split(",")).contains(w.name())) continue;
            measure(out, w, quick ? 3 : 5, cpuTime);
        }
        return out;
    }

    private static void measure(Map<String, Double> out, Workload w, int rounds, boolean cpuTime) {
        w.model().eval();
        Torch.manualSeed(0);
        Tensor x = Torch.randn(w.input());
        try (var g = Grad.noGrad()) {
            TensorFunction compiled = Jit.compile(w.model());
            long t0 = System.nanoTime();
            forward(compiled::apply, x);
            out.put(w.name() + "_first_call_ms", (System.nanoTime() - t0) / 1e6);
            // Warm-up: both ways, before any round is timed.
            for (int i = 0; i < 2; i++) {
                forward(w.model()::forward, x);
                forward(compiled::apply, x);
            }
            double[] eager = new double[rounds];
            double[] fused = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                eager[r] = time(w.model()::forward, x, w.perRound(), cpuTime);
                fused[r] = time(compiled::apply, x, w.perRound(), cpuTime);
            }
            Arrays.sort(eager);
            Arrays.sort(fused);
            out.put(w.name() + "_eager_ms", eager[rounds / 2]);
            out.put(w.name() + "_compiled_ms", fused[rounds / 2]);
            out.put(w.name() + "_compiled_speedup", eager[rounds / 2] / fused[rounds / 2]);
        }
        x.close();
    }

    /** Milliseconds per forward over {@code n} forwards, each in a scope (as a program frees its intermediates). */
    private static double time(java.util.function.Function<Tensor, Tensor> f, Tensor x, int n, boolean cpuTime) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long t0 = cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime();
        for (int i = 0; i < n; i++) forward(f, x);
        return ((cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime()) - t0) / 1e6 / n;
    }

    private static void forward(java.util.function.Function<Tensor, Tensor> f, Tensor x) {
        try (MemoryScope scope = new MemoryScope()) {
            f.apply(x);
        }
    }

    /** {@code [--quick] [--cputime] [--only a,b]}: the figures as {@code name value} lines (for a run against another tree). */
    public static void main(String[] args) {
        java.util.List<String> a = Arrays.asList(args);
        int at = a.indexOf("--only");
        run(a.contains("--quick"), a.contains("--cputime"), at >= 0 ? a.get(at + 1) : null)
                .forEach((k, v) -> System.out.printf("%s %.3f%n", k, v));
    }
}
