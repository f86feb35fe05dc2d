package org.jtorch.nn;

import com.google.gson.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.autograd.Autograd;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F.Reduction;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The losses called with only a reduction (the functional form and the module), and binary cross entropy's gradient
 * at inputs of exactly 0 and 1, against PyTorch 1.13 ({@code tools/fixtures/gen_losses.py}).
 */
class LossOverloadsConformanceTest {
    private static final List<Case> CASES = Fixtures.load("losses");

    private record Forms(BiFunction<Reduction, Tensor[], Tensor> functional, java.util.function.Function<Reduction, Loss> module) {}

    private static final Map<String, Forms> LOSSES = Map.of(
            "cross_entropy", new Forms((r, t) -> F.crossEntropy(t[0], t[1], r), CrossEntropyLoss::new),
            "nll_loss", new Forms((r, t) -> F.nllLoss(t[0], t[1], r), NLLLoss::new),
            "binary_cross_entropy", new Forms((r, t) -> F.binaryCrossEntropy(t[0], t[1], r), BCELoss::new),
            "binary_cross_entropy_with_logits", new Forms((r, t) -> F.binaryCrossEntropyWithLogits(t[0], t[1], r), BCEWithLogitsLoss::new),
            "smooth_l1_loss", new Forms((r, t) -> F.smoothL1Loss(t[0], t[1], r), SmoothL1Loss::new),
            "huber_loss", new Forms((r, t) -> F.huberLoss(t[0], t[1], r), HuberLoss::new),
            "kl_div", new Forms((r, t) -> F.klDiv(t[0], t[1], r), KLDivLoss::new),
            "mse_loss", new Forms((r, t) -> F.mseLoss(t[0], t[1], r), MSELoss::new),
            "l1_loss", new Forms((r, t) -> F.l1Loss(t[0], t[1], r), L1Loss::new));

    static Stream<Case> reductionOnly() {
        return CASES.stream().filter(c -> c.op().equals("reduction_only"));
    }

    static Stream<Case> bceEdges() {
        return CASES.stream().filter(c -> c.op().equals("binary_cross_entropy_edges"));
    }

    private static Reduction reduction(Case c) {
        return Reduction.valueOf(c.stringArg("reduction", "mean").toUpperCase(java.util.Locale.ROOT));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("reductionOnly")
    void reductionOnlyFormsMatchPyTorch(Case c) {
        Forms forms = LOSSES.get(c.stringArg("loss", ""));
        JsonObject expected = c.expected().getAsJsonObject().getAsJsonObject("loss");
        try (MemoryScope scope = new MemoryScope(); Loss module = forms.module().apply(reduction(c))) {
            Tensor[] in = c.inputTensors().toArray(new Tensor[0]);
            Fixtures.assertMatches(expected, forms.functional().apply(reduction(c), in), 1e-5, 1e-6, c + " F");
            Fixtures.assertMatches(expected, module.forward(in[0], in[1]), 1e-5, 1e-6, c + " module");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bceEdges")
    void binaryCrossEntropyGradientIsFiniteAtZeroAndOne(Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = c.input(0).requiresGrad_(true);
            Tensor t = c.input(1);
            Tensor w = c.inputs().size() > 2 ? c.input(2) : null;
            Reduction r = reduction(c);
            Tensor loss = F.binaryCrossEntropy(x, t, w, r);
            Tensor scalar = r == Reduction.NONE
                    ? loss.mul(org.jtorch.Torch.arange(1, 8, 1, x.dtype(), x.device())).sum() : loss;
            scalar.backward();
            JsonObject exp = c.expected().getAsJsonObject();
            boolean f64 = x.dtype() == org.jtorch.types.DType.FLOAT64;
            Fixtures.assertMatches(exp.getAsJsonObject("loss"), loss, f64 ? 1e-12 : 1e-6, f64 ? 1e-12 : 1e-6, c + " loss");
            Fixtures.assertMatches(exp.getAsJsonObject("grad.input"), x.grad(), f64 ? 1e-12 : 1e-6, f64 ? 1e-12 : 1e-6, c + " grad");
        }
    }

    @Test
    void binaryCrossEntropyTargetGradientIsPyTorchs() {
        // PyTorch 1.13: d/dt bce(x, t, sum) = log(1 - x) - log(x): 0.8473 at x = 0.3, +inf at x = 0, -inf at x = 1.
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = org.jtorch.Torch.tensor(new double[] {0.0, 1.0, 0.3}, 3);
            Tensor t = org.jtorch.Torch.tensor(new double[] {0.0, 1.0, 0.5}, 3).requiresGrad_(true);
            Tensor g = Autograd.grad(F.binaryCrossEntropy(x, t, Reduction.SUM), t);
            double[] v = g.toDoubleArray();
            assertEquals(Double.POSITIVE_INFINITY, v[0]);
            assertEquals(Double.NEGATIVE_INFINITY, v[1]);
            assertEquals(Math.log(0.7) - Math.log(0.3), v[2], 1e-12);
        }
    }

    @Test
    void binaryCrossEntropyRefusesAWeightThatRequiresGrad() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = org.jtorch.Torch.tensor(new double[] {0.2, 0.7}, 2);
            Tensor w = org.jtorch.Torch.tensor(new double[] {1, 2}, 2).requiresGrad_(true);
            var e = assertThrows(IllegalArgumentException.class, () -> F.binaryCrossEntropy(x, x, w, Reduction.SUM));
            assertTrue(e.getMessage().contains("not differentiable with respect to argument 'weight'"), e.getMessage());
        }
    }
}
