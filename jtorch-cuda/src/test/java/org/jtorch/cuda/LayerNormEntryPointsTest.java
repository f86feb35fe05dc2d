package org.jtorch.cuda;

import static org.jtorch.cuda.KernelEntryPointsTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jtorch.cuda.kernels.LayerNormPlan;
import org.jtorch.cuda.kernels.LayerNormPlan.Kernel;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code CudaNormalizationKernels}' layer norm launches exists with the signature {@link LayerNormPlan} packs:
 * {@code layernorm.cu}, compiled whole with nvcc ({@code -arch=sm_90 --ptx}) and with NVRTC, holds every entry for every
 * dtype with PTX parameter sizes equal to the bytes packed, and no other; and the plan's choices (block sizes, grids, the
 * column sums' parts from the row count alone).
 */
class LayerNormEntryPointsTest {
    @TestFactory
    List<DynamicTest> entryPoints(@TempDir Path out) {
        return KernelEntryPointsTest.wholeFiles(List.of("layernorm.cu"), out, LayerNormEntryPointsTest::check);
    }

    private static void check(String file, Map<String, long[]> entries) {
        Set<String> seen = new HashSet<>();
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : List.of(DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64)) {
                expect(entries, seen, LayerNormPlan.entry(Kernel.FORWARD, "layer_norm", t),
                        LayerNormPlan.forwardArgs(arena, 1, 2, 0, 4, 5, 6, 7, 8, 1e-5));
                expect(entries, seen, LayerNormPlan.entry(Kernel.BACKWARD_INPUT, "layer_norm_backward", t),
                        LayerNormPlan.backwardInputArgs(arena, 1, 2, 3, 4, 0, 6, 7, 8));
                expect(entries, seen, LayerNormPlan.entry(Kernel.BACKWARD_COLUMNS, "layer_norm_backward", t),
                        LayerNormPlan.backwardColumnsArgs(arena, 1, 2, 3, 4, 5, 6, 7, 300, 37));
                expect(entries, seen, LayerNormPlan.entry(Kernel.BACKWARD_FINISH, "layer_norm_backward", t),
                        LayerNormPlan.backwardFinishArgs(arena, 1, 2, 3, 37, 5));
            }
        }
        Set<String> unused = new HashSet<>(entries.keySet());
        unused.removeAll(seen);
        assertEquals(Set.of(), unused, "entries of " + file + " that no launch uses");
        assertEquals(16, seen.size());
    }

    @Test
    void blocksGridsAndParts() {
        assertEquals(32, LayerNormPlan.rowThreads(1));
        assertEquals(32, LayerNormPlan.rowThreads(128));
        assertEquals(256, LayerNormPlan.rowThreads(1000));
        assertEquals(LayerNormPlan.MAX_ROW_THREADS, LayerNormPlan.rowThreads(4097));
        assertEquals(0, LayerNormPlan.rowBlocks(0, 132));
        assertEquals(7, LayerNormPlan.rowBlocks(7, 132));
        assertEquals(132 * 8, LayerNormPlan.rowBlocks(1_000_000, 132));
        // parts of at least 64 rows, at most 128 of them, from the row count alone
        assertEquals(1, LayerNormPlan.parts(1));
        assertEquals(1, LayerNormPlan.parts(64));
        assertEquals(2, LayerNormPlan.parts(65));
        assertEquals(12, LayerNormPlan.parts(768));
        assertEquals(128, LayerNormPlan.parts(1_000_000));
        assertEquals(0, LayerNormPlan.partials(100, 1));
        assertEquals(2 * 100 * 12, LayerNormPlan.partials(100, 12));
        assertEquals(4 * 12, LayerNormPlan.columnBlocks(128, 12, 132));
        assertEquals(DType.FLOAT32, LayerNormPlan.statistics(DType.BFLOAT16));
        assertEquals(DType.FLOAT64, LayerNormPlan.statistics(DType.FLOAT64));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LayerNormPlan.entry(Kernel.FORWARD, "layer_norm", DType.INT32));
        assertEquals("layer_norm: the CUDA layer norm kernels take floating dtypes, got torch.int32 (device cuda)", e.getMessage());
    }
}
