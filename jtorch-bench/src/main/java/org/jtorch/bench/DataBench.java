package org.jtorch.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Dataset;
import org.jtorch.data.Sample;

/**
 * DataLoader throughput with an expensive per-sample transform: each {@code get} spends about 1 ms of
 * real CPU work (a synthetic 3x32x32 image computed pixel by pixel, not a sleep), batch 32. Reports
 * batches/s without workers and with 2 worker threads, measured alternately, medians of the rounds,
 * with the cores the process kept busy and the CPU time per batch (on a machine busy with other
 * processes, the kernel's autogroup scheduling caps the process's share whatever its thread count, so
 * batches/s alone cannot show the workers' speedup there).
 */
final class DataBench {
    private DataBench() {}

    static final int BATCH = 32;

    /** Synthetic images whose every pixel costs {@code rounds} iterations of floating-point work. */
    static final class SyntheticImages implements Dataset<Sample> {
        final int size;
        final int rounds;

        SyntheticImages(int size, int rounds) {
            this.size = size;
            this.rounds = rounds;
        }

        static float[] pixels(int index, int rounds) {
            float[] img = new float[3 * 32 * 32];
            for (int p = 0; p < img.length; p++) {
                double v = index * 0.001 + p * 1e-4;
                for (int r = 0; r < rounds; r++) v = Math.sin(v) * 0.9 + 0.1 * Math.sqrt(v * v + 1);
                img[p] = (float) v;
            }
            return img;
        }

        @Override
        public Sample get(int index) {
            return new Sample(Torch.tensor(pixels(index, rounds), 3, 32, 32), Torch.scalar((long) (index % 10)));
        }

        @Override
        public int size() {
            return size;
        }
    }

    /** Chooses the rounds per pixel that make one sample cost about 1 ms on this machine. */
    static int calibrateRounds() {
        int rounds = 4;
        for (int i = 0; i < 200; i++) SyntheticImages.pixels(i, rounds); // JIT warm-up
        double ms = Timing.median(2, 9, () -> SyntheticImages.pixels(1, 4)) * 1e3;
        return Math.max(1, (int) Math.round(4 / ms));
    }

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        int rounds = calibrateRounds();
        double sampleMs = Timing.median(3, 15, () -> SyntheticImages.pixels(7, rounds)) * 1e3;
        int batches = quick ? 10 : 20;
        SyntheticImages data = new SyntheticImages(BATCH * batches, rounds);
        int reps = quick ? 3 : 5;
        double[] w0 = new double[reps];
        double[] w2 = new double[reps];
        double[] cpu0 = new double[reps];
        double[] cpu2 = new double[reps];
        epochBatchesPerSecond(data, 2); // warm-up of both paths
        epochBatchesPerSecond(data, 0);
        for (int i = 0; i < reps; i++) {
            long c0 = processCpuNanos();
            long t0 = System.nanoTime();
            w0[i] = epochBatchesPerSecond(data, 0);
            cpu0[i] = (processCpuNanos() - c0) / (double) (System.nanoTime() - t0);
            c0 = processCpuNanos();
            t0 = System.nanoTime();
            w2[i] = epochBatchesPerSecond(data, 2);
            cpu2[i] = (processCpuNanos() - c0) / (double) (System.nanoTime() - t0);
        }
        r.put("data_sample_transform_ms", sampleMs);
        r.put("data_batches_per_s_0_workers", median(w0));
        r.put("data_batches_per_s_2_workers", median(w2));
        r.put("data_speedup_2_workers", median(w2) / median(w0));
        // Cores this process kept busy (about 1 and 2 on an idle 2-core machine): tells a busy machine from serialised loading.
        r.put("data_cores_busy_0_workers", median(cpu0));
        r.put("data_cores_busy_2_workers", median(cpu2));
        // CPU time per batch: equal for both means the workers add no work, so the speedup is the cores they get.
        r.put("data_cpu_ms_per_batch_0_workers", 1e3 * median(cpu0) / median(w0));
        r.put("data_cpu_ms_per_batch_2_workers", 1e3 * median(cpu2) / median(w2));
        return r;
    }

    /** One epoch (workers started and stopped inside it, as a default loader does). */
    static double epochBatchesPerSecond(SyntheticImages data, int workers) {
        try (DataLoader<Sample> loader = DataLoader.builder(data).batchSize(BATCH).numWorkers(workers).build()) {
            long t0 = System.nanoTime();
            int n = 0;
            double checksum = 0;
            for (Sample b : loader) {
                checksum += b.target().numel();
                n++;
            }
            double s = (System.nanoTime() - t0) * 1e-9;
            if (checksum != data.size()) throw new IllegalStateException("DataBench: lost samples");
            return n / s;
        }
    }

    private static long processCpuNanos() {
        var os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getProcessCpuTime() : 0;
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }
}
