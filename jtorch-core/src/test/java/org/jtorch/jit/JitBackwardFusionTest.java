package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Edge;
import org.jtorch.autograd.Node;
import org.jtorch.nn.F;
import org.junit.jupiter.api.Test;

/**
 * Backward fusion in compiled training: a linear layer whose input is a linear + ReLU layer's output (read by it alone)
 * masks its input's gradient by that ReLU in its GEMM's epilogue, and the ReLU layer's backward takes the gradient as
 * it comes (no ReLU pass). Compiled equals eager, values and every gradient (the input's included, through each mask),
 * on GEMM shapes reaching several blocks; a ReLU output read twice or returned keeps its own ReLU backward. The
 * simulator pass runs this class on cuda:0.
 */
class JitBackwardFusionTest {
    /** The names of the autograd nodes reachable from {@code t}'s, depth first. */
    private static List<String> backwardNodes(Tensor t) {
        List<String> names = new ArrayList<>();
        collect(t.gradFn(), names);
        return names;
    }

    private static void collect(Node n, List<String> names) {
        if (n == null) return;
        names.add(n.name());
        for (Edge e : n.nextFunctions()) if (e != null) collect(e.node(), names);
    }

    @Test
    void anMlpsReluMasksRunInTheNextLayersGemm() {
        Torch.manualSeed(31);
        // {batch, in, hidden, out}: one block, several row and column blocks, a long k.
        int[][] sizes = {{16, 30, 40, 5}, {130, 70, 300, 10}, {64, 600, 96, 33}};
        for (int[] s : sizes) {
            Tensor w1 = randn(s[2], s[1]).mul(0.2).requiresGrad_(true);
            Tensor b1 = randn(s[2]).requiresGrad_(true);
            Tensor w2 = randn(s[2], s[2]).mul(0.1).requiresGrad_(true);
            Tensor b2 = randn(s[2]).requiresGrad_(true);
            Tensor w3 = randn(s[3], s[2]).mul(0.1).requiresGrad_(true);
            Tensor b3 = randn(s[3]).requiresGrad_(true);
            Tensor x = randn(s[0], s[1]).requiresGrad_(true);
            TensorFunction f = in -> F.linear(F.linear(F.linear(in[0], w1, b1).relu(), w2, b2).relu(), w3, b3);
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("the input's gradient masked by %1's ReLU in the GEMM's epilogue")
                    && plan.contains("linear, its input's gradient masked by %3's ReLU"), plan);
            assertEquals(2, plan.split("arrives masked", -1).length - 1, plan);
            assertCompiledMatchesEager(f, x, new Tensor[] {x, w1, b1, w2, b2, w3, b3}, 1e-5f);
            // On CUDA a linear + ReLU layer is one cuBLASLt call with its own autograd (the ReLU masked again: same values).
            if (!JitChecks.DEVICE.isCpu()) continue;
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x).close();
            try (Tensor y = compiled.apply(x)) {
                List<String> nodes = backwardNodes(y);
                assertEquals(List.of("JitLinearMaskedBackward", "JitLinearMaskedBackward", "JitLinearReluBackward"),
                        nodes.stream().filter(n -> n.startsWith("Jit")).toList(), nodes.toString());
            }
        }
    }

    /** Without a bias, and with an input that needs no gradient (the first layer's input gradient is not computed). */
    @Test
    void biasFreeLayersAndAnInputWithoutGradient() {
        Torch.manualSeed(32);
        Tensor w1 = randn(48, 24).mul(0.3).requiresGrad_(true);
        Tensor w2 = randn(12, 48).mul(0.2).requiresGrad_(true);
        Tensor x = randn(20, 24);
        TensorFunction f = in -> F.linear(F.linear(in[0], w1, null).relu(), w2, null);
        assertTrue(Jit.explain(f, x).contains("masked"), Jit.explain(f, x));
        assertCompiledMatchesEager(f, x, new Tensor[] {w1, w2}, 1e-5f);
    }

    /** A second ReLU layer after the first: both fused layers are one node each, the first's gradient masked by the second. */
    @Test
    void twoReluLayersInARowAndAReluLayerLast() {
        Torch.manualSeed(33);
        Tensor w1 = randn(40, 20).mul(0.3).requiresGrad_(true);
        Tensor b1 = randn(40).requiresGrad_(true);
        Tensor w2 = randn(30, 40).mul(0.2).requiresGrad_(true);
        Tensor b2 = randn(30).requiresGrad_(true);
        Tensor x = randn(50, 20).requiresGrad_(true);
        // The last layer's ReLU is the program's output: its own mask runs in its node (its gradient arrives unmasked).
        TensorFunction f = in -> F.linear(F.linear(in[0], w1, b1).relu(), w2, b2).relu();
        String plan = Jit.explain(f, x);
        assertEquals(1, plan.split("arrives masked", -1).length - 1, plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {x, w1, b1, w2, b2}, 1e-5f);
    }

    /**
     * Layers of widths a backend's own fused GEMM and ReLU may take or decline one by one (60, 64): the second layer
     * masks the first's gradient whatever the backend does for it, since the first then does not mask it itself. (On
     * the simulator cuBLASLt takes both widths, so this does not reach a mixed case there.)
     */
    @Test
    void aLayerTheBackendWouldFuseStillMasksTheLayerBefore() {
        Torch.manualSeed(37);
        Tensor w1 = randn(60, 20).mul(0.3).requiresGrad_(true);
        Tensor b1 = randn(60).requiresGrad_(true);
        Tensor w2 = randn(64, 60).mul(0.2).requiresGrad_(true);
        Tensor b2 = randn(64).requiresGrad_(true);
        Tensor w3 = randn(5, 64).mul(0.2).requiresGrad_(true);
        Tensor x = randn(24, 20).requiresGrad_(true);
        TensorFunction f = in -> F.linear(F.linear(F.linear(in[0], w1, b1).relu(), w2, b2).relu(), w3, null);
        assertTrue(Jit.explain(f, x).contains("the input's gradient masked by %1's ReLU"), Jit.explain(f, x));
        assertCompiledMatchesEager(f, x, new Tensor[] {x, w1, b1, w2, b2, w3}, 1e-5f);
    }

    /** A ReLU output read by two ops, or returned, keeps its own backward: the consumers' gradients add up before the mask. */
    @Test
    void aReluOutputReadTwiceOrReturnedIsNotMaskedByItsReader() {
        Torch.manualSeed(34);
        Tensor w1 = randn(32, 16).mul(0.3).requiresGrad_(true);
        Tensor b1 = randn(32).requiresGrad_(true);
        Tensor w2 = randn(8, 32).mul(0.2).requiresGrad_(true);
        Tensor x = randn(10, 16).requiresGrad_(true);
        TensorFunction twice = in -> {
            Tensor h = F.linear(in[0], w1, b1).relu();
            return F.linear(h, w2, null).sum(new int[] {1}, true).add(h.sum(new int[] {1}, true));
        };
        assertFalse(Jit.explain(twice, x).contains("masked"), Jit.explain(twice, x));
        assertCompiledMatchesEager(twice, x, new Tensor[] {x, w1, b1, w2}, 1e-5f);
        TensorFunction returned = in -> F.linear(in[0], w1, b1).relu();
        assertFalse(Jit.explain(returned, x).contains("masked"), Jit.explain(returned, x));
    }

    /**
     * A training batch norm's lone ReLU is applied as batch norm's backward reads the gradient (the mask recomputed from
     * the input, through a weight of either sign and the bias): compiled equals eager, values and gradients of the
     * input, weight and bias, with and without affine parameters, on planes of whole vectors, planes with a tail, and
     * planes too small for the kernel (the masked gradient written first, as before), and [n, c] rows (BatchNorm1d; CUDA
     * reads them with its rows kernels).
     */
    @Test
    void aBatchNormsReluIsMaskedInsideItsBackward() {
        Torch.manualSeed(36);
        for (long[] shape : new long[][] {{4, 6, 8, 8}, {3, 5, 7, 9}, {2, 3, 35}, {5, 4, 3}, {40, 6}}) {
            int c = (int) shape[1];
            Tensor gamma = randn(c).requiresGrad_(true);
            Tensor beta = randn(c).mul(0.5).requiresGrad_(true);
            Tensor x = randn(shape).mul(1.5).add(0.5).requiresGrad_(true);
            TensorFunction affine = in -> F.batchNorm(in[0], null, null, gamma, beta, true, 0.1, 1e-5).relu();
            String plan = Jit.explain(affine, x);
            assertTrue(plan.contains("then one kernel normalising"), plan);
            assertCompiledMatchesEager(affine, x, new Tensor[] {x, gamma, beta}, 1e-5f);
            TensorFunction plain = in -> F.batchNorm(in[0], null, null, null, null, true, 0.1, 1e-5).relu();
            assertCompiledMatchesEager(plain, x, new Tensor[] {x}, 1e-5f);
        }
    }

    /**
     * A residual block's join, {@code relu(batch_norm(x) + r)} in training: on the CPU batch norm's first backward pass
     * writes the masked gradient (the mask recomputed from {@code x} and {@code r}), which its second pass and {@code
     * r}'s gradient then read; no separate masking pass and no plain batch norm backward run. Compiled equals eager,
     * values and every gradient ({@code r}'s included), on planes of whole vectors, with a tail, too small for the
     * kernel, with {@code r} on either side of the add, without affine parameters, and with an {@code r} that is
     * transposed, broadcast or without gradient (the last three take the old path where they must).
     */
    @Test
    void aResidualJoinsMaskedGradientIsWrittenOnceByBatchNormsBackward() {
        Torch.manualSeed(37);
        for (long[] shape : new long[][] {{4, 6, 8, 8}, {3, 5, 7, 9}, {2, 3, 35}, {5, 4, 3}, {40, 6}}) {
            int c = (int) shape[1];
            Tensor gamma = randn(c).requiresGrad_(true);
            Tensor beta = randn(c).mul(0.5).requiresGrad_(true);
            Tensor x = randn(shape).mul(1.5).add(0.5).requiresGrad_(true);
            Tensor r = randn(shape).requiresGrad_(true);
            TensorFunction join = in -> F.batchNorm(in[0], null, null, gamma, beta, true, 0.1, 1e-5).add(r).relu();
            String plan = Jit.explain(join, x);
            assertTrue(plan.contains("backward: the join's masked gradient"), plan);
            assertCompiledMatchesEager(join, x, new Tensor[] {x, r, gamma, beta}, 1e-5f);
            TensorFunction swapped = in -> r.add(F.batchNorm(in[0], null, null, gamma, beta, true, 0.1, 1e-5)).relu();
            assertCompiledMatchesEager(swapped, x, new Tensor[] {x, r, gamma, beta}, 1e-5f);
            TensorFunction plain = in -> F.batchNorm(in[0], null, null, null, null, true, 0.1, 1e-5).add(r).relu();
            assertCompiledMatchesEager(plain, x, new Tensor[] {x, r}, 1e-5f);
            Tensor constant = randn(shape);
            TensorFunction noGrad = in -> F.batchNorm(in[0], null, null, gamma, beta, true, 0.1, 1e-5).add(constant).relu();
            assertCompiledMatchesEager(noGrad, x, new Tensor[] {x, gamma, beta}, 1e-5f);
        }
        Tensor gamma = randn(6).requiresGrad_(true);
        Tensor x = randn(4, 6, 8, 8).requiresGrad_(true);
        Tensor transposed = randn(4, 6, 8, 8).transpose(2, 3).requiresGrad_(true);
        TensorFunction strided = in -> F.batchNorm(in[0], null, null, gamma, null, true, 0.1, 1e-5).add(transposed).relu();
        assertCompiledMatchesEager(strided, x, new Tensor[] {x, gamma, transposed}, 1e-5f);
        Tensor perChannel = randn(6, 1, 1).requiresGrad_(true);
        TensorFunction broadcast = in -> F.batchNorm(in[0], null, null, gamma, null, true, 0.1, 1e-5).add(perChannel).relu();
        assertCompiledMatchesEager(broadcast, x, new Tensor[] {x, gamma, perChannel}, 1e-5f);
    }

    /**
     * A compiled ResNet basic block trained (conv, batch norm, ReLU, conv, batch norm, the join): on the CPU its backward
     * runs the join's kernel and the first batch norm's masked one, and no plain batch norm backward; values and every
     * gradient equal eager's.
     */
    @Test
    void aResidualBlocksBackwardRunsNoSeparateMaskingPass() {
        Torch.manualSeed(38);
        org.jtorch.nn.Conv2d conv1 = new org.jtorch.nn.Conv2d(8, 8, 3, org.jtorch.nn.Conv2d.options().padding(1).bias(false));
        org.jtorch.nn.Conv2d conv2 = new org.jtorch.nn.Conv2d(8, 8, 3, org.jtorch.nn.Conv2d.options().padding(1).bias(false));
        org.jtorch.nn.BatchNorm2d bn1 = new org.jtorch.nn.BatchNorm2d(8);
        org.jtorch.nn.BatchNorm2d bn2 = new org.jtorch.nn.BatchNorm2d(8);
        for (org.jtorch.nn.Module m : List.of(conv1, conv2, bn1, bn2)) m.to(JitChecks.DEVICE);
        TensorFunction block = in -> bn2.forward(conv2.forward(bn1.forward(conv1.forward(in[0])).relu())).add(in[0]).relu();
        Tensor x = randn(4, 8, 12, 12).requiresGrad_(true);
        List<Tensor> leaves = new ArrayList<>(List.of(x));
        for (org.jtorch.nn.Module m : List.of(conv1, conv2, bn1, bn2)) leaves.addAll(m.parameters());
        TensorFunction compiled = Jit.trace(block, x);
        Tensor[] eager = JitChecks.valueAndGradients(block, x, leaves.toArray(new Tensor[0]));
        JitChecks.valueAndGradients(compiled, x, leaves.toArray(new Tensor[0]));
        Tensor[] fused = JitChecks.valueAndGradients(compiled, x, leaves.toArray(new Tensor[0]));
        // Two convolutions' and two batch norms' backward in f32, their sums in other orders than eager's: 1e-4.
        for (int i = 0; i < eager.length; i++) JitChecks.assertClose(eager[i], fused[i], 1e-4f);
        if (!JitChecks.DEVICE.isCpu()) return;
        Tensor y = compiled.apply(x);
        Tensor weights = randn(y.shape());
        org.jtorch.backend.KernelProfiler.reset();
        org.jtorch.backend.KernelProfiler.start();
        try {
            // A weighted sum: a plain one's gradient is a broadcast of ones, which the kernel does not read (it falls back).
            y.mul(weights).sum().backward();
        } finally {
            org.jtorch.backend.KernelProfiler.stop();
        }
        List<String> kernels = org.jtorch.backend.KernelProfiler.entries().stream().map(org.jtorch.backend.KernelProfiler.Entry::kernel).toList();
        assertTrue(kernels.stream().anyMatch(k -> k.startsWith("normalization.batchNormAddReluBackward ")), kernels.toString());
        assertTrue(kernels.stream().anyMatch(k -> k.startsWith("normalization.batchNormReluBackward ")), kernels.toString());
        assertFalse(kernels.stream().anyMatch(k -> k.startsWith("normalization.batchNormBackward ")), kernels.toString());
    }

    /** A model trains the same compiled: SGD steps of an MLP, eager against compiled from the same weights. */
    @Test
    void anMlpTrainsTheSameCompiledOverSteps() {
        Torch.manualSeed(35);
        org.jtorch.nn.Sequential eager = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(30, 64), new org.jtorch.nn.ReLU(),
                new org.jtorch.nn.Linear(64, 64), new org.jtorch.nn.ReLU(), new org.jtorch.nn.Linear(64, 7));
        Torch.manualSeed(35);
        org.jtorch.nn.Sequential twin = new org.jtorch.nn.Sequential(new org.jtorch.nn.Linear(30, 64), new org.jtorch.nn.ReLU(),
                new org.jtorch.nn.Linear(64, 64), new org.jtorch.nn.ReLU(), new org.jtorch.nn.Linear(64, 7));
        eager.to(JitChecks.DEVICE);
        twin.to(JitChecks.DEVICE);
        TensorFunction compiled = Jit.compile(twin);
        org.jtorch.optim.SGD a = new org.jtorch.optim.SGD(eager.parameters(), org.jtorch.optim.SGD.options().lr(0.05).momentum(0.9));
        org.jtorch.optim.SGD b = new org.jtorch.optim.SGD(twin.parameters(), org.jtorch.optim.SGD.options().lr(0.05).momentum(0.9));
        Tensor x = randn(32, 30);
        Tensor y = Torch.randint(0, 7, 32).to(JitChecks.DEVICE);
        for (int step = 0; step < 4; step++) {
            a.zeroGrad();
            b.zeroGrad();
            F.crossEntropy(eager.forward(x), y).backward();
            F.crossEntropy(compiled.apply(x), y).backward();
            a.step();
            b.step();
        }
        List<Tensor> pa = eager.parameters();
        List<Tensor> pb = twin.parameters();
        for (int i = 0; i < pa.size(); i++) JitChecks.assertClose(pa.get(i).detach(), pb.get(i).detach(), 1e-5f);
    }
}
