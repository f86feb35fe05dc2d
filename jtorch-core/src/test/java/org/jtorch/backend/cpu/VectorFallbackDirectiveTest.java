package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/**
 * The directive that keeps C2 off the Vector API's fallbacks matches the fallbacks and none of the methods a kernel
 * inlines to reach an intrinsic (C2 does not inline a method it was told not to compile), and the JVM takes it.
 */
class VectorFallbackDirectiveTest {
    /** The vector classes a kernel calls: the public types and the 512-bit implementations this machine's kernels use. */
    private static final List<String> VECTOR_CLASSES = List.of("Vector", "AbstractVector", "FloatVector", "DoubleVector",
            "IntVector", "LongVector", "ByteVector", "ShortVector", "Float512Vector", "Float256Vector", "Double512Vector",
            "Int512Vector", "Long512Vector", "Float512Vector$Float512Mask", "Float512Vector$Float512Shuffle",
            "VectorMask", "AbstractMask", "VectorShuffle", "AbstractShuffle", "VectorSpecies", "AbstractSpecies",
            "FloatVector$FloatSpecies", "IntVector$IntSpecies", "VectorOperators", "VectorIntrinsics");

    /** HotSpot's method-pattern match: each part exact, or with a '*' at its start (suffix), end (prefix) or both. */
    static boolean matches(String pattern, String className, String methodName) {
        int dot = pattern.lastIndexOf('.');
        return partMatches(pattern.substring(0, dot), className) && partMatches(pattern.substring(dot + 1), methodName);
    }

    private static boolean partMatches(String pattern, String name) {
        if (pattern.equals("*")) return true;
        boolean any0 = pattern.startsWith("*"), any1 = pattern.endsWith("*");
        String core = pattern.substring(any0 ? 1 : 0, pattern.length() - (any1 ? 1 : 0));
        if (any0 && any1) return name.contains(core);
        if (any0) return name.endsWith(core);
        if (any1) return name.startsWith(core);
        return name.equals(core);
    }

    private static boolean excluded(Class<?> c, String methodName) {
        String className = c.getName().replace('.', '/');
        return VectorFallbackDirective.FALLBACK_PATTERNS.stream().anyMatch(p -> matches(p, className, methodName));
    }

    @Test
    void thePatternsMatchTheFallbacksAndNoPublicOrProtectedMethodOfTheVectorClasses() throws Exception {
        java.util.Set<String> wronglyExcluded = new java.util.TreeSet<>();
        List<String> fallbacksMatched = new ArrayList<>();
        for (String simple : VECTOR_CLASSES) {
            Class<?> c = Class.forName("jdk.incubator.vector." + simple);
            for (Method m : c.getDeclaredMethods()) {
                boolean api = (m.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED)) != 0;
                if (api && excluded(c, m.getName())) wronglyExcluded.add(simple + "." + m.getName());
                if (!api && excluded(c, m.getName())) fallbacksMatched.add(simple + "." + m.getName());
            }
        }
        assertEquals(java.util.Set.of(), wronglyExcluded, "methods a kernel may inline are kept from C2");
        // The fallbacks this JDK has, by name: if a JDK renames them, the directive no longer does anything.
        for (String fallback : List.of("FloatVector.ldOp", "FloatVector.stOp", "FloatVector.bTest", "Float512Vector.bOp",
                "Float512Vector.uOp", "FloatVector$FloatSpecies.rvOp", "IntVector.ldLongOp", "FloatVector.memorySegmentGet")) {
            assertTrue(fallbacksMatched.contains(fallback), fallback + " not matched; matched: " + fallbacksMatched);
        }
        assertTrue(fallbacksMatched.stream().anyMatch(m -> m.startsWith("FloatVector.lambda$")), fallbacksMatched.toString());
        // A lambda's hidden class, and what must stay out: jtorch's own vector code, VectorSupport's intrinsic entries.
        assertTrue(matches("*Vector$$Lambda*.*", "jdk/incubator/vector/FloatVector$$Lambda/0x0000000012345678", "apply"));
        assertTrue(VectorFallbackDirective.FALLBACK_PATTERNS.stream().noneMatch(p ->
                matches(p, "org/jtorch/backend/cpu/VectorF32", "binaryOp")
                        || matches(p, "jdk/internal/vm/vector/VectorSupport", "binaryOp")
                        || matches(p, "jdk/internal/vm/vector/VectorSupport", "load")));
    }

    @Test
    void theJvmTakesTheDirectiveWithoutAFlag() throws Exception {
        if (!"4".equals(JvmFlags.vmOption("TieredStopAtLevel"))) return; // no C2 in this test JVM: nothing to direct
        assertTrue(VectorFallbackDirective.add());
        Object printed = ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerDirectivesPrint",
                new Object[] {new String[0]}, new String[] {String[].class.getName()});
        String text = String.valueOf(printed);
        for (String p : VectorFallbackDirective.FALLBACK_PATTERNS) assertTrue(text.contains(p), p + " not in:\n" + text);
        assertTrue(text.contains("Exclude:true"), text);
    }

    @Test
    void itIsOffUnlessAskedFor() {
        if (System.getenv("JTORCH_JIT_DIRECTIVES") == null && System.getProperty("jtorch.jitDirectives") == null) {
            assertFalse(VectorFallbackDirective.enabled());
            assertFalse(VectorFallbackDirective.installOnce());
        }
    }
}
