package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jtorch.cuda.KernelEntryPointsTest.Compiler;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.MultiTensorPlan;
import org.jtorch.cuda.kernels.RandomPlan;
import org.jtorch.cuda.kernels.RandomPlan.Fill;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the random and optimizer launchers launch exists with the signature they pack: {@code random.cu}
 * and {@code optim.cu} compiled whole (as {@link CudaKernels} compiles them; with {@code nvcc -arch=sm_90
 * --ptx}, and with NVRTC and the launcher's options) contain every entry {@link RandomPlan} can choose
 * for every dtype it accepts, the two optimizer steps and GradScaler's unscale for float32, float64 and
 * bfloat16 gradients ({@code jt_amp_unscale_<dtype>}), nothing else, and each entry's PTX parameter
 * sizes equal what {@link KernelArgs} packs. Each compiler's cases are skipped, saying so, where it is missing.
 */
class RandomOptimEntryPointsTest {
    private static void assertSizes(Map<String, long[]> entries, String entry, KernelArgs args) {
        long[] params = entries.get(entry);
        assertNotNull(params, entry + " missing; entries: " + entries.keySet());
        assertEquals(Arrays.toString(params), Arrays.toString(args.sizes()), "parameter sizes of " + entry);
    }

    @TestFactory
    List<DynamicTest> withNvcc(@TempDir Path out) {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        return cases(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin", () -> KernelEntryPointsTest.nvcc(nvcc.get(), out));
    }

    @TestFactory
    List<DynamicTest> withNvrtc() {
        Optional<Path> dir = TestLibraries.nvrtcDir();
        return cases(dir.isPresent(), TestLibraries.SKIP,
                () -> KernelEntryPointsTest.nvrtc(new Nvrtc(new CudaLibraries(List.of(dir.get())).load(CudaLibraries.Kind.NVRTC))));
    }

    private interface CompilerSource {
        Compiler get();
    }

    private static List<DynamicTest> cases(boolean present, String skipReason, CompilerSource source) {
        Compiler[] compiler = new Compiler[1];
        CompilerSource lazy = () -> {
            if (compiler[0] == null) compiler[0] = source.get();
            return compiler[0];
        };
        List<DynamicTest> tests = new ArrayList<>();
        tests.add(DynamicTest.dynamicTest("random.cu", () -> {
            assumeTrue(present, skipReason);
            Map<String, long[]> e = KernelEntryPointsTest.entries(lazy.get(), "random.cu", CudaKernels.selectOptions(null));
            Set<String> planned = new HashSet<>();
            try (Arena arena = Arena.ofConfined()) {
                for (Fill fill : Fill.values()) {
                    for (DType t : DType.values()) {
                        if (fill != Fill.RANDINT && !t.isFloatingPoint()) continue;
                        RandomPlan.Launch l = RandomPlan.plan(fill, t, 10);
                        planned.add(l.entry());
                        assertSizes(e, l.entry(), fill == Fill.RANDINT ? KernelArgs.randint(arena, l, 1, 2, 3, 4, 5)
                                : KernelArgs.random(arena, l, 1, 2, 3, 4, 5));
                    }
                }
            }
            assertEquals(planned, e.keySet(), "entries of random.cu");
        }));
        tests.add(DynamicTest.dynamicTest("optim.cu", () -> {
            assumeTrue(present, skipReason);
            Map<String, long[]> e = KernelEntryPointsTest.entries(lazy.get(), "optim.cu", CudaKernels.selectOptions(null));
            Set<String> expected = new HashSet<>(Set.of("jt_sgd_step_f32", "jt_adam_step_f32", "jt_adadelta_step_f32"));
            for (DType t : DType.values()) if (MultiTensorPlan.unscaleSupports(t)) expected.add(MultiTensorPlan.unscaleEntry(t));
            assertEquals(expected, e.keySet());
            try (Arena arena = Arena.ofConfined()) {
                MultiTensorPlan.Launch l = MultiTensorPlan.plan(new long[] {3}).get(0);
                MemorySegment chunks = KernelArgs.packTensorChunks(arena, l, new long[][] {{1}, {2}}, new long[] {3});
                assertSizes(e, "jt_sgd_step_f32", KernelArgs.sgd(arena, chunks, -0.1f, 0, 0.9f, 1, true, false, true));
                assertSizes(e, "jt_adam_step_f32", KernelArgs.adam(arena, chunks, 1, 0, 0.9f, 0.1f, 0.999f, 0.001f, 1, 1e-8f, -0.001f,
                        false, true));
                assertSizes(e, "jt_adadelta_step_f32", KernelArgs.adadelta(arena, chunks, -1, 0.9f, 0.1f, 1e-6f, 0, false));
                for (DType t : List.of(DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16)) {
                    assertSizes(e, MultiTensorPlan.unscaleEntry(t), KernelArgs.ampUnscale(arena, chunks, 7, 0.5f));
                }
                assertEquals(KernelStructs.TENSOR_CHUNKS.byteSize(), e.get("jt_adam_step_f32")[0]);
                long total = 0;
                for (long s : e.get("jt_adam_step_f32")) total += s;
                assertEquals(true, total <= 4096, "Adam's parameters (" + total + " bytes) fit the 4 KiB kernel-parameter limit");
            }
        }));
        return tests;
    }
}
