package org.jtorch.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * In-place ops on views of tensors in the graph against PyTorch 1.13 ({@code tools/fixtures/gen_inplace_views.py}): each
 * case replays the generator's ops (by name) and compares the loss, the base after the write and the gradients of
 * {@code x} and {@code w}; the cases PyTorch refuses are refused, with the same reason.
 */
class InPlaceViewConformanceTest {
    private static final List<Case> CASES = Fixtures.load("inplace_views");

    /** What a case computes from (x, w): the base y and the loss. */
    private record Run(Tensor y, Tensor loss) {}

    private static Tensor u(Tensor t) {
        double[] w = new double[(int) t.numel()];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor d = Torch.tensor(w, t.shape())) {
            return d.to(t.device(), t.dtype());
        }
    }

    private static Tensor weighted(Tensor t) {
        return t.mul(u(t)).sum();
    }

    private static final Map<String, BiFunction<Tensor, Tensor, Run>> REPLAYS = Map.ofEntries(
            Map.entry("narrow_add", (x, w) -> {
                Tensor y = x.mul(2.0);
                y.narrow(0, 1, 2).add_(w);
                return new Run(y, weighted(y));
            }),
            Map.entry("select_mul", (x, w) -> {
                Tensor y = x.erf();
                y.select(1, 2).mul_(w);
                return new Run(y, weighted(y));
            }),
            Map.entry("step_slice_copy", (x, w) -> {
                Tensor y = x.sin();
                y.slice(0, 0, y.size(0), 2).copy_(w);
                return new Run(y, weighted(y));
            }),
            Map.entry("transpose_add_read_view", (x, w) -> {
                Tensor y = x.mul(3.0);
                Tensor v = y.t();
                v.add_(w, 0.5);
                return new Run(y, weighted(y).add(weighted(v)));
            }),
            Map.entry("view_of_view_mul", (x, w) -> {
                Tensor y = x.mul(x);
                Tensor v = y.narrow(0, 1, 3).select(1, 0);
                v.mul_(w);
                return new Run(y, weighted(y).add(weighted(v)));
            }),
            Map.entry("base_without_grad_copy", (x, w) -> {
                Tensor y = Torch.zeros(new long[] {4, 3}, DType.FLOAT64, x.device());
                y.narrow(0, 1, 2).copy_(w);
                return new Run(y, weighted(y.mul(x)));
            }),
            Map.entry("older_view_sees_write", (x, w) -> {
                Tensor y = x.mul(2.0);
                Tensor before = y.narrow(0, 0, 2);
                y.narrow(0, 1, 2).mul_(w);
                return new Run(y, weighted(before));
            }),
            Map.entry("base_write_seen_by_view", (x, w) -> {
                Tensor y = x.add(1.0);
                Tensor v = y.select(0, 0);
                y.mul_(w);
                return new Run(y, weighted(v));
            }),
            Map.entry("sigmoid_on_view", (x, w) -> {
                Tensor y = x.mul(1.5);
                y.narrow(1, 0, 2).sigmoid_();
                return new Run(y, weighted(y));
            }),
            Map.entry("two_writes_then_read", (x, w) -> {
                Tensor y = x.cos();
                y.narrow(0, 0, 2).add_(w);
                y.select(1, 1).mul_(3.0);
                return new Run(y, weighted(y));
            }));

    /** Each refused case and the phrase its message shares with PyTorch's. */
    private static final Map<String, String> REFUSALS = Map.of(
            "saved_result_overwritten_through_view", "modified by an inplace operation",
            "view_of_leaf", "a view of a leaf",
            "view_made_without_grad", "a view was created in no_grad mode",
            "output_of_split", "output 0 of splitbackward0 is a view and is being modified",
            "view_of_unbind_output", "the output of a function that returns multiple views");

    private static final Map<String, java.util.function.Consumer<Tensor>> REFUSED = Map.of(
            "saved_result_overwritten_through_view", x -> {
                Tensor y = x.exp();
                y.select(1, 2).mul_(2.0);
                weighted(y).backward();
            },
            "view_of_leaf", x -> x.narrow(0, 1, 2).add_(1.0),
            "view_made_without_grad", x -> {
                Tensor y = x.mul(2.0);
                Tensor v;
                try (Grad.Mode m = Grad.noGrad()) {
                    v = y.narrow(0, 0, 1);
                }
                v.mul_(2.0);
            },
            "output_of_split", x -> x.mul(2.0).split(2, 0).get(0).mul_(2.0),
            "view_of_unbind_output", x -> x.mul(2.0).unbind(1).get(1).narrow(0, 0, 2).add_(1.0));

    static Stream<Case> writes() {
        return CASES.stream().filter(c -> c.op().equals("inplace_view"));
    }

    static Stream<Case> refusals() {
        return CASES.stream().filter(c -> c.op().equals("inplace_view_error"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("writes")
    void gradientsMatchPyTorch(Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = c.input(0).requiresGrad_(true);
            Tensor w = c.inputs().size() > 1 ? c.input(1).requiresGrad_(true) : null;
            Run r = REPLAYS.get(c.name()).apply(x, w);
            r.loss().backward();
            JsonObject exp = c.expected().getAsJsonObject();
            Fixtures.assertMatches(exp.getAsJsonObject("loss"), r.loss(), 1e-12, 1e-12, c + " loss");
            Fixtures.assertMatches(exp.getAsJsonObject("y"), r.y(), 1e-12, 1e-12, c + " y");
            Fixtures.assertMatches(exp.getAsJsonObject("grad.x"), x.grad(), 1e-12, 1e-12, c + " grad x");
            if (w != null) Fixtures.assertMatches(exp.getAsJsonObject("grad.w"), w.grad(), 1e-12, 1e-12, c + " grad w");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusals")
    void refusedAsInPyTorch(Case c) {
        String phrase = REFUSALS.get(c.name());
        assertTrue(c.stringArg("message", "").toLowerCase(Locale.ROOT).contains(phrase), "PyTorch's reason: " + c.stringArg("message", ""));
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = c.input(0).requiresGrad_(true);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> REFUSED.get(c.name()).accept(x));
            assertTrue(e.getMessage().toLowerCase(Locale.ROOT).contains(phrase), e.getMessage());
        }
    }

    @org.junit.jupiter.api.Test
    void everyCaseIsReplayed() {
        assertEquals(REPLAYS.keySet(), writes().map(Case::name).collect(java.util.stream.Collectors.toSet()));
        assertEquals(REFUSALS.keySet(), refusals().map(Case::name).collect(java.util.stream.Collectors.toSet()));
    }
}
