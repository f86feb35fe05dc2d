package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.kernelCalls;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.LossOps;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The reduced MSE as the declared fused op ({@link LossOps#MSE_LOSS_FUSED}) on the CPU: values and gradients against the
 * composition (the unreduced loss, reduced by tensor ops) on random shapes, gradients of both orders against finite
 * differences in float64, and its errors. Values against PyTorch 1.13 are in the loss conformance tests.
 */
@ExtendWith(ScopePerTest.class)
class MseLossFusedTest {
    private static final Generator GEN = new Generator(61);

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theReducedLossRunsTheFusedKernels() {
        Tensor x = randn(DType.FLOAT32, 6, 5), t = randn(DType.FLOAT32, 6, 5).detach();
        Runnable step = () -> F.mseLoss(x, t).backward();
        assertEquals(1, kernelCalls("mse_loss_fused", step));
        assertEquals(1, kernelCalls("mse_loss_fused_backward", step));
    }

    @Test
    void valuesAndGradientsMatchTheCompositionOnRandomShapes() {
        Random r = new Random(9);
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (int trial = 0; trial < 20; trial++) {
                long[] shape = trial % 4 == 0 ? new long[] {1 + r.nextInt(70000)} : new long[] {1 + r.nextInt(30), 1 + r.nextInt(300)};
                F.Reduction reduction = r.nextBoolean() ? F.Reduction.MEAN : F.Reduction.SUM;
                Tensor x = randn(dtype, shape), t = randn(dtype, shape);
                Tensor fused = F.mseLoss(x, t, reduction);
                Tensor each = F.mseLoss(x, t, F.Reduction.NONE);
                Tensor plain = reduction == F.Reduction.MEAN ? each.mean() : each.sum();
                String what = dtype + " " + java.util.Arrays.toString(shape) + " " + reduction;
                double tol = dtype == DType.FLOAT32 ? 1e-5 : 1e-12;
                assertCloseRelative(plain, fused, tol, what);
                Tensor[] gf = Autograd.grad(new Tensor[] {fused}, new Tensor[] {x, t});
                Tensor[] gp = Autograd.grad(new Tensor[] {plain}, new Tensor[] {x, t});
                assertCloseRelative(gp[0], gf[0], tol, what + " input gradient");
                assertCloseRelative(gp[1], gf[1], tol, what + " target gradient");
            }
        }
        Tensor x = randn(DType.FLOAT32, 7, 9), t = randn(DType.FLOAT32, 9, 7);
        Tensor xt = x.transpose(0, 1);
        assertCloseRelative(F.mseLoss(xt, t, F.Reduction.NONE).mean(), F.mseLoss(xt, t), 1e-5, "transposed");
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferencesInFloat64() {
        for (F.Reduction reduction : new F.Reduction[] {F.Reduction.MEAN, F.Reduction.SUM}) {
            Function<Tensor[], Tensor> mse = a -> F.mseLoss(a[0], a[1], reduction);
            assertTrue(Gradcheck.check(mse, randn(DType.FLOAT64, 3, 4), randn(DType.FLOAT64, 3, 4)));
            assertTrue(Gradcheck.check(firstGradient(mse), randn(DType.FLOAT64, 3, 4), randn(DType.FLOAT64, 3, 4)));
        }
    }

    @Test
    void theOpNamesItselfTheShapesAndDtypesOnBadOperands() {
        Tensor x = randn(DType.FLOAT32, 3, 4).detach(), t = randn(DType.FLOAT32, 4, 3).detach();
        // operands the kernel does not take run the decomposition, whose broadcast names the shapes
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(LossOps.MSE_LOSS_FUSED, new Tensor[] {x, t}, LossOps.MEAN));
        assertTrue(e.getMessage().contains("[3, 4]") && e.getMessage().contains("[4, 3]"), e.getMessage());
        Tensor g = Torch.ones(new long[0], DType.FLOAT32, x.device());
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(LossOps.MSE_LOSS_FUSED_BACKWARD, new Tensor[] {g, x, t}, LossOps.MEAN));
        assertTrue(b.getMessage().contains("mse_loss_fused_backward") && b.getMessage().contains("[3, 4]") && b.getMessage().contains("[4, 3]")
                && b.getMessage().contains("float32"), b.getMessage());
    }
}
