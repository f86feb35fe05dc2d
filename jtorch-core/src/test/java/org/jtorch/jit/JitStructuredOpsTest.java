package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** The structured ops (mm, bmm, addmm, baddbmm, linear) are traced as one op each and replayed through the dispatcher. */
class JitStructuredOpsTest {
    @Test
    void productsCalledDirectlyAreTracedAndReplayed() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(8);
            Tensor w = randn(6, 5);
            Tensor c = randn(3);
            Tensor p55 = randn(2, 5, 5);
            Tensor p53 = randn(5, 3);
            TensorFunction f = in -> {
                Tensor h = in[0].mm(w).relu();                                   // [4, 5]
                Tensor b = h.unsqueeze(0).expand(2, 4, 5).contiguous();
                Tensor bb = Torch.baddbmm(b, b, p55, 0.5, 2.0);
                Tensor s = Torch.addmm(c, bb.sum(new int[] {0}, false), p53, 1.0, 0.25);
                return Torch.bmm(s.unsqueeze(0), s.t().unsqueeze(0)).squeeze(0);
            };
            Tensor x = randn(4, 6);
            String plan = Jit.explain(f, x);
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(4, 6);
            try (var g = Grad.noGrad()) {
                assertClose(f.apply(y), compiled.apply(y), 1e-5f);
            }
        }
    }
}
