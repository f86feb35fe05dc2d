package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every reduction, scan and softmax against PyTorch 1.13 reference values
 * ({@code tools/fixtures/gen_reductions.py}): all dims, listed dims, negative dims, keepdim, 0-d,
 * empty and size-1 inputs, transposed and permuted views, every dtype the op accepts, NaN and
 * infinities, a 10000-element f32 sum for accuracy, and PyTorch's error cases.
 */
class ReductionsConformanceTest {

    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        List<Case> cases = Fixtures.load("reductions");
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        try (Tensor x = c.input(0)) {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, x).close(), c.toString());
                String name = c.op().replace("_dim", "");
                assertTrue(e.getMessage().contains(name), c + ": message should name the op: " + e.getMessage());
                return;
            }
            try (AutoCloseable result = run(c, x)) {
                if (result instanceof Reductions.ValuesIndices vi) {
                    Fixtures.assertMatches(c.expectedTensor(0), vi.values(), c + " values");
                    Fixtures.assertMatches(c.expectedTensor(1), vi.indices(), c + " indices");
                } else {
                    Fixtures.assertMatches(c.expectedTensor(), (Tensor) result, c.toString());
                }
            } catch (Exception e) {
                throw new AssertionError(c + " failed", e);
            }
        }
    }

    /** Calls the op a case names, with its fixture arguments. */
    private static AutoCloseable run(Case c, Tensor x) {
        int[] dims = toInts(c.longsArg("dims"));
        boolean keepdim = c.boolArg("keepdim", false);
        String dt = c.stringArg("dtype", null);
        DType dtype = dt == null ? null : DType.parse(dt);
        int dim = (int) c.longArg("dim", 0);
        return switch (c.op()) {
            case "sum" -> Reductions.sum(x, dims, keepdim, dtype);
            case "mean" -> Reductions.mean(x, dims, keepdim, dtype);
            case "prod" -> Reductions.prod(x, dims, keepdim, dtype);
            case "amax" -> Reductions.amax(x, dims, keepdim);
            case "amin" -> Reductions.amin(x, dims, keepdim);
            case "any" -> Reductions.any(x, dims, keepdim);
            case "all" -> Reductions.all(x, dims, keepdim);
            case "logsumexp" -> Reductions.logsumexp(x, dims, keepdim);
            case "norm" -> Reductions.norm(x, c.doubleArg("p", 2), dims, keepdim);
            case "var" -> Reductions.var(x, dims, c.doubleArg("correction", 1), keepdim);
            case "std" -> Reductions.std(x, dims, c.doubleArg("correction", 1), keepdim);
            case "max" -> Reductions.max(x);
            case "min" -> Reductions.min(x);
            case "max_dim" -> Reductions.max(x, dim, keepdim);
            case "min_dim" -> Reductions.min(x, dim, keepdim);
            case "argmax" -> c.args().has("dim") ? Reductions.argmax(x, dim, keepdim) : Reductions.argmax(x);
            case "argmin" -> c.args().has("dim") ? Reductions.argmin(x, dim, keepdim) : Reductions.argmin(x);
            case "cumsum" -> Reductions.cumsum(x, dim, dtype);
            case "cumprod" -> Reductions.cumprod(x, dim, dtype);
            case "softmax" -> Reductions.softmax(x, dim, dtype);
            case "log_softmax" -> Reductions.logSoftmax(x, dim, dtype);
            default -> throw new IllegalStateException("no runner for op " + c.op());
        };
    }

    private static int[] toInts(long[] a) {
        if (a == null) return new int[0];
        int[] r = new int[a.length];
        for (int i = 0; i < a.length; i++) r[i] = (int) a[i];
        return r;
    }
}
