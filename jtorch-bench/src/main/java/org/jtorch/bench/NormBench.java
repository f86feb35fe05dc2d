package org.jtorch.bench;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.BatchNorm2d;

/**
 * BatchNorm2d in training mode, forward and forward+backward, on the ResNet shapes; prints
 * {@code name milliseconds} lines (median) to compare with {@code jtorch-bench/python/bench_norm.py}.
 * Run: {@code java -cp ... org.jtorch.bench.NormBench [--quick] [--threads N] [--cputime]}; {@code --cputime} (for
 * {@code --threads 1}) times the calling thread's CPU time, which a loaded machine disturbs less than wall time.
 */
public final class NormBench {
    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    private NormBench() {}

    private static double median(boolean cpuTime, int reps, Runnable body) {
        if (!cpuTime) return Timing.median(5, reps, body);
        for (int i = 0; i < 5; i++) body.run();
        double[] t = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = THREADS.getCurrentThreadCpuTime();
            body.run();
            t[i] = (THREADS.getCurrentThreadCpuTime() - t0) * 1e-9;
        }
        java.util.Arrays.sort(t);
        return t[reps / 2];
    }

    public static void main(String[] args) {
        java.util.List<String> a = java.util.List.of(args);
        boolean quick = a.contains("--quick");
        int t = a.indexOf("--threads");
        if (t >= 0) org.jtorch.backend.cpu.Parallel.setNumThreads(Integer.parseInt(a.get(t + 1)));
        boolean cpu = a.contains("--cputime");
        int reps = quick ? 7 : 15;
        long[][] shapes = {{128, 64, 32, 32}, {128, 16, 32, 32}, {128, 32, 16, 16}, {128, 64, 8, 8}};
        for (long[] s : shapes) {
            String name = s[0] + "x" + s[1] + "x" + s[2] + "x" + s[3];
            try (BatchNorm2d bn = new BatchNorm2d(s[1]); Tensor x = Torch.randn(s); Tensor g = Torch.randn(s)) {
                double fwd = median(cpu, reps, () -> bn.forward(x).close());
                System.out.printf("bn2d_fwd_%s_ms %.4f%n", name, fwd * 1e3);
                x.requiresGrad_(true);
                double fb = median(cpu, reps, () -> {
                    try (Tensor y = bn.forward(x)) {
                        y.backward(g);
                    }
                    Tensor xg = x.grad();
                    x.setGrad(null);
                    xg.close();
                    bn.zeroGrad();
                });
                System.out.printf("bn2d_fwdbwd_%s_ms %.4f%n", name, fb * 1e3);
            }
        }
    }
}
