package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/**
 * The structured ops (mm, bmm, addmm, baddbmm, linear) and the declared front ends (conv1d, conv_transpose2d, mv, dot,
 * max_unpool2d) are traced as one op each and replayed through the dispatcher.
 */
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
    @Test
    void declaredFrontEndsAreTracedAsOneOpEach() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(9);
            Tensor w1 = randn(4, 3, 3);
            Tensor wt = randn(4, 2, 2, 2);
            Tensor v = randn(12);
            // Where each value lands (a constant of the graph: the second output of a multi-output op is not traced).
            Tensor places = org.jtorch.ops.Pooling.maxPool2dWithIndices(randn(2, 2, 6, 6), new int[] {2}, null, new int[] {0},
                    new int[] {1}, false).indices();
            TensorFunction f = in -> {
                Tensor c = org.jtorch.ops.Convolution.conv1d(in[0], w1, null, 1, 1, 1, 1);          // [2, 4, 9]
                Tensor t = org.jtorch.ops.Convolution.convTranspose2d(c.reshape(2, 4, 3, 3), wt, null, new int[] {2},
                        new int[] {0}, new int[] {0}, 1, new int[] {1});                                 // [2, 2, 6, 6]
                Tensor pooled = t.reshape(2, 2, 3, 2, 3, 2).amax(new int[] {3, 5}, false);               // [2, 2, 3, 3]
                Tensor u = org.jtorch.ops.Pooling.maxUnpool2d(pooled, places, new int[] {2}, null, new int[] {0}, null);
                Tensor m = u.reshape(12, 12).mv(v);                                                     // [12]
                return m.mul(m.dot(v));
            };
            Tensor x = randn(2, 3, 9);
            String plan = Jit.explain(f, x);
            for (String op : new String[] {"conv1d", "conv_transpose2d", "max_unpool2d", "mv", "dot"}) {
                assertTrue(plan.contains(op + "("), op + " is not one node of the plan:\n" + plan);
            }
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(2, 3, 9);
            try (var g = Grad.noGrad()) {
                assertClose(f.apply(y), compiled.apply(y), 1e-5f);
            }
        }
    }
    @Test
    void searchsortedIsTracedAsOneOpAndReplayedThroughItsFrontEnd() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(11);
            Tensor boundaries = Torch.arange(-2, 2, 0.5, org.jtorch.types.DType.FLOAT32, JitChecks.DEVICE);
            TensorFunction f = in -> Torch.searchsorted(boundaries, in[0].mul(2), false, true, null).to(org.jtorch.types.DType.FLOAT32)
                    .add(in[0]);
            Tensor x = randn(3, 5);
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("searchsorted(") && !plan.contains("searchsorted_rows("), plan);
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(3, 5);
            try (var g = Grad.noGrad()) {
                assertClose(f.apply(y), compiled.apply(y), 0f);
            }
        }
    }

    @Test
    void copiesAndCastsAreTracedAndDifferentiated() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(10);
            TensorFunction f = in -> in[0].to(org.jtorch.types.DType.FLOAT64).mul(3).to(org.jtorch.types.DType.BFLOAT16).t().clone()
                    .to(org.jtorch.types.DType.FLOAT32).relu();
            Tensor x = randn(5, 4);
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("_to_copy(") && plan.contains("clone("), plan);
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(5, 4).requiresGrad_(true);
            Tensor yEager = y.detach().requiresGrad_(true);
            Tensor out = compiled.apply(y);
            Tensor expected = f.apply(yEager);
            assertClose(expected, out, 0f);
            out.sum().backward();
            expected.sum().backward();
            assertTrue(y.grad().dtype() == org.jtorch.types.DType.FLOAT32, "the gradient comes back in the input's dtype");
            assertClose(yEager.grad(), y.grad(), 0f);
        }
    }

    @Test
    void narrowingViewsAreTracedAndDifferentiated() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(11);
            // select, narrow, unfold and diagonal: each one node, replayed through its view method (a GLU-style gate by
            // narrow, a row by select, windows by unfold, a diagonal of a product).
            TensorFunction f = in -> {
                Tensor h = in[0];                                                     // [4, 6, 5]
                Tensor gate = h.narrow(1, 0, 3).sigmoid().mul(h.narrow(1, 3, 3));    // [4, 3, 5]
                Tensor row = h.select(0, -1);                                         // [6, 5]
                Tensor windows = row.unfold(0, 2, 2).sum(new int[] {2}, false);       // [3, 5]
                Tensor d = windows.mm(windows.t()).diagonal();                        // [3]
                return gate.sum(new int[] {0}, false).mul(d.unsqueeze(1));
            };
            Tensor x = randn(4, 6, 5);
            String plan = Jit.explain(f, x);
            for (String op : new String[] {"narrow", "select", "unfold", "diagonal"}) {
                assertTrue(plan.contains(op + "("), op + " is not one node of the plan:\n" + plan);
            }
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(4, 6, 5).requiresGrad_(true);
            Tensor yEager = y.detach().requiresGrad_(true);
            Tensor out = compiled.apply(y);
            Tensor expected = f.apply(yEager);
            assertClose(expected, out, 1e-5f);
            out.sum().backward();
            expected.sum().backward();
            assertClose(yEager.grad(), y.grad(), 1e-5f);
        }
    }
}
