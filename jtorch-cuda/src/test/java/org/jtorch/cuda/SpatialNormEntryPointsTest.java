package org.jtorch.cuda;

import static org.jtorch.cuda.KernelEntryPointsTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.NormPlan;
import org.jtorch.cuda.kernels.NormPlan.Channel;
import org.jtorch.cuda.kernels.NormPlan.Kernel;
import org.jtorch.cuda.kernels.PoolPlan;
import org.jtorch.cuda.kernels.PoolPlan.Op;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link CudaSpatialKernels} and {@link CudaNormalizationKernels} launch exists with the signature they
 * pack: {@code pool.cu} and {@code norm.cu}, compiled whole as the launcher compiles them (with
 * {@code nvcc -arch=sm_90 --ptx}, and with NVRTC and the launcher's own options for an sm_90 device),
 * contain every entry {@link PoolPlan} and {@link NormPlan} can name for every dtype they accept, with PTX
 * parameter sizes equal to the bytes packed (so {@code jt::Pool2d} is 72 bytes and {@code jt::ChannelTensors}
 * 80 in the compiler's layout too), and no entry that no launch uses. Each compiler's case is skipped,
 * saying so, where it is missing.
 */
class SpatialNormEntryPointsTest {
    private static final List<String> FILES = List.of("pool.cu", "norm.cu");

    @TestFactory
    List<DynamicTest> entryPoints(@TempDir Path out) {
        return KernelEntryPointsTest.wholeFiles(FILES, out, SpatialNormEntryPointsTest::check);
    }

    private static void check(String file, Map<String, long[]> entries) {
        Set<String> seen = new HashSet<>();
        try (Arena arena = Arena.ofConfined()) {
            if (file.equals("pool.cu")) expectPool(entries, seen, arena);
            else expectNorm(entries, seen, arena);
        }
        Set<String> unused = new HashSet<>(entries.keySet());
        unused.removeAll(seen);
        assertEquals(Set.of(), unused, "entries of " + file + " that no launch uses");
        assertEquals(file.equals("pool.cu") ? 14 : 41, seen.size(), "entries the planner names in " + file);
    }

    private static void expectPool(Map<String, long[]> e, Set<String> seen, Arena arena) {
        Pool2d g = new Pool2d(6, 7, 9, 3, 4, 3, 3, 2, 2, 1, 1, 1, 1);
        for (DType t : List.of(DType.FLOAT32, DType.FLOAT64)) {
            expect(e, seen, PoolPlan.entry(Op.MAX, t), PoolPlan.maxArgs(arena, 1, 2, 3, g));
            expect(e, seen, PoolPlan.entry(Op.MAX_BACKWARD, t), PoolPlan.maxBackwardArgs(arena, 1, 2, 3, 6, 12, 63));
            expect(e, seen, PoolPlan.entry(Op.AVG, t), PoolPlan.avgArgs(arena, 1, 2, g, true, 0));
            expect(e, seen, PoolPlan.entry(Op.AVG_BACKWARD, t), PoolPlan.avgArgs(arena, 1, 2, g, false, 5));
            expect(e, seen, PoolPlan.entry(Op.ADAPTIVE_AVG, t), PoolPlan.adaptiveArgs(arena, 1, 2, 6, 7, 9, 3, 4));
            expect(e, seen, PoolPlan.entry(Op.ADAPTIVE_AVG_BACKWARD, t), PoolPlan.adaptiveArgs(arena, 1, 2, 6, 7, 9, 3, 4));
            expect(e, seen, PoolPlan.entry(Op.ADAPTIVE_MAX, t), PoolPlan.adaptiveMaxArgs(arena, 1, 2, 3, 6, 7, 9, 3, 4));
        }
    }

    private static void expectNorm(Map<String, long[]> e, Set<String> seen, Arena arena) {
        Channel f32 = new Channel(16, 1, DType.FLOAT32);
        Channel strided = new Channel(32, 3, DType.BFLOAT16);
        for (DType t : List.of(DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64)) {
            expect(e, seen, NormPlan.entry(Kernel.STATS, "batchNormStats", t), NormPlan.statsArgs(arena, 1, 2, 3, 4, f32, f32, 0, 1));
            expect(e, seen, NormPlan.entry(Kernel.STATS_FINISH, "batchNormStats", t), NormPlan.statsArgs(arena, 1, 2, 3, 4, f32, f32, 8, 5));
            expect(e, seen, NormPlan.entry(Kernel.STATS_ROWS, "batchNormStats", t), NormPlan.statsRowsArgs(arena, 1, 2, 3, f32, f32, 8, 5));
            expect(e, seen, NormPlan.entry(Kernel.BACKWARD_SUMS_ROWS, "batchNormBackward", t),
                    NormPlan.backwardSumsRowsArgs(arena, 1, 2, 2, 3, f32, f32, null, strided, 64, strided, 8, 5));
            expect(e, seen, NormPlan.entry(Kernel.APPLY, "batchNormApply", t),
                    NormPlan.applyArgs(arena, 1, 2, 2, 3, 4, f32, f32, strided, null));
            expect(e, seen, NormPlan.entry(Kernel.BACKWARD_SUMS, "batchNormBackward", t),
                    NormPlan.backwardSumsArgs(arena, 1, 2, 2, 3, 4, f32, f32, null, strided, 64, strided, 0, 1));
            expect(e, seen, NormPlan.entry(Kernel.BACKWARD_INPUT, "batchNormBackward", t),
                    NormPlan.backwardInputArgs(arena, 1, 2, 3, 2, 3, 4, f32, f32, null, 0));
            expect(e, seen, NormPlan.entry(Kernel.RELU_BACKWARD_SUMS, "batchNormReluBackward", t), NormPlan.reluArgs(arena,
                    NormPlan.backwardSumsArgs(arena, 1, 2, 2, 3, 4, f32, f32, null, strided, 64, strided, 0, 1), f32, f32, strided, null));
            expect(e, seen, NormPlan.entry(Kernel.RELU_BACKWARD_SUMS_ROWS, "batchNormReluBackward", t), NormPlan.reluArgs(arena,
                    NormPlan.backwardSumsRowsArgs(arena, 1, 2, 2, 3, f32, f32, null, strided, 64, strided, 8, 5), f32, f32, strided, f32));
            expect(e, seen, NormPlan.entry(Kernel.RELU_BACKWARD_INPUT, "batchNormReluBackward", t), NormPlan.reluArgs(arena,
                    NormPlan.backwardInputArgs(arena, 1, 2, 3, 2, 3, 4, f32, f32, strided, 64), f32, f32, strided, f32));
        }
        expect(e, seen, NormPlan.BACKWARD_FINISH, NormPlan.backwardFinishArgs(arena, 2, 3, 4, f32, f32, f32, null, 64, null, 8, 5));
    }
}
