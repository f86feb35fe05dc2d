package org.jtorch.backend.cpu;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;

/**
 * The JVM flags the CPU kernels are measured with, checked once when the CPU backend starts: a JVM that lacks one
 * gets one warning (logger {@code org.jtorch.backend}) naming the flag and what going without it measured. The
 * {@code jtorch} launcher and the build set them; this is for programs that embed jtorch in their own JVM.
 */
final class JvmFlags {
    private JvmFlags() {}

    /**
     * {@code -XX:-UseProfiledLoopPredicate}: with C2's profile-based loop predicates on, the kernels' loops fail a
     * predicate, deoptimise, run as slow boxed vector code until recompiled, and fail again.
     */
    static final String PROFILED_LOOP_PREDICATE_WARNING = "jtorch: this JVM runs with C2's profiled loop predicates"
            + " (UseProfiledLoopPredicate is on): jtorch's kernels can run much slower this way (measured: the MNIST example's"
            + " training step %s). Start the JVM with -XX:-UseProfiledLoopPredicate (README, 'JVM flags').";

    /**
     * What going without the flag was measured to cost (quiet machine: scripts/java-env, 2026-12-02, and issue 20's
     * MNIST port). A rerun on a machine at load 12-20 could not tell the two apart (docs/BENCHMARKS.md, issue 20).
     */
    static final String PROFILED_LOOP_PREDICATE_COST = "306 against 215 ms per batch; a ResNet-20 step 860 against 420 ms";

    private static boolean checked;

    /** Logs the warnings for this JVM's flags, the first time only. */
    static synchronized void checkOnce() {
        if (checked) return;
        checked = true;
        // The predicates are C2's: a JVM that stops at C1 (short-lived tools, tests' child processes) is not affected.
        if ("true".equals(vmOption("UseProfiledLoopPredicate")) && "4".equals(vmOption("TieredStopAtLevel"))) {
            System.getLogger("org.jtorch.backend").log(System.Logger.Level.WARNING,
                    String.format(PROFILED_LOOP_PREDICATE_WARNING, PROFILED_LOOP_PREDICATE_COST));
        }
    }

    /** The value of a HotSpot flag, or null on a JVM that does not have it. */
    static String vmOption(String name) {
        try {
            return ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).getVMOption(name).getValue();
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }
}
