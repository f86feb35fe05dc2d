package org.jtorch.bench;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.cpu.Parallel;

/**
 * Core CPU measurements: eager dispatch overhead, elementwise and reduction bandwidth, and the
 * machine's own copy bandwidth as the hardware limit. Prints {@code name value unit} lines that
 * {@code scripts/bench} joins with PyTorch's.
 */
final class CoreBench {
    private static final int BIG = 1 << 24; // 16M floats, 64 MiB: beyond the caches of most machines, not all

    private CoreBench() {}

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 5 : 15;
        // Eager overhead: a.add(b) on one-element tensors, result closed each time (the allocator reuses the block).
        try (Tensor a = Torch.ones(1); Tensor b = Torch.ones(1)) {
            double s = Timing.medianPerIteration(reps * 4, 200_000, () -> a.add(b).close());
            r.put("eager_add_1elem_us", s * 1e6);
        }
        // Eager view overhead: the view ops' chain alone (no element moves), each view closed at once.
        try (Tensor m = Torch.ones(4, 4)) {
            r.put("eager_view_us", Timing.medianPerIteration(reps * 4, 200_000, () -> m.view(16).close()) * 1e6);
            r.put("eager_transpose_us", Timing.medianPerIteration(reps * 4, 200_000, () -> m.transpose(0, 1).close()) * 1e6);
            r.put("eager_narrow_us", Timing.medianPerIteration(reps * 4, 200_000, () -> m.narrow(1, 1, 2).close()) * 1e6);
        }
        try (Tensor a = Torch.rand(BIG); Tensor b = Torch.rand(BIG); Tensor out = Torch.empty(BIG)) {
            double copy = Timing.median(40, reps, () -> out.copy_(a));
            r.put("copy_16M_f32_GBps", 2.0 * 4 * BIG / copy / 1e9);
            double add = Timing.median(40, reps, () -> a.add(b).close());
            r.put("add_16M_f32_GBps", 3.0 * 4 * BIG / add / 1e9);
            r.put("add_16M_f32_ms", add * 1e3);
            double mul = Timing.median(40, reps, () -> a.mul(2.0).close());
            r.put("mul_scalar_16M_f32_GBps", 2.0 * 4 * BIG / mul / 1e9);
            double relu = Timing.median(40, reps, () -> a.relu().close());
            r.put("relu_16M_f32_GBps", 2.0 * 4 * BIG / relu / 1e9);
            double exp = Timing.median(40, reps, () -> a.exp().close());
            r.put("exp_16M_f32_GBps", 2.0 * 4 * BIG / exp / 1e9);
            double sum = Timing.median(40, reps, () -> a.sum().close());
            r.put("sum_16M_f32_GBps", 4.0 * BIG / sum / 1e9);
            try (Tensor m = a.view(4096, 4096)) {
                double rows = Timing.median(40, reps, () -> m.sum(new int[] {1}, false).close());
                r.put("sum_rows_4096x4096_GBps", 4.0 * BIG / rows / 1e9);
                double softmax = Timing.median(40, reps, () -> m.softmax(1).close());
                r.put("softmax_rows_4096x4096_GBps", 2.0 * 4 * BIG / softmax / 1e9);
            }
        }
        r.put("machine_copy_GBps", machineCopyBandwidth(reps));
        // Reductions read their input once; softmax reads it and writes its output: fractions of those ceilings, at
        // the inputs' own size (a large last-level cache holds part of 64 MiB; see PeakBench).
        PeakBench.Bandwidth ceiling = PeakBench.bandwidthAt(4L * BIG, quick, false);
        r.put("sum_16M_f32_of_read_ceiling", r.get("sum_16M_f32_GBps") / ceiling.readGBps());
        r.put("sum_rows_4096x4096_of_read_ceiling", r.get("sum_rows_4096x4096_GBps") / ceiling.readGBps());
        r.put("softmax_rows_4096x4096_of_copy_ceiling", r.get("softmax_rows_4096x4096_GBps") / ceiling.copyGBps());
        return r;
    }

    /** Bulk copy between two 64 MiB buffers split across the intra-op threads: the bandwidth ceiling. */
    static double machineCopyBandwidth(int reps) {
        try (Tensor a = Torch.rand(BIG); Tensor b = Torch.empty(BIG)) {
            MemorySegment src = a.storage().segment();
            MemorySegment dst = b.storage().segment();
            long bytes = 4L * BIG;
            double t = Timing.median(40, reps, () -> Parallel.forRange(bytes / 4096, 1, (begin, end) ->
                    MemorySegment.copy(src, begin * 4096, dst, begin * 4096, (end - begin) * 4096)));
            return 2.0 * bytes / t / 1e9;
        }
    }
}
