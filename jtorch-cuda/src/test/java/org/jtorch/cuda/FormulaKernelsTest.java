package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.ElementwisePlan.Launch;
import org.jtorch.cuda.kernels.ElementwisePlan.Operand;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.PointwiseOps;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA C generated from each declared formula compiles (nvcc {@code -arch=sm_90 --ptx}, every warning an
 * error, as scripts/check-kernels compiles the shipped files; and Debian's NVRTC 11.8 with the launcher's options)
 * and has exactly the entries {@link ElementwisePlan} names for every dtype the op's rule admits, with the
 * parameter sizes {@link KernelArgs} packs. Values are checked on a device by core's PointwiseOpTableTest
 * ({@code -Djtorch.test.device=cuda:0}, scripts/lib/cuda-suites).
 */
class FormulaKernelsTest {
    private static final long[] SHAPE = {4, 5};

    private static Operand contiguous(DType t) {
        return new Operand(t, new long[] {5, 1}, true);
    }

    private static Operand transposed(DType t) {
        return new Operand(t, new long[] {1, 4}, false);
    }

    private static List<OpDef> formulaOps() {
        return OpRegistry.all().stream().filter(OpDef::hasGeneratedKernels).toList();
    }

    /** nvcc on the generated source, written beside the headers it includes. */
    private static KernelEntryPointsTest.Compiler nvcc(Path nvcc, Path dir) {
        return (file, options) -> {
            for (Map.Entry<String, String> h : KernelSources.headers().entrySet()) Files.writeString(dir.resolve(h.getKey()), h.getValue());
            Path ptx = dir.resolve(file + ".ptx");
            List<String> cmd = List.of(nvcc.toString(), "-arch=sm_90", "--ptx", "-std=c++17", "-Werror", "all-warnings", "-o",
                    ptx.toString(), dir.resolve(file).toString());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), "nvcc " + cmd + ":\n" + log);
            return Files.readString(ptx);
        };
    }

    private static KernelEntryPointsTest.Compiler nvrtc(Nvrtc nvrtc, Map<String, String> sources) {
        return (file, options) -> {
            Nvrtc.Compiled c = nvrtc.compile(file, sources.get(file), KernelSources.headers(), KernelSources.options(9, 0, true),
                    Nvrtc.Output.PTX);
            return new String(c.image(), 0, c.image().length - 1, StandardCharsets.US_ASCII);
        };
    }

    @TestFactory
    List<DynamicTest> everyFormulaCompilesWithTheEntriesThePlannerNames(@TempDir Path dir) {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        Optional<Path> nvrtcDir = TestLibraries.nvrtcDir();
        List<DynamicTest> tests = new ArrayList<>();
        for (OpDef op : formulaOps()) {
            tests.add(DynamicTest.dynamicTest(op.name() + " with nvcc", () -> {
                assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
                Files.writeString(dir.resolve(FormulaKernels.fileName(op)), FormulaKernels.source(op));
                checkEntries(op, KernelEntryPointsTest.entries(nvcc(nvcc.get(), dir), FormulaKernels.fileName(op), List.of()));
            }));
            tests.add(DynamicTest.dynamicTest(op.name() + " with NVRTC", () -> {
                assumeTrue(nvrtcDir.isPresent(), TestLibraries.SKIP);
                Nvrtc nvrtc = new Nvrtc(new CudaLibraries(List.of(nvrtcDir.get())).load(CudaLibraries.Kind.NVRTC));
                var compiler = nvrtc(nvrtc, Map.of(FormulaKernels.fileName(op), FormulaKernels.source(op)));
                checkEntries(op, KernelEntryPointsTest.entries(compiler, FormulaKernels.fileName(op), List.of()));
            }));
        }
        return tests;
    }

    private static void checkEntries(OpDef op, Map<String, long[]> entries) {
        Set<String> planned = new TreeSet<>();
        boolean unary = op.kind() == OpDef.Kind.UNARY;
        try (Arena arena = Arena.ofConfined()) {
            for (DType compute : DType.values()) {
                if (!FormulaKernels.supports(op, compute)) continue;
                DType result = op.resultType(compute);
                for (boolean fast : new boolean[] {true, false}) {
                    Operand in = fast ? contiguous(compute) : transposed(compute);
                    Launch l = unary ? ElementwisePlan.unary(op.kernel(), result, compute, SHAPE, contiguous(result), in)
                            : ElementwisePlan.binary(op.kernel(), result, compute, SHAPE, contiguous(result), in, contiguous(compute));
                    if (compute == DType.BOOL) continue;  // bool compute has no contiguous path; the strided i64 entry is checked
                    assertEquals(fast, l.contiguous(), l.entry());
                    KernelArgs args = unary ? KernelArgs.unary(arena, l, 1, 2, 0.5, 20) : KernelArgs.binary(arena, l, 1, 2, 3, 1.0);
                    long[] params = entries.get(l.entry());
                    assertNotNull(params, l.entry() + " missing; entries: " + entries.keySet());
                    assertEquals(Arrays.toString(args.sizes()), Arrays.toString(params), "parameter sizes of " + l.entry());
                    planned.add(l.entry());
                }
            }
        }
        assertFalse(planned.isEmpty(), op.name());
        assertEquals(planned, new TreeSet<>(entries.keySet()), "the entries compiled are exactly those the planner names");
    }

    @Test
    void theFormulaIsRenderedIntoTheFunctorAndTheRuleChoosesTheDtypes() {
        String logit = FormulaKernels.source(PointwiseOps.LOGIT);
        assertTrue(logit.contains("log((jt::clamp_opt(x0, jt::scalar_param<A>(p0, jt::quiet_nan<double>())"), logit);
        assertTrue(logit.contains("JT_FLOATING_UNARY(logit, Formula_logit)"), logit);
        String relu6 = FormulaKernels.source(PointwiseOps.RELU6);
        assertTrue(relu6.contains("JT_NUMERIC_UNARY(relu6, Formula_relu6)") && relu6.contains("typedef jt_i64 A;"), relu6);
        assertTrue(FormulaKernels.source(PointwiseOps.FMOD).contains("JT_NUMERIC_BINARY(fmod, Formula_fmod)"));
    }

    @Test
    void opsWithoutAFormulaHaveNoGeneratedSource() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FormulaKernels.source(org.jtorch.op.ReductionOps.SUM));
        assertTrue(e.getMessage().contains("sum"), e.getMessage());
    }
}
