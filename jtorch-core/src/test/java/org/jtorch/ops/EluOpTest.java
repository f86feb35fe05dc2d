package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.PointwiseOps;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * ELU as a declared pointwise op ({@link PointwiseOps#ELU}) with its one-op gradient ({@link PointwiseOps#ELU_BACKWARD}), as
 * PyTorch's {@code elu} and {@code elu_backward}: one node each in the trace and the graph, the values of the formula,
 * PyTorch's gradient where the input is positive (the incoming gradient, also where {@code exp(x)} overflows), and
 * gradients of both orders against finite differences in float64. Values against PyTorch 1.13 are in
 * {@code nn.NnConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class EluOpTest {
    private static final Generator GEN = new Generator(43);

    @Test
    void eluAndItsGradientAreOneNodeEach() {
        Tensor x = Torch.randn(new long[] {6}, DType.FLOAT32, Device.cpu(), GEN).requiresGrad_(true);
        Tensor[] y = new Tensor[1];
        assertEquals(List.of("elu"), traced(() -> y[0] = F.elu(x, 0.5)));
        assertEquals("EluBackward0", y[0].gradFn().name());
        Tensor g = Autograd.grad(new Tensor[] {y[0].sum()}, new Tensor[] {x}, null, true, true, false)[0];
        assertEquals("EluBackwardBackward0", g.gradFn().name());
    }

    @Test
    void valuesAndGradientsFollowPyTorchsFormulas() {
        float[] xs = {-3f, -0.5f, -0f, 0f, 0.25f, 2f, 100f, Float.NaN};
        double alpha = 0.7;
        Tensor x = Torch.tensor(xs).requiresGrad_(true);
        Tensor y = F.elu(x, alpha);
        Tensor g = Autograd.grad(new Tensor[] {y.mul(3).sum()}, new Tensor[] {x})[0];
        float[] expectedY = new float[xs.length], expectedG = new float[xs.length];
        for (int i = 0; i < xs.length; i++) {
            float v = xs[i];
            expectedY[i] = v > 0 ? v : (float) Math.expm1(v) * (float) alpha;
            // elu_backward: the gradient where x > 0; grad * alpha * exp(x) (written expm1(x) + 1) elsewhere
            expectedG[i] = v > 0 ? 3f : 3f * (float) alpha * ((float) Math.expm1(v) + 1f);
        }
        assertArrayEquals(expectedY, y.toFloatArray(), 1e-6f);
        assertArrayEquals(expectedG, g.toFloatArray(), 1e-6f);
        assertEquals(3f, g.toFloatArray()[6], "x = 100: exp(x) overflows float32, the gradient is the incoming one");
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferences() {
        for (double alpha : new double[] {1.0, 0.4, 2.5}) {
            Function<Tensor[], Tensor> elu = a -> F.elu(a[0], alpha);
            // values away from the kink at 0, where finite differences straddle two branches
            Tensor x = Torch.tensor(new double[] {-2.5, -1, -0.3, 0.2, 0.9, 3}).requiresGrad_(true);
            assertTrue(Gradcheck.check(elu, x));
            assertTrue(Gradcheck.check(firstGradient(elu), x.detach().requiresGrad_(true)));
        }
    }
}
