package org.jtorch.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.nn.BatchNorm;
import org.jtorch.nn.Module;
import org.junit.jupiter.api.Test;

/**
 * The zoo's CIFAR ResNet-20 and LeNet-5 compile whole (every op seen by the trace: convolutions, batch norm,
 * pooling, the shortcut's slices, zeros and cat, the linear head), and the compiled model returns what the eager
 * one returns, in evaluation and in training, with the same gradients.
 */
class CompiledModelsTest {
    private static void assertClose(Tensor expected, Tensor actual, float tolerance) {
        assertArrayEquals(expected.shape(), actual.shape());
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        for (int i = 0; i < e.length; i++) {
            assertTrue(Math.abs(e[i] - a[i]) <= tolerance * Math.max(1, Math.abs(e[i])), "at " + i + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    private static void check(Module model, Tensor x) {
        TensorFunction compiled = Jit.compile(model);
        String plan = Jit.explain(in -> model.forward(in[0]), x);
        assertFalse(plan.contains("runs eagerly"), plan);
        model.eval();
        try (var g = Grad.noGrad()) {
            compiled.apply(x).close();
            assertClose(model.forward(x), compiled.apply(x), 1e-6f);
        }
        model.train();
        List<Tensor> params = model.parameters();
        Tensor[] eager = gradients(model::forward, x, params);
        compiled.apply(x).close();
        Tensor[] fused = gradients(compiled::apply, x, params);
        for (int i = 0; i < eager.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }

    private static Tensor[] gradients(java.util.function.Function<Tensor, Tensor> f, Tensor x, List<Tensor> params) {
        for (Tensor p : params) if (p.grad() != null) p.grad().zero_();
        f.apply(x).sum().backward();
        Tensor[] g = new Tensor[params.size()];
        for (int i = 0; i < g.length; i++) g[i] = params.get(i).grad().clone();
        return g;
    }

    @Test
    void resnet20CompilesWholeAndMatchesEager() {
        Torch.manualSeed(1);
        check(CifarResNet.resnet20(10), Torch.randn(2, 3, 32, 32));
    }

    /** Running statistics and affine parameters far from the identity, so that a wrong fold shows. */
    private static void randomiseBatchNorms(Module model) {
        try (var g = Grad.noGrad()) {
            for (Module m : model.modules()) {
                if (!(m instanceof BatchNorm bn)) continue;
                long c = bn.runningMean().size(0);
                bn.runningMean().copy_(Torch.randn(c).mul(0.3));
                bn.runningVar().copy_(Torch.rand(c).add(0.5));
                bn.weight().copy_(Torch.rand(c).add(0.5));
                bn.bias().copy_(Torch.randn(c).mul(0.2));
            }
        }
    }

    /**
     * In evaluation, without autograd, each convolution followed by its batch norm runs as one convolution with the
     * batch norm folded into its weight and bias, and the ReLU (or add and ReLU) after it as its epilogue; with
     * statistics and affine parameters far from the identity the compiled model still returns what the eager one returns.
     */
    @Test
    void resnet20InEvaluationFoldsEachBatchNormIntoItsConvolution() {
        Torch.manualSeed(3);
        Module model = CifarResNet.resnet20(10);
        randomiseBatchNorms(model);
        try (var g = Grad.noGrad()) {
            model.eval();
            Tensor x = Torch.randn(2, 3, 32, 32);
            String plan = Jit.explain(in -> model.forward(in[0]), x);
            assertEquals(19, plan.split("batch norm folded", -1).length - 1, plan);
            // The last block's add and ReLU are fused into the global average pool's sum instead.
            assertEquals(18, plan.split("and an epilogue of", -1).length - 1, plan);
            assertFalse(plan.contains("batch_norm (eager)"), plan);
            TensorFunction compiled = Jit.compile(model);
            assertClose(model.forward(x), compiled.apply(x), 2e-5f);
            // Statistics changed after compiling are seen: their versions changed, so the weights are folded again.
            for (Module m : model.modules()) if (m instanceof BatchNorm bn) bn.runningVar().mul_(2.0);
            assertClose(model.forward(x), compiled.apply(x), 2e-5f);
        }
    }

    /**
     * ResNet-18's and ResNet-50's convolutions in evaluation (the 7x7 stem, 1x1 bottlenecks and downsamples, 3x3 at
     * stride 1 and 2, small images at the last stages) with their batch norms folded and their epilogues, in a batch of
     * two and of one: the compiled model returns what the eager one returns.
     */
    @Test
    void resnet18And50InEvaluationMatchEagerWithFoldedBatchNormsAndEpilogues() {
        Torch.manualSeed(4);
        for (Module model : new Module[] {ResNet.resnet18(10, 3), ResNet.resnet50(10, 3)}) {
            randomiseBatchNorms(model);
            model.eval();
            TensorFunction compiled = Jit.compile(model);
            try (var g = Grad.noGrad()) {
                for (Tensor x : new Tensor[] {Torch.randn(2, 3, 64, 64), Torch.randn(1, 3, 48, 48)}) {
                    String plan = Jit.explain(in -> model.forward(in[0]), x);
                    assertFalse(plan.contains("batch_norm (eager)"), plan);
                    compiled.apply(x).close();
                    assertClose(model.forward(x), compiled.apply(x), 1e-4f);
                }
            }
        }
    }

    @Test
    void lenet5CompilesWholeAndMatchesEager() {
        Torch.manualSeed(2);
        check(new LeNet5(), Torch.randn(3, 1, 28, 28));
    }
}
