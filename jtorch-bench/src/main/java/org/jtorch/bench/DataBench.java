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
 * real CPU work (a synthetic 3x32x32 image computed pixel by pixel with {@code Math.sin}/{@code sqrt},
 * calibrated at start), batch 32, 20 batches per epoch. Not a sleep, and not a busy-wait on
 * {@code System.nanoTime}: both finish on time however little CPU the thread got, which overstates the
 * speedup on a shared machine.
 *
 * <p>Each round runs one epoch without workers, one with 2 worker threads, and then the same transform
 * work (the same samples, whole batches dealt alternately) in 1 and in 2 plain threads without jtorch:
 * the plain threads' speedup is what the machine allows for this work at that moment (the kernel's
 * autogroup scheduling gives a process a share of a busy machine whatever its thread count), and
 * {@code data_speedup_vs_plain_threads} is the loader's speedup as a fraction of it. Ratios are medians of
 * the per-round ratios, after a warm-up that lets the JIT finish compiling (its compile time during the
 * timed rounds is reported: it runs on the same cores).
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
        int reps = quick ? 3 : 7;
        double[] w0 = new double[reps];
        double[] w2 = new double[reps];
        double[] cpu0 = new double[reps];
        double[] cpu2 = new double[reps];
        double[] speedup = new double[reps];
        double[] plainSpeedup = new double[reps];
        double[] ofPlain = new double[reps];
        // Warm-up. The loader's per-batch code (collate, the copy kernels) runs only 20 times an epoch:
        // epochs of a cheap transform (1 round per pixel, same code) reach the JIT's thresholds quickly,
        // then full rounds until the JIT has no more than 1% of a round left to compile (at most 6).
        SyntheticImages cheap = new SyntheticImages(BATCH * batches, 1);
        for (int i = 0; i < 25; i++) {
            epochBatchesPerSecond(cheap, 0);
            epochBatchesPerSecond(cheap, 2);
        }
        for (int i = 0; i < 6; i++) {
            long jit = compileMillis();
            long t0 = System.nanoTime();
            epochBatchesPerSecond(data, 0);
            epochBatchesPerSecond(data, 2);
            plainBatchesPerSecond(data, batches, 1);
            plainBatchesPerSecond(data, batches, 2);
            if (i >= 1 && compileMillis() - jit < 0.01 * (System.nanoTime() - t0) * 1e-6) break;
        }
        long jit0 = compileMillis();
        for (int i = 0; i < reps; i++) {
            long c0 = processCpuNanos();
            long t0 = System.nanoTime();
            w0[i] = epochBatchesPerSecond(data, 0);
            cpu0[i] = (processCpuNanos() - c0) / (double) (System.nanoTime() - t0);
            c0 = processCpuNanos();
            t0 = System.nanoTime();
            w2[i] = epochBatchesPerSecond(data, 2);
            cpu2[i] = (processCpuNanos() - c0) / (double) (System.nanoTime() - t0);
            double p1 = plainBatchesPerSecond(data, batches, 1);
            double p2 = plainBatchesPerSecond(data, batches, 2);
            speedup[i] = w2[i] / w0[i];
            plainSpeedup[i] = p2 / p1;
            ofPlain[i] = speedup[i] / plainSpeedup[i];
        }
        r.put("data_sample_transform_ms", sampleMs);
        r.put("data_batches_per_s_0_workers", median(w0));
        r.put("data_batches_per_s_2_workers", median(w2));
        r.put("data_speedup_2_workers", median(speedup));
        // The same transform work in 1 and 2 plain threads, same rounds: the most 2 threads could get here.
        r.put("data_plain_threads_speedup_2", median(plainSpeedup));
        r.put("data_speedup_vs_plain_threads", median(ofPlain));
        // Cores this process kept busy (about 1 and 2 on an idle 2-core machine): tells a busy machine from serialised loading.
        r.put("data_cores_busy_0_workers", median(cpu0));
        r.put("data_cores_busy_2_workers", median(cpu2));
        // CPU time per batch: equal for both means the workers add no work, so the speedup is the cores they get.
        r.put("data_cpu_ms_per_batch_0_workers", 1e3 * median(cpu0) / median(w0));
        r.put("data_cpu_ms_per_batch_2_workers", 1e3 * median(cpu2) / median(w2));
        r.put("data_jit_ms_per_round", (compileMillis() - jit0) / (double) reps);
        return r;
    }

    /**
     * The transform work alone, without jtorch: {@code pixels} for every sample of the epoch, whole
     * batches dealt in turn to {@code threads} new threads (as the loader deals them to its workers).
     */
    static double plainBatchesPerSecond(SyntheticImages data, int batches, int threads) {
        double[] sink = new double[threads];
        Runnable[] parts = new Runnable[threads];
        for (int t = 0; t < threads; t++) {
            int first = t;
            parts[t] = () -> {
                double s = 0;
                for (int b = first; b < batches; b += threads) {
                    for (int i = 0; i < BATCH; i++) s += SyntheticImages.pixels(b * BATCH + i, data.rounds)[i];
                }
                sink[first] = s;
            };
        }
        long t0 = System.nanoTime();
        if (threads == 1) {
            parts[0].run();
        } else {
            Thread[] ts = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                ts[t] = new Thread(parts[t], "data-bench-plain-" + t);
                ts[t].start();
            }
            for (Thread t : ts) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("DataBench: interrupted", e);
                }
            }
        }
        double s = (System.nanoTime() - t0) * 1e-9;
        if (Double.isNaN(Arrays.stream(sink).sum())) throw new IllegalStateException("DataBench: NaN pixels");
        return batches / s;
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

    private static long compileMillis() {
        var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
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
