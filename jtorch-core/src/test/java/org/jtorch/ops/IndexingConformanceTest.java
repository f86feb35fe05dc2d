package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Indexing and joining ops against reference values from PyTorch 1.13
 * ({@code tools/fixtures/gen_indexing.py}): every dtype for the copy-style ops, empty and 0-d
 * operands, negative indices where PyTorch accepts them, non-contiguous inputs, broadcast masks, and
 * the error cases (which must raise an exception naming the op, at the op or, on an accelerator, by the
 * next read of its result; bad index values must raise {@link IndexOutOfBoundsException}).
 */
class IndexingConformanceTest {

    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("indexing").stream()
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> in = c.inputTensors();
        try {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> readAndRelease(apply(c, in)), c.toString());
                // the ops declared in IndexingOps name themselves as PyTorch does, the others by their Java method
                String name = javaName(c.op());
                assertTrue(e.getMessage() != null && (e.getMessage().contains(name) || e.getMessage().startsWith(c.op() + ":")),
                        c + ": message should name " + name + " or " + c.op() + ": " + e.getMessage());
                if (c.name().contains("out_of_range") || c.name().startsWith("negative_index")) {
                    assertInstanceOf(IndexOutOfBoundsException.class, e, c + ": " + e.getMessage());
                }
                return;
            }
            Object result = apply(c, in);
            try {
                if (c.expected().isJsonArray()) {
                    @SuppressWarnings("unchecked")
                    List<Tensor> parts = (List<Tensor>) result;
                    JsonArray exp = c.expected().getAsJsonArray();
                    assertEquals(exp.size(), parts.size(), c + ": number of results");
                    for (int i = 0; i < parts.size(); i++) {
                        Fixtures.assertMatches(c.expectedTensor(i), parts.get(i), c + "[" + i + "]");
                    }
                } else if (c.op().equals("scatter") && !Fixtures.device().isCpu()) {
                    assertScatterWroteSomeSource(c, in, (Tensor) result);
                } else {
                    Fixtures.assertMatches(c.expectedTensor(), (Tensor) result, c.toString());
                }
            } finally {
                release(result);
            }
        } finally {
            for (Tensor t : in) t.close();
        }
    }

    /**
     * scatter on an accelerator: where the index repeats a target, which source lands there is unspecified (as in
     * PyTorch's CUDA scatter_; the CPU writes the last, which the fixture recorded). Every target must hold one
     * of the sources scattered to it, every other element its old value.
     */
    private static void assertScatterWroteSomeSource(Case c, List<Tensor> in, Tensor result) {
        Tensor self = in.get(0), index = in.get(1), src = in.get(2);
        int rank = self.dim();
        int dim = (int) c.longArg("dim", 0);
        if (dim < 0) dim += rank;
        assertArrayEquals(self.shape(), result.shape(), c + ": shape");
        double[] old = self.toDoubleArray(), got = result.toDoubleArray(), values = src.toDoubleArray();
        long[] targets = index.toLongArray();
        List<java.util.Set<Double>> written = new ArrayList<>();
        for (int i = 0; i < old.length; i++) written.add(new java.util.HashSet<>());
        long[] at = new long[rank];
        for (int p = 0; p < targets.length; p++) {
            long rest = p;
            for (int d = rank - 1; d >= 0; d--) {
                at[d] = rest % index.size(d);
                rest /= index.size(d);
            }
            long selfFlat = 0, srcFlat = 0;
            for (int d = 0; d < rank; d++) {
                selfFlat = selfFlat * self.size(d) + (d == dim ? targets[p] : at[d]);
                srcFlat = srcFlat * src.size(d) + at[d];
            }
            written.get((int) selfFlat).add(values[(int) srcFlat]);
        }
        for (int i = 0; i < old.length; i++) {
            boolean ok = written.get(i).isEmpty() ? Double.compare(old[i], got[i]) == 0 : written.get(i).contains(got[i]);
            assertTrue(ok, c + ": element " + i + " is " + got[i] + ", expected " + (written.get(i).isEmpty() ? old[i] : "one of " + written.get(i)));
        }
    }

    /** Runs the case's op with jtorch; returns a tensor or a list of tensors. */
    private static Object apply(Case c, List<Tensor> in) {
        int dim = (int) c.longArg("dim", 0);
        return switch (c.op()) {
            case "index_select" -> in.get(0).indexSelect(dim, in.get(1));
            case "gather" -> in.get(0).gather(dim, in.get(1));
            case "scatter" -> in.get(0).scatter(dim, in.get(1), in.get(2));
            case "scatter_add" -> in.get(0).scatterAdd(dim, in.get(1), in.get(2));
            case "scatter_value" -> in.get(0).scatter(dim, in.get(1), c.doubleArg("value", 0));
            case "index_add" -> in.get(0).indexAdd(dim, in.get(1), in.get(2), c.doubleArg("alpha", 1));
            case "index_copy" -> in.get(0).indexCopy(dim, in.get(1), in.get(2));
            case "index_fill" -> in.get(0).indexFill(dim, in.get(1), c.doubleArg("value", 0));
            case "masked_fill" -> in.get(0).maskedFill(in.get(1), c.doubleArg("value", 0));
            case "masked_fill_" -> inPlace(in.get(0), t -> t.maskedFill_(in.get(1), c.doubleArg("value", 0)));
            case "masked_select" -> in.get(0).maskedSelect(in.get(1));
            case "nonzero" -> in.get(0).nonzero();
            case "count_nonzero" -> Torch.countNonzero(in.get(0), c.args().has("dims") ? c.intsArg("dims") : new int[0]);
            case "where_cond" -> Torch.where(in.get(0));
            case "index" -> in.get(0).index(entries(c, in.subList(1, in.size())));
            case "index_put" -> inPlace(in.get(0), t -> t.indexPut_(entries(c, in.subList(1, in.size() - 1)),
                    in.get(in.size() - 1), c.boolArg("accumulate", false)));
            case "cat" -> Torch.cat(in, dim);
            case "stack" -> Torch.stack(in, dim);
            case "split" -> c.args().has("sizes") ? in.get(0).split(c.longsArg("sizes"), dim)
                    : in.get(0).split(c.longArg("split_size", 0), dim);
            case "chunk" -> in.get(0).chunk((int) c.longArg("chunks", 1), dim);
            case "unbind" -> in.get(0).unbind(dim);
            default -> throw new AssertionError("unknown op " + c.op());
        };
    }

    /** Applies an in-place op to a copy of {@code self}, checking that it returns its receiver. */
    private static Tensor inPlace(Tensor self, java.util.function.UnaryOperator<Tensor> op) {
        Tensor copy = self.clone();
        try {
            assertSame(copy, op.apply(copy), "in-place ops return their receiver");
            return copy;
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
    }

    /** The index entries: the given tensors in order, with null (a full slice) at the {@code none_at} positions. */
    private static Tensor[] entries(Case c, List<Tensor> tensors) {
        long[] noneAt = c.longsArg("none_at");
        List<Long> nones = new ArrayList<>();
        if (noneAt != null) for (long p : noneAt) nones.add(p);
        Tensor[] r = new Tensor[tensors.size() + nones.size()];
        int next = 0;
        for (int p = 0; p < r.length; p++) r[p] = nones.contains((long) p) ? null : tensors.get(next++);
        return r;
    }

    private static String javaName(String op) {
        return switch (op) {
            case "index_select" -> "indexSelect";
            case "scatter_add" -> "scatterAdd";
            case "scatter_value" -> "scatter";
            case "index_add" -> "indexAdd";
            case "index_copy" -> "indexCopy";
            case "index_fill" -> "indexFill";
            case "masked_fill", "masked_fill_" -> "maskedFill";
            case "masked_select" -> "maskedSelect";
            case "index_put" -> "indexPut";
            default -> op;
        };
    }

    /**
     * Reads {@code result} back to the host, then releases it: an accelerator may report a bad index at the
     * next synchronisation instead of at the op (CUDA's deferred index checks), and this read is that point.
     */
    private static void readAndRelease(Object result) {
        try {
            if (result instanceof Tensor t) t.toDoubleArray();
            else if (result instanceof List<?> list) for (Object o : list) ((Tensor) o).toDoubleArray();
        } finally {
            release(result);
        }
    }

    private static void release(Object result) {
        if (result instanceof Tensor t) t.close();
        else if (result instanceof List<?> list) for (Object o : list) ((Tensor) o).close();
    }
}
