package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * A batch norm in training feeding a pointwise group (a convolution's batch norm and ReLU; a residual block's batch
 * norm, add and ReLU) runs as its statistics, then one kernel that normalises and computes the group, and one backward
 * node: compiled equals eager in values, gradients (input, weight, bias, the residual) and running statistics, with
 * and without affine parameters, at rank 2 and 4. The simulator pass runs this class on cuda:0.
 */
class JitBatchNormFusionTest {
    private static final String FUSED = "batch norm statistics of";

    /** Running statistics, one pair per side: eager and compiled update their own. */
    private record Stats(Tensor mean, Tensor var) {
        static Stats of(long c) {
            return new Stats(Torch.zeros(c).to(DEVICE), Torch.ones(c).to(DEVICE));
        }

        Stats copy() {
            return new Stats(mean.clone(), var.clone());
        }
    }

    /**
     * {@code body(x, running)} compiled and eager on three batches, each side with its own running statistics:
     * outputs within 1e-5, gradients of {@code leaves} within 1e-4 (batch norm's backward sums over the batch), running
     * statistics within 1e-6.
     */
    private static void check(java.util.function.BiFunction<Tensor, Stats, Tensor> body, long[] shape, long channels,
                              Tensor[] leaves, boolean fused) {
        Stats eagerStats = Stats.of(channels);
        Stats compiledStats = eagerStats.copy();
        TensorFunction eager = in -> body.apply(in[0], eagerStats);
        TensorFunction traced = in -> body.apply(in[0], compiledStats);
        Tensor first = randn(shape).requiresGrad_(true);
        String plan = Jit.explain(traced, first);
        assertTrue(plan.contains(FUSED) == fused && !plan.contains("runs eagerly"), plan);
        // explain traced one call: the compiled side's statistics moved once; the eager side catches up.
        eager.apply(first).close();
        TensorFunction compiled = Jit.trace(traced, first);
        eager.apply(first).close();
        for (int batch = 0; batch < 3; batch++) {
            Tensor x = randn(shape).mul(1.5).add(0.5).requiresGrad_(true);
            Tensor[] all = java.util.Arrays.copyOf(leaves, leaves.length + 1);
            all[leaves.length] = x;
            Tensor[] e = JitChecks.valueAndGradients(eager, x, all);
            Tensor[] c = JitChecks.valueAndGradients(compiled, x, all);
            assertClose(e[0], c[0], 1e-5f);
            for (int i = 1; i < e.length; i++) assertClose(e[i], c[i], 1e-4f);
            assertClose(eagerStats.mean(), compiledStats.mean(), 1e-6f);
            assertClose(eagerStats.var(), compiledStats.var(), 1e-6f);
        }
    }

    @Test
    void aConvolutionsBatchNormAndReluNormaliseInsideOneKernel() {
        Torch.manualSeed(21);
        Tensor w = randn(6, 3, 3, 3).mul(0.3).requiresGrad_(true);
        Tensor gamma = randn(6).requiresGrad_(true);
        Tensor beta = randn(6).requiresGrad_(true);
        check((x, s) -> F.batchNorm(F.conv2d(x, w, null, 1, 1), s.mean(), s.var(), gamma, beta, true, 0.1, 1e-5).relu(),
                new long[] {4, 3, 7, 5}, 6, new Tensor[] {w, gamma, beta}, true);
    }

    @Test
    void aResidualBlocksBatchNormAddAndReluNormaliseInsideOneKernel() {
        Torch.manualSeed(22);
        Tensor w = randn(3, 3, 3, 3).mul(0.3).requiresGrad_(true);
        Tensor gamma = randn(3).requiresGrad_(true);
        Tensor beta = randn(3).requiresGrad_(true);
        check((x, s) -> F.batchNorm(F.conv2d(x, w, null, 1, 1), s.mean(), s.var(), gamma, beta, true, 0.1, 1e-5).add(x).relu(),
                new long[] {2, 3, 6, 6}, 3, new Tensor[] {w, gamma, beta}, true);
    }

    /**
     * The convolution feeding the batch norm gathers its statistics block by block in its epilogue (each CPU path cuts
     * the output into different blocks: Winograd's tiles, the direct kernels' rows, the 1x1 path's columns, the batch
     * GEMM of small images, the stem's implicit GEMM), a conv bias and outputs far from zero (the moments are shifted
     * sums) included: compiled equals eager in values, gradients and running statistics.
     */
    @Test
    void aConvolutionGathersItsBatchNormsStatisticsInItsEpilogue() {
        Torch.manualSeed(27);
        record Case(long[] input, int cout, int kernel, int stride, int padding, boolean bias) {}
        Case[] cases = {
            new Case(new long[] {2, 16, 32, 32}, 16, 3, 1, 1, false),
            new Case(new long[] {3, 8, 13, 11}, 12, 3, 2, 1, true),
            new Case(new long[] {2, 16, 14, 14}, 32, 1, 1, 0, false),
            new Case(new long[] {5, 8, 4, 4}, 16, 3, 1, 1, true),
            new Case(new long[] {1, 3, 40, 40}, 8, 7, 2, 3, false),
        };
        for (Case k : cases) {
            long cin = k.input()[1];
            Tensor w = randn(k.cout(), cin, k.kernel(), k.kernel()).mul(1.0 / Math.sqrt(cin * k.kernel() * k.kernel())).requiresGrad_(true);
            // A bias of 40 puts every output far from zero: unshifted sums of squares would cancel there.
            Tensor b = k.bias() ? randn(k.cout()).add(40).requiresGrad_(true) : null;
            Tensor gamma = randn(k.cout()).requiresGrad_(true);
            Tensor beta = randn(k.cout()).requiresGrad_(true);
            Tensor[] leaves = b == null ? new Tensor[] {w, gamma, beta} : new Tensor[] {w, b, gamma, beta};
            check((x, s) -> F.batchNorm(F.conv2d(x, w, b, k.stride(), k.padding()), s.mean(), s.var(), gamma, beta, true, 0.1, 1e-5).relu(),
                    k.input(), k.cout(), leaves, true);
            TensorFunction f = in -> F.batchNorm(F.conv2d(in[0], w, b, k.stride(), k.padding()), null, null, gamma, beta, true, 0.1, 1e-5).relu();
            String plan = Jit.explain(f, randn(k.input()));
            assertTrue(plan.contains("gathered by its convolution's epilogue"), plan);
        }
    }

    /**
     * Without autograd the statistics still come from the epilogue and the normalised group writes over the
     * convolution's output (memory planning); a convolution whose output is read twice keeps its own step.
     */
    @Test
    void aConvolutionsStatisticsWithoutAutogradAndAConvolutionReadTwice() {
        Torch.manualSeed(28);
        Tensor w = randn(8, 4, 3, 3).mul(0.3);
        Tensor gamma = randn(8);
        Stats s = Stats.of(8);
        Stats t = s.copy();
        Tensor x = randn(3, 4, 9, 10);
        try (var g = Grad.noGrad()) {
            TensorFunction f = in -> F.batchNorm(F.conv2d(in[0], w, null, 1, 1), t.mean(), t.var(), gamma, null, true, 0.1, 1e-5).relu();
            // explain traces a call: on a copy of the statistics, so that both sides stay one update apart.
            Stats u = s.copy();
            TensorFunction other = in -> F.batchNorm(F.conv2d(in[0], w, null, 1, 1), u.mean(), u.var(), gamma, null, true, 0.1, 1e-5).relu();
            assertTrue(Jit.explain(other, x).contains("gathered by its convolution's epilogue"), Jit.explain(other, x));
            TensorFunction compiled = Jit.trace(f, x);
            F.batchNorm(F.conv2d(x, w, null, 1, 1), s.mean(), s.var(), gamma, null, true, 0.1, 1e-5).close();
            for (int batch = 0; batch < 2; batch++) {
                Tensor y = randn(3, 4, 9, 10);
                assertClose(F.batchNorm(F.conv2d(y, w, null, 1, 1), s.mean(), s.var(), gamma, null, true, 0.1, 1e-5).relu(),
                        compiled.apply(y), 1e-5f);
                assertClose(s.mean(), t.mean(), 1e-6f);
                assertClose(s.var(), t.var(), 1e-6f);
            }
        }
        Tensor wg = w.clone().requiresGrad_(true);
        check((in, st) -> {
            Tensor c = F.conv2d(in, wg, null, 1, 1);
            return F.batchNorm(c, st.mean(), st.var(), gamma, null, true, 0.1, 1e-5).relu().add(c.mul(0.5));
        }, new long[] {3, 4, 9, 10}, 8, new Tensor[] {wg}, true);
        TensorFunction twice = in -> {
            Tensor c = F.conv2d(in[0], wg, null, 1, 1);
            return F.batchNorm(c, null, null, gamma, null, true, 0.1, 1e-5).relu().add(c.mul(0.5));
        };
        assertFalse(Jit.explain(twice, x).contains("gathered by its convolution's epilogue"), Jit.explain(twice, x));
    }

    @Test
    void withoutAffineParametersAndOnRowsOfFeatures() {
        Torch.manualSeed(23);
        Tensor r = randn(5).requiresGrad_(true);
        // BatchNorm1d's shape, no weight or bias, a broadcast residual and a longer chain.
        check((x, s) -> F.batchNorm(x, s.mean(), s.var(), null, null, true, 0.3, 1e-3).add(r).sigmoid().mul(x),
                new long[] {9, 5}, 5, new Tensor[] {r}, true);
    }

    @Test
    void aBatchNormReadTwiceIsNotFusedAndStillMatches() {
        Torch.manualSeed(24);
        Tensor gamma = randn(4).requiresGrad_(true);
        check((x, s) -> {
            Tensor y = F.batchNorm(x, s.mean(), s.var(), gamma, null, true, 0.1, 1e-5);
            return y.relu().add(y.sum());
        }, new long[] {3, 4, 5}, 4, new Tensor[] {gamma}, false);
    }

    @Test
    void withoutRunningStatisticsAndWithThemReadBeforeTheGroup() {
        Torch.manualSeed(26);
        Tensor gamma = randn(4).requiresGrad_(true);
        Tensor x = randn(3, 4, 5).requiresGrad_(true);
        // track_running_stats=False: no running statistics to update.
        TensorFunction plain = in -> F.batchNorm(in[0], null, null, gamma, null, true, 0.1, 1e-5).relu();
        assertTrue(Jit.explain(plain, x).contains(FUSED), Jit.explain(plain, x));
        JitChecks.assertCompiledMatchesEager(plain, x, new Tensor[] {x, gamma}, 1e-5f);
        // An op between the batch norm and its ReLU reads the running mean the batch norm has just moved: fusing would
        // move the update after that read, so the batch norm runs on its own.
        Stats s = Stats.of(4);
        TensorFunction reads = in -> {
            Tensor y = F.batchNorm(in[0], s.mean(), s.var(), gamma, null, true, 0.1, 1e-5);
            Tensor m = s.mean().mul(1.0);
            return y.relu().add(m.view(1, 4, 1));
        };
        assertFalse(Jit.explain(reads, x).contains(FUSED), Jit.explain(reads, x));
    }

    @Test
    void inferenceWithTrainingStatisticsAndDoubleBackwardRefused() {
        Torch.manualSeed(25);
        Tensor gamma = randn(4).requiresGrad_(true);
        Stats s = Stats.of(4);
        Stats t = s.copy();
        TensorFunction f = in -> F.batchNorm(in[0], t.mean(), t.var(), gamma, null, true, 0.1, 1e-5).relu();
        Tensor x = randn(3, 4, 5);
        try (var g = Grad.noGrad()) {
            TensorFunction compiled = Jit.trace(f, x);
            F.batchNorm(x, s.mean(), s.var(), gamma, null, true, 0.1, 1e-5).close();
            Tensor y = randn(3, 4, 5);
            assertClose(F.batchNorm(y, s.mean(), s.var(), gamma, null, true, 0.1, 1e-5).relu(), compiled.apply(y), 1e-5f);
            assertClose(s.mean(), t.mean(), 1e-6f);
        }
        TensorFunction compiled = Jit.trace(f, x);
        Tensor out = compiled.apply(x).sum();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> Autograd.grad(new Tensor[] {out}, new Tensor[] {gamma}, null, true, true, false));
        assertTrue(e.getMessage().contains("double backward"), e.getMessage());
        assertFalse(Jit.explain(f, x).contains("runs eagerly"));
    }
}
