package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.LSTMCell;
import org.jtorch.optim.LBFGS;
import org.jtorch.types.DType;

/**
 * float64 against float32, op by op: for each op the time in each dtype and {@code NAME_f64_vs_half_f32}, the
 * float64 throughput per element over half the float32 throughput ({@code 2 t32 / t64}: 1.0 is "as fast per
 * vector lane", issue 20's target is 0.8 or more). The ops: GEMM (square, and the LSTM gate shapes of
 * time_sequence_prediction), elementwise, a full sum, an LSTM cell's forward and backward (batch 97, 51 wide,
 * as time_sequence_prediction) and an L-BFGS step.
 */
final class DtypeBench {
    private DtypeBench() {}

    /** {@code only}: a regular expression; only the ops whose names it finds run (null: all). */
    static Map<String, Double> run(boolean quick, String only) {
        Map<String, Double> r = new LinkedHashMap<>();
        filter = only == null ? null : java.util.regex.Pattern.compile(only);
        int reps = quick ? 9 : 21;
        compare(r, "matmul_256", reps, d -> {
            Tensor a = Torch.randn(256, 256).to(d), b = Torch.randn(256, 256).to(d);
            return () -> a.matmul(b);
        });
        compare(r, "matmul_97x51x204", reps, d -> {
            Tensor a = Torch.randn(97, 51).to(d), b = Torch.randn(51, 204).to(d);
            return () -> a.matmul(b);
        });
        compare(r, "matmul_97x204x51_t", reps, d -> {
            // The gates' gradient times the weight, as the cell's backward computes the input gradient.
            Tensor a = Torch.randn(97, 204).to(d), w = Torch.randn(204, 51).to(d);
            return () -> a.matmul(w);
        });
        compare(r, "matmul_204x97x51_grad_w", reps, d -> {
            Tensor g = Torch.randn(97, 204).to(d), x = Torch.randn(97, 51).to(d);
            return () -> g.t().matmul(x);
        });
        compare(r, "matmul_1024x512x128_wt", reps, d -> {
            // The L-BFGS problem's forward, X W^T, and its weight gradient, G^T X.
            Tensor x = Torch.randn(1024, 512).to(d), w = Torch.randn(128, 512).to(d);
            return () -> x.matmul(w.t());
        });
        compare(r, "matmul_128x1024x512_gt", reps, d -> {
            Tensor g = Torch.randn(1024, 128).to(d), x = Torch.randn(1024, 512).to(d);
            return () -> g.t().matmul(x);
        });
        long n = 1 << 20;
        compare(r, "add_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d), b = Torch.randn(n).to(d);
            return () -> a.add(b);
        });
        compare(r, "mul_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d), b = Torch.randn(n).to(d);
            return () -> a.mul(b);
        });
        compare(r, "exp_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d);
            return a::exp;
        });
        compare(r, "tanh_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d);
            return a::tanh;
        });
        compare(r, "sigmoid_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d);
            return a::sigmoid;
        });
        compare(r, "sum_1m", reps, d -> {
            Tensor a = Torch.randn(n).to(d);
            return a::sum;
        });
        compare(r, "lstm_cell_fwd_bwd_97x51", reps * 3, d -> {
            Torch.manualSeed(0);
            LSTMCell cell = new LSTMCell(51, 51);
            cell.to(d);
            Tensor x = Torch.randn(97, 51).to(d), h = Torch.randn(97, 51).to(d), c = Torch.randn(97, 51).to(d);
            return () -> {
                LSTM.State s = cell.forward(x, new LSTM.State(h, c));
                s.h().sum().add(s.c().sum()).backward();
                cell.zeroGrad();
            };
        });
        compare(r, "lbfgs_step_65k_params", quick ? 3 : 7, d -> {
            Tensor x = Torch.randn(1024, 512).to(d), target = Torch.randn(1024, 128).to(d);
            Tensor w = Torch.randn(128, 512).mul(0.01).to(d).requiresGrad_(true);
            LBFGS opt = new LBFGS(List.of(w), LBFGS.options().maxIter(10).toleranceGrad(0).toleranceChange(0));
            return () -> opt.step(() -> {
                opt.zeroGrad();
                Tensor loss = x.matmul(w.t()).sub(target).pow(2).mean();
                loss.backward();
                return loss;
            });
        });
        return r;
    }

    /**
     * Times {@code op} (set up by {@code setUp} for each dtype) in float32 and float64 in alternation, each call in
     * its own scope, after a warm-up of both: medians of each and the median of the per-pair ratios. With one
     * intra-op thread ({@code JTORCH_NUM_THREADS=1}) the calls are timed in thread CPU time, which a loaded machine
     * disturbs far less than wall time.
     */
    private static java.util.regex.Pattern filter;

    private static void compare(Map<String, Double> r, String name, int reps, Function<DType, Runnable> setUp) {
        if (filter != null && !filter.matcher(name).find()) return;
        Runnable f32 = scoped(setUp.apply(DType.FLOAT32)), f64 = scoped(setUp.apply(DType.FLOAT64));
        for (int i = 0; i < Math.max(10, reps); i++) {
            f32.run();
            f64.run();
        }
        double[] t32 = new double[reps], t64 = new double[reps], ratio = new double[reps];
        for (int i = 0; i < reps; i++) {
            t32[i] = seconds(f32);
            t64[i] = seconds(f64);
            ratio[i] = 2 * t32[i] / t64[i];
        }
        r.put(name + "_f32_us", median(t32) * 1e6);
        r.put(name + "_f64_us", median(t64) * 1e6);
        r.put(name + "_f64_vs_half_f32", median(ratio));
    }

    private static final boolean CPU_TIME = org.jtorch.backend.cpu.Parallel.numThreads() == 1;
    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    private static double seconds(Runnable op) {
        long t0 = CPU_TIME ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
        op.run();
        return ((CPU_TIME ? THREADS.getCurrentThreadCpuTime() : System.nanoTime()) - t0) * 1e-9;
    }

    private static Runnable scoped(Runnable op) {
        return () -> {
            try (MemoryScope scope = new MemoryScope()) {
                op.run();
            }
        };
    }

    private static double median(double[] xs) {
        double[] a = xs.clone();
        java.util.Arrays.sort(a);
        return a[a.length / 2];
    }
}
