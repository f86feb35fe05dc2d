package org.jtorch.jit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * Pointwise chains fed by a linear layer run as its GEMM's epilogue (on the CPU on each block of the product as the
 * GEMM finishes it; on CUDA right after the product, one fused kernel): compiled equals eager, forward and backward,
 * through the GEMM's paths (short sides, several blocks, k over one cache block), broadcast operands, and operands
 * whose leading dimensions do not merge (those run the layer, then the group). The simulator pass runs this class on
 * cuda:0.
 */
class JitEpilogueTest {
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
            assertTrue(Math.abs(e[i] - a[i]) <= tol, "at " + i + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    /** {@code f(x)}, then the gradients of its sum with respect to {@code leaves}. */
    private static Tensor[] valueAndGradients(TensorFunction f, Tensor x, Tensor[] leaves) {
        for (Tensor t : leaves) if (t.grad() != null) t.grad().zero_();
        Tensor y = f.apply(x);
        y.sum().backward();
        Tensor[] g = new Tensor[leaves.length + 1];
        g[0] = y.detach();
        for (int i = 0; i < leaves.length; i++) g[i + 1] = leaves[i].grad().clone();
        return g;
    }

    /**
     * {@code f} compiled on {@code x}: its plan mentions {@code planned}; in inference (where the epilogue writes into
     * the product) and with autograd (where it writes a second tensor), values and gradients equal eager's. Each
     * signature is called twice: a signature's first call is its trace, which runs eagerly.
     */
    private static void checkCompiled(TensorFunction f, Tensor x, Tensor[] leaves, String planned, float tolerance) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains(planned), plan);
        TensorFunction compiled = Jit.trace(f, x);
        try (var g = Grad.noGrad()) {
            compiled.apply(x);
            assertClose(f.apply(x), compiled.apply(x), tolerance);
        }
        Tensor[] eager = valueAndGradients(f, x, leaves);
        valueAndGradients(compiled, x, leaves);
        Tensor[] fused = valueAndGradients(compiled, x, leaves);
        assertClose(eager[0], fused[0], tolerance);
        for (int i = 1; i < eager.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }

    @Test
    void linearBiasReluRunsAsOneStep() {
        Torch.manualSeed(11);
        Tensor w = randn(64, 48).requiresGrad_(true);
        Tensor b = randn(64).requiresGrad_(true);
        Tensor x = randn(32, 48).requiresGrad_(true);
        TensorFunction f = in -> F.linear(in[0], w, b).relu();
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("1 kernels, 1 fused") && plan.contains("with an epilogue of 1 op"), plan);
        checkCompiled(f, x, new Tensor[] {x, w, b}, "epilogue", 1e-6f);
    }

    @Test
    void chainsWithResidualAndScaleMatchThroughEveryGemmPath() {
        Torch.manualSeed(12);
        // {batch, in, out}: a short k (rows unpacked), a short m, several row and column blocks, k over one cache block.
        int[][] sizes = {{50, 8, 64}, {5, 40, 300}, {300, 60, 70}, {20, 60, 900}, {130, 1100, 96}};
        for (int[] s : sizes) {
            Tensor w = randn(s[2], s[1]).mul(0.1).requiresGrad_(true);
            Tensor b = randn(s[2]).requiresGrad_(true);
            Tensor r = randn(s[0], s[2]).requiresGrad_(true);
            Tensor x = randn(s[0], s[1]).requiresGrad_(true);
            TensorFunction f = in -> F.linear(in[0], w, b).gelu().mul(0.5).add(r).tanh();
            checkCompiled(f, x, new Tensor[] {x, w, b, r}, "with an epilogue of 4 ops", 2e-6f);
        }
    }

    @Test
    void leadingDimensionsMergeOrTheGroupRunsAfterTheLayer() {
        Torch.manualSeed(13);
        Tensor w = randn(24, 16).requiresGrad_(true);
        Tensor x = randn(3, 5, 16).requiresGrad_(true);
        // A bias-free layer on a 3-d input, a per-feature scale (broadcast over both leading dims: they merge).
        Tensor scale = randn(24).requiresGrad_(true);
        checkCompiled(in -> F.linear(in[0], w, null).sigmoid().mul(scale), x, new Tensor[] {x, w, scale}, "epilogue", 1e-6f);
        // Broadcast over the first leading dim only: [3, 5, 24] rows cannot be one stride of it.
        Tensor perRow = randn(5, 24).requiresGrad_(true);
        checkCompiled(in -> F.linear(in[0], w, null).relu().add(perRow), x, new Tensor[] {x, w, perRow}, "epilogue", 1e-6f);
    }

    @Test
    void aLayerUsedTwiceOrReturnedIsNotAnEpilogue() {
        Torch.manualSeed(14);
        Tensor w = randn(8, 8);
        Tensor x = randn(4, 8);
        String twice = Jit.explain(in -> {
            Tensor h = F.linear(in[0], w, null);
            return h.relu().add(h.sum());
        }, x);
        assertTrue(!twice.contains("epilogue") && twice.contains("linear (eager)"), twice);
    }

    @Test
    void anMlpTrainsTheSameCompiled() {
        Torch.manualSeed(15);
        org.jtorch.nn.Sequential mlp = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(30, 40), new org.jtorch.nn.ReLU(),
                new org.jtorch.nn.Linear(40, 40), new org.jtorch.nn.ReLU(), new org.jtorch.nn.Linear(40, 5));
        mlp.to(DEVICE);
        Tensor x = randn(16, 30);
        TensorFunction f = in -> mlp.forward(in[0]);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("3 kernels, 2 fused"), plan);
        Tensor[] params = mlp.parameters().toArray(new Tensor[0]);
        checkCompiled(f, x, params, "epilogue", 1e-6f);
    }
}
