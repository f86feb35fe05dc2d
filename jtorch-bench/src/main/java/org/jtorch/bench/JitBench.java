package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;

/**
 * {@code jtorch bench jit}: pointwise chains eager against compiled by {@link Jit} (milliseconds per call, inference),
 * and the time of the first compiled call (trace, code generation and the call). {@code bench_jit.py} measures the
 * same functions with PyTorch 2's {@code torch.compile} (Inductor).
 */
final class JitBench {
    private JitBench() {}

    /** Whether calls are timed in the calling thread's CPU time ({@code --cputime}, for {@code JTORCH_NUM_THREADS=1}). */
    private static boolean cpuTime;

    static Map<String, Double> run(boolean quick, boolean cpuTime) {
        JitBench.cpuTime = cpuTime;
        Map<String, Double> out = new LinkedHashMap<>();
        long[] sizes = quick ? new long[] {1 << 20} : new long[] {1 << 20, 1 << 24};
        try (var g = Grad.noGrad()) {
            for (long n : sizes) {
                String size = n == 1 << 20 ? "1M" : "16M";
                Torch.manualSeed(0);
                Tensor x = Torch.randn(n);
                Tensor c = Torch.randn(n);
                Tensor w = Torch.randn(n);
                Tensor b = Torch.randn(n);
                measure(out, "relu_add_" + size, in -> in[0].relu().add(c), x, quick);
                measure(out, "bias_gelu_" + size, in -> in[0].mul(w).add(b).gelu(), x, quick);
                // The feed-forward's bias, GELU and dropout (training mode: fresh draws each call, drawn inside the kernel).
                measure(out, "dropout_bias_gelu_" + size, in -> org.jtorch.nn.F.dropout(in[0].mul(w).add(b).gelu(), 0.1, true), x, quick);
                measure(out, "tanh_chain_" + size, in -> in[0].mul(0.5).tanh().mul(in[0]).add(1.0).sigmoid().mul(c), x, quick);
                // The layer norm (rows of 1024), a residual add feeding it, and the whole dropout-residual-layernorm
                // block (dropout in training mode: fresh draws each call).
                Tensor rows = x.view(n / 1024, 1024);
                Tensor residual = c.view(n / 1024, 1024);
                Tensor gamma = Torch.randn(1024);
                Tensor beta = Torch.randn(1024);
                measure(out, "layer_norm_" + size, in -> org.jtorch.nn.F.layerNorm(in[0], new long[] {1024}, gamma, beta, 1e-5), rows, quick);
                measure(out, "residual_layer_norm_" + size,
                        in -> org.jtorch.nn.F.layerNorm(in[0].add(residual), new long[] {1024}, gamma, beta, 1e-5), rows, quick);
                measure(out, "dropout_residual_layer_norm_" + size, in -> org.jtorch.nn.F.layerNorm(
                        org.jtorch.nn.F.dropout(in[0], 0.1, true).add(residual), new long[] {1024}, gamma, beta, 1e-5), rows, quick);
                if (n == 1 << 20) {
                    // gelu(x @ w + b) with a [1024, 1024] result: the GEMM's epilogue.
                    Tensor a = Torch.randn(1024, 256);
                    Tensor m = Torch.randn(256, 1024).mul(0.06);
                    Tensor bias = Torch.randn(1024);
                    measure(out, "matmul_bias_gelu_1M", in -> in[0].matmul(m).add(bias).gelu(), a, quick);
                }
            }
        }
        return out;
    }

    private static void measure(Map<String, Double> out, String name, TensorFunction f, Tensor x, boolean quick) {
        long t0 = System.nanoTime();
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x).close();
        out.put(name + "_first_call_ms", (System.nanoTime() - t0) * 1e-6);
        int reps = quick ? 20 : 60;
        // Alternating, so that both see the same machine. Each call runs in a scope, as a jtorch program frees its
        // intermediates: closing only the result would leave eager's intermediates to the GC, and every call would
        // then write fresh pages (measured 10-20x slower at 1M floats), which is the leak's cost, not eager's.
        double eager = 0;
        double fused = 0;
        // Both sides warmed for a second first: a fresh JVM's first chain otherwise times eager kernels still in C1.
        long warmUntil = System.nanoTime() + (quick ? 300_000_000L : 1_000_000_000L);
        while (System.nanoTime() < warmUntil) {
            scoped(f, x);
            scoped(compiled, x);
        }
        for (int r = 0; r < 3; r++) {
            eager += cpuTime ? Timing.medianCpu(5, reps, () -> scoped(f, x)) : Timing.median(5, reps, () -> scoped(f, x));
            fused += cpuTime ? Timing.medianCpu(5, reps, () -> scoped(compiled, x)) : Timing.median(5, reps, () -> scoped(compiled, x));
        }
        out.put(name + "_eager_ms", eager / 3 * 1e3);
        out.put(name + "_compiled_ms", fused / 3 * 1e3);
    }

    private static void scoped(TensorFunction f, Tensor x) {
        try (MemoryScope scope = new MemoryScope()) {
            f.apply(x);
        }
    }
}
