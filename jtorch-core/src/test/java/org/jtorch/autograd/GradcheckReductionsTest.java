package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.on;
import static org.jtorch.autograd.GradcheckSupport.gradOf;
import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.positive;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/**
 * Reduction backward formulas in the cases {@link GradcheckLinalgReductionsTest} leaves out: full
 * reductions, 0-d inputs, negative dims, ties of the extrema (values from PyTorch 1.13's rules), and
 * second derivatives (a gradcheck of the gradient).
 */
class GradcheckReductionsTest {

    @Test
    void fullReductionsAndZeroDimInputs() {
        try (Tensor x = input(3, 4); Tensor s = input(); Tensor p = positive(2, 3)) {
            gradcheck(a -> a[0].mean(), x);
            gradcheck(a -> a[0].sum(), s);
            gradcheck(a -> a[0].mean(), s);
            gradcheck(a -> a[0].prod(), p);
            gradcheck(a -> a[0].max(), x);
            gradcheck(a -> a[0].min(), x);
            gradcheck(a -> a[0].var(), x);
            gradcheck(a -> a[0].std(), x);
            gradcheck(a -> a[0].logsumexp(0, 1), x);
            gradcheck(a -> a[0].amin(0, 1), x);
        }
    }

    @Test
    void negativeDimsWithAndWithoutKeepdim() {
        try (Tensor x = input(2, 3, 4)) {
            gradcheck(a -> a[0].sum(new int[] {-1, 0}, false), x);
            gradcheck(a -> a[0].mean(new int[] {-2}, true), x);
            gradcheck(a -> a[0].amax(new int[] {-1}, true), x);
            gradcheck(a -> a[0].softmax(-1), x);
            gradcheck(a -> a[0].logSoftmax(-2), x);
            gradcheck(a -> a[0].cumsum(-1), x);
        }
    }

    @Test
    void tiesOfTheExtrema() {
        // PyTorch 1.13: amax/amin and the full max()/min() share the gradient evenly among ties;
        // max(dim)/min(dim) give it to the index they return (the first occurrence).
        try (Tensor x = on(Torch.tensor(new double[] {1, 3, 3, 2, 0, 0}, 2, 3)).requiresGrad_()) {
            assertArrayEquals(new double[] {0, 0.5, 0.5, 0, 0, 0}, gradOf(x, t -> t.max()), 1e-12);
            assertArrayEquals(new double[] {0, 0, 0, 0, 0.5, 0.5}, gradOf(x, t -> t.min()), 1e-12);
            assertArrayEquals(new double[] {0, 0.5, 0.5, 1, 0, 0}, gradOf(x, t -> t.amax(1)), 1e-12);
            assertArrayEquals(new double[] {0, 1, 0, 1, 0, 0}, gradOf(x, t -> t.max(1).values()), 1e-12);
            assertArrayEquals(new double[] {1, 0, 0, 0, 1, 0}, gradOf(x, t -> t.min(1).values()), 1e-12);
        }
    }

    @Test
    void secondDerivativesOfSoftmaxLogsumexpAndVar() {
        Function<Function<Tensor, Tensor>, Function<Tensor[], Tensor>> gradientOf = f -> a -> {
            try (Tensor y = f.apply(a[0]); Tensor w = Torch.arange(y.numel()).reshape(y.shape()).to(y.device(), y.dtype());
                 Tensor weighted = y.mul(w); Tensor s = weighted.sum()) {
                return Autograd.grad(new Tensor[] {s}, new Tensor[] {a[0]}, null, true, true, false)[0];
            }
        };
        try (Tensor x = input(2, 3)) {
            assertTrue(Gradcheck.check(gradientOf.apply(t -> t.softmax(1)), x));
            assertTrue(Gradcheck.check(gradientOf.apply(t -> t.logSoftmax(0)), x));
            assertTrue(Gradcheck.check(gradientOf.apply(t -> t.logsumexp(new int[] {1}, true)), x));
            assertTrue(Gradcheck.check(gradientOf.apply(t -> t.var(new int[] {1}, 1, false)), x));
        }
    }
}
