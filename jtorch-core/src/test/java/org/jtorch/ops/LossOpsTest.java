package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.traced;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collections;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.nn.F.Reduction;
import org.jtorch.op.LossOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The regression losses as declared compositions ({@link LossOps}): what the trace sees (a subtree used twice runs once),
 * the reductions, autocast from the declaration, and gradients of both orders. References are the formulas computed
 * here; values against PyTorch 1.13 are in {@code nn.NnConformanceTest} and {@code nn.LossOverloadsConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class LossOpsTest {
    private static final Device DEVICE = Fixtures.device();
    @Test
    void mseLossComputesTheDifferenceOnce() {
        Tensor x = Torch.randn(4, 3).to(DEVICE);
        Tensor y = Torch.randn(4, 3).to(DEVICE);
        // the unreduced loss is the composition; the reduced one too where the backend has no fused kernel
        List<String> ops = traced(() -> F.mseLoss(x, y, F.Reduction.NONE));
        assertEquals(1, Collections.frequency(ops, "sub"), ops.toString());
        assertTrue(ops.contains("mul"), ops.toString());
        List<String> reduced = traced(() -> F.mseLoss(x, y));
        if (org.jtorch.op.KernelRegistry.hasStructured(LossOps.MSE_LOSS_FUSED, DEVICE.type())) {
            assertEquals(List.of("mse_loss_fused"), reduced);
        } else {
            assertEquals(1, Collections.frequency(reduced, "sub"), reduced.toString());
        }
    }

    @Test
    void groupNormReshapesItsInputIntoGroupsOnce() {
        Tensor x = Torch.randn(2, 4, 3).to(DEVICE);
        List<String> ops = traced(() -> F.groupNorm(x, 2, Torch.ones(4).to(DEVICE), Torch.zeros(4).to(DEVICE), 1e-5));
        // groups, channels, weight, bias and the result's reshape: the groups' view feeds sub, mean and var once
        assertEquals(5, Collections.frequency(ops, "reshape"), ops.toString());
    }

    @Test
    void theReductionsOfHuberLossMatchTheFormula() {
        Torch.manualSeed(2);
        Tensor x = Torch.randn(5, 2).to(DEVICE).mul(2.0);
        Tensor y = Torch.randn(5, 2).to(DEVICE);
        float[] xv = x.toFloatArray(), yv = y.toFloatArray();
        double[] loss = new double[xv.length];
        double sum = 0;
        for (int i = 0; i < loss.length; i++) {
            double d = Math.abs((double) xv[i] - yv[i]);
            loss[i] = d < 1.5 ? 0.5 * d * d : 1.5 * (d - 0.75);
            sum += loss[i];
        }
        float[] none = F.huberLoss(x, y, Reduction.NONE, 1.5).toFloatArray();
        for (int i = 0; i < loss.length; i++) assertEquals(loss[i], none[i], 1e-5, "at " + i);
        Tensor s = F.huberLoss(x, y, Reduction.SUM, 1.5);
        assertArrayEquals(new long[0], s.shape());
        assertEquals(sum, s.item(), 1e-4);
        assertEquals(sum / loss.length, F.huberLoss(x, y, Reduction.MEAN, 1.5).item(), 1e-5);
    }

    @Test
    void autocastRunsTheLossesInFloat32FromTheirDeclaration() {
        Tensor x = Torch.randn(4, 3).to(DEVICE).to(DType.BFLOAT16);
        Tensor y = Torch.randn(4, 3).to(DEVICE).to(DType.BFLOAT16);
        try (Autocast a = Autocast.enable(DEVICE, DType.BFLOAT16)) {
            for (Tensor l : List.of(F.mseLoss(x, y), F.l1Loss(x, y), F.smoothL1Loss(x, y), F.huberLoss(x, y),
                    F.binaryCrossEntropyWithLogits(x, y), F.klDiv(x, y))) {
                assertEquals(DType.FLOAT32, l.dtype());
            }
        }
    }

    private static final Generator GEN = new Generator(17);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theLossesGradientsMatchFiniteDifferences() {
        assertTrue(Gradcheck.check(a -> F.mseLoss(a[0], a[1]), randn64(3, 4), randn64(3, 4)));
        assertTrue(Gradcheck.check(a -> F.l1Loss(a[0], a[1], Reduction.SUM), randn64(3, 4), randn64(3, 4)));
        assertTrue(Gradcheck.check(a -> F.smoothL1Loss(a[0], a[1], Reduction.NONE, 0.5), randn64(3, 4), randn64(3, 4)));
        assertTrue(Gradcheck.check(a -> F.huberLoss(a[0], a[1], Reduction.MEAN, 0.7), randn64(3, 4), randn64(3, 4)));
        assertTrue(Gradcheck.check(a -> F.binaryCrossEntropyWithLogits(a[0], a[1], a[2], a[3], Reduction.SUM), randn64(3, 4),
                randn64(3, 4), randn64(3, 4), randn64(4)));
        assertTrue(Gradcheck.check(a -> F.klDiv(a[0], a[1].exp(), Reduction.BATCHMEAN, false), randn64(3, 4), randn64(3, 4)));
        assertTrue(Gradcheck.check(a -> F.klDiv(a[0], a[1], Reduction.SUM, true), randn64(3, 4), randn64(3, 4)));
    }

    @Test
    void klDivIsZeroWhereTheTargetIsAndBatchmeanDividesTheSumByTheBatch() {
        Tensor x = Torch.tensor(new float[] {-1, -2, -0.5f, -3}).reshape(2, 2).to(DEVICE);
        Tensor t = Torch.tensor(new float[] {0, 0.25f, 0.75f, 0}).reshape(2, 2).to(DEVICE);
        float[] none = F.klDiv(x, t, Reduction.NONE).toFloatArray();
        double[] expected = {0, 0.25 * (Math.log(0.25) + 2), 0.75 * (Math.log(0.75) + 0.5), 0};
        for (int i = 0; i < 4; i++) assertEquals(expected[i], none[i], 1e-6, "at " + i);
        double sum = expected[1] + expected[2];
        assertEquals(sum / 2, F.klDiv(x, t, Reduction.BATCHMEAN).item(), 1e-6);
        assertEquals(sum / 4, F.klDiv(x, t, Reduction.MEAN).item(), 1e-6);
    }

    @Test
    void binaryCrossEntropyWithLogitsComputesSoftplusOnceAndMatchesTheFormula() {
        Torch.manualSeed(3);
        Tensor x = Torch.randn(6).to(DEVICE).mul(30.0); // large logits: the stable form stays finite
        Tensor t = Torch.rand(6).to(DEVICE);
        Tensor p = Torch.rand(6).to(DEVICE).add(0.5);
        List<String> ops = traced(() -> F.binaryCrossEntropyWithLogits(x, t, null, p, Reduction.NONE));
        assertEquals(2, Collections.frequency(ops, "exp"), ops.toString());
        float[] xv = x.toFloatArray(), tv = t.toFloatArray(), pv = p.toFloatArray();
        float[] loss = F.binaryCrossEntropyWithLogits(x, t, null, p, Reduction.NONE).toFloatArray();
        for (int i = 0; i < xv.length; i++) {
            double softplusNeg = Math.max(-xv[i], 0) + Math.log1p(Math.exp(-Math.abs((double) xv[i])));
            double expected = (1 - tv[i]) * xv[i] + (1 + (pv[i] - 1) * tv[i]) * softplusNeg;
            assertEquals(expected, loss[i], 1e-5 * Math.max(1, Math.abs(expected)), "at " + i);
        }
    }
}
