package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.junit.jupiter.api.Test;

/**
 * Convolution epilogues in compiled inference: a convolution (its evaluation batch norm folded into its weight and
 * bias) runs the pointwise chain after it on each block of its output, and the compiled function returns what the
 * eager one returns (float32 tolerance: folding rounds the weights once more). The folded weights follow every change
 * of the parameters and statistics, and a module's train/eval switch retraces.
 */
class JitConvEpilogueTest {
    /** Per-channel statistics and affine parameters far from the identity, so that a wrong fold shows. */
    private record Norm(Tensor mean, Tensor var, Tensor gamma, Tensor beta) {
        static Norm random(long c) {
            return new Norm(randn(c).mul(0.3), Torch.rand(c).add(0.5).to(DEVICE), Torch.rand(c).add(0.5).to(DEVICE), randn(c).mul(0.2));
        }

        Tensor apply(Tensor x) {
            return F.batchNorm(x, mean, var, gamma, beta, false, 0.1, 1e-5);
        }
    }

    /** {@code f} compiled and called twice on {@code x} (the first call traces): the plan holds {@code expected}, values match eager. */
    private static void check(TensorFunction f, Tensor x, String expected) {
        try (var g = Grad.noGrad()) {
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains(expected), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x).close();
            assertClose(f.apply(x), compiled.apply(x), 2e-5f);
        }
    }

    @Test
    void aConvolutionsBatchNormAndReluRunAsOneConvolutionWithAnEpilogue() {
        Torch.manualSeed(31);
        // 3x3 at 28 px (Winograd tiles ending inside rows), stride 2, the 7x7 stem, 1x1, a batch of one and small images.
        long[][] inputs = {{2, 16, 28, 28}, {3, 16, 17, 17}, {1, 3, 32, 32}, {2, 32, 14, 14}, {1, 16, 8, 8}, {4, 16, 4, 4}};
        int[][] convs = {{32, 3, 1, 1}, {32, 3, 2, 1}, {16, 7, 2, 3}, {64, 1, 1, 0}, {16, 3, 1, 1}, {32, 3, 1, 1}};
        for (int i = 0; i < inputs.length; i++) {
            int cout = convs[i][0], k = convs[i][1], stride = convs[i][2], pad = convs[i][3];
            Tensor w = randn(cout, inputs[i][1], k, k).mul(0.2);
            Norm bn = Norm.random(cout);
            check(x -> bn.apply(F.conv2d(x[0], w, null, stride, pad)).relu(), randn(inputs[i]),
                    "with the evaluation batch norm folded into its weight and bias (");
        }
    }

    @Test
    void aResidualBlocksAddAndReluRunInItsSecondConvolutionsEpilogue() {
        Torch.manualSeed(32);
        Tensor w1 = randn(16, 16, 3, 3).mul(0.2);
        Tensor w2 = randn(16, 16, 3, 3).mul(0.2);
        Norm bn1 = Norm.random(16), bn2 = Norm.random(16);
        TensorFunction block = x -> bn2.apply(F.conv2d(bn1.apply(F.conv2d(x[0], w1, null, 1, 1)).relu(), w2, null, 1, 1)).add(x[0]).relu();
        check(block, randn(2, 16, 12, 12), "and an epilogue of 2 ops");
        check(block, randn(1, 16, 32, 32), "and an epilogue of 2 ops");
    }

    /** Without a batch norm: the convolution's own bias, then a chain with a per-channel operand broadcast over the pixels. */
    @Test
    void aConvolutionsBiasAndAChainWithABroadcastOperand() {
        Torch.manualSeed(33);
        Tensor w = randn(32, 16, 3, 3).mul(0.2);
        Tensor b = randn(32);
        Tensor scale = randn(32, 1, 1);
        check(x -> F.conv2d(x[0], w, b, 1, 1).mul(scale).sigmoid(), randn(3, 16, 10, 10), "and an epilogue of 2 ops");
        check(x -> F.conv2d(x[0], w, b, 1, 1).relu(), randn(2, 16, 16, 16), "and an epilogue of 1 op");
    }

    /** A residual read transposed cannot be seen as rows of pixels: the step runs unfused, with the same result. */
    @Test
    void anOperandWhosePixelsAreNotOneStrideApartRunsUnfused() {
        Torch.manualSeed(34);
        Tensor w = randn(16, 16, 3, 3).mul(0.2);
        Norm bn = Norm.random(16);
        check(x -> bn.apply(F.conv2d(x[0], w, null, 1, 1)).add(x[0].transpose(2, 3)).relu(), randn(2, 16, 9, 9), "and an epilogue of 2 ops");
    }

    private static Sequential convBnRelu(long seed) {
        Torch.manualSeed(seed);
        Sequential m = new Sequential(new Conv2d(8, 16, 3, Conv2d.options().padding(1)), new BatchNorm2d(16), new ReLU(),
                new Conv2d(16, 16, 3, Conv2d.options().padding(1).stride(2)), new BatchNorm2d(16));
        m.to(DEVICE);
        return m;
    }

    /** One training step of {@code model} on {@code x}: a forward in training mode (statistics move) and an SGD step. */
    private static void trainStep(Module model, Tensor x) {
        model.train();
        SGD sgd = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9));
        Tensor out = model.forward(x);
        out.mul(out).mean().backward();
        sgd.step();
        sgd.zeroGrad();
    }

    @Test
    void foldedWeightsFollowAnOptimizerStepAndNewStatistics() {
        Sequential model = convBnRelu(35);
        Tensor x = randn(4, 8, 10, 10);
        TensorFunction compiled = Jit.compile(model);
        for (int round = 0; round < 3; round++) {
            model.eval();
            try (var g = Grad.noGrad()) {
                compiled.apply(x).close();
                assertClose(model.forward(x), compiled.apply(x), 2e-5f);
            }
            trainStep(model, x.mul(1 + round));
        }
        // A write into the running statistics alone is seen too.
        model.eval();
        try (var g = Grad.noGrad()) {
            ((BatchNorm2d) model.get(1)).runningVar().mul_(3.0);
            assertClose(model.forward(x), compiled.apply(x), 2e-5f);
        }
    }

    /**
     * The folded pair is PyTorch's {@code fuse_conv_bn_eval} formula, kept while nothing changes, and folded again after
     * an in-place write to any of the six tensors.
     */
    @Test
    void foldedWeightsAreKeptUntilAVersionChanges() {
        Torch.manualSeed(37);
        Tensor w = randn(4, 3, 3, 3), b = randn(4), mean = randn(4), var = Torch.rand(4).add(0.5).to(DEVICE);
        Tensor gamma = randn(4), beta = randn(4);
        BatchNormFolding folding = new BatchNormFolding(1e-5);
        try (var g = Grad.noGrad()) {
            for (int round = 0; round < 3; round++) {
                Tensor[] f = folding.folded(w, b, mean, var, gamma, beta);
                Tensor s = gamma.div(var.add(1e-5).sqrt());
                assertClose(w.mul(s.view(4, 1, 1, 1)), f[0], 1e-6f);
                assertClose(b.sub(mean).mul(s).add(beta), f[1], 1e-6f);
                folding.folded(w, b, mean, var, gamma, beta);
                assertEquals(round + 1, folding.folds());
                (round == 0 ? w : var).mul_(1.5);
            }
            // Another tensor in a slot (a value computed per call) folds again too.
            folding.folded(w, b.clone(), mean, var, gamma, beta);
            assertEquals(4, folding.folds());
        }
    }

    /** A module compiled in evaluation and then switched to training (and back) traces again each way, with autograd off too. */
    @Test
    void aModulesTrainEvalSwitchRetraces() {
        Sequential eager = convBnRelu(36);
        Sequential traced = convBnRelu(36);
        TensorFunction compiled = Jit.compile(traced);
        Tensor x = randn(4, 8, 10, 10);
        try (var g = Grad.noGrad()) {
            for (boolean training : new boolean[] {false, true, false, true}) {
                eager.train(training);
                traced.train(training);
                assertClose(eager.forward(x), compiled.apply(x), 2e-5f);
                assertClose(eager.forward(x), compiled.apply(x), 2e-5f);
                BatchNorm2d e = (BatchNorm2d) eager.get(1), t = (BatchNorm2d) traced.get(1);
                assertClose(e.runningMean(), t.runningMean(), 1e-6f);
                assertClose(e.runningVar(), t.runningVar(), 1e-6f);
            }
            traced.eval();
            assertFalse(Jit.explain(in -> traced.forward(in[0]), x).contains("batch_norm (eager)"));
            assertEquals(2, Jit.explain(in -> traced.forward(in[0]), x).split("batch norm folded", -1).length - 1);
        }
    }
}
