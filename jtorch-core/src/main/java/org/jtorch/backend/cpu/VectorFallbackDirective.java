package org.jtorch.backend.cpu;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * Keeps C2 off the Vector API's Java fallbacks, through a compiler directive that the CPU backend adds to its own JVM
 * when it loads (the {@code Compiler.directives_add} diagnostic command: no JVM flag).
 *
 * <p>Why: until C2 compiles a kernel with the Vector API's intrinsics, every vector operation runs its Java fallback
 * (a lambda around {@code ldOp}, {@code bOp}, {@code rvOp} and the like, boxed vectors). Those methods become the
 * hottest of a fresh JVM, so C2 compiles them on their own, again for each caller's profile: 410 of the C2
 * compilations that finished before the MNIST example's first training step ended were the Vector API's, 12 s of
 * C2's wall time at load 20 against 15 s for jtorch's own kernels (JFR, docs/BENCHMARKS.md, issue 20, thirteenth
 * session). That work is thrown away once the kernels are compiled, where the intrinsics replace the fallbacks; in the
 * meantime it holds the kernels in the C2 queue. Excluded from C2, the fallbacks are compiled by C1 without profiling
 * (tier 1) and the queue holds the kernels.
 *
 * <p>Only the fallbacks' own bodies are matched: the element-by-element loops ({@code ldOp}, {@code bOp},
 * {@code rvOp}, ... and {@code bTest}; not {@code VectorShuffle.fromOp}, which is API), the element accessors the
 * load and store fallbacks pass as lambdas, and the lambdas. The public methods a kernel inlines to reach an
 * intrinsic ({@code lanewise}, {@code fromMemorySegment}, {@code fma}, ...) and {@code VectorSupport}'s entry points
 * are not, because C2 does not inline a method it was told not to compile.
 *
 * <p><b>Opt-in</b> ({@code JTORCH_JIT_DIRECTIVES=1} or {@code -Djtorch.jitDirectives=true}; never without C2): in
 * alternating fresh JVMs at load 20-35 it took 0.07-0.35 s of CPU off MNIST's first step but added 0.5-0.6 s to
 * DCGAN's, and the VAE's warm-up was about 1 s longer in two rounds of three (the fallbacks, compiled by C1 only, run
 * slower until the kernels reach C2), so it stays off until a quiet machine says otherwise (docs/BENCHMARKS.md, issue 20, thirteenth session). A
 * JVM where the command is missing or refuses the directive runs as before (logged at DEBUG).
 */
final class VectorFallbackDirective {
    private VectorFallbackDirective() {}

    /** The fallbacks' method patterns (HotSpot's method-pattern syntax: a '*' only at either end of a part). */
    static final List<String> FALLBACK_PATTERNS = List.of(
            "jdk/incubator/vector/*.ldOp", "jdk/incubator/vector/*.stOp",
            "jdk/incubator/vector/*.ldLongOp", "jdk/incubator/vector/*.stLongOp",
            "jdk/incubator/vector/*.uOp", "jdk/incubator/vector/*.uOpTemplate",
            "jdk/incubator/vector/*.bOp", "jdk/incubator/vector/*.bOpTemplate",
            "jdk/incubator/vector/*.tOp", "jdk/incubator/vector/*.tOpTemplate",
            "jdk/incubator/vector/*.rOp", "jdk/incubator/vector/*.rOpTemplate",
            "jdk/incubator/vector/*.vOp", "jdk/incubator/vector/*.rvOp",
            "jdk/incubator/vector/*.bTest",
            "jdk/incubator/vector/*.memorySegmentGet",
            "jdk/incubator/vector/*.memorySegmentSet",
            "jdk/incubator/vector/*.lambda*",
            "*Vector$$Lambda*.*",
            "*Species$$Lambda*.*",
            "*Mask$$Lambda*.*",
            "*Shuffle$$Lambda*.*");

    /** The directive: the patterns above, excluded from C2 only (C1 still compiles them). */
    static String directiveJson() {
        StringBuilder match = new StringBuilder();
        for (String p : FALLBACK_PATTERNS) match.append(match.isEmpty() ? "" : ", ").append('"').append(p).append('"');
        return "[{ match: [" + match + "], c2: { Exclude: true } }]\n";
    }

    private static boolean installed;

    /**
     * Adds the directive once per JVM, if turned on and there is C2; returns whether it was added now. Takes
     * about 0.1-0.3 s of CPU (the platform MBean server), so the backend calls it from its warm-up thread.
     */
    static synchronized boolean installOnce() {
        if (installed || !enabled()) return false;
        installed = true;
        return add();
    }

    /** Adds the directive to this JVM, whatever the switch says; returns whether the JVM took it. */
    static boolean add() {
        Path file = null;
        try {
            file = Files.createTempFile("jtorch-vector-fallbacks", ".json");
            Files.writeString(file, directiveJson());
            Object reply = ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesAdd",
                    new Object[] {new String[] {file.toString()}}, new String[] {String[].class.getName()});
            boolean added = String.valueOf(reply).contains("1 compiler directives added");
            if (!added) log("the JVM did not add the directive: " + reply);
            return added;
        } catch (IOException | JMException | RuntimeException e) {
            log("could not add the directive: " + e);
            return false;
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException ignored) {
                    // A temporary file left behind; the directive, if added, is already in the JVM.
                }
            }
        }
    }

    static boolean enabled() {
        if (!"1".equals(System.getenv("JTORCH_JIT_DIRECTIVES")) && !"true".equals(System.getProperty("jtorch.jitDirectives"))) {
            return false;
        }
        return "4".equals(JvmFlags.vmOption("TieredStopAtLevel")) && !"false".equals(JvmFlags.vmOption("UseCompiler"));
    }

    private static void log(String message) {
        System.getLogger("org.jtorch.backend").log(System.Logger.Level.DEBUG, "jtorch: vector fallback directive: " + message);
    }
}
