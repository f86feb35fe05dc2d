package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * Layer norm and cross entropy are fused registry ops ({@code native_layer_norm}, {@code cross_entropy_fused}): the
 * tracer records each as one node (not its decomposition into means, variances, log-softmax and gathers), the compiled
 * step replays their fused kernels, and compiled equals eager, values and gradients, in a char-GPT-style block
 * (pre-norm MLP with a residual, the final norm, the head and the loss) on rows and on {@code [batch, time, features]}.
 * On CUDA, where cross entropy is composed, layer norm alone is checked to be one node.
 */
class JitFusedRegistryOpsTest {
    private static int count(String text, String what) {
        return text.split(java.util.regex.Pattern.quote(what), -1).length - 1;
    }

    @Test
    void layerNormAndCrossEntropyAreOneTracedOpEachInAGptStyleBlock() {
        Torch.manualSeed(41);
        int d = 32;
        int vocab = 11;
        Tensor g1 = randn(d).requiresGrad_(true);
        Tensor b1 = randn(d).requiresGrad_(true);
        Tensor g2 = randn(d).requiresGrad_(true);
        Tensor b2 = randn(d).requiresGrad_(true);
        Tensor w1 = randn(4 * d, d).mul(0.2).requiresGrad_(true);
        Tensor c1 = randn(4 * d).requiresGrad_(true);
        Tensor w2 = randn(d, 4 * d).mul(0.1).requiresGrad_(true);
        Tensor head = randn(vocab, d).mul(0.2).requiresGrad_(true);
        for (long[] shape : new long[][] {{24, d}, {3, 8, d}}) {
            Tensor targets = Torch.randint(0, vocab, 24).to(JitChecks.DEVICE);
            Tensor x = randn(shape).requiresGrad_(true);
            TensorFunction f = in -> {
                Tensor h = F.layerNorm(in[0], new long[] {d}, g1, b1, 1e-5);
                Tensor y = in[0].add(F.linear(F.gelu(F.linear(h, w1, c1), "tanh"), w2, null));
                Tensor logits = F.linear(F.layerNorm(y, new long[] {d}, g2, b2, 1e-5), head, null);
                return F.crossEntropy(logits.reshape(24, vocab), targets);
            };
            String plan = Jit.explain(f, x);
            // Every backend runs layer norm's fused kernels (CUDA's since layernorm.cu): the trace sees one op a norm.
            assertEquals(2, count(plan, "= native_layer_norm("), plan);
            assertTrue(!plan.contains("= var") && !plan.contains("= mean"), plan);
            // CUDA has no fused cross entropy: it is composed (log_softmax, gather, ...) there, and the trace breaks at a
            // tensor the composition makes, so the call runs eagerly; still equal below.
            if (JitChecks.DEVICE.isCpu()) {
                assertEquals(1, count(plan, "= cross_entropy_fused("), plan);
                assertTrue(!plan.contains("log_softmax") && plan.contains("= linear (%1) with an epilogue of 1 op over (%1)"), plan);
            }
            assertCompiledMatchesEager(f, x, new Tensor[] {x, g1, b1, g2, b2, w1, c1, w2, head}, 1e-5f);
        }
    }
}
