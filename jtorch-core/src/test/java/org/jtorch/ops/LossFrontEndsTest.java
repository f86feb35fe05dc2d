package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.op.LossOps;
import org.jtorch.op.Shapes;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * F's losses as front ends in {@code ops.Losses}: {@code cross_entropy_loss} called by its own signature through the
 * dispatcher (as the JIT would replay it) against PyTorch 1.13's {@code cross_entropy} cases ({@code tools/fixtures/gen_nll.py}),
 * and the checks that F made, now in {@code ops.Losses}, naming the function and both operands' shapes, dtypes and devices.
 */
@ExtendWith(ScopePerTest.class)
class LossFrontEndsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(281);

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    /** Class indices ({@code nll.json}) and class probabilities ({@code nn.json}'s {@code probs_*} cases). */
    @Test
    void crossEntropyLossCalledByItsSignatureMatchesPyTorch() {
        int checked = 0, probabilities = 0;
        List<Case> cases = new java.util.ArrayList<>(Fixtures.load("nll"));
        cases.addAll(Fixtures.load("nn").stream().filter(c -> c.name().startsWith("probs")).toList());
        for (Case c : cases) {
            if (!c.op().equals("cross_entropy") || c.expectsError()) continue;
            if (c.input(1).dtype().isFloatingPoint()) probabilities++;
            Tensor weight = c.boolArg("has_weight", false) ? c.input(2) : null;
            int reduction = switch (c.stringArg("reduction", "mean")) {
                case "none" -> (int) LossOps.NONE;
                case "sum" -> (int) LossOps.SUM;
                default -> (int) LossOps.MEAN;
            };
            Tensor out = Dispatcher.call(LossOps.CROSS_ENTROPY_LOSS, new Tensor[] {c.input(0), c.input(1), weight}, reduction,
                    c.longArg("ignore_index", -100), c.doubleArg("label_smoothing", 0));
            JsonObject expected = c.expected().getAsJsonArray().get(0).getAsJsonObject();
            double tol = DType.parse(expected.get("dtype").getAsString()) == DType.FLOAT64 ? 1e-10 : 2e-5;
            Fixtures.assertMatches(expected, out, tol, tol, c.toString());
            checked++;
        }
        assertTrue(checked >= 46 && probabilities == 6, "cross_entropy cases: " + checked + ", with class probabilities: " + probabilities);
    }

    /** {@code batchmean}: kl_div's sum divided by the batch size, as PyTorch's functional. */
    @Test
    void klDivBatchmeanIsTheSumOverTheBatchSize() {
        Tensor input = randn(DType.FLOAT64, 3, 4).logSoftmax(1);
        Tensor target = randn(DType.FLOAT64, 3, 4).softmax(1);
        double sum = F.klDiv(input, target, F.Reduction.SUM).item();
        assertEquals(sum / 3, F.klDiv(input, target, F.Reduction.BATCHMEAN).item(), 0);
    }

    @Test
    void badArgumentsAreRefusedNamingTheFunctionAndBothOperandsTracedOrNot() {
        Tensor x = randn(DType.FLOAT32, 2, 3);
        Tensor other = randn(DType.FLOAT32, 3, 2);
        Tensor ints = Torch.zeros(new long[] {2, 3}, DType.INT64, DEVICE);
        record Bad(String fn, Runnable call, Tensor input, Tensor target) {}
        List<Bad> cases = List.of(
                new Bad("crossEntropy", () -> F.crossEntropy(x, x, null, -100, F.Reduction.MEAN, 1.5), x, x),
                new Bad("crossEntropy", () -> F.crossEntropy(x, other, null, -100, F.Reduction.MEAN, 0), x, other),
                new Bad("mseLoss", () -> F.mseLoss(ints, ints), ints, ints),
                new Bad("smoothL1Loss", () -> F.smoothL1Loss(x, x, F.Reduction.MEAN, -1), x, x),
                new Bad("huberLoss", () -> F.huberLoss(x, x, F.Reduction.MEAN, 0), x, x),
                new Bad("binaryCrossEntropy", () -> F.binaryCrossEntropy(x.sigmoid(), other.sigmoid()), x, other),
                new Bad("binaryCrossEntropyWithLogits", () -> F.binaryCrossEntropyWithLogits(x, other), x, other));
        for (Bad b : cases) {
            for (boolean trace : new boolean[] {false, true}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(b.call()); else b.call().run(); },
                        b.fn());
                String m = e.getMessage();
                for (Tensor t : List.of(b.input(), b.target())) {
                    assertTrue(m.startsWith(b.fn() + ": ") && m.contains(Shapes.format(t.shape())) && m.contains(t.dtype().toString())
                            && m.contains(t.device().toString()), m);
                }
            }
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.l1Loss(x, x, F.Reduction.BATCHMEAN));
        assertEquals("l1Loss: reduction BATCHMEAN is only defined for klDiv", e.getMessage());
    }
}
