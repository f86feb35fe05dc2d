package org.jtorch.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.cpu.Parallel;

/**
 * {@code jtorch bench peak}: this machine's ceilings, as the Vector API reaches them. The f32 FMA rate on one core
 * and on all intra-op threads (independent register accumulators, no memory traffic), and the memory bandwidth of
 * arrays beyond the last-level cache: read (a sum), copy (read + write) and write (a fill), each on all threads.
 * Convolution benchmarks divide their rates by the FMA figures ({@link #get}). Bandwidth-bound benchmarks divide
 * theirs by the bandwidth at their own working set ({@link #bandwidthAt}), because on some machines their inputs
 * fit in the last-level cache: the Intel Xeon of 2026-12-07 reports 300 MiB of L3, and one thread read 64 MiB at
 * 19-29 GB/s against 5-7 GB/s for 512 MiB (loaded machine), so a fraction of the DRAM figure read above 1.
 */
final class PeakBench {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** The DRAM figures' array size: at least 256 MiB, and at least twice the last-level cache. */
    private static final long BYTES = Math.max(256L << 20, 2 * lastLevelCacheBytes());
    /** Vector FMAs per accumulator per timed call of the FMA loop: long enough to hide the fork-join cost. */
    private static final int FMA_ITERATIONS = 2_000_000;
    private static final int FMA_ACCUMULATORS = 12;
    /** Published (racy writes from several threads do no harm) so that the JIT cannot drop the loops. */
    private static volatile float sink;

    /** The ceilings in GFLOP/s (f32 FMA, counted as 2 flops) and GB/s (bytes read plus bytes written). */
    record Peak(double fmaOneCoreGflops, double fmaAllCoresGflops, double readGBps, double copyGBps, double writeGBps) {}

    /** Bandwidth in GB/s (bytes read plus bytes written) on all intra-op threads, at one working-set size. */
    record Bandwidth(double readGBps, double copyGBps, double writeGBps) {}

    private static Peak measured;
    private static final Map<Long, Bandwidth> bandwidths = new HashMap<>();

    private PeakBench() {}

    /** {@link Timing#median} or {@link Timing#medianCpu}. */
    @FunctionalInterface
    interface Timer {
        double median(int warmup, int reps, Runnable body);
    }

    /** Measures once per JVM (about a second, two in full mode), then returns the same figures. */
    static synchronized Peak get(boolean quick) {
        if (measured == null) measured = measure(quick, false);
        return measured;
    }

    /**
     * As {@link #get}, timed in the calling thread's CPU time when {@code cpuTime} (for {@code JTORCH_NUM_THREADS=1},
     * where every loop runs on the caller): a loaded machine's waiting for a core then does not count.
     */
    static synchronized Peak get(boolean quick, boolean cpuTime) {
        if (measured == null) measured = measure(quick, cpuTime);
        return measured;
    }

    static Map<String, Double> run(boolean quick) {
        Peak p = get(quick);
        Map<String, Double> r = new LinkedHashMap<>();
        r.put("peak_threads", (double) Parallel.numThreads());
        r.put("peak_vector_lanes_f32", (double) FS.length());
        r.put("peak_fma_f32_1core_GFLOPs", p.fmaOneCoreGflops());
        r.put("peak_fma_f32_all_GFLOPs", p.fmaAllCoresGflops());
        r.put("peak_read_GBps", p.readGBps());
        r.put("peak_copy_GBps", p.copyGBps());
        r.put("peak_write_GBps", p.writeGBps());
        return r;
    }

    private static Peak measure(boolean quick, boolean cpuTime) {
        int reps = quick ? 5 : 11;
        Timer timing = cpuTime ? Timing::medianCpu : Timing::median;
        int threads = Parallel.numThreads();
        // Short calls first, so that C2 compiles the loop before a long call runs it in the interpreter (boxed vectors).
        for (int i = 0; i < 20_000; i++) sink += fmaLoop(100);
        double flopsPerCall = 2.0 * FS.length() * FMA_ACCUMULATORS * FMA_ITERATIONS;
        double one = flopsPerCall / timing.median(3, reps, () -> sink += fmaLoop(FMA_ITERATIONS)) / 1e9;
        double all = threads * flopsPerCall / timing.median(3, reps, () -> Parallel.forChunks(threads, (b, e) -> {
            sink = fmaLoop(FMA_ITERATIONS);
        })) / 1e9;
        Bandwidth memory = bandwidthAt(BYTES, quick, cpuTime);
        return new Peak(one, all, memory.readGBps(), memory.copyGBps(), memory.writeGBps());
    }

    /**
     * The read, copy and write bandwidth of {@code bytes}-long arrays (one for read and write, two for copy), measured
     * once per size and JVM: the ceiling of a bandwidth-bound kernel whose operands are that large.
     */
    static synchronized Bandwidth bandwidthAt(long bytes, boolean quick, boolean cpuTime) {
        Bandwidth known = bandwidths.get(bytes);
        if (known != null) return known;
        int reps = quick ? 5 : 11;
        Timer timing = cpuTime ? Timing::medianCpu : Timing::median;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = arena.allocate(bytes, 64);
            MemorySegment b = arena.allocate(bytes, 64);
            for (int i = 0; i < 20_000; i++) sink += readLoop(b, 0, 4096);
            a.fill((byte) 1);
            b.fill((byte) 2);
            long pages = bytes / 4096;
            double write = bytes / timing.median(2, reps, () -> Parallel.forRange(pages, 1, (p0, p1) ->
                    a.asSlice(p0 * 4096, (p1 - p0) * 4096).fill((byte) 0))) / 1e9;
            double copy = 2.0 * bytes / timing.median(2, reps, () -> Parallel.forRange(pages, 1, (p0, p1) ->
                    MemorySegment.copy(b, p0 * 4096, a, p0 * 4096, (p1 - p0) * 4096))) / 1e9;
            double read = bytes / timing.median(2, reps, () -> Parallel.forRange(pages, 1, (p0, p1) -> {
                sink = readLoop(b, p0 * 4096, (p1 - p0) * 4096);
            })) / 1e9;
            Bandwidth measuredHere = new Bandwidth(read, copy, write);
            bandwidths.put(bytes, measuredHere);
            return measuredHere;
        }
    }

    /** The largest data or unified cache that Linux lists for CPU 0, in bytes; 0 where there is no such listing. */
    static long lastLevelCacheBytes() {
        long largest = 0;
        for (int index = 0; index < 8; index++) {
            Path dir = Path.of("/sys/devices/system/cpu/cpu0/cache/index" + index);
            try {
                if (Files.readString(dir.resolve("type")).strip().equals("Instruction")) continue;
                largest = Math.max(largest, parseCacheSize(Files.readString(dir.resolve("size")).strip()));
            } catch (IOException | RuntimeException e) {
                break;
            }
        }
        return largest;
    }

    /** sysfs's cache sizes: "48K", "2048K", "307200K", "300M". */
    static long parseCacheSize(String size) {
        char unit = size.charAt(size.length() - 1);
        long scale = switch (unit) {
            case 'K' -> 1L << 10;
            case 'M' -> 1L << 20;
            case 'G' -> 1L << 30;
            default -> 1;
        };
        return Long.parseLong(Character.isDigit(unit) ? size : size.substring(0, size.length() - 1)) * scale;
    }

    /**
     * {@code acc = acc * x + y} on twelve independent accumulators: more than an FMA unit's latency times its
     * throughput on current x86 and ARM cores, so the chains never stall. With x just below 1 the values converge
     * instead of overflowing or going subnormal, which would slow some cores.
     */
    private static float fmaLoop(int iterations) {
        FloatVector x = FloatVector.broadcast(FS, 0.999999f);
        FloatVector y = FloatVector.broadcast(FS, 1e-6f);
        FloatVector a0 = FloatVector.broadcast(FS, 1f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
        FloatVector a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
        for (int i = 0; i < iterations; i++) {
            a0 = a0.fma(x, y);
            a1 = a1.fma(x, y);
            a2 = a2.fma(x, y);
            a3 = a3.fma(x, y);
            a4 = a4.fma(x, y);
            a5 = a5.fma(x, y);
            a6 = a6.fma(x, y);
            a7 = a7.fma(x, y);
            a8 = a8.fma(x, y);
            a9 = a9.fma(x, y);
            a10 = a10.fma(x, y);
            a11 = a11.fma(x, y);
        }
        FloatVector s = a0.add(a1).add(a2.add(a3)).add(a4.add(a5).add(a6.add(a7))).add(a8.add(a9).add(a10.add(a11)));
        return s.reduceLanes(VectorOperators.ADD);
    }

    /** Sums {@code bytes} (whole pages: a multiple of four vectors) with four accumulators: loads only, the read bandwidth. */
    private static float readLoop(MemorySegment s, long off, long bytes) {
        long vb = FS.vectorByteSize();
        FloatVector a0 = FloatVector.zero(FS), a1 = a0, a2 = a0, a3 = a0;
        for (long i = off, end = off + bytes; i < end; i += 4 * vb) {
            a0 = a0.add(FloatVector.fromMemorySegment(FS, s, i, LE));
            a1 = a1.add(FloatVector.fromMemorySegment(FS, s, i + vb, LE));
            a2 = a2.add(FloatVector.fromMemorySegment(FS, s, i + 2 * vb, LE));
            a3 = a3.add(FloatVector.fromMemorySegment(FS, s, i + 3 * vb, LE));
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
    }
}
