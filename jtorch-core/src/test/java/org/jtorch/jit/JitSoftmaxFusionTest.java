package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * A pointwise chain feeding a softmax or log-softmax over the last dimension is computed and normalised a block of
 * rows at a time (on the CPU; a row a block on CUDA, the chain evaluated where the row is read): compiled equals eager, forward and
 * backward, with broadcast operands, rows longer than a block, and operands whose leading dimensions do not merge.
 * The simulator pass runs this class on cuda:0.
 */
class JitSoftmaxFusionTest {
    /** {@code f} compiled on {@code x} (fused into the softmax where {@code fused}) matches eager. */
    private static void check(TensorFunction f, Tensor x, Tensor[] leaves, boolean fused) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("softmax of rows") == fused, plan);
        assertCompiledMatchesEager(f, x, leaves, 2e-6f);
    }

    @Test
    void aScaledMaskedScoreFeedsTheSoftmaxWithoutAnIntermediate() {
        Torch.manualSeed(21);
        Tensor bias = randn(37).requiresGrad_(true);
        Tensor x = randn(6, 9, 37).requiresGrad_(true);
        check(in -> in[0].mul(0.125).add(bias).tanh().softmax(-1), x, new Tensor[] {x, bias}, true);
        check(in -> F.logSoftmax(in[0].mul(2.0).sub(bias), 2), x, new Tensor[] {x, bias}, true);
    }

    @Test
    void rowsLongerThanABlockAndSingleOps() {
        Torch.manualSeed(22);
        Tensor x = randn(3, 20000).requiresGrad_(true);
        check(in -> in[0].mul(3.0).logSoftmax(1), x, new Tensor[] {x}, true);
        Tensor y = randn(1, 5).requiresGrad_(true);
        check(in -> in[0].exp().softmax(1), y, new Tensor[] {y}, true);
    }

    @Test
    void unmergedBroadcastsAndOtherDimsStayCorrect() {
        Torch.manualSeed(23);
        Tensor perRow = randn(4, 1, 7).requiresGrad_(true);
        Tensor x = randn(4, 5, 7).requiresGrad_(true);
        // [4, 1, 7] broadcast to [4, 5, 7] has strides [7, 0, 1]: its rows are not one stride apart.
        check(in -> in[0].add(perRow).relu().softmax(-1), x, new Tensor[] {x, perRow}, true);
        // A softmax over another dimension is not fused.
        check(in -> in[0].mul(2.0).add(1.0).softmax(1), x, new Tensor[] {x}, false);
    }
}
