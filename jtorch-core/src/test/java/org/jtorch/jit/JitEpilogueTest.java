package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
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
    /** {@code f} compiled on {@code x}: its plan mentions {@code planned}, and it matches eager. */
    private static void checkCompiled(TensorFunction f, Tensor x, Tensor[] leaves, String planned, float tolerance) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains(planned), plan);
        assertCompiledMatchesEager(f, x, leaves, tolerance);
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
            // On the CPU the GELU's gradient fills most of C2's inlining budget (C2NodeBudget): the ops after it run
            // in a kernel of their own there.
            checkCompiled(f, x, new Tensor[] {x, w, b, r}, DEVICE.isCpu() ? "with an epilogue of" : "with an epilogue of 4 ops", 2e-6f);
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
    void aMatmulByAMatrixTakesItsBiasAndGeluAsAnEpilogue() {
        Torch.manualSeed(16);
        Tensor w = randn(40, 56).requiresGrad_(true);
        Tensor b = randn(56).requiresGrad_(true);
        Tensor x = randn(3, 7, 40).requiresGrad_(true);
        checkCompiled(in -> in[0].matmul(w).add(b).gelu(), x, new Tensor[] {x, w, b}, "matmul (%0) with an epilogue of 2 ops", 2e-6f);
        // A matrix times a vector is not a GEMM with an epilogue.
        Tensor v = randn(40).requiresGrad_(true);
        String plan = Jit.explain(in -> in[0].matmul(v).relu().add(1.0), x);
        assertTrue(!plan.contains("epilogue"), plan);
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

    /**
     * One ReLU or tanh-GELU of a linear layer: on CUDA cuBLASLt's RELU_BIAS / GELU_BIAS epilogues (GELU_AUX_BIAS with
     * autograd, where the row length is a multiple of 8; the generated epilogue otherwise), on the CPU the generated
     * one; compiled equals eager either way, with and without a bias, forward and backward.
     */
    @Test
    void aLinearLayersReluOrTanhGeluMatchesEager() {
        Torch.manualSeed(17);
        for (int features : new int[] {64, 60, 1}) {
            Tensor w = randn(features, 24).mul(0.3).requiresGrad_(true);
            Tensor b = randn(features).requiresGrad_(true);
            Tensor x = randn(2, 9, 24).requiresGrad_(true);
            checkCompiled(in -> F.linear(in[0], w, b).relu(), x, new Tensor[] {x, w, b}, "with an epilogue of 1 op", 1e-6f);
            checkCompiled(in -> F.gelu(F.linear(in[0], w, b), "tanh"), x, new Tensor[] {x, w, b}, "with an epilogue of 1 op", 2e-6f);
            checkCompiled(in -> F.gelu(F.linear(in[0], w, null), "tanh"), x, new Tensor[] {x, w}, "with an epilogue of 1 op", 2e-6f);
            // The exact GELU is not cuBLASLt's: it stays a generated epilogue, and equal.
            checkCompiled(in -> F.linear(in[0], w, b).gelu(), x, new Tensor[] {x, w, b}, "with an epilogue of 1 op", 2e-6f);
        }
    }

    /**
     * With autograd, a linear layer's lone ReLU is written into the product (its gradient reads only the sign, which
     * the output keeps): the call holds one product-sized block beside its inputs, not the product and the output,
     * and the gradients still match eager.
     */
    @Test
    void withAutogradALinearLayersReluStoresOneTensor() {
        Torch.manualSeed(18);
        Tensor w = randn(256, 64).mul(0.2).requiresGrad_(true);
        Tensor b = randn(256).requiresGrad_(true);
        Tensor x = randn(512, 64).requiresGrad_(true);
        TensorFunction f = in -> F.linear(in[0], w, b).relu();
        checkCompiled(f, x, new Tensor[] {x, w, b}, "with an epilogue of 1 op", 1e-6f);
        if (!DEVICE.isCpu()) return;
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x).close();
        Tensor y = JitChecks.assertPeakUnderTwoResults(() -> compiled.apply(x), 512 * 256 * 4);
        y.sum().backward();
        y.close();
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
