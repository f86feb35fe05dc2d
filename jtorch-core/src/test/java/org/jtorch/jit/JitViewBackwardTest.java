package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/**
 * A backward through views, traced: the views' derivatives are declared with ops ({@code op.ViewOps}), so the gradient
 * of a program that selects, narrows and splits is a graph of registry ops (select_backward, slice_backward,
 * split_with_sizes_backward, unbind_backward) that the JIT replays, not closures it cannot see; so is an in-place write
 * through a view's ({@code CopySlices}: as_strided_backward's read of the slice, as_strided_scatter's write back).
 */
class JitViewBackwardTest {
    @Test
    void gradientsThroughSelectNarrowAndSplitAreTracedAndReplayed() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(15);
            Tensor leaf = randn(4, 6).requiresGrad_(true);
            // The gradient of views of a leaf, the program's input the gradient flowing in: the whole backward reads the
            // input (no saved tensor), a graph of the views' backward ops and cat's narrows.
            TensorFunction f = in -> {
                Tensor row = leaf.select(0, 1);                                       // [6]
                Tensor cols = leaf.narrow(1, 2, 3).reshape(-1);                       // [12]
                Tensor steps = leaf.split(new long[] {1, 2, 1}, 0).get(1).reshape(-1); // [12]
                Tensor last = leaf.unbind(0).get(3);                                  // [6]
                Tensor out = Torch.cat(List.of(row, cols, steps, last), 0);          // [36]
                return Autograd.grad(new Tensor[] {out}, new Tensor[] {leaf}, new Tensor[] {in[0]}, false, false, false)[0];
            };
            Tensor x = randn(36);
            String plan = Jit.explain(f, x);
            for (String op : new String[] {"select_backward", "slice_backward", "split_with_sizes_backward", "unbind_backward"}) {
                assertTrue(plan.contains(op + "("), op + " is not one node of the plan:\n" + plan);
            }
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(36);
            compiled.apply(y);
            assertClose(f.apply(y), compiled.apply(y), 1e-5f);
        }
    }

    @Test
    void aBackwardThroughAnInPlaceWriteOfAViewIsTracedAndReplayed() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(17);
            Tensor leaf = randn(4, 6).requiresGrad_(true);
            Tensor w = randn(2, 3).requiresGrad_(true);
            // base's history is CopySlices over mul_'s backward: the slice of the gradient read, mul_'s gradients, the
            // slice written back, all declared ops (the slice's read and write are relative to the gradient, not absolute)
            Tensor base = leaf.mul(2.0);
            base.narrow(0, 1, 2).narrow(1, 2, 3).mul_(w);
            Tensor out = base.mul(base);
            TensorFunction f = in -> {
                Tensor[] g = Autograd.grad(new Tensor[] {out}, new Tensor[] {leaf, w}, new Tensor[] {in[0]}, true, false, false);
                return g[0].narrow(0, 0, 2).narrow(1, 1, 3).add(g[1]);
            };
            Tensor x = randn(4, 6);
            String plan = Jit.explain(f, x);
            for (String op : new String[] {"as_strided_backward", "as_strided_scatter"}) {
                assertTrue(plan.contains(op + "("), op + " is not one node of the plan:\n" + plan);
            }
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            for (int round = 0; round < 2; round++) {
                Tensor y = randn(4, 6);
                assertClose(f.apply(y), compiled.apply(y), 1e-5f);
            }
        }
    }
}
