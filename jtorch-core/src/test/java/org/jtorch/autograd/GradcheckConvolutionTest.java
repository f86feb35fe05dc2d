package org.jtorch.autograd;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Finite-difference checks (float64) of the convolution family's backward formulas (input, weight and
 * bias gradients), and of their own gradients (double backward).
 */
class GradcheckConvolutionTest {

    private static Tensor rand(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(java.util.Arrays.hashCode(shape))).requiresGrad_();
    }

    private static void check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        assertTrue(Gradcheck.check(fn, inputs));
    }

    private static int[] a(int... v) {
        return v;
    }

    @Test
    void conv2dStridePaddingDilation() {
        check(t -> F.conv2d(t[0], t[1], t[2], a(2, 1), a(1, 0), a(1, 2), 1), rand(2, 3, 6, 5), rand(4, 3, 3, 2), rand(4));
    }

    @Test
    void conv2dGroupsAndDepthwise() {
        check(t -> F.conv2d(t[0], t[1], t[2], a(1), a(1), a(1), 2), rand(2, 4, 5, 5), rand(6, 2, 3, 3), rand(6));
        check(t -> F.conv2d(t[0], t[1], null, a(2), a(1), a(1), 3), rand(1, 3, 6, 6), rand(3, 1, 3, 3));
    }

    @Test
    void conv2dSamePaddingWithEvenKernel() {
        check(t -> F.conv2d(t[0], t[1], t[2], a(1), "same", a(1), 1), rand(1, 2, 5, 4), rand(3, 2, 2, 4), rand(3));
    }

    @Test
    void conv2dPointwiseAndUnbatched() {
        check(t -> F.conv2d(t[0], t[1], t[2]), rand(2, 3, 3, 4), rand(5, 3, 1, 1), rand(5));
        check(t -> F.conv2d(t[0], t[1], t[2], 1, 1), rand(3, 4, 4), rand(2, 3, 3, 3), rand(2));
    }

    @Test
    void conv1d() {
        check(t -> F.conv1d(t[0], t[1], t[2], 2, 1, 2, 1), rand(2, 3, 9), rand(4, 3, 3), rand(4));
    }

    @Test
    void convTranspose2dWithOutputPaddingAndGroups() {
        check(t -> F.convTranspose2d(t[0], t[1], t[2], a(2), a(1), a(1), 2, a(1)), rand(2, 4, 3, 3), rand(4, 1, 3, 3), rand(2));
        check(t -> F.convTranspose2d(t[0], t[1], null, a(1, 2), a(0, 1), a(0, 1), 1, a(2, 1)), rand(1, 2, 3, 4), rand(2, 3, 2, 3));
    }

    @Test
    void unfoldAndFold() {
        check(t -> F.unfold(t[0], a(2, 3), a(1, 2), a(1), a(2, 1)), rand(2, 2, 5, 6));
        check(t -> F.fold(t[0], a(4, 5), a(2), a(1), a(1), a(2)), rand(1, 8, 9));
    }

    @Test
    void conv2dDoubleBackward() {
        // Gradients of the input and weight gradients, through createGraph.
        Tensor u = Torch.randn(new long[] {2, 4, 3, 3}, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(5));
        check(t -> {
            Tensor out = F.conv2d(t[0], t[1], null, a(2), a(1), a(1), 1);
            return Autograd.grad(new Tensor[] {out}, new Tensor[] {t[0]}, new Tensor[] {u}, true, true, false)[0];
        }, rand(2, 3, 5, 5), rand(4, 3, 3, 3));
        check(t -> {
            Tensor out = F.conv2d(t[0], t[1], null, a(2), a(1), a(1), 1);
            return Autograd.grad(new Tensor[] {out}, new Tensor[] {t[1]}, new Tensor[] {u}, true, true, false)[0];
        }, rand(2, 3, 5, 5), rand(4, 3, 3, 3));
    }

    @Test
    void convTranspose2dDoubleBackward() {
        Tensor u = Torch.randn(new long[] {1, 2, 5, 5}, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(6));
        check(t -> {
            Tensor out = F.convTranspose2d(t[0], t[1], null, 2, 1);
            Tensor[] g = Autograd.grad(new Tensor[] {out}, new Tensor[] {t[0], t[1]}, new Tensor[] {u}, true, true, false);
            return g[0].sum().add(g[1].mul(g[1]).sum());
        }, rand(1, 3, 3, 3), rand(3, 2, 3, 3));
    }
}
