package org.jtorch.cuda;

import static org.jtorch.cuda.KernelEntryPointsTest.expect;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.ReductionPlan;
import org.jtorch.cuda.kernels.ReductionPlan.Rows;
import org.jtorch.op.ReduceOp;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link CudaReductions} launches exists in {@code reduce.cu} with the signature it packs: for
 * every dtype, every entry {@link ReductionPlan} can name (accumulating reductions, arg reductions,
 * logsumexp, variance, softmax, scans, sort, searchsorted) is in the PTX of {@code reduce.cu} compiled whole, as the
 * launcher compiles it (with {@code nvcc -arch=sm_90 --ptx}, and with NVRTC and the launcher's own
 * options for an sm_90 device), and its PTX parameter sizes equal what {@link ReductionPlan} packs. Each
 * compiler's case is skipped, saying so, where it is missing.
 */
class ReductionEntryPointsTest {
    @TestFactory
    List<DynamicTest> entryPoints(@TempDir Path out) {
        return KernelEntryPointsTest.wholeFiles(List.of("reduce.cu"), out, (f, entries) -> check(entries));
    }

    private static void check(Map<String, long[]> e) {
        Rows r = ReductionPlan.reduction(new long[] {4, 5}, new long[] {5, 1}, new long[] {1, 0});
        Set<String> seen = new HashSet<>();
        List<String> mean = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : DType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    if (!ReductionPlan.supports(op, ReductionPlan.kernelInput(t))) continue;
                    KernelArgs args = op == ReduceOp.NORM ? ReductionPlan.normArgs(arena, 1, 2, r, 2.0) : ReductionPlan.rowArgs(arena, 1, 2, r);
                    expect(e, seen, ReductionPlan.reduceEntry(op, t), args);
                }
                for (boolean max : new boolean[] {true, false}) {
                    expect(e, seen, ReductionPlan.argReduceEntry(max, t), ReductionPlan.argArgs(arena, 1, 2, 3, r));
                }
                expect(e, seen, ReductionPlan.argsortEntry(t), ReductionPlan.argsortArgs(arena, 1, 2, 3, r, 32, true, 4));
                if (t != DType.BOOL) {
                    expect(e, seen, ReductionPlan.searchsortedEntry(t), ReductionPlan.searchsortedArgs(arena, 1, 2, 3, 4, 5, 6, 1, true));
                    for (boolean prod : new boolean[] {true, false}) {
                        expect(e, seen, ReductionPlan.scanEntry(prod, t), ReductionPlan.rowArgs(arena, 1, 2, r));
                    }
                }
                if (t.isFloatingPoint()) {
                    expect(e, seen, ReductionPlan.floatingEntry("logsumexp", t), ReductionPlan.rowArgs(arena, 1, 2, r));
                    expect(e, seen, ReductionPlan.floatingEntry("variance", t), ReductionPlan.varianceArgs(arena, 1, 2, r, 1, false));
                    expect(e, seen, ReductionPlan.floatingEntry("softmax", t), ReductionPlan.softmaxArgs(arena, 1, 2, r, true));
                    mean.add("jt_reduce_mean_" + org.jtorch.cuda.kernels.ElementwisePlan.suffix(t));
                }
            }
        }
        // Every entry of the file is one the planner names, except the mean kernels (the front end's mean is sum / count).
        Set<String> unused = new HashSet<>(e.keySet());
        unused.removeAll(seen);
        unused.removeAll(mean);
        assertEquals(Set.of(), unused, "entries of reduce.cu that no launch uses");
        assertEquals(124, seen.size(), "entries the planner names");
    }
}
