package org.jtorch.jit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * A pointwise chain feeding a softmax or log-softmax over the last dimension is computed and normalised a block of
 * rows at a time (on the CPU; other backends run the group, then the softmax): compiled equals eager, forward and
 * backward, with broadcast operands, rows longer than a block, and operands whose leading dimensions do not merge.
 * The simulator pass runs this class on cuda:0.
 */
class JitSoftmaxFusionTest {
    private static final org.jtorch.Device DEVICE = org.jtorch.testing.Fixtures.device();

    private static Tensor randn(long... shape) {
        return Torch.randn(shape).to(DEVICE);
    }

    private static void assertClose(Tensor expected, Tensor actual, float tolerance) {
        assertArrayEquals(expected.shape(), actual.shape());
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        for (int i = 0; i < e.length; i++) {
            float tol = tolerance * Math.max(1, Math.abs(e[i]));
            assertTrue(Math.abs(e[i] - a[i]) <= tol || (Float.isNaN(e[i]) && Float.isNaN(a[i])),
                    "at " + i + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    /** {@code f(x)}, then the gradients of a weighted sum of it (a softmax's rows sum to 1: their gradient is zero). */
    private static Tensor[] valueAndGradients(TensorFunction f, Tensor x, Tensor[] leaves) {
        for (Tensor t : leaves) if (t.grad() != null) t.grad().zero_();
        Tensor out = f.apply(x);
        Torch.manualSeed(99);
        out.mul(Torch.randn(out.shape()).to(DEVICE)).sum().backward();
        Tensor[] g = new Tensor[leaves.length + 1];
        g[0] = out.detach();
        for (int i = 0; i < leaves.length; i++) g[i + 1] = leaves[i].grad().clone();
        return g;
    }

    /**
     * {@code f} compiled on {@code x} (fused into the softmax on the CPU where {@code fusedOnCpu}): values and gradients
     * equal eager's. Each signature is called twice: its first call is the trace, which runs eagerly.
     */
    private static void check(TensorFunction f, Tensor x, Tensor[] leaves, boolean fusedOnCpu) {
        String plan = Jit.explain(f, x);
        if (DEVICE.isCpu()) assertTrue(plan.contains("softmax of rows") == fusedOnCpu, plan);
        TensorFunction compiled = Jit.trace(f, x);
        try (var g = Grad.noGrad()) {
            compiled.apply(x);
            assertClose(f.apply(x), compiled.apply(x), 2e-6f);
        }
        Tensor[] eager = valueAndGradients(f, x, leaves);
        valueAndGradients(compiled, x, leaves);
        Tensor[] fused = valueAndGradients(compiled, x, leaves);
        assertClose(eager[0], fused[0], 2e-6f);
        for (int i = 1; i < eager.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }

    @Test
    void aScaledMaskedScoreFeedsTheSoftmaxWithoutAnIntermediate() {
        Torch.manualSeed(21);
        Tensor bias = randn(37).requiresGrad_(true);
        Tensor x = randn(6, 9, 37).requiresGrad_(true);
        check(in -> in[0].mul(0.125).add(bias).tanh().softmax(-1), x, new Tensor[] {x, bias}, true);
        check(in -> F.logSoftmax(in[0].mul(2.0).sub(bias), 2), x, new Tensor[] {x, bias}, true);
    }

    @Test
    void rowsLongerThanABlockAndSingleOps() {
        Torch.manualSeed(22);
        Tensor x = randn(3, 20000).requiresGrad_(true);
        check(in -> in[0].mul(3.0).logSoftmax(1), x, new Tensor[] {x}, true);
        Tensor y = randn(1, 5).requiresGrad_(true);
        check(in -> in[0].exp().softmax(1), y, new Tensor[] {y}, true);
    }

    @Test
    void unmergedBroadcastsAndOtherDimsStayCorrect() {
        Torch.manualSeed(23);
        Tensor perRow = randn(4, 1, 7).requiresGrad_(true);
        Tensor x = randn(4, 5, 7).requiresGrad_(true);
        // [4, 1, 7] broadcast to [4, 5, 7] has strides [7, 0, 1]: its rows are not one stride apart.
        check(in -> in[0].add(perRow).relu().softmax(-1), x, new Tensor[] {x, perRow}, true);
        // A softmax over another dimension is not fused.
        check(in -> in[0].mul(2.0).add(1.0).softmax(1), x, new Tensor[] {x}, false);
    }
}
