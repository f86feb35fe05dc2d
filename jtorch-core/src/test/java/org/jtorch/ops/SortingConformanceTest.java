package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * sort, argsort, msort, topk, kthvalue, median, mode, unique, searchsorted and bucketize against PyTorch 1.13
 * ({@code tools/fixtures/gen_sorting.py}): float32/64, int64/32/16, uint8 and bool where PyTorch has them, NaN,
 * ties (stable order), -0.0 and 0.0, int64 beyond 2^53, rows longer than a CUDA block, transposed and strided
 * views, 0-d and empty inputs, and PyTorch's errors. Where PyTorch leaves indices unspecified (ties in topk,
 * kthvalue and median; mode) the case says so and only the values, and that the indices select them, are checked.
 */
class SortingConformanceTest {

    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        List<Case> cases = Fixtures.load("sorting");
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> inputs = c.inputTensors();
        try {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, inputs).close(), c.toString());
                String name = c.op().replace("_dim", "");
                assertTrue(e.getMessage().contains(name), c + ": message should name the op: " + e.getMessage());
                return;
            }
            try (AutoCloseable result = run(c, inputs)) {
                switch (result) {
                    case Reductions.ValuesIndices vi -> {
                        Fixtures.assertMatches(c.expectedTensor(0), vi.values(), c + " values");
                        if (c.boolArg("check_indices", true)) {
                            Fixtures.assertMatches(c.expectedTensor(1), vi.indices(), c + " indices");
                        } else {
                            assertSelects(c, inputs.get(0), vi);
                        }
                    }
                    case Sorting.Unique u -> {
                        Fixtures.assertMatches(c.expectedTensor(0), u.values(), c + " values");
                        Fixtures.assertMatches(c.expectedTensor(1), u.inverse(), c + " inverse");
                        Fixtures.assertMatches(c.expectedTensor(2), u.counts(), c + " counts");
                    }
                    case Tensor t -> Fixtures.assertMatches(c.expectedTensor(), t, c.toString());
                    default -> throw new IllegalStateException("unexpected result " + result);
                }
            } catch (Exception e) {
                throw new AssertionError(c + " failed", e);
            }
        } finally {
            inputs.forEach(Tensor::close);
        }
    }

    /** The indices, whatever PyTorch's, pick the expected values out of the input. */
    private static void assertSelects(Case c, Tensor x, Reductions.ValuesIndices vi) {
        int dim = (int) c.longArg("dim", -1);
        boolean reduced = !c.op().equals("topk") && !c.boolArg("keepdim", false) && x.dim() > 0;
        try (Tensor idx = reduced ? vi.indices().unsqueeze(dim) : vi.indices().alias(); Tensor picked = x.gather(dim, idx);
             Tensor flat = reduced ? picked.squeeze(dim) : picked.alias()) {
            Fixtures.assertMatches(c.expectedTensor(0), flat, c + " values at the indices");
        }
    }

    private static AutoCloseable run(Case c, List<Tensor> in) {
        Tensor x = in.get(0);
        int dim = (int) c.longArg("dim", -1);
        boolean keepdim = c.boolArg("keepdim", false);
        boolean right = c.boolArg("right", false);
        boolean int32 = c.boolArg("out_int32", false);
        return switch (c.op()) {
            case "sort" -> Sorting.sort(x, dim, c.boolArg("descending", false), c.boolArg("stable", false));
            case "argsort" -> Sorting.argsort(x, dim, c.boolArg("descending", false), true);
            case "msort" -> Sorting.msort(x);
            case "topk" -> Sorting.topk(x, c.longArg("k", 1), dim, c.boolArg("largest", true), true);
            case "kthvalue" -> Sorting.kthvalue(x, c.longArg("k", 1), dim, keepdim);
            case "median" -> Sorting.median(x);
            case "median_dim" -> Sorting.median(x, dim, keepdim);
            case "mode" -> Sorting.mode(x, dim, keepdim);
            case "unique" -> Sorting.unique(x, true, true, true);
            case "unique_dim" -> Sorting.unique(x, dim, true, true);
            case "searchsorted" -> Sorting.searchsorted(x, in.get(1), int32, right, c.stringArg("side", null), in.size() > 2 ? in.get(2) : null);
            case "bucketize" -> Sorting.bucketize(x, in.get(1), int32, right);
            default -> throw new IllegalStateException("no runner for op " + c.op());
        };
    }
}
