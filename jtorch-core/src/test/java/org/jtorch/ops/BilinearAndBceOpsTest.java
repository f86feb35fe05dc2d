package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.LossOps;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code bilinear} as a declared front end ({@link FrontEndOps#BILINEAR}: one node in the trace, autocast from its
 * declaration) and {@code binary_cross_entropy} as a declared composite with its gradients as declared ops
 * ({@link LossOps#BINARY_CROSS_ENTROPY}): the trace, node names, the backward ops against autograd, gradcheck of both
 * orders in float64, autocast from the declarations.
 */
@ExtendWith(ScopePerTest.class)
class BilinearAndBceOpsTest {
    private final Generator gen = new Generator(31);

    private Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen).to(dtype);
    }

    /** Probabilities away from 0 and 1, where finite differences of the clamped logarithms are smooth. */
    private Tensor probabilities(long... shape) {
        return Torch.rand(shape, DType.FLOAT64, Device.cpu(), gen).mul(0.8).add(0.1);
    }

    @Test
    void bilinearIsOneNodeInTheTrace() {
        Tensor x1 = randn(DType.FLOAT32, 3, 4), x2 = randn(DType.FLOAT32, 3, 5), w = randn(DType.FLOAT32, 2, 4, 5), b = randn(DType.FLOAT32, 2);
        assertEquals(List.of("bilinear"), traced(() -> F.bilinear(x1, x2, w, b)));
        Tensor direct = Dispatcher.call(FrontEndOps.BILINEAR, new Tensor[] {x1, x2, w, b});
        assertTrue(same(direct, F.bilinear(x1, x2, w, b)));
    }

    @Test
    void bilinearGradcheckBothOrdersInFloat64() {
        Tensor x1 = randn(DType.FLOAT64, 2, 3, 4).requiresGrad_(true), x2 = randn(DType.FLOAT64, 2, 3, 2).requiresGrad_(true);
        Tensor w = randn(DType.FLOAT64, 3, 4, 2).requiresGrad_(true), b = randn(DType.FLOAT64, 3).requiresGrad_(true);
        Function<Tensor[], Tensor> fn = a -> F.bilinear(a[0], a[1], a[2], a[3]);
        assertTrue(Gradcheck.check(fn, x1, x2, w, b), "first order");
        assertTrue(Gradcheck.check(OpTestSupport.firstGradient(fn), x1, x2, w, b), "second order");
    }

    @Test
    void bilinearAutocastFromTheDeclaration() {
        assertEquals(CastPolicy.PROMOTE, FrontEndOps.BILINEAR.autocast(Device.Type.CUDA));
        assertEquals(null, FrontEndOps.BILINEAR.autocast(Device.Type.CPU));
        Tensor x1 = randn(DType.FLOAT32, 3, 4), x2 = randn(DType.FLOAT32, 3, 5), w = randn(DType.FLOAT32, 2, 4, 5);
        try (Autocast ac = Autocast.enable(Device.cpu())) {
            assertEquals(DType.FLOAT32, F.bilinear(x1, x2, w, null).dtype(), "untouched by CPU autocast");
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.bilinear(x1, x2, randn(DType.FLOAT32, 2, 4), null));
        assertTrue(e.getMessage().startsWith("bilinear: expected a 3-D weight"), e.getMessage());
    }

    @Test
    void bceNodeNamesAndTheBackwardOps() {
        for (int reduction : new int[] {LossOps.NONE, LossOps.MEAN, LossOps.SUM}) {
            Tensor p = probabilities(4, 5).requiresGrad_(true), t = probabilities(4, 5).requiresGrad_(true), w = probabilities(5);
            F.Reduction red = reduction == LossOps.NONE ? F.Reduction.NONE : reduction == LossOps.MEAN ? F.Reduction.MEAN : F.Reduction.SUM;
            Tensor loss = F.binaryCrossEntropy(p, t, w, red);
            assertEquals("BinaryCrossEntropyBackward0", loss.gradFn().name());
            Tensor g = reduction == LossOps.NONE ? randn(DType.FLOAT64, 4, 5) : randn(DType.FLOAT64);
            Tensor[] grads = Autograd.grad(new Tensor[] {loss}, new Tensor[] {p, t}, new Tensor[] {g}, false, false, false);
            Tensor dp = Dispatcher.call(LossOps.BINARY_CROSS_ENTROPY_BACKWARD, new Tensor[] {g, p, t, w}, reduction);
            Tensor dt = Dispatcher.call(LossOps.BINARY_CROSS_ENTROPY_TARGET_BACKWARD, new Tensor[] {g, p, t, w}, reduction);
            assertTrue(same(grads[0], dp), "reduction " + reduction + ": input gradient");
            assertTrue(same(grads[1], dt), "reduction " + reduction + ": target gradient");
            // the composition without its derivative: the same gradients away from 0 and 1
            Tensor[] parts = Autograd.grad(new Tensor[] {composed(p, t, w, red)}, new Tensor[] {p, t}, new Tensor[] {g}, false, false, false);
            assertCloseRelative(parts[0], dp, 1e-12, "reduction " + reduction + ": input gradient against the parts'");
            assertCloseRelative(parts[1], dt, 1e-12, "reduction " + reduction + ": target gradient against the parts'");
        }
    }

    /** Same shape, dtype and bits. */
    private static boolean same(Tensor a, Tensor b) {
        return java.util.Arrays.equals(a.shape(), b.shape()) && a.dtype() == b.dtype()
                && java.util.Arrays.equals(a.to(DType.FLOAT64).reshape(-1).toDoubleArray(), b.to(DType.FLOAT64).reshape(-1).toDoubleArray());
    }

    private static Tensor composed(Tensor p, Tensor t, Tensor w, F.Reduction red) {
        Tensor loss = t.sub(1.0).mul(p.neg().log1p()).sub(t.mul(p.log())).mul(w);
        return red == F.Reduction.NONE ? loss : red == F.Reduction.MEAN ? loss.mean() : loss.sum();
    }

    /** PyTorch's gradient where the input is exactly 0 or 1: finite (the clamped logarithms' own would be NaN). */
    @Test
    void bceGradientIsFiniteAtZeroAndOne() {
        Tensor p = Torch.tensor(new double[] {0, 1, 0.5}).requiresGrad_(true), t = Torch.tensor(new double[] {0.3, 0.6, 1});
        Tensor g = Autograd.grad(new Tensor[] {F.binaryCrossEntropy(p, t, F.Reduction.SUM)}, new Tensor[] {p})[0];
        double[] v = g.toDoubleArray();
        assertEquals(-0.3 / 1e-12f, v[0], 1e-6 * 0.3 / 1e-12f);
        assertEquals(0.4 / 1e-12f, v[1], 1e-6 * 0.4 / 1e-12f);
        assertEquals(-2, v[2], 1e-12);
    }

    @Test
    void bceGradcheckBothOrdersInFloat64() {
        Tensor p = probabilities(3, 4).requiresGrad_(true), t = probabilities(3, 4).requiresGrad_(true), w = probabilities(4);
        for (F.Reduction red : new F.Reduction[] {F.Reduction.NONE, F.Reduction.MEAN, F.Reduction.SUM}) {
            Function<Tensor[], Tensor> fn = a -> F.binaryCrossEntropy(a[0], a[1], w, red);
            assertTrue(Gradcheck.check(fn, p, t), red + ": first order");
            assertTrue(Gradcheck.check(OpTestSupport.firstGradient(fn), p, t), red + ": second order");
        }
    }

    @Test
    void bceAutocastFromTheDeclaration() {
        assertEquals(CastPolicy.BANNED, LossOps.BINARY_CROSS_ENTROPY.autocast(Device.Type.CUDA));
        assertEquals(CastPolicy.FP32, LossOps.BINARY_CROSS_ENTROPY.autocast(Device.Type.CPU));
        Tensor p = probabilities(3).to(DType.BFLOAT16), t = probabilities(3).to(DType.BFLOAT16);
        try (Autocast ac = Autocast.enable(Device.cpu())) {
            assertEquals(DType.FLOAT32, F.binaryCrossEntropy(p, t).dtype());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> F.binaryCrossEntropy(Torch.tensor(new double[] {1.5}), Torch.tensor(new double[] {1})));
        assertTrue(e.getMessage().contains("all elements of input should be between 0 and 1"), e.getMessage());
    }
}
