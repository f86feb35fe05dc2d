package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Module;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The JIT's contract: a compiled function returns what the eager one returns (bit for bit where the fused float
 * ops are the eager kernels' ops, within float tolerance through transcendentals), pointwise chains fuse into one
 * kernel, guards retrace on a new signature, and whatever the trace cannot replay runs eagerly. On the CPU the
 * fused kernels are generated Vector API bytecode, on CUDA generated CUDA C (the simulator pass runs this class on
 * cuda:0).
 */
class JitTest {
    /**
     * The tolerance of "the same float ops": none on the CPU; on CUDA the compiler contracts {@code a * b + c} into
     * one FMA in a fused kernel (as Inductor's kernels do), one rounding fewer than the eager ops.
     */
    private static final float SAME_OPS = DEVICE.isCpu() ? 0f : 3e-7f;

    @Test
    void reluPlusConstantFusesIntoOneKernelAndEqualsEager() {
        Torch.manualSeed(1);
        Tensor c = randn(1000, 37);
        TensorFunction f = x -> x[0].relu().add(c);
        Tensor x = randn(1000, 37);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("1 kernels, 1 fused") && plan.contains("fused 2 ops"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(1000, 37);
        assertClose(f.apply(y), compiled.apply(y), SAME_OPS);
    }

    @Test
    void volumePoolsTraceAsOneOpEachAndReplayAsEager() {
        Torch.manualSeed(7);
        TensorFunction f = in -> org.jtorch.nn.F.adaptiveAvgPool3d(org.jtorch.nn.F.maxPool3d(in[0], 2).relu(), 1, 2, 2);
        Tensor x = randn(2, 3, 6, 6, 4);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("max_pool3d") && plan.contains("adaptive_avg_pool3d") && !plan.contains("max_pool2d"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(2, 3, 6, 6, 4);
        assertClose(f.apply(y), compiled.apply(y), SAME_OPS);
    }

    @Test
    void volumeConvolutionsAndConvTranspose1dTraceAsOneOpEachAndDifferentiateAsEager() {
        Torch.manualSeed(11);
        Tensor w3 = randn(4, 3, 3, 2, 3).requiresGrad_(true), b3 = randn(4).requiresGrad_(true);
        Tensor wt3 = randn(4, 2, 2, 3, 2).requiresGrad_(true);
        TensorFunction volume = in -> org.jtorch.nn.F.convTranspose3d(
                org.jtorch.nn.F.conv3d(in[0], w3, org.jtorch.nn.F.Conv.options().bias(b3).stride(1, 2, 1).padding(1)).relu(), wt3,
                org.jtorch.nn.F.ConvTranspose.options().stride(2).padding(1, 0, 1));
        Tensor x = randn(2, 3, 5, 6, 4);
        String plan = Jit.explain(volume, x);
        assertTrue(plan.contains("conv3d") && plan.contains("conv_transpose3d") && !plan.contains("conv2d"), plan);
        assertCompiledMatchesEager(volume, x, new Tensor[] {w3, b3, wt3}, 1e-5f);

        Tensor w1 = randn(3, 4, 3).requiresGrad_(true), b1 = randn(4).requiresGrad_(true);
        TensorFunction line = in -> org.jtorch.nn.F.convTranspose1d(in[0].tanh(), w1,
                org.jtorch.nn.F.ConvTranspose.options().bias(b1).stride(2).padding(1).outputPadding(1));
        Tensor z = randn(2, 3, 7);
        plan = Jit.explain(line, z);
        assertTrue(plan.contains("conv_transpose1d") && !plan.contains("conv_transpose2d"), plan);
        assertCompiledMatchesEager(line, z, new Tensor[] {w1, b1}, 1e-5f);
    }

    /** The guide's module: a parameter captured by reference, compiled for inference. */
    static final class ScaledRelu extends Module {
        final Tensor scale = registerParameter("scale", Torch.rand(64).add(0.5).to(DEVICE));

        @Override
        public Tensor forward(Tensor input) {
            return input.relu().mul(scale).add(1.0);
        }
    }

    @Test
    void aModuleCompilesAndReadsItsParameterAtEachCall() {
        Torch.manualSeed(2);
        ScaledRelu m = new ScaledRelu();
        TensorFunction compiled = Jit.compile(m);
        Tensor x = randn(8, 64);
        try (var g = Grad.noGrad()) {
            assertClose(m.forward(x), compiled.apply(x), SAME_OPS);
            m.scale.mul_(2.0);
            assertClose(m.forward(x), compiled.apply(x), SAME_OPS);
            String plan = Jit.explain(input -> m.forward(input[0]), x);
            assertTrue(plan.contains("fused 3 ops"), plan);
        }
        // With autograd on, the parameter requires grad: the fused group records its fused backward.
        Tensor y = compiled.apply(x);
        assertTrue(y.requiresGrad());
        y.sum().backward();
        Tensor compiledGrad = m.scale.grad().clone();
        m.scale.grad().zero_();
        Tensor again = compiled.apply(x);
        again.sum().backward();
        assertClose(compiledGrad, m.scale.grad(), SAME_OPS);
        m.scale.grad().zero_();
        m.forward(x).sum().backward();
        assertClose(m.scale.grad(), compiledGrad, 1e-6f);
    }

    @Test
    void fusedBackwardMatchesEagerGradientsThroughGroupsAndReplayedOps() {
        Torch.manualSeed(5);
        Tensor w = randn(33).requiresGrad_(true);
        Tensor b = randn(17, 1).requiresGrad_(true);
        TensorFunction f = in -> in[0].mul(w).add(b).tanh().mul(in[0].sigmoid()).softmax(1).log1p().mul(in[0]).sum(0).exp();
        Tensor x = randn(17, 33).requiresGrad_(true);
        TensorFunction compiled = Jit.trace(f, x);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("fused") && plan.contains("grad input0"), plan);
        Tensor[] leaves = {x, w, b};
        Tensor[] eager = gradients(f, x, leaves);
        Tensor[] fused = gradients(compiled, x, leaves);
        for (int i = 0; i < leaves.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }

    @Test
    void operandsWithTheSameGradientShareOneBackwardKernel() {
        // relu(a + b + c), as a residual block's add and ReLU: every operand's gradient is the ReLU's mask times the
        // incoming gradient, computed once; c is broadcast, so its share is summed to its shape.
        Torch.manualSeed(6);
        Tensor b = randn(6, 9).requiresGrad_(true);
        Tensor c = randn(9).requiresGrad_(true);
        TensorFunction f = in -> in[0].add(b).add(c).relu();
        Tensor x = randn(6, 9).requiresGrad_(true);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("grad const[6, 9] = grad input0 (one kernel, run once)")
                && plan.contains("grad const[9] = grad input0 (one kernel, run once)"), plan);
        Tensor[] leaves = {x, b, c};
        assertCompiledMatchesEager(f, x, leaves, 1e-6f);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor[] eager = gradients(f, x, leaves);
        Tensor[] fused = gradients(compiled, x, leaves);
        for (int i = 0; i < leaves.length; i++) assertClose(eager[i], fused[i], 1e-6f);
        // The shared values reach each leaf as its own gradient: changing one leaves the others.
        x.grad().zero_();
        assertClose(eager[1], b.grad(), 0f);
    }

    /**
     * Memory planning: without autograd a fused group writes into the memory of an intermediate it reads last (here a
     * softmax over the first dimension, replayed), so the call holds one 1 MiB block at its peak instead of two.
     */
    @Test
    void withoutAutogradAFusedGroupWritesIntoAnIntermediateItReadsLast() {
        Torch.manualSeed(7);
        TensorFunction f = in -> in[0].softmax(0).mul(2.0).add(1.0).tanh();
        Tensor x = randn(512, 512);
        try (var g = Grad.noGrad()) {
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x).close();
            try (MemoryScope scope = new MemoryScope()) {
                // The same ops, but float32 tanh is the Vector API's: C2's intrinsic once compiled, its Java fallback
                // before, 1 ulp apart; the eager and the fused loop may be compiled at different times (values <= 1).
                assertClose(f.apply(x), compiled.apply(x), 2.5e-7f);
            }
            if (!DEVICE.isCpu()) return;
            JitChecks.assertPeakUnderTwoResults(() -> compiled.apply(x), 512 * 512 * 4).close();
        }
    }

    @Test
    void twoEqualFactoriesAreTwoBuffersOnceOneIsWrittenInPlace() {
        // zeros twice, one filled by copy_: merging them as common subexpressions would add x to itself.
        TensorFunction f = in -> {
            Tensor z1 = Torch.zeros(new long[] {5}, DType.FLOAT32, DEVICE);
            Tensor z2 = Torch.zeros(new long[] {5}, DType.FLOAT32, DEVICE);
            z1.copy_(in[0]);
            return z1.add(z2.add(1.0));
        };
        Tensor x = randn(5);
        String plan = Jit.explain(f, x);
        assertTrue(!plan.contains("runs eagerly"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(5);
        assertArrayEquals(f.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray(), compiled.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray());
    }

    @Test
    void emptyFactoriesAreTracedAndNeverMerged() {
        // Two empties of one shape, each written in place: merged, the second write would land in the first's buffer. And two
        // empties nothing writes are still two nodes (their values are undefined: never one buffer for both).
        TensorFunction f = in -> {
            Tensor e1 = Torch.empty(new long[] {5}, DType.FLOAT32, DEVICE);
            Tensor e2 = Torch.empty(new long[] {5}, DType.FLOAT32, DEVICE);
            e1.copy_(in[0]);
            e2.fill_(3.0);
            Tensor like = Torch.emptyLike(in[0]).copy_(in[0].mul(2.0));
            Tensor strided = Torch.emptyStrided(new long[] {5}, new long[] {2}, DType.FLOAT32, DEVICE).copy_(in[0]);
            return e1.add(e2).add(like).add(strided.mul(10.0));
        };
        Tensor x = randn(5);
        String plan = Jit.explain(f, x);
        assertTrue(!plan.contains("runs eagerly"), plan);
        for (String op : new String[] {"empty(", "empty_like(", "empty_strided("}) assertTrue(plan.contains(op), op + " is not in the plan:\n" + plan);
        assertEquals(2, plan.split("= empty \\(eager", -1).length - 1, plan); // two steps, not one buffer
        TensorFunction compiled = Jit.trace(f, x);
        for (int round = 0; round < 2; round++) {
            Tensor y = randn(5);
            assertArrayEquals(f.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray(), compiled.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray());
        }
        TensorFunction unwritten = in -> Torch.empty(new long[] {4}, DType.FLOAT32, DEVICE).mul(0.0).add(Torch.empty(new long[] {4}, DType.FLOAT32, DEVICE));
        String twice = Jit.explain(unwritten, x);
        assertEquals(2, twice.split("= empty \\(eager", -1).length - 1, twice);
    }

    @Test
    void aReadAfterAWriteThroughAViewIsNotTheReadBeforeIt() {
        // z * 2 before and after filling part of z through a view: the same op on the same value, two results. (The
        // trace sees z's version move under the view's write and runs the function eagerly.)
        TensorFunction f = in -> {
            Tensor z = in[0].mul(1.0);
            Tensor before = z.mul(2.0);
            z.narrow(0, 1, 3).fill_(4.0);
            Tensor after = z.mul(2.0);
            return before.add(after.mul(10.0));
        };
        Tensor x = randn(6);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(6);
        assertArrayEquals(f.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray(), compiled.apply(y).to(org.jtorch.types.Device.cpu()).toFloatArray());
    }

    @Test
    void aTracedBackwardReadsItsSavedTensorsFromTheReplayNotFromTheTrace() {
        // The backward of x * x and of exp(w) * w reads tensors its nodes saved: handles the trace did not make. Taken as
        // constants they froze the trace's x (a wrong gradient for every later input) or were closed with the graph.
        Tensor w = randn(4, 6).requiresGrad_(true);
        for (boolean retain : new boolean[] {true, false}) {
            TensorFunction f = in -> {
                Tensor out = in[0].mul(in[0]).add(w.exp().mul(w));
                return Autograd.grad(new Tensor[] {out}, new Tensor[] {in[0], w}, new Tensor[] {in[1], in[1]}, retain, false, false)[1]
                        .add(Autograd.grad(new Tensor[] {in[0].mul(in[0])}, new Tensor[] {in[0]}, new Tensor[] {in[1]}, retain, false, false)[0]);
            };
            Tensor g = randn(4, 6);
            TensorFunction compiled = Jit.trace(f, randn(4, 6).requiresGrad_(true), g);
            for (int round = 0; round < 2; round++) {
                Tensor x = randn(4, 6).requiresGrad_(true);
                try (var off = Grad.noGrad()) {
                    w.add_(0.25); // a parameter's step between calls
                }
                assertClose(f.apply(x, g), compiled.apply(x, g), 1e-6f);
            }
        }
    }

    /** Gradcheck through a fused group in float32 is too coarse; compare the fused backward with eager autograd in float64 math instead. */
    private static Tensor[] gradients(TensorFunction f, Tensor x, Tensor[] leaves) {
        for (Tensor t : leaves) if (t.grad() != null) t.grad().zero_();
        f.apply(x).sum().backward();
        Tensor[] g = new Tensor[leaves.length];
        for (int i = 0; i < g.length; i++) g[i] = leaves[i].grad().clone();
        return g;
    }

    @Test
    void doubleBackwardThroughAFusedGroupIsRefused() {
        Tensor x = randn(10).requiresGrad_(true);
        TensorFunction compiled = Jit.trace(in -> in[0].mul(in[0]).exp(), x);
        Tensor y = compiled.apply(x).sum();
        UnsupportedOperationException e = org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class,
                () -> org.jtorch.autograd.Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, null, true, true, false));
        assertTrue(e.getMessage().contains("double backward"), e.getMessage());
    }

    @Test
    void longChainsWithBroadcastsAndTranscendentalsMatchEager() {
        Torch.manualSeed(3);
        Tensor w = randn(33);
        Tensor b = randn(17, 1);
        TensorFunction f = x -> x[0].mul(w).add(b).tanh().mul(0.5).sigmoid().sub(x[0].exp().mul(0.01)).gelu();
        Tensor x = randn(17, 33);
        TensorFunction compiled = Jit.trace(f, x);
        String plan = Jit.explain(f, x);
        // One kernel, or on the CPU two where C2's inlining budget splits the chain before the exact GELU (C2NodeBudget).
        assertTrue(plan.contains("1 kernels, 1 fused") || plan.contains("2 kernels, 2 fused"), plan);
        assertClose(f.apply(x), compiled.apply(x), 2e-6f);
    }

    @Test
    void reductionsAndSoftmaxTakeTheirProducersIn() {
        Torch.manualSeed(4);
        TensorFunction f = x -> x[0].mul(2.0).add(1.0).softmax(1).log().neg().sum(1).sqrt();
        Tensor x = randn(6, 50);
        TensorFunction compiled = Jit.trace(f, x);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("softmax of rows, fused with 2 ops")
                && plan.contains("sum of rows of 50, fused with 2 ops"), plan);
        assertClose(f.apply(x), compiled.apply(x), 1e-6f);
    }

    @Test
    void aChainFeedingASumOverTrailingDimsIsSummedAsItIsComputed() {
        Torch.manualSeed(6);
        Tensor t = randn(300).requiresGrad_(true);
        Tensor x = randn(40, 300).requiresGrad_(true);
        java.util.List<TensorFunction> sums = java.util.List.of(
                in -> in[0].sub(t).tanh().mul(in[0]).sum(1),
                in -> in[0].sub(t).tanh().mul(in[0]).sum(),
                in -> in[0].sub(t).tanh().mul(in[0]).sum(new int[] {-1}, true),
                in -> in[0].mul(t).sum(1),
                in -> in[0].sub(t).mul(in[0].sub(t)).mean(),
                // A transposed input: strided rows, summed through the formula's reference path.
                in -> in[0].t().exp().mul(0.5).sum(1),
                in -> in[0].view(40, 20, 15).sigmoid().mul(2.0).sum(new int[] {2, 1}, false));
        for (TensorFunction f : sums) {
            String plan = Jit.explain(f, x);
            // The formula's values are summed as they are computed (CPU: generated loop; CUDA: one block per row).
            assertTrue(plan.contains("sum of rows of"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            Tensor[] leaves = {x, t};
            Tensor[] eager = gradients(f, x, leaves);
            Tensor[] fused = gradients(compiled, x, leaves);
            try (var g = Grad.noGrad()) {
                assertClose(f.apply(x), compiled.apply(x), 2e-6f);
            }
            for (int i = 0; i < leaves.length; i++) assertClose(eager[i], fused[i], 1e-6f);
        }
    }

    @Test
    void aSumOverLeadingDimsIsNotFusedAndStillMatches() {
        Torch.manualSeed(7);
        TensorFunction f = in -> in[0].exp().mul(in[0]).sum(0);
        Tensor x = randn(30, 70);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("sum (eager)") && plan.contains("fused 2 ops"), plan);
        assertClose(f.apply(x), Jit.trace(f, x).apply(x), 1e-6f);
    }

    @Test
    void guardsRetraceOnShapeAndDtype() {
        AtomicInteger traces = new AtomicInteger();
        TensorFunction f = x -> {
            traces.incrementAndGet();
            return x[0].exp().add(x[0]);
        };
        TensorFunction compiled = Jit.trace(f, randn(4, 4));
        assertEquals(1, traces.get());
        Tensor a = randn(4, 4);
        assertClose(f.apply(a), compiled.apply(a), SAME_OPS);
        assertEquals(2, traces.get(), "a cached signature does not run the function");
        Tensor b = randn(3, 5);
        assertClose(f.apply(b), compiled.apply(b), SAME_OPS);
        Tensor d = randn(3, 5).to(DType.FLOAT64);
        Tensor expected = f.apply(d);
        Tensor actual = compiled.apply(d);
        assertEquals(DType.FLOAT64, actual.dtype());
        assertArrayEquals(expected.toDoubleArray(), actual.toDoubleArray(), 0.0);
        // Runs of f: the example's trace, the eager references (3), the new shape's trace, the f64 signature's trace.
        assertEquals(6, traces.get());
        compiled.apply(b);
        assertEquals(6, traces.get());
    }

    /**
     * Groups of the same formula share one generated kernel across graphs (the kernel cache ignores the node names a
     * group's formula carries); each graph still gets the kernel of its own broadcast pattern, dtype and formula.
     */
    @Test
    void kernelsSharedAcrossGraphsServeEachGraphItsOwnShapeDtypeAndFormula() {
        Torch.manualSeed(3);
        Tensor w = randn(6, 5);
        TensorFunction scaled = in -> in[0].mul(w).add(in[1]).relu();
        TensorFunction yMinusX = in -> in[1].sub(in[0]).relu();
        TensorFunction xMinusY = in -> in[0].sub(in[1]).relu();
        Tensor[][] calls = {{randn(6, 5), randn(6, 5)}, {randn(6, 5), randn(6, 1)}, {randn(6, 5), randn(5)},
            {randn(6, 5).to(DType.FLOAT64), randn(6, 5).to(DType.FLOAT64)}, {randn(2, 6, 5), randn(6, 5)}};
        String plan = Jit.explain(scaled, calls[0]);
        assertTrue(plan.contains("1 kernels, 1 fused") && plan.contains("fused 3 ops"), plan);
        for (TensorFunction f : java.util.List.of(scaled, yMinusX, xMinusY)) {
            for (Tensor[] call : calls) {
                TensorFunction compiled = Jit.trace(f, call);
                Tensor[] next = {randn(call[0].shape()).to(call[0].dtype()), randn(call[1].shape()).to(call[1].dtype())};
                assertClose(f.apply(next), compiled.apply(next), SAME_OPS);
            }
        }
    }

    @Test
    void whatTheTraceCannotReplayRunsEagerly() {
        // A tensor of Java values made inside the function: no traced op made it.
        TensorFunction literal = x -> x[0].add(Torch.tensor(new float[] {1, 2, 3, 4, 5}).to(DEVICE)).relu();
        TensorFunction hostRead = x -> x[0].mul(x[0].sum().item()).relu();
        // (index_put_, this test's write the trace did not see, is now traced in place: indexAndIndexPutAreReplayed)
        Tensor x = randn(5, 5);
        for (TensorFunction f : new TensorFunction[] {literal, hostRead}) {
            assertTrue(Jit.explain(f, x).contains("runs eagerly"), Jit.explain(f, x));
            TensorFunction compiled = Jit.trace(f, x);
            Tensor y = randn(5, 5);
            assertClose(f.apply(y), compiled.apply(y), SAME_OPS);
        }
        assertTrue(Jit.explain(literal, x).contains("by an op the trace does not see"), Jit.explain(literal, x));
        // flip along dim 0 is an arange and an index_select, both traced (it ended the trace before arange was).
        TensorFunction flipped = in -> in[0].flip(0).relu().add(1.0);
        assertFalse(Jit.explain(flipped, x).contains("runs eagerly"), Jit.explain(flipped, x));
        assertClose(flipped.apply(x), Jit.trace(flipped, x).apply(x), SAME_OPS);
        // The host read is re-taken each call: a different input gives its own scale.
        TensorFunction compiled = Jit.trace(hostRead, x);
        Tensor z = randn(5, 5).mul(3.0);
        assertClose(hostRead.apply(z), compiled.apply(z), SAME_OPS);
    }

    /**
     * Advanced indexing and index_put_ are traced as one op each, index_put_ replayed in place (duplicate indices accumulate);
     * a bool mask is read on the host (its count fixes the shape), so that a function indexing with one runs eagerly.
     */
    @Test
    void indexAndIndexPutAreReplayed() {
        Tensor rows = Torch.tensor(new long[] {1, 3, 1}).to(DEVICE);
        Tensor cols = Torch.tensor(new long[] {-1, 0}).to(DEVICE);
        TensorFunction f = in -> {
            Tensor a = in[0].mul(2.0);
            a.indexPut_(new Tensor[] {rows, null}, in[0].index(rows).exp(), true);
            return a.index(null, cols).relu();
        };
        Tensor x = randn(5, 4);
        String explained = Jit.explain(f, x);
        assertTrue(!explained.contains("runs eagerly") && explained.contains("index_put_(") && explained.contains("index("), explained);
        TensorFunction compiled = Jit.trace(f, x);
        for (int i = 0; i < 2; i++) {
            Tensor y = randn(5, 4);
            assertArrayEquals(f.apply(y).toFloatArray(), compiled.apply(y).toFloatArray(), 0f);
        }
        TensorFunction masked = in -> in[0].index(in[0].gt(0.0)).exp();
        assertTrue(Jit.explain(masked, x).contains("runs eagerly"), Jit.explain(masked, x));
        TensorFunction maskedCompiled = Jit.trace(masked, x);
        Tensor z = randn(5, 4);
        assertArrayEquals(masked.apply(z).toFloatArray(), maskedCompiled.apply(z).toFloatArray(), 0f);
    }

    /** fill_, zero_ and copy_ are traced in place and replayed, and the values they overwrite get a zero gradient. */
    @Test
    void fillAndZeroAreReplayedInPlace() {
        Torch.manualSeed(11);
        TensorFunction f = in -> {
            Tensor a = in[0].mul(2.0);
            Tensor b = in[0].add(1.0);
            a.fill_(3.0);
            b.zero_();
            Tensor c = in[0].mul(5.0);
            c.copy_(in[0].sin().to(org.jtorch.types.DType.FLOAT64));
            return a.mul(in[0]).add(b).add(in[0].exp()).add(c);
        };
        Tensor x = randn(4, 3);
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("fill_(") && plan.contains("zero_(") && plan.contains("copy_(") && !plan.contains("runs eagerly"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(4, 3).requiresGrad_(true);
        Tensor yEager = y.detach().requiresGrad_(true);
        Tensor out = compiled.apply(y);
        Tensor expected = f.apply(yEager);
        assertClose(expected, out, SAME_OPS);
        out.sum().backward();
        expected.sum().backward();
        // d/dy of 3 * y + exp(y) + sin(y): the overwritten 2 * y, y + 1 and 5 * y contribute nothing
        assertClose(yEager.detach().exp().add(3.0).add(yEager.detach().cos()), y.grad(), 1e-6f);
        assertClose(yEager.grad(), y.grad(), SAME_OPS);
    }

    /**
     * Pointwise ops in place are replayed in trace order: on an intermediate, and on a captured buffer whose new value
     * later ops read (which therefore do not fuse across the write). The buffer ends as the eager run leaves it.
     */
    @Test
    void inPlacePointwiseOpsReplayInOrderOnIntermediatesAndCapturedBuffers() {
        Torch.manualSeed(8);
        Tensor x = randn(6, 5);
        Tensor eagerBuf = randn(5);
        Tensor compiledBuf = eagerBuf.clone();
        java.util.function.Function<Tensor, TensorFunction> program = buf -> in -> {
            Tensor before = in[0].mul(buf);
            buf.mul_(0.5).add_(1.0);
            return in[0].mul(2.0).add_(in[0]).relu().add(before).mul(buf);
        };
        TensorFunction eager = program.apply(eagerBuf);
        String plan = Jit.explain(program.apply(compiledBuf.clone()), x);
        assertTrue(!plan.contains("runs eagerly") && plan.contains("add_ (eager, in place)") && plan.contains("mul_ (eager, in place)"), plan);
        TensorFunction compiled = Jit.trace(program.apply(compiledBuf), x);
        // The trace's own call ran the function once.
        eager.apply(x).close();
        for (int call = 0; call < 3; call++) {
            Tensor y = randn(6, 5);
            assertClose(eager.apply(y), compiled.apply(y), SAME_OPS);
            assertClose(eagerBuf, compiledBuf, SAME_OPS);
        }
    }

    /** A batch norm in training counts its batches in place: the compiled module counts each call, as eager does. */
    @Test
    void aBatchNormInTrainingCountsItsBatchesWhenCompiled() {
        Torch.manualSeed(9);
        org.jtorch.nn.Sequential eager = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(4, 3), new org.jtorch.nn.BatchNorm1d(3));
        eager.to(DEVICE);
        org.jtorch.nn.Sequential twin = (org.jtorch.nn.Sequential) eager.deepCopy();
        TensorFunction compiled = Jit.compile(twin);
        try (var g = Grad.noGrad()) {
            for (int call = 0; call < 4; call++) {
                Tensor x = randn(8, 4);
                assertClose(eager.forward(x), compiled.apply(x), 1e-6f);
            }
        }
        java.util.Map<String, Tensor> a = eager.stateDict();
        java.util.Map<String, Tensor> b = twin.stateDict();
        for (String k : a.keySet()) assertClose(a.get(k).to(DType.FLOAT32), b.get(k).to(DType.FLOAT32), 1e-6f);
        assertEquals(4L, ((org.jtorch.nn.BatchNorm1d) twin.get(1)).numBatchesTracked().itemLong());
    }

    @Test
    void javaNumbersCapturedInAScopeOutliveIt() {
        TensorFunction f = x -> x[0].mul(3.0).add(0.25).relu();
        Tensor x = randn(10);
        TensorFunction compiled;
        try (MemoryScope s = new MemoryScope()) {
            compiled = Jit.trace(f, x);
        }
        Tensor y = randn(10);
        assertClose(f.apply(y), compiled.apply(y), SAME_OPS);
    }

    @Test
    void anMlpCompilesWithViewsReplayedAndItsActivationsAsLinearEpilogues() {
        Torch.manualSeed(6);
        org.jtorch.nn.Sequential mlp = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(20, 32), new org.jtorch.nn.GELU(),
                new org.jtorch.nn.Linear(32, 10));
        mlp.to(DEVICE);
        TensorFunction f = in -> mlp.forward(in[0].reshape(8, 20)).mul(0.5).tanh().add(1.0).transpose(0, 1).contiguous();
        Tensor x = randn(2, 4, 20);
        String plan = Jit.explain(f, x);
        assertTrue(!plan.contains("runs eagerly") && plan.contains("with an epilogue of 1 op") && plan.contains("with an epilogue of 3 ops"),
                plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(2, 4, 20);
        try (var g = Grad.noGrad()) {
            assertClose(f.apply(y), compiled.apply(y), 1e-6f);
        }
        // Training: the linear layers record their own autograd, the fused epilogues their fused backward.
        Tensor[] params = mlp.parameters().toArray(new Tensor[0]);
        Tensor[] eager = gradients(f, y, params);
        Tensor[] fused = gradients(compiled, y, params);
        for (int i = 0; i < params.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }

    @Test
    void repeatedComputationsRunOnce() {
        TensorFunction f = in -> in[0].softmax(1).add(in[0].softmax(1)).mul(in[0].sum(1, true)).add(in[0].sum(1, true));
        Tensor x = randn(4, 9);
        String plan = Jit.explain(f, x);
        // One softmax and one sum replayed, then the two adds and the multiply fused: three kernels.
        assertTrue(plan.contains("steps (3 kernels, 1 fused)"), plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor y = randn(4, 9);
        assertClose(f.apply(y), compiled.apply(y), SAME_OPS);
    }

    /**
     * {@code Options.cudaGraphs()}: on cuda:0 the third call of a signature onwards replays a CUDA graph, on the CPU
     * nothing changes; either way each call equals eager, through a new batch size (a guard failure: a new capture)
     * and a function that needs autograd (never graphed).
     */
    @Test
    void withCudaGraphsEveryCallEqualsEagerThroughNewShapes() {
        Torch.manualSeed(7);
        org.jtorch.nn.Sequential mlp = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(20, 32), new org.jtorch.nn.ReLU(),
                new org.jtorch.nn.Linear(32, 10));
        mlp.to(DEVICE);
        TensorFunction compiled = Jit.compile(mlp, Jit.Options.cudaGraphs());
        try (var g = Grad.noGrad()) {
            for (int batch : new int[] {8, 8, 8, 8, 3, 3, 3, 8}) {
                Tensor x = randn(batch, 20);
                assertClose(mlp.forward(x), compiled.apply(x), 1e-6f);
            }
        }
        Tensor x = randn(8, 20);
        Tensor y = compiled.apply(x);
        assertTrue(y.requiresGrad(), "with grad enabled the result records autograd");
        assertClose(mlp.forward(x), y, 1e-6f);
    }
}
