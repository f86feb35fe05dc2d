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
     * {@code -XX:-UseProfiledLoopPredicate}: with C2's profile-based loop predicates on, loops fail a predicate,
     * deoptimise and are recompiled; since the generated kernels run their rows in pieces, what is left of it is in the
     * Vector API's fallback code during warm-up, so it costs warm-up time, not steady speed.
     */
    static final String PROFILED_LOOP_PREDICATE_WARNING = "jtorch: this JVM runs with C2's profiled loop predicates"
            + " (UseProfiledLoopPredicate is on): jtorch's warm-up can take longer this way (measured: %s)."
            + " Start the JVM with -XX:-UseProfiledLoopPredicate (README, 'JVM flags').";

    /**
     * What going without the flag was measured to cost (docs/BENCHMARKS.md, issue 20, branch osrrows: one thread's
     * CPU to the steady state, two runs each at load 18-29; the MNIST port showed no cost).
     */
    static final String PROFILED_LOOP_PREDICATE_COST = "the char GPT example reached its steady speed 0.4-0.8 s of CPU later;"
            + " its steady steps were level";

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
