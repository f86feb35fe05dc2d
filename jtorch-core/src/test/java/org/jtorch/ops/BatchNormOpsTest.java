package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Batch norm as a declared multi-output op ({@link NormalizationOps#NATIVE_BATCH_NORM}): its saved statistics, PyTorch's
 * running-statistics update, one fused backward call for the three gradients, and gradients of both orders against
 * finite differences in float64. Values against PyTorch 1.13 are in {@code nn.NormalizationConformanceTest}; the
 * references here are the formulas, computed with tensor ops in float64.
 */
@ExtendWith(ScopePerTest.class)
class BatchNormOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(21);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void batchNormIsStructuredWithThreeOutputsAndKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {NormalizationOps.NATIVE_BATCH_NORM, NormalizationOps.NATIVE_BATCH_NORM_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(3, op.outputCount(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertEquals(List.of("output", "save_mean", "save_invstd"), NormalizationOps.NATIVE_BATCH_NORM.outputNames());
        assertTrue(NormalizationOps.NATIVE_BATCH_NORM.isDifferentiable());
    }

    @Test
    void trainingSavesTheBatchMeanAndInverseStdAndMovesTheRunningStatistics() {
        Torch.manualSeed(8);
        Tensor x = Torch.randn(4, 3, 5).to(DEVICE);
        Tensor rm = Torch.randn(3).to(DEVICE);
        Tensor rv = Torch.rand(3).add(0.5).to(DEVICE);
        Tensor rm0 = rm.to(DType.FLOAT64), rv0 = rv.to(DType.FLOAT64);
        Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x, null, null, rm, rv}, 1, 0.25, 1e-3);
        Tensor x64 = x.to(DType.FLOAT64);
        Tensor mean = x64.mean(new int[] {0, 2}, false);
        Tensor biased = x64.var(new int[] {0, 2}, 0, false);
        Tensor unbiased = x64.var(new int[] {0, 2}, 1, false);
        assertClose(mean, r[1], 1e-6);
        assertClose(biased.add(1e-3).rsqrt(), r[2], 1e-5);
        assertClose(rm0.mul(0.75).add(mean.mul(0.25)), rm, 1e-6);
        assertClose(rv0.mul(0.75).add(unbiased.mul(0.25)), rv, 1e-6);
        assertClose(x64.sub(mean.reshape(1, 3, 1)).mul(biased.add(1e-3).rsqrt().reshape(1, 3, 1)), r[0], 1e-5);
    }

    @Test
    void evaluationNormalisesWithTheRunningStatisticsAndLeavesThemAlone() {
        Torch.manualSeed(9);
        Tensor x = Torch.randn(2, 3, 4).to(DEVICE);
        Tensor rm = Torch.randn(3).to(DEVICE);
        Tensor rv = Torch.rand(3).add(0.5).to(DEVICE);
        float[] before = rm.toFloatArray();
        Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x, null, null, rm, rv}, 0, 0.1, 1e-5);
        assertArrayEquals(before, rm.toFloatArray());
        assertArrayEquals(rm.toFloatArray(), r[1].toFloatArray());
        Tensor expected = x.to(DType.FLOAT64).sub(rm.to(DType.FLOAT64).reshape(1, 3, 1))
                .div(rv.to(DType.FLOAT64).add(1e-5).sqrt().reshape(1, 3, 1));
        assertClose(expected, r[0], 1e-5);
    }

    @Test
    void oneFusedBackwardCallGivesTheThreeGradients() {
        Tensor x = Torch.randn(new long[] {4, 3, 5}, DType.FLOAT32, DEVICE, GEN).requiresGrad_(true);
        Tensor w = Torch.rand(3).to(DEVICE).requiresGrad_(true);
        Tensor b = Torch.randn(3).to(DEVICE).requiresGrad_(true);
        Tensor y = F.batchNorm(x, null, null, w, b, true, 0.1, 1e-5);
        assertEquals("NativeBatchNormBackward0", y.gradFn().name());
        KernelProfiler.reset();
        KernelProfiler.start();
        try {
            Tensor[] g = Autograd.grad(new Tensor[] {y.mul(y).sum()}, new Tensor[] {x, w, b});
            assertEquals(3, g.length);
        } finally {
            KernelProfiler.stop();
        }
        long calls = KernelProfiler.entries().stream().filter(e -> e.kernel().startsWith("native_batch_norm_backward "))
                .mapToLong(KernelProfiler.Entry::calls).sum();
        assertEquals(1, calls);
    }

    @Test
    void aWeightOfTheWrongSizeNamesTheOpAndShapes() {
        Tensor x = Torch.randn(2, 3, 4).to(DEVICE);
        Tensor w = Torch.randn(4).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x, w, null, null, null}, 1, 0.1, 1e-5));
        assertEquals("native_batch_norm: expected weight of shape [3] for an input of shape [2, 3, 4], got [4]", e.getMessage());
    }

    @Test
    void trainingGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> bn = a -> F.batchNorm(a[0], null, null, a[1], a[2], true, 0.1, 1e-5);
        Tensor[] in = {randn64(3, 2, 4), randn64(2), randn64(2)};
        assertTrue(Gradcheck.check(bn, in));
        assertTrue(Gradcheck.check(firstGradient(bn), randn64(3, 2, 4), randn64(2), randn64(2)));
    }

    @Test
    void evaluationGradientsOfBothOrdersMatchFiniteDifferences() {
        Tensor rm = Torch.randn(new long[] {2}, DType.FLOAT64, Device.cpu(), GEN);
        Tensor rv = Torch.rand(new long[] {2}, DType.FLOAT64, Device.cpu(), GEN).add(0.5);
        Function<Tensor[], Tensor> bn = a -> F.batchNorm(a[0], rm, rv, a[1], a[2], false, 0.1, 1e-5);
        assertTrue(Gradcheck.check(bn, randn64(3, 2, 4), randn64(2), randn64(2)));
        assertTrue(Gradcheck.check(firstGradient(bn), randn64(3, 2, 4), randn64(2), randn64(2)));
    }

    private static void assertClose(Tensor expected, Tensor actual, double tol) {
        double[] e = expected.to(DType.FLOAT64).toDoubleArray();
        double[] a = actual.to(DType.FLOAT64).toDoubleArray();
        assertEquals(e.length, a.length);
        for (int i = 0; i < e.length; i++) assertEquals(e[i], a[i], tol * Math.max(1, Math.abs(e[i])), "element " + i);
    }
}
