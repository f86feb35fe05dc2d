package org.jtorch.cuda;

import static org.jtorch.cuda.KernelEntryPointsTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jtorch.Tensor;
import org.jtorch.cuda.kernels.IndexPlan;
import org.jtorch.cuda.kernels.IndexPlan.Check;
import org.jtorch.cuda.kernels.IndexPlan.Compaction;
import org.jtorch.cuda.kernels.IndexPlan.Geometry;
import org.jtorch.cuda.kernels.IndexPlan.Kernel;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link CudaIndexKernels} launches exists in {@code index.cu} with the signature it packs: for every
 * dtype, every entry {@link IndexPlan} can name (gather, scatter, scatter_add, count_nonzero, nonzero,
 * masked_select, and the int32/int64 checks) is in the PTX of {@code index.cu} compiled whole, as the
 * launcher compiles it (with {@code nvcc -arch=sm_90 --ptx}, and with NVRTC and the launcher's options for
 * an sm_90 device), its PTX parameter sizes equal what {@link IndexPlan} packs (so {@code jt::IndexGeometry}
 * is {@link IndexPlan#INDEX_GEOMETRY}'s size), and the file has no other entry. Each compiler's case is
 * skipped, saying so, where it is missing.
 */
class IndexEntryPointsTest {
    @TestFactory
    List<DynamicTest> entryPoints(@TempDir Path out) {
        return KernelEntryPointsTest.wholeFiles(List.of("index.cu"), out, (f, entries) -> check(entries));
    }

    private static void check(Map<String, long[]> e) {
        Set<String> seen = new HashSet<>();
        try (Arena arena = Arena.ofConfined(); Tensor self = Tensor.empty(new long[] {3, 4}, DType.FLOAT32, org.jtorch.types.Device.cpu());
             Tensor index = Tensor.empty(new long[] {2}, DType.INT64, org.jtorch.types.Device.cpu());
             Tensor out = Tensor.empty(new long[] {2, 4}, DType.FLOAT32, org.jtorch.types.Device.cpu())) {
            Geometry g = IndexPlan.indexSelect(Dispatcher.view(self), 0, Dispatcher.view(index), Dispatcher.view(out));
            long[] one = {7};
            Compaction c = IndexPlan.compaction(12, 132);
            for (DType t : DType.values()) {
                expect(e, seen, IndexPlan.entry(Kernel.GATHER, t), IndexPlan.gatherArgs(arena, 1, 2, g, one));
                expect(e, seen, IndexPlan.entry(Kernel.SCATTER, t), IndexPlan.scatterArgs(arena, 1, 2, g, one));
                expect(e, seen, IndexPlan.entry(Kernel.SCATTER_ADD, t), IndexPlan.scatterAddArgs(arena, 1, 2, g, one, 2.0));
                expect(e, seen, IndexPlan.entry(Kernel.COUNT_NONZERO, t), IndexPlan.countArgs(arena, 1,
                        IndexPlan.countLayout(Dispatcher.view(self)), c, 3));
                expect(e, seen, IndexPlan.entry(Kernel.NONZERO, t),
                        IndexPlan.nonzeroArgs(arena, 1, IndexPlan.nonzeroLayout(Dispatcher.view(self)), c, 3, 4, 5));
                expect(e, seen, IndexPlan.entry(Kernel.MASKED_SELECT, t),
                        IndexPlan.maskedSelectArgs(arena, 1, 2, IndexPlan.maskedSelectLayout(Dispatcher.view(self),
                                Dispatcher.view(self)), c, 3, 4, 5));
            }
            for (DType t : new DType[] {DType.INT32, DType.INT64}) {
                try (Tensor idx = Tensor.empty(new long[] {5}, t, org.jtorch.types.Device.cpu())) {
                    Check ck = IndexPlan.check("gather", Dispatcher.view(idx), 0, 3, false);
                    expect(e, seen, IndexPlan.checkEntry(t), IndexPlan.checkArgs(arena, 1, ck, 2));
                    expect(e, seen, IndexPlan.checkValueEntry(t), IndexPlan.checkValueArgs(arena, 1, ck, 2));
                }
            }
        }
        assertEquals(IndexPlan.INDEX_GEOMETRY.byteSize(), e.get("jt_index_gather_f32")[3], "sizeof(jt::IndexGeometry)");
        Set<String> unused = new HashSet<>(e.keySet());
        unused.removeAll(seen);
        assertEquals(Set.of(), unused, "entries of index.cu that no launch uses");
        assertEquals(64, seen.size(), "entries the planner names: 6 kernels x 10 dtypes + 2 checks + 2 check values");
    }
}
