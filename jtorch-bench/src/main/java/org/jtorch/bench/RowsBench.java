package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;

/**
 * The generated kernels' integer and float64 rows and the integer casts: {@code add} and {@code mul} of two 1M-element
 * tensors in each integer dtype, float64 {@code erf} and exact {@code gelu} at one element and at 1M, and
 * {@code x.to(dtype)} of 1M elements for the vectorised cast pairs (µs per call, each call in its own scope; with
 * {@code JTORCH_NUM_THREADS=1}, in thread CPU time).
 */
final class RowsBench {
    private RowsBench() {}

    private static final boolean CPU_TIME = org.jtorch.backend.cpu.Parallel.numThreads() == 1;

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        long n = 1 << 20;
        int reps = quick ? 11 : 41;
        for (DType d : new DType[] {DType.INT64, DType.INT32, DType.INT16, DType.INT8, DType.UINT8}) {
            try (Tensor a = Torch.randn(n).mul(50).to(d); Tensor b = Torch.randn(n).mul(50).to(d)) {
                r.put("add_1m_" + name(d) + "_us", micros(60, reps, () -> a.add(b)));
                r.put("mul_1m_" + name(d) + "_us", micros(60, reps, () -> a.mul(b)));
            }
        }
        for (long size : new long[] {1, n}) {
            try (Tensor x = Torch.randn(size).mul(3).to(DType.FLOAT64)) {
                int warm = size == 1 ? 20_000 : 20;
                int timed = size == 1 ? 2_001 : reps;
                String s = size == 1 ? "1" : "1m";
                r.put("erf_f64_" + s + "_us", micros(warm, timed, x::erf));
                r.put("gelu_f64_" + s + "_us", micros(warm, timed, x::gelu));
            }
        }
        DType[][] casts = {{DType.UINT8, DType.FLOAT32}, {DType.INT32, DType.FLOAT32}, {DType.INT32, DType.INT64},
            {DType.INT64, DType.INT32}, {DType.INT64, DType.FLOAT64}};
        for (DType[] c : casts) {
            try (Tensor x = Torch.randn(n).mul(50).abs().to(c[0])) {
                r.put("to_1m_" + name(c[0]) + "_" + name(c[1]) + "_us", micros(30, reps, () -> x.to(c[1])));
            }
        }
        return r;
    }

    private static String name(DType d) {
        return d.toString().replace("torch.", "");
    }

    private static double micros(int warmup, int reps, Runnable op) {
        Runnable scoped = () -> {
            try (MemoryScope s = new MemoryScope()) {
                op.run();
            }
        };
        return (CPU_TIME ? Timing.medianCpu(warmup, reps, scoped) : Timing.median(warmup, reps, scoped)) * 1e6;
    }
}
