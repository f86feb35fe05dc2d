package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.F;
import org.jtorch.op.NormalizationOps;
import org.jtorch.ops.Dispatcher;
import org.junit.jupiter.api.Test;

/**
 * A pointwise chain feeding a layer norm (the residual add before a transformer's norm) is computed and normalised in a
 * program without autograd, its values never stored (on the CPU a block of rows at a time; on CUDA a row a block, by a
 * generated kernel that evaluates the chain where the eager layer norm's row code reads its input; programs with autograd
 * run the group, then the layer norm): compiled equals eager with and without autograd, with and without the affine
 * parameters, over one and two trailing dimensions, rows longer than a block, operands whose leading dimensions do not
 * merge, and the statistics read by the program. The simulator pass runs this class on cuda:0.
 */
class JitLayerNormFusionTest {
    /** {@code f} compiled on {@code x} (fused into the layer norm without autograd where {@code fused}) matches eager. */
    private static void check(TensorFunction f, Tensor x, Tensor[] leaves, boolean fused) {
        try (var g = Grad.noGrad()) {
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("native_layer_norm of rows") == fused, plan);
        }
        String training = Jit.explain(f, x);
        assertTrue(training.contains("native_layer_norm of rows") == fused && training.contains("recomputes them") == fused, training);
        assertCompiledMatchesEager(f, x, leaves, 2e-6f);
    }

    @Test
    void aResidualAddFeedsTheNormWithoutAnIntermediate() {
        Torch.manualSeed(31);
        Tensor residual = randn(6, 9, 37).requiresGrad_(true);
        Tensor w = randn(37).requiresGrad_(true), b = randn(37).requiresGrad_(true);
        Tensor x = randn(6, 9, 37).requiresGrad_(true);
        check(in -> F.layerNorm(in[0].add(residual), new long[] {37}, w, b, 1e-5), x, new Tensor[] {x, residual, w, b}, true);
        check(in -> F.layerNorm(in[0].mul(0.5).tanh().add(residual), new long[] {37}, null, null, 1e-3), x, new Tensor[] {x, residual}, true);
        // The same row code normalises both ways (on CUDA layernorm.cuh's ln_row): a residual add's result is eager's to the bit.
        try (var g = Grad.noGrad()) {
            TensorFunction f = in -> F.layerNorm(in[0].add(residual), new long[] {37}, w, b, 1e-5);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x);
            assertClose(f.apply(x), compiled.apply(x), 0f);
        }
    }

    @Test
    void twoNormalisedDimensionsLongRowsAndOneRow() {
        Torch.manualSeed(32);
        Tensor x = randn(4, 9, 37).requiresGrad_(true);
        Tensor w = randn(9, 37).requiresGrad_(true), b = randn(9, 37).requiresGrad_(true);
        check(in -> F.layerNorm(in[0].mul(2.0).add(1.0), new long[] {9, 37}, w, b, 1e-5), x, new Tensor[] {x, w, b}, true);
        Tensor wide = randn(3, 20000).requiresGrad_(true);
        check(in -> F.layerNorm(in[0].mul(3.0).sub(1.0), new long[] {20000}, null, null, 1e-5), wide, new Tensor[] {wide}, true);
        Tensor one = randn(1, 5).requiresGrad_(true);
        check(in -> F.layerNorm(in[0].exp(), new long[] {5}, null, null, 1e-5), one, new Tensor[] {one}, true);
    }

    @Test
    void unmergedBroadcastsTransposedWeightsAndReadStatisticsStayCorrect() {
        Torch.manualSeed(33);
        Tensor perRow = randn(4, 1, 7).requiresGrad_(true);
        Tensor x = randn(4, 5, 7).requiresGrad_(true);
        // [4, 1, 7] broadcast to [4, 5, 7] has strides [7, 0, 1]: its rows are not one stride apart (the unfused way at run time).
        check(in -> F.layerNorm(in[0].add(perRow).relu(), new long[] {7}, null, null, 1e-5), x, new Tensor[] {x, perRow}, true);
        // A weight that is a transposed view is not contiguous (the unfused way at run time).
        Tensor wt = randn(7, 5).t();
        check(in -> F.layerNorm(in[0].mul(2.0), new long[] {5, 7}, wt, null, 1e-5), x, new Tensor[] {x}, true);
        // The program reads the mean and rstd too: they are the fused kernel's.
        try (var g = Grad.noGrad()) {
            TensorFunction f = in -> {
                Tensor[] outs = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {in[0].add(perRow), null, null}, 1, 1e-5);
                return Torch.cat(new Tensor[] {outs[0].reshape(-1), outs[1].reshape(-1), outs[2].reshape(-1)}, 0);
            };
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("native_layer_norm of rows"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x);
            assertClose(f.apply(x), compiled.apply(x), 2e-6f);
            Tensor y = randn(4, 5, 7);
            Tensor z = randn(4, 5, 7);
            TensorFunction g2 = in -> {
                Tensor[] outs = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {in[0].mul(z), null, null}, 1, 1e-5);
                return outs[0].add(outs[2]).mul(outs[1]);
            };
            TensorFunction c2 = Jit.trace(g2, y);
            c2.apply(y);
            assertClose(g2.apply(y), c2.apply(y), 2e-6f);
        }
    }
}
