package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
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
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LossOps;
import org.jtorch.op.OpDef;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code nll_loss} as the declared op ({@link LossOps#NLL_LOSS}) on the CPU: one fused kernel forward and one backward,
 * values and gradients against its decomposition ({@link LossOps#NLL_LOSS_COMPOSITE}) on random {@code [N, C, d...]}
 * shapes with weights and ignored targets, gradients of both orders against finite differences in float64, a weight that
 * requires grad (the decomposition's), and its errors. Values against PyTorch 1.13 are in {@code nn.NllLossConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class NllLossFusedTest {
    private static final Generator GEN = new Generator(91);
    private static final F.Reduction[] REDUCTIONS = {F.Reduction.NONE, F.Reduction.MEAN, F.Reduction.SUM};

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).requiresGrad_(true);
    }

    /** Targets in {@code [0, classes)} of {@code shape}, about a quarter of them {@code ignore} when {@code ignoring}. */
    private static Tensor targets(Random r, long[] shape, int classes, long ignore, boolean ignoring) {
        long n = 1;
        for (long s : shape) n *= s;
        long[] t = new long[(int) n];
        for (int i = 0; i < t.length; i++) t[i] = ignoring && r.nextInt(4) == 0 ? ignore : r.nextInt(classes);
        return Torch.tensor(t, shape);
    }

    private static int reductionEnum(F.Reduction r) {
        return r == F.Reduction.NONE ? LossOps.NONE : r == F.Reduction.MEAN ? LossOps.MEAN : LossOps.SUM;
    }

    @Test
    void nllLossIsStructuredWithCpuKernelsThatTheStepCallsOnce() {
        OpDef op = LossOps.NLL_LOSS;
        assertEquals(OpDef.Kind.STRUCTURED, op.kind());
        assertTrue(op.hasDecomposition());
        assertTrue(KernelRegistry.hasStructured(op, Device.Type.CPU));
        assertTrue(KernelRegistry.hasStructured(LossOps.NLL_LOSS_BACKWARD, Device.Type.CPU));
        Tensor x = randn(DType.FLOAT32, 4, 7, 3);
        Tensor t = targets(new Random(1), new long[] {4, 3}, 7, -100, true);
        Runnable step = () -> F.nllLoss(x, t).backward();
        assertEquals(1, kernelCalls("nll_loss", step));
        assertEquals(1, kernelCalls("nll_loss_backward", step));
        // per-pixel cross entropy: log_softmax, then the same kernels
        Runnable ce = () -> F.crossEntropy(x, t).backward();
        assertEquals(1, kernelCalls("nll_loss", ce));
        assertEquals(1, kernelCalls("nll_loss_backward", ce));
    }

    @Test
    void valuesAndGradientsMatchTheDecompositionOnRandomShapes() {
        Random r = new Random(7);
        for (int trial = 0; trial < 40; trial++) {
            DType dt = trial % 3 == 0 ? DType.FLOAT64 : DType.FLOAT32;
            int classes = 1 + r.nextInt(trial < 20 ? 6 : 300);
            int rank = 2 + r.nextInt(3);
            long[] shape = new long[rank], tshape = new long[rank - 1];
            shape[0] = tshape[0] = 1 + r.nextInt(5);
            shape[1] = classes;
            for (int d = 2; d < rank; d++) shape[d] = tshape[d - 1] = 1 + r.nextInt(6);
            long ignore = r.nextBoolean() ? -100 : r.nextInt(classes);
            Tensor t = targets(r, tshape, classes, ignore, r.nextBoolean());
            Tensor w = r.nextBoolean() ? Torch.rand(new long[] {classes}, dt, Device.cpu(), GEN).add(0.5) : null;
            F.Reduction red = REDUCTIONS[r.nextInt(3)];
            Tensor x = Torch.randn(shape, dt, Device.cpu(), GEN).logSoftmax(1).detach().requiresGrad_(true);
            String what = "trial " + trial + " " + dt + " " + java.util.Arrays.toString(shape) + " " + red + (w == null ? "" : " weighted")
                    + " ignore " + ignore;
            Tensor fused = F.nllLoss(x, t, w, ignore, red);
            Tensor composed = Dispatcher.call(LossOps.NLL_LOSS_COMPOSITE, new Tensor[] {x, t, w}, reductionEnum(red), ignore);
            double tol = dt == DType.FLOAT32 ? 2e-5 : 1e-12;
            assertCloseRelative(composed, fused, tol, what + " value");
            Tensor g = Torch.randn(fused.shape(), dt, Device.cpu(), GEN);
            Tensor gf = Autograd.grad(new Tensor[] {fused}, new Tensor[] {x}, new Tensor[] {g}, false, false, false)[0];
            Tensor gc = Autograd.grad(new Tensor[] {composed}, new Tensor[] {x}, new Tensor[] {g}, false, false, false)[0];
            assertCloseRelative(gc, gf, tol, what + " gradient");
        }
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferencesInFloat64() {
        Tensor t = targets(new Random(3), new long[] {3, 2}, 5, 4, true);
        Tensor w = Torch.rand(new long[] {5}, DType.FLOAT64, Device.cpu(), GEN).add(0.5);
        for (F.Reduction reduction : REDUCTIONS) {
            for (Tensor weight : new Tensor[] {null, w}) {
                Function<Tensor[], Tensor> nll = a -> F.nllLoss(a[0], t, weight, 4, reduction);
                assertTrue(Gradcheck.check(nll, randn(DType.FLOAT64, 3, 5, 2)));
                // the gradient is linear in the upstream gradient and constant in the input: differentiate it in the former
                Tensor x = randn(DType.FLOAT64, 3, 5, 2);
                Function<Tensor[], Tensor> gradient = a -> Autograd.grad(new Tensor[] {nll.apply(new Tensor[] {x})}, new Tensor[] {x},
                        new Tensor[] {a[0]}, true, true, false)[0];
                assertTrue(Gradcheck.check(gradient, randn(DType.FLOAT64, reduction == F.Reduction.NONE ? new long[] {3, 2} : new long[0])));
            }
        }
        // a weight that requires grad takes the decomposition, which differentiates it
        Function<Tensor[], Tensor> weighted = a -> F.nllLoss(a[0], t, a[1], -100, F.Reduction.MEAN);
        assertTrue(Gradcheck.check(weighted, randn(DType.FLOAT64, 3, 5, 2), Torch.rand(new long[] {5}, DType.FLOAT64, Device.cpu(), GEN)
                .add(0.5).requiresGrad_(true)));
    }

    @Test
    void aTargetOutOfRangeNamesTheLossAndKeepsTheKernelsError() {
        Tensor x = randn(DType.FLOAT32, 2, 4, 3).detach();
        Tensor t = Torch.tensor(new long[] {0, 1, 2, 3, 4, 1}, new long[] {2, 3});
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> F.nllLoss(x, t));
        assertTrue(e.getMessage().startsWith("nllLoss: Target 4 is out of bounds (4 classes)"), e.getMessage());
        assertTrue(e.getCause() instanceof IndexOutOfBoundsException, "the kernel's error is the cause");
        IndexOutOfBoundsException ce = assertThrows(IndexOutOfBoundsException.class, () -> F.crossEntropy(x, t));
        assertTrue(ce.getMessage().startsWith("crossEntropy: Target 4"), ce.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(LossOps.NLL_LOSS_BACKWARD, new Tensor[] {Torch.ones(2, 3), x, t.to(DType.INT32), null,
                        Torch.ones(1)}, LossOps.NONE, -100));
        assertTrue(bad.getMessage().contains("nll_loss_backward") && bad.getMessage().contains("[2, 4, 3]"), bad.getMessage());
    }
}
