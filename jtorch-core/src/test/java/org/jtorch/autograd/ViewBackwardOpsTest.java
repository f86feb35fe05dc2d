package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.OpDef;
import org.jtorch.op.ViewOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The views' derivatives as declared with ops ({@link ViewOps}): the backward ops against PyTorch 1.13 (fixtures from
 * tools/fixtures/gen_view_backward.py, float64, compared exactly but for the sums of overlapping windows), every view's backward and the backward ops' own
 * derivatives (second order) by gradcheck in float64, split/chunk/unbind as one node whose missing gradients are zeros,
 * and a view's node holding none of its input.
 */
class ViewBackwardOpsTest {

    // ---------------------------------------------------------------- PyTorch 1.13

    @TestFactory
    List<DynamicTest> backwardOpsAndSplitGradientsMatchPyTorch() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fixtures.Case c : Fixtures.load("view_backward")) {
            tests.add(DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> run(c)));
        }
        return tests;
    }

    private static void run(Fixtures.Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            JsonObject a = c.args();
            Tensor x = c.input(0);
            Tensor actual = switch (c.op()) {
                case "slice_backward" -> Dispatcher.call(ViewOps.SLICE_BACKWARD, new Tensor[] {x},
                        with(a.get("input_sizes").getAsJsonArray(), i(a, "dim"), i(a, "start"), i(a, "end"), i(a, "step")));
                case "select_backward" -> Dispatcher.call(ViewOps.SELECT_BACKWARD, new Tensor[] {x},
                        with(a.get("input_sizes").getAsJsonArray(), i(a, "dim"), i(a, "index")));
                case "unfold_backward" -> Dispatcher.call(ViewOps.UNFOLD_BACKWARD, new Tensor[] {x},
                        with(a.get("input_sizes").getAsJsonArray(), i(a, "dim"), i(a, "size"), i(a, "step")));
                case "diagonal_backward" -> Dispatcher.call(ViewOps.DIAGONAL_BACKWARD, new Tensor[] {x},
                        with(a.get("input_sizes").getAsJsonArray(), i(a, "offset"), i(a, "dim1"), i(a, "dim2")));
                default -> splitGradient(c.op(), x.requiresGrad_(), a);
            };
            // overlapping windows add in another order than ATen's: a rounding apart; every other value is copied exactly
            double tolerance = c.op().equals("unfold_backward") ? 1e-15 : 0;
            Fixtures.assertMatches(c.expected().getAsJsonObject(), actual, tolerance, tolerance, c.op() + "/" + c.name());
        }
    }

    /** x.grad of the sum of the used pieces, each times its weight (a weight of 0: the piece is not used). */
    private static Tensor splitGradient(String how, Tensor x, JsonObject a) {
        int dim = i(a, "dim");
        List<Tensor> pieces = switch (how) {
            case "split" -> x.split(i(a, "arg"), dim);
            case "split_with_sizes" -> x.split(longs(a.get("arg").getAsJsonArray()), dim);
            case "chunk" -> x.chunk(i(a, "arg"), dim);
            case "unbind" -> x.unbind(dim);
            default -> throw new IllegalStateException("unknown case " + how);
        };
        JsonArray weights = a.get("weights").getAsJsonArray();
        Tensor loss = null;
        for (int k = 0; k < pieces.size(); k++) {
            double w = weights.get(k).getAsDouble();
            if (w == 0) continue;
            Tensor term = pieces.get(k).sum().mul(w);
            loss = loss == null ? term : loss.add(term);
        }
        loss.backward();
        return x.grad();
    }

    private static int i(JsonObject a, String key) {
        return a.get(key).getAsInt();
    }

    private static long[] longs(JsonArray a) {
        long[] r = new long[a.size()];
        for (int k = 0; k < r.length; k++) r[k] = a.get(k).getAsLong();
        return r;
    }

    /** The backward op's scalars: its own, then input_sizes (the list comes last). */
    private static double[] with(JsonArray sizes, int... scalars) {
        double[] r = new double[scalars.length + sizes.size()];
        for (int k = 0; k < scalars.length; k++) r[k] = scalars[k];
        for (int k = 0; k < sizes.size(); k++) r[scalars.length + k] = sizes.get(k).getAsLong();
        return r;
    }

    // ---------------------------------------------------------------- gradcheck, first order

    /** {@code fn} of a transposed (non-contiguous) view of {@code x}. */
    private static Function<Tensor[], Tensor> ofTransposed(Function<Tensor, Tensor> fn) {
        return a -> {
            try (Tensor t = a[0].transpose(0, 1)) {
                return fn.apply(t);
            }
        };
    }

    @Test
    void narrowAndSliceOfNonContiguousInputsWithNegativeDimsAndSteps() {
        try (Tensor x = input(6, 5)) {
            gradcheck(ofTransposed(t -> t.narrow(-1, -4, 3)), x);
            gradcheck(ofTransposed(t -> t.narrow(0, 1, 0)), x);
            gradcheck(ofTransposed(t -> t.slice(-1, 1, 6, 2)), x);
            gradcheck(ofTransposed(t -> t.slice(0, -4, -1, 3)), x);
            gradcheck(ofTransposed(t -> t.slice(1, 2, 100, 4)), x);
        }
    }

    @Test
    void selectOfNonContiguousInputsWithNegativeDimsAndIndices() {
        try (Tensor x = input(4, 3, 5)) {
            gradcheck(a -> a[0].permute(2, 0, 1).select(-1, -2), x);
            gradcheck(ofTransposed(t -> t.select(0, 2)), x);
        }
    }

    @Test
    void unfoldWithOverlappingWindowsOfNonContiguousInputs() {
        try (Tensor x = input(9, 4)) {
            gradcheck(ofTransposed(t -> t.unfold(-1, 4, 1)), x);
            gradcheck(ofTransposed(t -> t.unfold(1, 5, 2)), x);
            gradcheck(ofTransposed(t -> t.unfold(1, 2, 3)), x);
            gradcheck(a -> a[0].unfold(0, 9, 1), x);
        }
        try (Tensor s = input()) {
            gradcheck(a -> a[0].unfold(0, 1, 1), s);
        }
    }

    @Test
    void diagonalsWithOffsetsAndDims() {
        try (Tensor m = input(4, 6); Tensor c = input(3, 2, 5)) {
            gradcheck(a -> a[0].diagonal(), m);
            gradcheck(a -> a[0].diagonal(2, 0, 1), m);
            gradcheck(a -> a[0].diagonal(-3, 0, 1), m);
            gradcheck(a -> a[0].diagonal(10, 0, 1), m);
            gradcheck(ofTransposed(t -> t.diagonal(1, 1, 0)), m);
            gradcheck(a -> a[0].diagonal(-1, -1, 0), c);
            GradcheckSupport.assertNode("DiagonalBackward0", a -> a[0].diagonal(1, 0, 1), m);
        }
    }

    @Test
    void reshapingViewsOfNonContiguousInputs() {
        try (Tensor x = input(2, 1, 3)) {
            gradcheck(ofTransposed(t -> t.squeeze(-3)), x);
            gradcheck(ofTransposed(t -> t.unsqueeze(-1)), x);
            gradcheck(ofTransposed(t -> t.expand(4, 1, 2, 3)), x);
            gradcheck(ofTransposed(t -> t.permute(-1, 0, 1)), x);
            gradcheck(a -> a[0].view(3, 2), x);
            GradcheckSupport.assertNode("SqueezeBackward1", a -> a[0].squeeze(1), x);
            GradcheckSupport.assertNode("UnsqueezeBackward0", a -> a[0].unsqueeze(1), x);
            GradcheckSupport.assertNode("NarrowBackward0", a -> a[0].narrow(2, 1, 2), x);
        }
    }

    @Test
    void splitChunkAndUnbindWithSomePiecesUnused() {
        try (Tensor x = input(7, 3)) {
            gradcheck(a -> {
                List<Tensor> p = a[0].split(2, 0);
                return Torch.cat(List.of(p.get(0).mul(1.5), p.get(3).mul(-2.0)), 0);
            }, x);
            gradcheck(a -> {
                List<Tensor> p = a[0].transpose(0, 1).split(new long[] {3, 0, 4}, -1);
                return p.get(2).exp();
            }, x);
            gradcheck(a -> a[0].chunk(3, 0).get(1).mul(3.0), x);
            gradcheck(a -> {
                List<Tensor> rows = a[0].unbind(-1);
                return rows.get(0).mul(rows.get(2));
            }, x);
        }
    }

    // ---------------------------------------------------------------- second order: the backward ops' derivatives

    /** The gradient of {@code sum(view(x)^2 * w)} with respect to x, itself differentiated (create_graph). */
    static Function<Tensor[], Tensor> gradientOf(Function<Tensor, Tensor> view) {
        return a -> {
            Tensor v = view.apply(a[0]);
            Tensor loss = v.mul(v).mul(a[1]).sum();
            return Autograd.grad(new Tensor[] {loss}, new Tensor[] {a[0]}, null, true, true, false)[0];
        };
    }

    @Test
    void backwardOpsAreDifferentiable() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(6, 5)) {
            gradcheck(gradientOf(t -> t.slice(1, 1, 5, 2)), x, input(6, 2));
            gradcheck(gradientOf(t -> t.narrow(0, -3, 2)), x, input(2, 5));
            gradcheck(gradientOf(t -> t.select(-1, 3)), x, input(6));
            gradcheck(gradientOf(t -> t.unfold(0, 3, 1)), x, input(4, 5, 3));
            gradcheck(gradientOf(t -> t.diagonal(-1, 0, 1)), x, input(5));
            gradcheck(gradientOf(t -> t.unsqueeze(0).expand(2, 6, 5)), x, input(2, 6, 5));
            gradcheck(gradientOf(t -> t.split(new long[] {1, 4, 1}, 0).get(1)), x, input(4, 5));
            gradcheck(gradientOf(t -> t.unbind(1).get(4)), x, input(6));
        }
    }

    // ---------------------------------------------------------------- nodes

    @Test
    void splitIsOneNodeForAllPieces() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(12, 2)) {
            List<Tensor> pieces = x.split(new long[] {3, 4, 5}, 0);
            Node node = pieces.get(0).gradFn();
            assertEquals("SplitWithSizesBackward0", node.name());
            for (int k = 0; k < pieces.size(); k++) {
                assertSame(node, pieces.get(k).gradFn());
                assertEquals(k, pieces.get(k).outputNr());
            }
            assertEquals("SplitBackward0", x.split(5, 0).get(2).gradFn().name());
            assertEquals("SplitBackward0", x.chunk(5, 0).get(0).gradFn().name());
            List<Tensor> rows = x.unbind(0);
            assertEquals("UnbindBackward0", rows.get(11).gradFn().name());
            assertSame(rows.get(0).gradFn(), rows.get(11).gradFn());
        }
    }

    @Test
    void aViewsNodeSavesNoTensor() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(4, 6)) {
            Tensor y = x.mul(2.0);
            for (Tensor v : new Tensor[] {y.narrow(1, 1, 3), y.slice(0, 0, 4, 2), y.select(0, 1), y.unfold(1, 2, 1),
                    y.diagonal(), y.expand(2, 4, 6), y.t(), y.view(24), y.split(3, 1).get(0), y.unbind(0).get(2)}) {
                assertEquals(0, v.gradFn().savedCount(), v.gradFn().name() + " saved a tensor");
            }
        }
    }

    @Test
    void splitUnderNoGradRecordsNothing() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(6); var g = Grad.noGrad()) {
            for (Tensor p : x.split(2, 0)) {
                assertNull(p.gradFn());
                assertTrue(p.isNoGradViewOfGraphTensor());
            }
        }
    }

    // ---------------------------------------------------------------- errors

    @Test
    void backwardOpsRefuseAGradientOfTheWrongShape() {
        try (Tensor g = Torch.zeros(3, 3)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(ViewOps.SELECT_BACKWARD, new Tensor[] {g}, 0, 1, 4, 2));
            assertTrue(e.getMessage().contains("select_backward") && e.getMessage().contains("[3, 3]")
                    && e.getMessage().contains("[4, 2]"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(ViewOps.UNFOLD_BACKWARD, new Tensor[] {g}, 0, 5, 1, 4, 3));
            assertTrue(e.getMessage().startsWith("unfold"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(ViewOps.SPLIT_WITH_SIZES_BACKWARD, new Tensor[] {g, null}, 0, 2, 1));
            assertTrue(e.getMessage().contains("split_with_sizes_backward") && e.getMessage().contains("gradient 0"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(ViewOps.UNBIND_BACKWARD, new Tensor[] {null, null}, 0, 2, 3));
            assertTrue(e.getMessage().contains("at least one defined gradient"), e.getMessage());
        }
    }

    @Test
    void everyViewDeclaresItsDerivative() {
        for (OpDef op : new OpDef[] {ViewOps.VIEW, ViewOps.RESHAPE, ViewOps.PERMUTE, ViewOps.TRANSPOSE, ViewOps.SQUEEZE,
                ViewOps.SQUEEZE_DIM, ViewOps.UNSQUEEZE, ViewOps.EXPAND, ViewOps.SLICE, ViewOps.NARROW, ViewOps.SELECT, ViewOps.UNFOLD,
                ViewOps.DIAGONAL, ViewOps.SPLIT, ViewOps.SPLIT_WITH_SIZES, ViewOps.CHUNK, ViewOps.UNBIND}) {
            assertEquals(1, op.derivatives().size(), op.name());
            assertTrue(!op.derivatives().get(0).readsInput(0), op.name() + "'s derivative reads its input's values");
        }
    }
}
