package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.on;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** Finite-difference checks (float64) of the matmul-family and reduction backward formulas. */
class GradcheckLinalgReductionsTest {

    private static Tensor rand(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(shape.length * 31L + shape[0])).requiresGrad_();
    }

    private static void check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        assertTrue(Gradcheck.check(fn, inputs));
    }

    @Test
    void mmAndBmm() {
        check(t -> t[0].mm(t[1]), rand(3, 4), rand(4, 2));
        check(t -> t[0].bmm(t[1]), rand(2, 3, 4), rand(2, 4, 5));
        check(t -> t[0].t().mm(t[1].t()), rand(4, 3), rand(2, 4));
    }

    @Test
    void matmulBroadcastsAndVectors() {
        check(t -> t[0].matmul(t[1]), rand(2, 3, 4), rand(4, 5));
        check(t -> t[0].matmul(t[1]), rand(4), rand(2, 4, 3));
        check(t -> t[0].matmul(t[1]), rand(3, 4), rand(4));
        check(t -> t[0].dot(t[1]), rand(5), rand(5));
        check(t -> t[0].outer(t[1]), rand(3), rand(2));
        check(t -> t[0].matmul(t[1]), rand(2, 1, 3, 4), rand(5, 4, 2));
    }

    @Test
    void mvAndDotAsDeclaredOpsOnStridedOperands() {
        check(t -> t[0].mv(t[1]), rand(4, 3), rand(3));
        check(t -> t[0].t().mv(t[1].slice(0, 0, 6, 2)), rand(3, 4), rand(6));
        check(t -> t[0].dot(t[1]), rand(7), rand(7));
        check(t -> t[0].select(1, 1).dot(t[1].slice(0, 0, 10, 2)), rand(5, 3), rand(10));
    }

    @Test
    void addmmBaddbmmLinear() {
        check(t -> Torch.addmm(t[0], t[1], t[2], 0.5, 2.0), rand(3), rand(2, 4), rand(4, 3));
        check(t -> Torch.baddbmm(t[0], t[1], t[2], 1.5, -1.0), rand(2, 3, 5), rand(2, 3, 4), rand(2, 4, 5));
        check(t -> Torch.linear(t[0], t[1], t[2]), rand(2, 3, 4), rand(5, 4), rand(5));
        check(t -> Torch.linear(t[0], t[1], null), rand(4), rand(3, 4));
    }

    @Test
    void einsumIsDifferentiableThroughItsParts() {
        check(t -> Torch.einsum("bij,bjk->bik", t[0], t[1]), rand(2, 3, 4), rand(2, 4, 2));
        check(t -> Torch.einsum("ii->i", t[0]), rand(3, 3));
        check(t -> Torch.einsum("ij->j", t[0]), rand(3, 4));
    }

    @Test
    void sumMeanProd() {
        check(t -> t[0].sum(), rand(3, 4));
        check(t -> t[0].sum(new int[] {1}, true), rand(3, 4, 2));
        check(t -> t[0].mean(new int[] {0, 2}, false), rand(3, 4, 2));
        check(t -> t[0].prod(new int[] {1}, false, null), rand(3, 4));
        check(t -> t[0].prod(new int[0], false, null), rand(2, 3));
    }

    @Test
    void prodWithZeros() {
        // One zero in the first row (its gradient is the product of the others), two in the second (all zero).
        Tensor x = on(Torch.tensor(new double[] {0, 2, 3, 4, 0, 0}, 2, 3)).requiresGrad_();
        check(t -> t[0].prod(new int[] {1}, false, null), x);
        check(t -> t[0].prod(new int[0], false, null), on(Torch.tensor(new double[] {1.5, 0, 2, -3})).requiresGrad_());
    }

    @Test
    void extremaVarStdNorm() {
        check(t -> t[0].amax(1), rand(3, 4));
        check(t -> t[0].max(1).values(), rand(3, 4));
        check(t -> t[0].min(0).values(), rand(3, 4));
        check(t -> t[0].var(new int[] {1}, 1, false), rand(3, 4));
        check(t -> t[0].std(new int[] {0}, 0, true), rand(5, 2));
        check(t -> t[0].norm(), rand(3, 4));
        check(t -> t[0].norm(1, new int[] {1}, false), rand(3, 4));
        check(t -> t[0].norm(3, new int[] {0}, true), rand(3, 4));
        check(t -> t[0].norm(Double.POSITIVE_INFINITY, new int[] {1}, false), rand(3, 4));
    }

    @Test
    void logsumexpSoftmaxScans() {
        check(t -> t[0].logsumexp(new int[] {1}, false), rand(3, 4));
        check(t -> t[0].softmax(1), rand(3, 4));
        check(t -> t[0].logSoftmax(0), rand(3, 4));
        check(t -> t[0].cumsum(1), rand(3, 4));
        check(t -> t[0].cumprod(0), rand(4, 3));
    }

    @Test
    void cumprodWithZeros() {
        Tensor x = on(Torch.tensor(new double[] {1.5, 0, 2, -1, 0.5, 3, 0, 0}, 2, 4)).requiresGrad_();
        check(t -> t[0].cumprod(1), x);
        // a zero in the first place, and a slice without zeros along dim 0
        Tensor y = on(Torch.tensor(new double[] {0, 2, 1.5, -0.5, 3, 0.25, 0, -2, 1}, 3, 3)).requiresGrad_();
        check(t -> t[0].cumprod(0), y);
        check(t -> t[0].cumprod(1), y);
        check(t -> t[0].cumprod(0), on(Torch.tensor(new double[] {0.0})).reshape().requiresGrad_());
        check(t -> t[0].cumsum(0), on(Torch.tensor(new double[] {1.5})).reshape().requiresGrad_());
    }

    /** The scans' derivatives are written with ops: their gradients are differentiable again, zeros included. */
    @Test
    void scansHaveSecondDerivatives() {
        Tensor x = on(Torch.tensor(new double[] {1.5, 0, 2, -1, 0.5, 3, -0.75, 1.25}, 2, 4)).requiresGrad_();
        check(t -> gradOf(t[0], u -> u.cumprod(1)), x);
        check(t -> gradOf(t[0], u -> u.cumsum(1).mul(u)), x);
        check(t -> gradOf(t[0], u -> u.cumprod(0)), rand(3, 2));
    }

    /** max(dim)/min(dim) send the gradient to the selected elements; that backward and its own gradient are each other's. */
    @Test
    void selectingReductionsHaveGradientsOfEveryOrder() {
        check(t -> t[0].max(1, false).values(), rand(3, 4));
        check(t -> t[0].min(0, true).values(), rand(3, 4));
        check(t -> t[0].max(-1, true).values(), rand(2, 3, 4));
        check(t -> gradOf(t[0], u -> u.max(1, false).values().mul(u.max(1, false).values())), rand(3, 4));
        check(t -> gradOf(t[0], u -> u.min(0, true).values().pow(3.0)), rand(3, 4));
        check(t -> t[0].max(0, false).values(), on(Torch.tensor(new double[] {0.5})).reshape().requiresGrad_());
    }

    /** The gradient of {@code fn(x)} weighted by a fixed, non-uniform output gradient, with its own graph. */
    private static Tensor gradOf(Tensor x, Function<Tensor, Tensor> fn) {
        Tensor y = fn.apply(x);
        Tensor w = Torch.arange(0, y.numel(), 1, x.dtype(), x.device()).reshape(y.shape()).add(0.5);
        return Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {w}, true, true, false)[0];
    }
}
