package org.jtorch.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
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

    @Test
    void lenet5CompilesWholeAndMatchesEager() {
        Torch.manualSeed(2);
        check(new LeNet5(), Torch.randn(3, 1, 28, 28));
    }
}
