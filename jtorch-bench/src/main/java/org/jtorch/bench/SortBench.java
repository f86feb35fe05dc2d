package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Generator;

/**
 * Sorting and sampling on the CPU, the same cases as {@code python/bench_sort.py}: sort along either dim of a
 * 1024 x 1024 float32 matrix, a 1M-element argsort, topk, median, unique with inverse and counts, searchsorted and
 * multinomial (10 warm-up runs: the JIT compiles the small ops of the composed ones). Prints {@code name ms} lines that {@code scripts/bench sort} joins with PyTorch's.
 */
final class SortBench {
    private SortBench() {}

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 3 : 10;
        Generator g = new Generator(0);
        try (Tensor x = Torch.randn(new long[] {1024, 1024}, org.jtorch.types.DType.FLOAT32, org.jtorch.types.Device.cpu(), g);
             Tensor v = Torch.randn(new long[] {1 << 20}, org.jtorch.types.DType.FLOAT32, org.jtorch.types.Device.cpu(), g);
             Tensor ints = Torch.randint(0, 1000, new long[] {1 << 20}, org.jtorch.types.DType.INT64, org.jtorch.types.Device.cpu(), g);
             Tensor raw = Torch.randn(1000); Tensor q = Torch.randn(10000); Tensor probs = Torch.rand(1000);
             Tensor bounds = raw.sort(0).values()) {
            r.put("sort_1024x1024_dim1_ms", ms(reps, () -> x.sort(1)));
            r.put("sort_1024x1024_dim0_ms", ms(reps, () -> x.sort(0)));
            r.put("argsort_1M_ms", ms(reps, () -> v.argsort()));
            r.put("topk10_1024x1024_ms", ms(reps, () -> x.topk(10)));
            r.put("median_1024x1024_dim1_ms", ms(reps, () -> x.median(1)));
            r.put("unique_1M_int64_inverse_counts_ms", ms(reps, () -> ints.unique(true, true, true)));
            r.put("searchsorted_1000_bounds_10000_values_ms", ms(reps, () -> Torch.searchsorted(bounds, q)));
            r.put("multinomial_1000_cats_10000_samples_ms", ms(reps, () -> Torch.multinomial(probs, 10000, true)));
            r.put("multinomial_1000_cats_100_no_replacement_ms", ms(reps, () -> Torch.multinomial(probs, 100, false)));
        }
        return r;
    }

    /** Median milliseconds of {@code op}, whose results a scope closes each time. */
    private static double ms(int reps, Supplier<?> op) {
        return Timing.median(10, reps, () -> {
            try (MemoryScope scope = new MemoryScope()) {
                op.get();
            }
        }) * 1e3;
    }
}
