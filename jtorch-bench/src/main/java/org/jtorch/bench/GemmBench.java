package org.jtorch.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.jtorch.backend.cpu.Gemm;
import org.jtorch.backend.cpu.Parallel;

/**
 * SGEMM throughput of jtorch's {@link Gemm} against OpenBLAS, side by side in one process.
 *
 * <p>For each shape and thread count, timed reps alternate between the two libraries (so both see
 * the same machine load); each rep runs the call enough times to last about {@code --rep-ms} and
 * the table shows the median rep. Usage:
 * {@code GemmBench [--threads 1,2] [--reps 7] [--rep-ms 30] [--shapes square,mlp,small] [--cputime]}. With {@code --cputime}
 * (one thread only) reps are timed in the calling thread's CPU time, which a loaded machine disturbs less than wall time.
 */
public final class GemmBench {
    record Shape(String name, boolean transA, boolean transB, int m, int n, int k) {
        double flops() {
            return 2.0 * m * n * k;
        }
    }

    static List<Shape> shapes(String which) {
        List<Shape> s = new ArrayList<>();
        if (which.contains("square")) {
            for (int d : new int[] {256, 512, 1024, 2048}) s.add(new Shape("square " + d, false, false, d, d, d));
        }
        if (which.contains("mlp")) {
            // Batch-128 MLP 784-512-512-10 with weights stored [in x out].
            s.add(new Shape("fwd  [128x784]x[784x512]", false, false, 128, 512, 784));
            s.add(new Shape("fwd  [128x512]x[512x512]", false, false, 128, 512, 512));
            s.add(new Shape("fwd  [128x512]x[512x10]", false, false, 128, 10, 512));
            s.add(new Shape("wgrad[784x128]x[128x512] (A^T)", true, false, 784, 512, 128));
            s.add(new Shape("wgrad[512x128]x[128x512] (A^T)", true, false, 512, 512, 128));
            s.add(new Shape("wgrad[512x128]x[128x10] (A^T)", true, false, 512, 10, 128));
            s.add(new Shape("dgrad[128x512]x[512x784] (B^T)", false, true, 128, 784, 512));
            s.add(new Shape("dgrad[128x512]x[512x512] (B^T)", false, true, 128, 512, 512));
            s.add(new Shape("dgrad[128x10]x[10x512] (B^T)", false, true, 128, 512, 10));
        }
        if (which.contains("small")) {
            // The word language model's LSTM at batch 20 (per time step, 2 x 200 wide) and 10-class heads as nn.Linear
            // runs them (weights [out x in]): the issue-20 shapes of few rows or a short depth.
            s.add(new Shape("lstm fwd [20x200]x[200x800] (B^T)", false, true, 20, 800, 200));
            s.add(new Shape("lstm dgrad [20x800]x[800x200]", false, false, 20, 200, 800));
            s.add(new Shape("lstm wgrad [800x20]x[20x200] (A^T)", true, false, 800, 200, 20));
            s.add(new Shape("dgrad [28x800]x[800x200]", false, false, 28, 200, 800));
            s.add(new Shape("head fwd [128x512]x[512x10] (B^T)", false, true, 128, 10, 512));
            s.add(new Shape("head wgrad [10x128]x[128x512] (A^T)", true, false, 10, 512, 128));
            s.add(new Shape("head dgrad [128x10]x[10x512]", false, false, 128, 512, 10));
            s.add(new Shape("head fwd [64x84]x[84x10] (B^T)", false, true, 64, 10, 84));
            s.add(new Shape("head wgrad [10x64]x[64x84] (A^T)", true, false, 10, 84, 64));
            s.add(new Shape("head dgrad [64x10]x[10x84]", false, false, 64, 84, 10));
        }
        return s;
    }

    public static void main(String[] args) {
        int[] threads = {1, 2};
        int reps = 7;
        double repMs = 30;
        String which = "square,mlp";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--threads" -> threads = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                case "--reps" -> reps = Integer.parseInt(args[++i]);
                case "--rep-ms" -> repMs = Double.parseDouble(args[++i]);
                case "--shapes" -> which = args[++i];
                case "--cputime" -> cpuTime = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (cpuTime && Arrays.stream(threads).anyMatch(t -> t != 1)) {
            throw new IllegalArgumentException("--cputime needs --threads 1: CPU time counts the calling thread's work only");
        }
        System.out.printf("OpenBLAS core: %s, OPENBLAS_CORETYPE=%s, OPENBLAS_THREAD_TIMEOUT=%s, cpus=%d%n",
                OpenBlas.coreName(), System.getenv("OPENBLAS_CORETYPE"), System.getenv("OPENBLAS_THREAD_TIMEOUT"),
                Runtime.getRuntime().availableProcessors());
        System.out.printf("median of %d reps of ~%.0f ms each, alternating jtorch / OpenBLAS (idle %d ms after each OpenBLAS rep when multithreaded)%n", reps, repMs, OPENBLAS_IDLE_MS);
        List<Shape> list = shapes(which);
        // Let C2 compile every path (packing variants, edge kernels) before anything is timed.
        for (Shape s : list) run(s, 1, 1, false);
        for (int t : threads) {
            Parallel.setNumThreads(t);
            OpenBlas.setNumThreads(t);
            System.out.printf("%n%d thread(s)%n", t);
            System.out.printf("%-38s %12s %12s %7s %10s%n", "shape (m x k) x (k x n)", "jtorch GF/s", "OpenBLAS GF/s", "ratio", "max relerr");
            for (Shape s : list) run(s, reps, repMs, true);
        }
    }

    static void run(Shape s, int reps, double repMs, boolean print) {
        try (Arena arena = Arena.ofShared()) {
            long aRows = s.transA ? s.k : s.m, aCols = s.transA ? s.m : s.k;
            long bRows = s.transB ? s.n : s.k, bCols = s.transB ? s.k : s.n;
            MemorySegment a = random(arena, aRows * aCols, 1);
            MemorySegment b = random(arena, bRows * bCols, 2);
            MemorySegment c1 = arena.allocate((long) s.m * s.n * 4, 64);
            MemorySegment c2 = arena.allocate((long) s.m * s.n * 4, 64);
            Runnable jt = () -> Gemm.sgemm(s.transA, s.transB, s.m, s.n, s.k, 1f, a, 0, aCols, b, 0, bCols, 0f, c1, 0, s.n);
            Runnable ob = () -> OpenBlas.sgemm(s.transA, s.transB, s.m, s.n, s.k, 1f, a, (int) aCols, b, (int) bCols, 0f, c2, s.n);
            // Warm up (JIT compilation, pack buffers, thread pools) and size the reps. Reps alternate
            // between the libraries so both see the same machine load. With more than one thread,
            // OpenBLAS's idle workers spin (yielding) for ~2^28 cycles after a call and would steal a
            // core from jtorch's next rep, so each OpenBLAS rep is followed by an idle pause.
            // jtorch first runs for a while on its own: each GEMM path (tile kernels, narrow dot-product
            // kernel, small-side row kernel) needs its own calls before C2 compiles it with the Vector API
            // intrinsics; measuring earlier times the JIT's interim code.
            long until = System.nanoTime() + JIT_WARMUP_NANOS;
            while (System.nanoTime() < until) jt.run();
            int itersJ = calibrate(jt, repMs), itersO = calibrate(ob, repMs);
            boolean pause = Parallel.numThreads() > 1;
            if (pause) sleepMs(OPENBLAS_IDLE_MS);
            double[] gj = new double[reps], go = new double[reps];
            for (int r = 0; r < reps; r++) {
                gj[r] = s.flops() * itersJ / time(jt, itersJ);
                go[r] = s.flops() * itersO / time(ob, itersO);
                if (pause) sleepMs(OPENBLAS_IDLE_MS);
            }
            double err = maxRelErr(c1, c2, (long) s.m * s.n);
            double mj = median(gj), mo = median(go);
            if (print) System.out.printf("%-38s %12.1f %12.1f %7.2f %10.1e%n", s.name, mj, mo, mj / mo, err);
        }
    }

    /** Per shape and thread count, before timing jtorch. */
    static final long JIT_WARMUP_NANOS = 1_500_000_000L;

    /** Long enough for OpenBLAS's worker threads to stop spinning and block. */
    static final long OPENBLAS_IDLE_MS = 250;

    static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static int calibrate(Runnable r, double repMs) {
        long t0 = System.nanoTime();
        int n = 0;
        while (System.nanoTime() - t0 < 150_000_000L || n < 3) {
            r.run();
            n++;
        }
        double perCall = (System.nanoTime() - t0) / 1e6 / n;
        return (int) Math.max(1, Math.round(repMs / perCall));
    }

    /** Time reps in the calling thread's CPU time instead of wall time ({@code --cputime}, one thread). */
    static boolean cpuTime;

    static long time(Runnable r, int iters) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long t0 = cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime();
        for (int i = 0; i < iters; i++) r.run();
        return (cpuTime ? mx.getCurrentThreadCpuTime() : System.nanoTime()) - t0;
    }

    static MemorySegment random(Arena arena, long count, long seed) {
        MemorySegment s = arena.allocate(count * 4, 64);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (long i = 0; i < count; i++) s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble() * 2 - 1));
        return s;
    }

    static double maxRelErr(MemorySegment x, MemorySegment y, long count) {
        double scale = 0, err = 0;
        for (long i = 0; i < count; i++) {
            double u = x.getAtIndex(ValueLayout.JAVA_FLOAT, i), v = y.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            scale = Math.max(scale, Math.abs(v));
            err = Math.max(err, Math.abs(u - v));
        }
        return scale == 0 ? err : err / scale;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
