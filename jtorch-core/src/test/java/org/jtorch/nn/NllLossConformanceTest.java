package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * {@code nll_loss} and class-index {@code cross_entropy} over {@code [N, C, d...]} inputs against PyTorch 1.13
 * ({@code tools/fixtures/gen_nll.py}): weights, ignore_index, label smoothing, the three reductions, float32 and float64;
 * the output and the input's gradient of {@code sum(output * w)} with {@code w[i] = sin(0.7 i + 0.3)}. On the CPU these
 * take the fused nll_loss kernel (cross entropy: log_softmax, then that kernel); elsewhere the decomposition.
 */
class NllLossConformanceTest {
    private static final java.util.List<Case> CASES = Fixtures.load("nll");

    @TestFactory
    Stream<DynamicTest> valuesAndGradientsMatchPyTorch() {
        return CASES.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = c.input(0).detach();
            if (!c.expectsError()) x.requiresGrad_(true);
            Tensor target = c.input(1);
            Tensor weight = c.boolArg("has_weight", false) ? c.input(2) : null;
            F.Reduction r = F.Reduction.valueOf(c.stringArg("reduction", "mean").toUpperCase());
            long ignore = c.longArg("ignore_index", -100);
            Tensor input = x;
            java.util.function.Supplier<Tensor> call = c.op().equals("nll_loss")
                    ? () -> F.nllLoss(input, target, weight, ignore, r)
                    : () -> F.crossEntropy(input, target, weight, ignore, r, c.doubleArg("label_smoothing", 0));
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> call.get().toDoubleArray(), c.toString());
                assertTrue(e.getMessage().contains(Fixtures.javaName(c.op())), c + ": message should name the op: " + e.getMessage());
                return;
            }
            Tensor out = call.get();
            JsonArray expected = c.expected().getAsJsonArray();
            assertClose(expected.get(0).getAsJsonObject(), out, c + " output");
            out.backward(upstream(out));
            assertClose(expected.get(1).getAsJsonObject(), x.grad(), c + " gradient");
        }
    }

    private static void assertClose(JsonObject expected, Tensor actual, String what) {
        double tol = DType.parse(expected.get("dtype").getAsString()) == DType.FLOAT64 ? 1e-10 : 2e-5;
        Fixtures.assertMatches(expected, actual, tol, tol, what);
    }

    /** {@code w[i] = sin(0.7 i + 0.3)} in the output's shape and dtype. */
    private static Tensor upstream(Tensor out) {
        double[] w = new double[Math.toIntExact(out.numel())];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        return Torch.tensor(w, out.shape()).to(out.device(), out.dtype());
    }
}
