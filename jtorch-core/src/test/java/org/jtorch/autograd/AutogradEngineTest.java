package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.input;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Behaviour of the autograd engine as PyTorch's: accumulation into leaves, graph release and
 * {@code retainGraph}, {@code Autograd.grad}, hooks, grad modes, saved-tensor version checks,
 * anomaly detection, higher-order gradients, memory release, and agreement with PyTorch 1.13 on
 * small composite graphs ({@code fixtures/autograd.json}, from {@code tools/fixtures/gen_autograd.py}).
 */
class AutogradEngineTest {

    private static void backwardWithOnes(Tensor y) {
        try (Tensor ones = Torch.onesLike(y)) {
            y.backward(ones);
        }
    }

    private static double[] values(Tensor t) {
        return t.toDoubleArray();
    }

    // ---------------------------------------------------------------- accumulation and graph lifetime

    @Test
    void leafGradientsAccumulateAcrossBackwardCalls() {
        try (Tensor x = input(3)) {
            for (int k = 0; k < 2; k++) {
                try (Tensor y = x.mul(x)) {
                    backwardWithOnes(y);
                }
            }
            double[] xv = values(x);
            assertArrayEquals(new double[] {4 * xv[0], 4 * xv[1], 4 * xv[2]}, values(x.grad()), 1e-12);
        }
    }

    @Test
    void aLeafUsedTwiceReceivesTheSumOfBothPaths() {
        try (Tensor x = input(2); Tensor a = x.mul(3.0); Tensor b = x.exp(); Tensor y = a.add(b)) {
            backwardWithOnes(y);
            double[] xv = values(x);
            assertArrayEquals(new double[] {3 + Math.exp(xv[0]), 3 + Math.exp(xv[1])}, values(x.grad()), 1e-12);
        }
    }

    @Test
    void secondBackwardNeedsRetainGraph() {
        try (Tensor x = input(3); Tensor y = x.mul(x); Tensor ones = Torch.onesLike(y)) {
            y.backward(ones, true, false);
            y.backward(ones, false, false); // allowed: the first call retained the graph
            double[] xv = values(x);
            assertEquals(4 * xv[0], values(x.grad())[0], 1e-12);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> y.backward(ones));
            assertTrue(e.getMessage().contains("second time") && e.getMessage().contains("retainGraph")
                    && e.getMessage().contains("MulBackward0"), e.getMessage());
        }
    }

    @Test
    void backwardOfANonScalarNeedsAGradient() {
        try (Tensor x = input(3); Tensor y = x.mul(2.0)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, y::backward);
            assertTrue(e.getMessage().contains("only for scalar outputs") && e.getMessage().contains("[3]"), e.getMessage());
        }
    }

    @Test
    void backwardOfATensorOutsideTheGraphFails() {
        try (Tensor x = Torch.ones(3); Tensor y = x.mul(2.0); Tensor ones = Torch.onesLike(y)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> y.backward(ones));
            assertTrue(e.getMessage().contains("does not require grad"), e.getMessage());
        }
    }

    // ---------------------------------------------------------------- Autograd.grad

    @Test
    void gradReturnsGradientsWithoutTouchingLeaves() {
        try (Tensor x = input(2); Tensor z = input(2); Tensor y = x.mul(z); Tensor ones = Torch.onesLike(y)) {
            Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {ones}, false, false, false);
            try (Tensor gx = g[0]) {
                assertArrayEquals(values(z), values(gx), 0);
            }
            assertNull(x.grad());
            assertNull(z.grad());
        }
    }

    @Test
    void gradOfAnUnusedInputIsNullOnlyWithAllowUnused() {
        try (Tensor x = input(2); Tensor unused = input(3); Tensor y = x.mul(2.0); Tensor ones = Torch.onesLike(y)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Autograd.grad(new Tensor[] {y},
                    new Tensor[] {x, unused}, new Tensor[] {ones}, true, false, false));
            assertTrue(e.getMessage().contains("allowUnused"), e.getMessage());
            Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x, unused}, new Tensor[] {ones}, false, false, true);
            try (Tensor gx = g[0]) {
                assertArrayEquals(new double[] {2, 2}, values(gx), 0);
            }
            assertNull(g[1]);
        }
    }

    // ---------------------------------------------------------------- hooks and retainGrad

    @Test
    void aTensorHookCanReplaceTheGradient() {
        try (Tensor x = input(2); Tensor h = x.mul(3.0)) {
            h.registerHook(g -> g.mul(10.0));
            try (Tensor y = h.mul(2.0)) {
                backwardWithOnes(y);
            }
            assertArrayEquals(new double[] {60, 60}, values(x.grad()), 0);
        }
    }

    @Test
    void aLeafHookSeesTheGradientBeforeAccumulation() {
        try (Tensor x = input(2); Tensor y = x.mul(3.0)) {
            List<double[]> seen = new ArrayList<>();
            x.registerHook(g -> {
                seen.add(g.toDoubleArray());
                return g.neg();
            });
            backwardWithOnes(y);
            assertEquals(1, seen.size());
            assertArrayEquals(new double[] {3, 3}, seen.get(0), 0);
            assertArrayEquals(new double[] {-3, -3}, values(x.grad()), 0);
        }
    }

    @Test
    void postAccumulateHookRunsOncePerLeafAfterAccumulation() {
        try (Tensor x = input(2); Tensor a = x.mul(x); Tensor y = a.add(x)) {
            AtomicInteger calls = new AtomicInteger();
            List<Tensor> seenGrads = new ArrayList<>();
            x.registerPostAccumulateGradHook(t -> {
                calls.incrementAndGet();
                seenGrads.add(t.grad());
            });
            backwardWithOnes(y);
            assertEquals(1, calls.get());
            assertSame(x.grad(), seenGrads.get(0));
        }
    }

    @Test
    void queuedCallbacksRunOnceAfterTheWholeGraphInQueueOrder() {
        try (Tensor x = input(2); Tensor w = input(2); Tensor a = x.mul(w); Tensor y = a.mul(3.0)) {
            List<String> events = new ArrayList<>();
            x.registerPostAccumulateGradHook(t -> {
                events.add("x");
                Autograd.queueCallback(() -> {
                    events.add("first, grads " + (x.grad() != null) + " " + (w.grad() != null));
                    Autograd.queueCallback(() -> events.add("queued by a callback"));
                });
                Autograd.queueCallback(() -> events.add("second"));
            });
            w.registerPostAccumulateGradHook(t -> events.add("w"));
            backwardWithOnes(y);
            assertEquals(5, events.size(), events.toString());
            assertEquals(java.util.Set.of("x", "w"), java.util.Set.copyOf(events.subList(0, 2))); // both leaves first, any order
            assertEquals(List.of("first, grads true true", "second", "queued by a callback"), events.subList(2, 5));
        }
    }

    @Test
    void queueCallbackOutsideBackwardIsAnError() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Autograd.queueCallback(() -> { }));
        assertTrue(e.getMessage().contains("queueCallback: no backward pass is running on this thread"), e.getMessage());
    }

    @Test
    void retainGradKeepsANonLeafGradient() {
        try (Tensor x = input(2); Tensor h = x.mul(2.0)) {
            h.retainGrad();
            try (Tensor y = h.mul(h)) {
                backwardWithOnes(y);
            }
            double[] hv = values(h);
            assertArrayEquals(new double[] {2 * hv[0], 2 * hv[1]}, values(h.grad()), 1e-12);
            assertArrayEquals(new double[] {4 * hv[0], 4 * hv[1]}, values(x.grad()), 1e-12);
        }
    }

    @Test
    void nonLeafGradientsAreNotKeptWithoutRetainGrad() {
        try (Tensor x = input(2); Tensor h = x.mul(2.0); Tensor y = h.mul(h)) {
            backwardWithOnes(y);
            assertNull(h.grad());
        }
    }

    // ---------------------------------------------------------------- grad modes and detach

    @Test
    void noGradRecordsNothing() {
        try (Tensor x = input(2)) {
            Tensor y;
            try (Grad.Mode m = Grad.noGrad()) {
                y = x.mul(2.0).exp();
                assertFalse(Grad.isEnabled());
            }
            try (y) {
                assertTrue(Grad.isEnabled());
                assertFalse(y.requiresGrad());
                assertNull(y.gradFn());
            }
        }
    }

    @Test
    void enableGradInsideNoGradRecords() {
        try (Tensor x = input(2); Grad.Mode off = Grad.noGrad(); Grad.Mode on = Grad.enableGrad(); Tensor y = x.mul(2.0)) {
            assertTrue(y.requiresGrad());
        }
    }

    @Test
    void detachSharesDataButStopsGradients() {
        try (Tensor x = input(2); Tensor d = x.detach()) {
            assertFalse(d.requiresGrad());
            assertSame(x.storage(), d.storage());
            try (Tensor y = x.mul(d)) {
                backwardWithOnes(y);
            }
            // d/dx (x * detach(x)) = detach(x)
            assertArrayEquals(values(x), values(x.grad()), 0);
        }
    }

    // ---------------------------------------------------------------- saved tensors

    @Test
    void modifyingASavedTensorInPlaceFailsNamingTheNode() {
        try (Tensor x = input(3); Tensor y = x.exp()) {
            y.add_(1.0); // exp saved its result
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> backwardWithOnes(y));
            assertTrue(e.getMessage().contains("modified by an inplace operation") && e.getMessage().contains("ExpBackward0"),
                    e.getMessage());
        }
    }

    @Test
    void savedTensorsSurviveTheUserClosingTheirHandles() {
        try (Tensor x = input(3)) {
            Tensor y;
            try (Tensor e = x.exp()) {
                y = e.mul(e);
            }
            try (y) {
                backwardWithOnes(y);
            }
            double[] xv = values(x);
            assertEquals(2 * Math.exp(2 * xv[0]), values(x.grad())[0], 1e-9);
        }
    }

    @Test
    void backwardReleasesEveryIntermediateAndSavedTensor() {
        Device cpu = Device.cpu();
        try (Tensor x = input(64, 32); Tensor w = input(32)) {
            settleEarlierLeaks();
            long baseline = Torch.memoryStats(cpu).allocatedBytes();
            try (Tensor index = Torch.zeros(new long[] {64, 4}, org.jtorch.types.DType.INT64, cpu); Tensor a = x.mul(w);
                 Tensor b = a.relu(); Tensor c = b.sigmoid(); Tensor t = a.tanh(); Tensor d = c.mul(t);
                 Tensor e = d.gather(1, index); Tensor f = e.abs()) {
                backwardWithOnes(f);
            }
            Tensor gx = x.grad();
            Tensor gw = w.grad();
            x.setGrad(null);
            w.setGrad(null);
            gx.close();
            gw.close();
            long after = Torch.memoryStats(cpu).allocatedBytes();
            // <= rather than ==: garbage of earlier tests may still be collected meanwhile, never added
            assertTrue(after <= baseline, "bytes still allocated after backward and closing every tensor made since the baseline: "
                    + after + " > " + baseline);
        }
    }

    /** Lets the collector release storages that earlier tests leaked, so that they do not move the baseline. */
    private static void settleEarlierLeaks() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Test
    void leafGradientsOutliveAMemoryScopeAroundBackward() {
        try (Tensor x = input(3)) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor y = x.mul(x).relu();
                backwardWithOnes(y);
            }
            assertNotNull(x.grad());
            assertFalse(x.grad().isClosed());
            try (MemoryScope scope = new MemoryScope()) {
                Tensor y = x.mul(2.0);
                backwardWithOnes(y); // accumulates into the existing .grad
            }
            double[] xv = values(x);
            assertEquals(2 * Math.abs(xv[0]) * (xv[0] > 0 ? 1 : 0) + 2, values(x.grad())[0], 1e-12);
        }
    }

    // ---------------------------------------------------------------- anomaly detection

    @Test
    void anomalyModeNamesTheOpWhoseBackwardProducedNaN() {
        try (Tensor x = Torch.tensor(-1.0, 4.0).requiresGrad_()) {
            try (Tensor y = x.sqrt()) { // sqrt(-1) = NaN, so its gradient is NaN
                backwardWithOnes(y);
                assertTrue(Double.isNaN(values(x.grad())[0]), "without anomaly mode NaN just propagates");
            }
            try (Autograd.AnomalyMode mode = Autograd.detectAnomaly(); Tensor y = x.sqrt(); Tensor z = y.mul(2.0)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> backwardWithOnes(z));
                assertTrue(e.getMessage().contains("SqrtBackward0") && e.getMessage().contains("nan"), e.getMessage());
                assertNotNull(e.getCause(), "the forward call's stack is attached");
            }
        }
    }

    // ---------------------------------------------------------------- higher order

    @Test
    void doubleBackwardOfCubeIsSixX() {
        try (Tensor x = input(3); Tensor y = x.pow(3.0); Tensor ones = Torch.onesLike(y)) {
            Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {ones}, false, true, false);
            double[] xv = values(x);
            try (Tensor dy = g[0]) {
                assertTrue(dy.requiresGrad(), "createGraph records the backward pass");
                assertArrayEquals(new double[] {3 * xv[0] * xv[0], 3 * xv[1] * xv[1], 3 * xv[2] * xv[2]}, values(dy), 1e-12);
                backwardWithOnes(dy);
            }
            assertArrayEquals(new double[] {6 * xv[0], 6 * xv[1], 6 * xv[2]}, values(x.grad()), 1e-12);
        }
    }

    @Test
    void secondDerivativeThroughAnOpThatSavesItsResult() {
        // exp's backward reads its saved result: d2/dx2 exp(x) = exp(x) only if the saved result keeps its grad_fn
        try (Tensor x = input(2); Tensor y = x.exp(); Tensor ones = Torch.onesLike(y)) {
            Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {ones}, true, true, false);
            try (Tensor dy = g[0]) {
                backwardWithOnes(dy);
            }
            double[] xv = values(x);
            assertArrayEquals(new double[] {Math.exp(xv[0]), Math.exp(xv[1])}, values(x.grad()), 1e-12);
        }
    }

    @Test
    void gradgradcheckOfASmoothComposite() {
        // Gradcheck of the gradient itself: second derivatives of tanh(x) * sigmoid(y) + x^2 y
        Function<Tensor[], Tensor> grads = a -> {
            try (Tensor t = a[0].tanh(); Tensor s = a[1].sigmoid(); Tensor p = t.mul(s); Tensor q = a[0].pow(2.0);
                 Tensor r = q.mul(a[1]); Tensor f = p.add(r); Tensor ones = Torch.onesLike(f)) {
                // retainGraph: the gradient's graph runs through the forward nodes again (PyTorch's default with create_graph)
                Tensor[] g = Autograd.grad(new Tensor[] {f}, new Tensor[] {a[0], a[1]}, new Tensor[] {ones}, true, true, false);
                try (Tensor g0 = g[0]; Tensor g1 = g[1]) {
                    return Torch.cat(new Tensor[] {g0, g1}, 0);
                }
            }
        };
        try (Tensor x = input(3); Tensor y = GradcheckSupport.other(3)) {
            assertTrue(Gradcheck.check(grads, x, y));
        }
    }

    // ---------------------------------------------------------------- PyTorch 1.13 composite graphs

    @TestFactory
    List<DynamicTest> compositeGraphsMatchPyTorch() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fixtures.Case c : Fixtures.load("autograd")) {
            tests.add(DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> runComposite(c)));
        }
        return tests;
    }

    private static void runComposite(Fixtures.Case c) {
        List<Tensor> in = new ArrayList<>();
        try {
            for (int i = 0; i < c.inputs().size(); i++) {
                Tensor t = c.input(i);
                if (t.dtype().isFloatingPoint()) t.requiresGrad_();
                in.add(t);
            }
            try (MemoryScope scope = new MemoryScope()) {
                Tensor out = switch (c.name()) {
                    case "matmul_relu_mul_sum" -> in.get(0).matmul(in.get(1)).relu().mul(in.get(2)).sum();
                    case "sigmoid_gather_cat_tanh" -> {
                        Tensor x = in.get(0);
                        yield Torch.cat(new Tensor[] {x.sigmoid().mul(in.get(1)), x.gather(1, in.get(2)).exp()}, 1).tanh();
                    }
                    case "where_pow_expand_views" -> {
                        Tensor x = in.get(0);
                        Tensor w = in.get(1);
                        Tensor branch = Torch.where(x.gt(0.0), x.pow(2.0), x.neg().exp());
                        Tensor viewed = x.t().unsqueeze(0).expand(2, 4, 3).transpose(1, 2).select(0, 1);
                        yield branch.mul(w.unsqueeze(1)).add(viewed);
                    }
                    case "activations_index_put_masked_fill" -> {
                        Tensor x = in.get(0);
                        Tensor h = x.gelu().mul(x.softplus()).add(x.leakyRelu(0.1).div(x.pow(2.0).add(1.0)));
                        yield h.indexPut(new Tensor[] {in.get(2), in.get(3)}, in.get(1), true).maskedFill(x.lt(-1.0), 0.0);
                    }
                    default -> throw new IllegalStateException("unknown composite " + c.name());
                };
                // backward with ones equals backward of the sum
                backwardWithOnes(out);
            }
            int k = 0;
            for (Tensor t : in) {
                if (!t.dtype().isFloatingPoint()) continue;
                Fixtures.assertMatches(c.expectedTensor(k), t.grad(), 1e-5, 1e-5,
                        c + " grad of input " + k);
                k++;
            }
        } finally {
            in.forEach(Tensor::close);
        }
    }
}
