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
 * split_with_sizes_backward, unbind_backward) that the JIT replays, not closures it cannot see.
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
}
