package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.ScalarCells;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Kernels see native memory only: wrapped numbers, kernel scratch and the staging of {@code toFloatArray} and the like.
 * A heap segment among a kernel's operands makes the type profiles of the JDK's shared memory access code bimorphic,
 * and C2 then compiles every kernel's loads and stores for both kinds ({@link ScalarCells}).
 */
class NativeOperandsTest {
    @Test
    void wrappedNumbersLiveInNativeCellsWithTheirValue() {
        try (Tensor f = Torch.zeros(3); Tensor l = Torch.tensor(new long[] {1, 2}, 2)) {
            Tensor sf = Elementwise.wrappedScalar(f, 0.1, 0, DType.FLOAT64);
            Tensor sl = Elementwise.wrappedScalar(l, 0, -7, DType.INT64);
            assertTrue(sf.storage().segment().isNative());
            assertTrue(sl.storage().segment().isNative());
            assertEquals(Float.floatToRawIntBits(0.1f), Float.floatToRawIntBits((float) sf.item()));
            assertEquals(-7L, sl.toLongArray()[0]);
            try (Tensor r = f.add(0.1)) {
                for (float v : r.toFloatArray()) assertEquals(Float.floatToRawIntBits(0.1f), Float.floatToRawIntBits(v));
            }
        }
    }

    @Test
    void scalarCellsAreNativeZeroedAlignedAndDisjointAcrossSlabs() {
        List<MemorySegment> cells = new ArrayList<>();
        for (int i = 0; i < 1500; i++) {
            MemorySegment c = ScalarCells.allocate();
            assertTrue(c.isNative());
            assertEquals(8, c.byteSize());
            assertEquals(0, c.address() % 8);
            assertEquals(0L, c.get(ValueLayout.JAVA_LONG, 0));
            c.set(ValueLayout.JAVA_LONG, 0, 1000L + i);
            cells.add(c);
        }
        for (int i = 0; i < cells.size(); i++) assertEquals(1000L + i, cells.get(i).get(ValueLayout.JAVA_LONG, 0));
    }

    @Test
    void arraysCopyOutOfStridedViewsWithEveryValue() {
        try (Tensor base = Torch.arange(0, 24, 1).reshape(4, 6); Tensor view = base.t().narrow(0, 1, 3)) {
            long[] expected = new long[12];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) expected[i * 4 + j] = j * 6L + i + 1;
            assertArrayEquals(expected, view.toLongArray());
            float[] f = view.to(DType.FLOAT32).toFloatArray();
            double[] d = view.to(DType.FLOAT64).toDoubleArray();
            int[] n = view.to(DType.INT32).toIntArray();
            boolean[] b = view.gt(10).toBooleanArray();
            for (int k = 0; k < 12; k++) {
                assertEquals(expected[k], f[k]);
                assertEquals(expected[k], d[k]);
                assertEquals(expected[k], n[k]);
                assertEquals(expected[k] > 10, b[k]);
            }
        }
    }

    /** The CPU kernels and the ops that make their operands wrap no Java array as a segment (CpuBackend only loads the classes). */
    @Test
    void noKernelOperandIsAHeapSegment() throws IOException {
        assertEquals(List.of(), sourcesWhere(p -> p.contains("MemorySegment.ofArray("), List.of("CpuBackend.java"), "backend", "ops"));
    }

    /**
     * No Vector API bit cast ({@code reinterpretAs*}, {@code viewAs*Lanes}, and {@code test(IS_NAN)} and its kin, which
     * go through one) in the kernels: run outside C2, the cast's fallback stores the vector into a heap segment and
     * loads it back through the same JDK code as every kernel's loads and stores. The half-precision kernels, softmax's
     * exponential and float64 tanh keep theirs: their 2^n built from integer conversions instead ran 1.2-3.4x slower
     * compiled (BENCHMARKS, warmup6); so does GELU's exponential in {@code VectorErf} (gpt9: 2.5x faster than the
     * JDK's exp there). {@code VectorExp}'s, {@code VectorLog}'s, {@code VectorTrig}'s and {@code VectorPow}'s run only under {@code -Djtorch.cpu.deterministicMath=true}.
     * {@code VectorPhilox}'s stores its word pairs as ints after a two-vector permute (philox25: 2.64 -> 1.11 ns a word
     * compiled); the first {@code rand} of 1M floats in a fresh JVM read level (one thread's CPU, 4 rounds: 733-891 ms
     * before, 788-1029 after; medians 820 and 851, within this check's noise).
     */
    @Test
    void noKernelBitCastsThroughAHeapSegment() throws IOException {
        Pattern bitCast = Pattern.compile(
                "reinterpretAs|reinterpretShape|viewAsIntegralLanes|viewAsFloatingLanes|IS_NAN|IS_NEGATIVE|IS_FINITE|IS_INFINITE|FIRST_NONZERO");
        List<String> kept = List.of("HalfConversion.java", "HalfGemm.java", "SoftmaxF32.java", "VectorTanhF64.java", "VectorExp.java",
                "VectorLog.java", "VectorTrig.java", "VectorPow.java", "VectorErf.java", "VectorPhilox.java");
        assertEquals(List.of(), sourcesWhere(code -> bitCast.matcher(code).find(), kept, "backend", "ops", "jit", "optim"));
    }

    /** jtorch-core's main sources under {@code packages} whose code (comments removed) matches, but the files {@code kept}. */
    private static List<String> sourcesWhere(Predicate<String> matches, List<String> kept, String... packages) throws IOException {
        Path sources = null;
        for (String p : new String[] {"src/main/java/org/jtorch", "jtorch-core/src/main/java/org/jtorch"}) {
            if (Files.isDirectory(Path.of(p))) sources = Path.of(p);
        }
        assertTrue(sources != null, "jtorch-core's sources are not under " + Path.of("").toAbsolutePath());
        List<String> found = new ArrayList<>();
        for (String pkg : packages) {
            try (Stream<Path> files = Files.walk(sources.resolve(pkg))) {
                for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                    String code = Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
                    if (matches.test(code) && !kept.contains(f.getFileName().toString())) found.add(sources.relativize(f).toString());
                }
            }
        }
        return found;
    }
}
