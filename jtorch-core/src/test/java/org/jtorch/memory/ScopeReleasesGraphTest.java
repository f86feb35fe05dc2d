package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.junit.jupiter.api.Test;

/**
 * Issue 19, defect 2: closing a scope releases the tensors saved by autograd nodes that only the scope's tensors
 * reach, as PyTorch frees a graph with its last tensor; a graph still reachable from a kept tensor stays intact.
 * Each test watches the storages the graph saved ({@code exp} saves its output, {@code mul} of two tensors its
 * inputs), so the checks do not depend on what other tests left to the garbage collector.
 */
class ScopeReleasesGraphTest {
    private static Tensor leaf(long n) {
        return Torch.randn(n).requiresGrad_();
    }

    @Test
    void forwardWithoutBackwardReleasesWhatTheGraphSaved() {
        try (Tensor w = leaf(1 << 20)) {
            Storage expOutput;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor e = w.mul(2.0).exp();
                expOutput = e.storage();
                e.sum();
                assertEquals(2, expOutput.refCount(), "the tensor and the copy ExpBackward0 saved");
            }
            assertTrue(expOutput.isReleased(), "ExpBackward0's saved output is released with the scope");
        }
    }

    @Test
    void closingTheTensorsByHandReleasesTheGraphToo() {
        try (Tensor a = leaf(1000); Tensor b = leaf(1000)) {
            Tensor p = a.mul(b);
            Tensor s = p.sum();
            assertEquals(2, a.storage().refCount(), "MulBackward0 saved a");
            p.close();
            assertEquals(2, a.storage().refCount(), "the sum still reaches MulBackward0");
            s.close();
            assertEquals(1, a.storage().refCount(), "nothing reaches MulBackward0 any more");
            assertEquals(1, b.storage().refCount());
        }
    }

    @Test
    void aKeptResultKeepsItsWholeGraphForBackward() {
        try (Tensor w = leaf(4)) {
            Tensor loss;
            Storage expOutput;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor e = w.mul(2.0).exp();
                expOutput = e.storage();
                loss = scope.keep(e.sum());
            }
            assertFalse(expOutput.isReleased(), "the kept loss still reaches ExpBackward0");
            loss.backward();
            // d/dw sum(exp(2w)) = 2 exp(2w)
            double[] wv = w.toDoubleArray();
            double[] g = w.grad().toDoubleArray();
            for (int i = 0; i < 4; i++) assertEquals(2 * Math.exp(2 * wv[i]), g[i], 1e-5 * g[i]);
            loss.close();
            assertTrue(expOutput.isReleased());
        }
    }

    @Test
    void retainedGraphIsReleasedWhenItsTensorsClose() {
        try (Tensor w = leaf(8)) {
            Storage expOutput;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor e = w.exp();
                expOutput = e.storage();
                e.sum().backward(null, true, false);
                assertFalse(expOutput.isReleased(), "retainGraph keeps the saved output");
            }
            assertTrue(expOutput.isReleased());
        }
    }

    @Test
    void inPlaceOpsOnTheGraphAreReleasedWithTheScope() {
        try (Tensor w = leaf(1000)) {
            Storage clone;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor a = w.mul(2.0);
                a.exp_(); // ExpBackward0 saves the result, which is a itself, rebased onto the new node
                clone = a.storage();
                a.mul(3.0).sum();
            }
            assertTrue(clone.isReleased());
        }
    }

    @Test
    void aDeepChainIsReleasedWithoutRecursion() {
        try (Tensor w = leaf(2)) {
            Storage first;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = w.exp();
                first = x.storage();
                for (int i = 0; i < 50_000; i++) x = x.exp().sub(1.0); // 100k nodes: recursion would overflow the stack
            }
            assertTrue(first.isReleased());
        }
    }

    @Test
    void anUnusedIntermediateOfAKeptGraphStaysDifferentiable() {
        try (Tensor w = leaf(3)) {
            Tensor y;
            try (MemoryScope scope = new MemoryScope()) {
                y = scope.keep(w.exp());
                y.mul(y).sum(); // a second branch, closed with the scope
            }
            try (y; Tensor s = y.sum()) {
                Tensor g = Autograd.grad(s, w);
                assertArrayEquals(y.toDoubleArray(), g.toDoubleArray(), 1e-6, "d/dw sum(exp(w)) = exp(w)");
                g.close();
            }
        }
    }

    @Test
    void backwardThroughAClosedGraphStillFailsClearly() {
        try (Tensor w = leaf(3)) {
            Tensor s;
            try (MemoryScope scope = new MemoryScope()) {
                s = w.exp().sum();
            }
            assertThrows(IllegalStateException.class, s::backward, "the root was closed with the scope");
        }
    }
}
