package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Runs the float32 GEMM's packed path on small matrices in a background thread when the CPU backend loads, so that
 * C2 compiles its micro-kernels and packing loops while the program is still setting up. Without it the first large
 * products (a training step's linear layers) run the micro-kernels as the Vector API's boxed Java fallbacks, in the
 * interpreter and C1, until C2 compiles them by on-stack replacement: the MLP's first step took 0.9-1.1 s of CPU,
 * most of it there, against 6 ms once compiled. The small products reach C2's thresholds for a fraction of that work
 * (0.4-1.5 s of this thread's CPU at load 20-30, then it stops; docs/BENCHMARKS.md, issue 20, eighth session).
 *
 * <p>Only the GEMM (its packed path and {@link GemmShortM}'s): its micro-kernels are three quarters of a linear
 * layer's step, and its branches are shapes (full or partial tiles, beta zero or not, transposed operands), which this
 * covers in every combination, so its profile holds no branch that a real product would find untaken. Kernels with
 * flags (an optimizer's weight decay, momentum) are left to the program: a warm-up with other flags would make C2
 * compile a version the program's first call throws away. Nothing here touches tensors, the allocator, the random
 * generators or any other shared state; the products are computed into this thread's own memory and dropped.
 *
 * <p>Off with {@code JTORCH_JIT_WARMUP=0} or {@code -Djtorch.jitWarmup=false}; off without C2 (nothing to warm up).
 */
final class GemmWarmup {
    private GemmWarmup() {}

    /** The products' m, n and k: packed, single-thread, a partial row tile and a 16-column strip (see {@link #run}). */
    static final int M = 36, N = 80, K = 16;
    /** A product's n at most one vector wide (a classifier's last layer): A read in place ({@code kernelHalfDirect}). */
    static final int NARROW = 10;
    /** A short m that {@link GemmShortM} serves (a 10-class layer's weight gradient). */
    static final int SHORT_M = 10;
    /** At most this many rounds. */
    static final int MAX_ROUNDS = 4000;
    /** A round this fast runs C2's code (about 0.12 ms; the boxed fallbacks take 1-10 ms): done. */
    static final long COMPILED_ROUND_NANOS = 200_000;
    /** At most this much of the thread's CPU time. */
    static final long MAX_CPU_NANOS = 2_000_000_000L;

    /**
     * Starts the warm-up thread, unless both it and the opt-in {@link VectorFallbackDirective} are off or there is no
     * C2. The thread adds the directive first (its MBean server takes 0.1-0.3 s of CPU, better spent here than on the
     * program's thread), then runs the products.
     */
    static void start() {
        boolean warmUp = !"0".equals(System.getenv("JTORCH_JIT_WARMUP")) && !"false".equals(System.getProperty("jtorch.jitWarmup"))
                && "4".equals(JvmFlags.vmOption("TieredStopAtLevel")) && !"false".equals(JvmFlags.vmOption("UseCompiler"));
        boolean directive = VectorFallbackDirective.enabled();
        if (!warmUp && !directive) return;
        Thread t = new Thread(() -> {
            if (directive) VectorFallbackDirective.installOnce();
            if (warmUp) run();
        }, "jtorch-jit-warmup");
        t.setDaemon(true);
        t.start();
    }

    /**
     * Rounds of products until a pair of rounds runs at C2's speed (or the CPU budget is spent): op(A) {@link #M} x
     * {@link #K} times op(B) {@link #K} x {@link #N}, and the same with {@link #NARROW} columns, for A and B as stored
     * and transposed (a linear layer's forward, input gradient and weight gradient), beta 0 in even rounds and 1 in
     * odd ones; and {@link #SHORT_M} x {@link #K} times {@link #K} x {@link #N}, which {@link GemmShortM} serves. M is
     * above {@link GemmShortM}'s and {@link Gemm#SMALL_SIDE}'s range and M * N * K below {@link Gemm#PARALLEL_MIN_WORK},
     * so each runs on the packed path in this thread.
     */
    static void run() {
        long bytes = 4L * M * N * K; // more than any operand needs
        MemorySegment aAuto = Arena.ofAuto().allocate(bytes, 64);
        MemorySegment bAuto = Arena.ofAuto().allocate(bytes, 64);
        MemorySegment cAuto = Arena.ofAuto().allocate(bytes, 64);
        // Tensors' storage is a global-session view of its address (Storage): compile the loads and stores for that.
        MemorySegment a = MemorySegment.ofAddress(aAuto.address()).reinterpret(bytes);
        MemorySegment b = MemorySegment.ofAddress(bAuto.address()).reinterpret(bytes);
        MemorySegment c = MemorySegment.ofAddress(cAuto.address()).reinterpret(bytes);
        for (long i = 0; i < bytes / 4; i++) {
            a.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 7) * 0.125f);
            b.setAtIndex(ValueLayout.JAVA_FLOAT, i, (i % 5) * 0.25f);
        }
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long start = threads.getCurrentThreadCpuTime();
        long pairStart = start;
        for (int r = 0; r < MAX_ROUNDS; r++) {
            float beta = r % 2;
            for (int variant = 0; variant < 4; variant++) {
                boolean transA = (variant & 1) != 0, transB = (variant & 2) != 0;
                long lda = transA ? M : K;
                Gemm.sgemm(transA, transB, M, N, K, 1f, a, 0, lda, b, 0, transB ? K : N, beta, c, 0, N);
                Gemm.sgemm(transA, transB, M, NARROW, K, 1f, a, 0, lda, b, 0, transB ? K : NARROW, beta, c, 0, NARROW);
                Gemm.sgemm(transA, transB, SHORT_M, N, K, 1f, a, 0, transA ? SHORT_M : K, b, 0, transB ? K : N, beta, c, 0, N);
            }
            if (r % 2 == 1) {
                long now = threads.getCurrentThreadCpuTime();
                if (now - pairStart < 2 * COMPILED_ROUND_NANOS || now - start > MAX_CPU_NANOS) break;
                pairStart = now;
            }
        }
        java.lang.ref.Reference.reachabilityFence(aAuto);
        java.lang.ref.Reference.reachabilityFence(bAuto);
        java.lang.ref.Reference.reachabilityFence(cAuto);
    }
}
