package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.randn;
import static org.jtorch.jit.JitChecks.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.op.NormalizationOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * A pointwise chain fused into the layer norm it feeds, in programs with autograd: the forward stores neither the chain's
 * values nor any of its intermediates (the statistics and dropout masks only), and one autograd node computes the
 * chain again for the layer norm's backward and runs the chain's gradients (on the CPU a part of rows at a time, the
 * values never stored; elsewhere stored, then eager's layer-norm backward). Compiled equals eager bit for bit on the
 * CPU in values, every input's and parameter's gradient and the generator's state (CUDA's generated C may contract a
 * product and a sum into an FMA: 2e-6 relative there). The simulator pass runs this class on cuda:0.
 */
class JitLayerNormTrainingTest {
    private static float[][] run(TensorFunction f, Tensor x, Tensor[] leaves, Generator gen, Tensor weights) {
        return JitChecks.trainingValues(f, x, leaves, gen, weights);
    }

    private static void assertSame(float[] eager, float[] compiled, String what) {
        JitChecks.assertSameOnCpu(eager, compiled, what, 2e-6f);
    }

    /**
     * {@code f} fused into its layer norm with autograd (the plan says so), its training call against eager's: output,
     * gradients and the generator's state after.
     */
    private static void assertTrainingMatchesEager(TensorFunction f, Tensor x, Tensor[] leaves, Generator gen) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("native_layer_norm of rows") && plan.contains("recomputes them"), plan);
        try (MemoryScope scope = new MemoryScope()) {
            TensorFunction compiled = Jit.trace(f, x);
            gen.manualSeed(1);
            compiled.apply(x).sum().backward(); // the trace
            Tensor weights = randn(new Generator(77), f.apply(new Tensor[] {x}).shape());
            float[][] eager = run(f, x, leaves, gen, weights);
            long[] eagerState = gen.getState();
            float[][] fused = run(compiled, x, leaves, gen, weights);
            assertArrayEquals(eagerState, gen.getState(), "generator state after the compiled training call");
            for (int i = 0; i < eager.length; i++) assertSame(eager[i], fused[i], i == 0 ? "output" : "gradient of leaf " + (i - 1));
        }
    }

    @Test
    void residualAddsAndChainsMatchEagerWithEveryAffine() {
        Generator gen = new Generator(1), data = new Generator(10);
        for (long[] shape : new long[][] {{6, 9, 37}, {48, 1024}, {5000, 24}, {1, 5}}) {
            long cols = shape[shape.length - 1];
            Tensor x = randn(data, shape).requiresGrad_(true), r = randn(data, shape).requiresGrad_(true);
            Tensor w = randn(data, cols).requiresGrad_(true), b = randn(data, cols).requiresGrad_(true);
            long[] norm = {cols};
            // A residual add: both operands' gradients are the layer norm's input gradient itself.
            assertTrainingMatchesEager(in -> F.layerNorm(in[0].add(r), norm, w, b, 1e-5), x, new Tensor[] {x, r, w, b}, gen);
            // A chain with gradient kernels of its own, one operand not requiring grad, the weight only. (Not tanh: the
            // JDK's vector tanh gives other bits once C2 has compiled a kernel than before, in 0.4% of inputs, so an
            // eager kernel compiled earlier and a fused one not yet compiled can differ in the last bit.)
            Tensor c = randn(data, shape);
            assertTrainingMatchesEager(in -> F.layerNorm(in[0].mul(c).add(r).relu(), norm, w, null, 1e-5), x, new Tensor[] {x, r, w}, gen);
            // No affine, a product whose two gradients differ, a per-column operand broadcast over the rows (summed back).
            Tensor col = randn(data, cols).requiresGrad_(true);
            assertTrainingMatchesEager(in -> F.layerNorm(in[0].mul(r).add(col), norm, null, null, 1e-3), x, new Tensor[] {x, r, col}, gen);
            // A bias parameter without a weight, and no gradient for the chain's inputs (the parameters' only).
            Tensor xs = randn(data, shape);
            assertTrainingMatchesEager(in -> F.layerNorm(in[0].mul(2.0).sub(1.0), norm, null, b, 1e-5), xs, new Tensor[] {b}, gen);
        }
    }

    @Test
    void dropoutResidualLayerNormDrawsOnceAndReadsItsMask() {
        Generator gen = new Generator(2), data = new Generator(20);
        for (long[] shape : new long[][] {{16, 129}, {37, 103}, {300, 1024}}) {
            long cols = shape[1];
            Tensor x = randn(data, shape).requiresGrad_(true), r = randn(data, shape).requiresGrad_(true);
            Tensor w = randn(data, cols).requiresGrad_(true), b = randn(data, cols).requiresGrad_(true);
            TensorFunction f = in -> F.layerNorm(F.dropout(in[0], 0.1, true, gen).add(r), new long[] {cols}, w, b, 1e-5);
            // CUDA's fused layer norm does not draw: the dropout group runs alone there (JitDropoutFusionTest).
            if (!DEVICE.isCpu()) continue;
            assertTrainingMatchesEager(f, x, new Tensor[] {x, r, w, b}, gen);
            assertTrainingMatchesEager(in -> F.layerNorm(F.dropout(in[0].mul(r), 0.5, true, gen), new long[] {cols}, null, b, 1e-5), x,
                    new Tensor[] {x, r, b}, gen);
        }
    }

    /**
     * A loss whose gradient reaches the norm broadcast over its rows: a sum's (one value everywhere; the fused backward
     * makes one row of it contiguous, not the whole tensor) and a per-column weighting of the rows' sum (rows of stride
     * 0 read as they are). Output, gradients and the generator's state as eager's.
     */
    @Test
    void gradientsBroadcastOverTheRowsMatchEager() {
        Generator gen = new Generator(4), data = new Generator(60);
        for (long[] shape : new long[][] {{6, 9, 37}, {300, 1024}, {1, 5}}) {
            long cols = shape[shape.length - 1];
            Tensor x = randn(data, shape).requiresGrad_(true), r = randn(data, shape).requiresGrad_(true);
            Tensor w = randn(data, cols).requiresGrad_(true), b = randn(data, cols).requiresGrad_(true), colWeights = randn(data, cols);
            Tensor[] leaves = {x, r, w, b};
            // CUDA's fused layer norm does not draw: there the residual add alone.
            TensorFunction f = DEVICE.isCpu()
                    ? in -> F.layerNorm(F.dropout(in[0], 0.1, true, gen).add(r), new long[] {cols}, w, b, 1e-5)
                    : in -> F.layerNorm(in[0].add(r), new long[] {cols}, w, b, 1e-5);
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("native_layer_norm of rows") && plan.contains("recomputes them"), plan);
            try (MemoryScope scope = new MemoryScope()) {
                TensorFunction compiled = Jit.trace(f, x);
                compiled.apply(x).sum().backward(); // the trace
                for (boolean perColumn : new boolean[] {false, true}) {
                    float[][] eager = broadcastCall(f, x, leaves, gen, perColumn ? colWeights : null);
                    long[] eagerState = gen.getState();
                    float[][] fused = broadcastCall(compiled, x, leaves, gen, perColumn ? colWeights : null);
                    assertArrayEquals(eagerState, gen.getState(), "generator state after the compiled training call");
                    for (int i = 0; i < eager.length; i++) {
                        assertSame(eager[i], fused[i], (perColumn ? "per-column loss, " : "sum, ") + (i == 0 ? "output" : "gradient of leaf " + (i - 1)));
                    }
                }
            }
        }
    }

    /** Output and leaves' gradients of {@code f} under {@code sum()}, or of the rows' sum weighted by {@code colWeights}. */
    private static float[][] broadcastCall(TensorFunction f, Tensor x, Tensor[] leaves, Generator gen, Tensor colWeights) {
        for (Tensor t : leaves) t.setGrad(null);
        gen.manualSeed(42);
        Tensor out = f.apply(new Tensor[] {x});
        Tensor loss = colWeights == null ? out.sum() : out.reshape(-1, colWeights.shape()[0]).sum(0).mul(colWeights).sum();
        loss.backward();
        float[][] r = new float[leaves.length + 1][];
        r[0] = values(out.detach());
        for (int i = 0; i < leaves.length; i++) r[i + 1] = values(leaves[i].grad());
        return r;
    }

    @Test
    void twoNormalisedDimensionsAndARetainedGraph() {
        Generator gen = new Generator(3), data = new Generator(30);
        Tensor x = randn(data, 4, 9, 37).requiresGrad_(true), r = randn(data, 4, 9, 37).requiresGrad_(true);
        Tensor w = randn(data, 9, 37).requiresGrad_(true), b = randn(data, 9, 37).requiresGrad_(true);
        TensorFunction f = in -> F.layerNorm(in[0].add(r).mul(0.5), new long[] {9, 37}, w, b, 1e-5);
        assertTrainingMatchesEager(f, x, new Tensor[] {x, r, w, b}, gen);
        // A retained graph's second backward reads the saved inputs and statistics again: the same gradient twice.
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x);
        Tensor y = compiled.apply(x).sum();
        Tensor first = Autograd.grad(new Tensor[] {y}, new Tensor[] {w}, null, true, false, false)[0];
        Tensor second = Autograd.grad(new Tensor[] {y}, new Tensor[] {w}, null, false, false, false)[0];
        assertArrayEquals(values(first), values(second));
        // Gradients of gradients are refused with a clear error (the function runs eagerly for them).
        Tensor z = compiled.apply(x).sum();
        UnsupportedOperationException e = org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class,
                () -> Autograd.grad(new Tensor[] {z}, new Tensor[] {x}, null, true, true, false));
        assertTrue(e.getMessage().contains("layer norm fused with") && e.getMessage().contains("double backward"), e.getMessage());
    }

    @Test
    void statisticsReadByTheProgramKeepTheNormUnfused() {
        Generator data = new Generator(40);
        Tensor x = randn(data, 4, 5, 7).requiresGrad_(true), r = randn(data, 4, 5, 7);
        TensorFunction f = in -> {
            Tensor[] outs = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {in[0].add(r).exp(), null, null}, 1, 1e-5);
            return outs[0].mul(outs[2]);
        };
        String plan = Jit.explain(f, x);
        assertFalse(plan.contains("native_layer_norm of rows"), plan);
        JitChecks.assertCompiledMatchesEager(f, x, new Tensor[] {x}, 2e-6f);
    }

    /**
     * The fused kernels compute in float32: the compiled float32 gradients against eager's in float64 (within float32's
     * rounding of the chain, the statistics and the row sums), and gradcheck of the compiled function in float64 (replayed).
     */
    @Test
    void gradientsAgreeWithFloat64AndGradcheckPasses() {
        Generator data = new Generator(50);
        Tensor x = randn(data, 24, 40).requiresGrad_(true), r = randn(data, 24, 40).requiresGrad_(true);
        Tensor w = randn(data, 40).requiresGrad_(true), b = randn(data, 40).requiresGrad_(true);
        TensorFunction f = in -> F.layerNorm(in[0].mul(r).add(r).sigmoid(), new long[] {40}, w, b, 1e-5);
        TensorFunction compiled = Jit.trace(f, x);
        compiled.apply(x);
        Tensor weights = randn(new Generator(51), 24, 40);
        Tensor[] leaves = {x, r, w, b};
        for (Tensor t : leaves) t.setGrad(null);
        compiled.apply(x).mul(weights).sum().backward();
        float[][] fused = new float[leaves.length][];
        for (int i = 0; i < leaves.length; i++) fused[i] = values(leaves[i].grad());
        Tensor[] wide = new Tensor[leaves.length];
        for (int i = 0; i < leaves.length; i++) wide[i] = leaves[i].detach().to(DType.FLOAT64).requiresGrad_(true);
        F.layerNorm(wide[0].mul(wide[1]).add(wide[1]).sigmoid(), new long[] {40}, wide[2], wide[3], 1e-5).mul(weights.to(DType.FLOAT64))
                .sum().backward();
        for (int i = 0; i < leaves.length; i++) {
            float[] exact = values(wide[i].grad().to(DType.FLOAT32));
            for (int j = 0; j < exact.length; j++) {
                assertEquals(exact[j], fused[i][j], 2e-5f * Math.max(1, Math.abs(exact[j])), "leaf " + i + " at " + j);
            }
        }
        Tensor x64 = Torch.randn(new long[] {3, 6}, DType.FLOAT64, DEVICE, new Generator(52)).requiresGrad_(true);
        Tensor r64 = Torch.randn(new long[] {3, 6}, DType.FLOAT64, DEVICE, new Generator(53)).requiresGrad_(true);
        Tensor w64 = Torch.randn(new long[] {6}, DType.FLOAT64, DEVICE, new Generator(54)).requiresGrad_(true);
        TensorFunction g = in -> F.layerNorm(in[0].mul(in[1]).add(in[1]).tanh(), new long[] {6}, w64, null, 1e-5);
        TensorFunction c64 = Jit.trace(g, x64, r64);
        assertTrue(Gradcheck.check(c64::apply, x64, r64));
    }
}
