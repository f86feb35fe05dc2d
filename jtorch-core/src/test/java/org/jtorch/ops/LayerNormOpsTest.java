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
import org.jtorch.amp.AutocastPolicy;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.nn.F;
import org.jtorch.op.CastPolicy;
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
 * Layer norm as a declared multi-output op ({@link NormalizationOps#NATIVE_LAYER_NORM}): its saved statistics, one fused
 * backward call for the three gradients, gradients of both orders against finite differences in float64, and the
 * gradients in float32 against the same formula run as float64 tensor ops. Values against PyTorch 1.13 are in
 * {@code nn.NnConformanceTest}, {@code nn.TransformerConformanceTest} and {@code amp.AutocastConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class LayerNormOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(31);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    private static Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
    }

    @Test
    void layerNormIsStructuredWithThreeOutputsAndKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {NormalizationOps.NATIVE_LAYER_NORM, NormalizationOps.NATIVE_LAYER_NORM_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(3, op.outputCount(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertEquals(List.of("output", "mean", "rstd"), NormalizationOps.NATIVE_LAYER_NORM.outputNames());
        assertEquals(CastPolicy.FP32, AutocastPolicy.of("native_layer_norm", Device.Type.CUDA));
        assertEquals(null, AutocastPolicy.of("native_layer_norm", Device.Type.CPU));
    }

    @Test
    void theStatisticsAreEachRowsMeanAndInverseStd() {
        Tensor x = randn(3, 4, 5).mul(2).add(1);
        Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {x, null, null}, 2, 1e-3);
        Tensor x64 = x.to(DType.FLOAT64);
        Tensor mean = x64.mean(new int[] {1, 2}, true);
        Tensor rstd = x64.var(new int[] {1, 2}, 0, true).add(1e-3).rsqrt();
        assertArrayEquals(new long[] {3, 1, 1}, r[1].shape());
        assertEquals(DType.FLOAT32, r[1].dtype());
        assertClose(mean, r[1], 1e-6);
        assertClose(rstd, r[2], 1e-5);
        assertClose(x64.sub(mean).mul(rstd), r[0], 1e-5);
    }

    @Test
    void theAffineFormMatchesTheFormulaOnStridedInputs() {
        for (long cols : new long[] {1, 7, 16, 37, 100}) {
            Tensor x = randn(cols, 6).t();
            Tensor w = randn(cols), b = randn(cols);
            Tensor y = F.layerNorm(x, new long[] {cols}, w, b, 1e-5);
            Tensor x64 = x.to(DType.FLOAT64);
            Tensor expected = x64.sub(x64.mean(new int[] {1}, true)).mul(x64.var(new int[] {1}, 0, true).add(1e-5).rsqrt())
                    .mul(w.to(DType.FLOAT64)).add(b.to(DType.FLOAT64));
            assertClose(expected, y, 1e-5);
        }
    }

    @Test
    void bfloat16ComputesInFloat32AndRoundsOnce() {
        Tensor x = randn(4, 24).to(DType.BFLOAT16);
        Tensor w = randn(24).to(DType.BFLOAT16), b = randn(24).to(DType.BFLOAT16);
        Tensor y = F.layerNorm(x, new long[] {24}, w, b, 1e-5);
        assertEquals(DType.BFLOAT16, y.dtype());
        Tensor expected = F.layerNorm(x.to(DType.FLOAT32), new long[] {24}, w.to(DType.FLOAT32), b.to(DType.FLOAT32), 1e-5)
                .to(DType.BFLOAT16);
        assertArrayEquals(expected.toFloatArray(), y.toFloatArray());
    }

    @Test
    void oneFusedBackwardCallGivesTheThreeGradients() {
        Tensor x = randn(4, 3, 5).requiresGrad_(true);
        Tensor w = randn(3, 5).requiresGrad_(true);
        Tensor b = randn(3, 5).requiresGrad_(true);
        Tensor y = F.layerNorm(x, new long[] {3, 5}, w, b, 1e-5);
        assertEquals("NativeLayerNormBackward0", y.gradFn().name());
        Tensor probe = randn(4, 3, 5);
        Tensor[] g;
        KernelProfiler.reset();
        KernelProfiler.start();
        try {
            g = Autograd.grad(new Tensor[] {y.mul(probe).sum()}, new Tensor[] {x, w, b});
        } finally {
            KernelProfiler.stop();
        }
        long calls = KernelProfiler.entries().stream().filter(e -> e.kernel().startsWith("native_layer_norm_backward "))
                .mapToLong(KernelProfiler.Entry::calls).sum();
        assertEquals(1, calls);
        // the same gradients from the composite backward in float64
        Tensor x64 = x.detach().to(DType.FLOAT64), w64 = w.detach().to(DType.FLOAT64), p64 = probe.to(DType.FLOAT64);
        for (int j = 0; j < 3; j++) {
            assertClose(Normalization.layerNormBackwardComposite(p64, x64, w64, 2, 1e-5, j), g[j], 2e-5);
        }
    }

    @Test
    void aWeightOfTheWrongShapeNamesTheOpAndShapes() {
        Tensor x = randn(2, 3, 4);
        Tensor w = randn(3);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {x, w, null}, 1, 1e-5));
        assertEquals("native_layer_norm: expected weight of shape [4] for an input of shape [2, 3, 4], got [3]", e.getMessage());
        IllegalArgumentException f = assertThrows(IllegalArgumentException.class,
                () -> F.layerNorm(x, new long[] {3}, null, null, 1e-5));
        assertTrue(f.getMessage().startsWith("layerNorm: given normalized_shape=[3]"), f.getMessage());
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> ln = a -> F.layerNorm(a[0], new long[] {2, 3}, a[1], a[2], 1e-5);
        assertTrue(Gradcheck.check(ln, randn64(4, 2, 3), randn64(2, 3), randn64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(ln), randn64(4, 2, 3), randn64(2, 3), randn64(2, 3)));
        Function<Tensor[], Tensor> plain = a -> F.layerNorm(a[0], new long[] {5}, null, null, 1e-5);
        assertTrue(Gradcheck.check(plain, randn64(3, 5)));
        assertTrue(Gradcheck.check(firstGradient(plain), randn64(3, 5)));
        Function<Tensor[], Tensor> whole = a -> F.layerNorm(a[0], new long[] {2, 4}, a[1], null, 1e-5);
        assertTrue(Gradcheck.check(whole, randn64(2, 4), randn64(2, 4)));
        assertTrue(Gradcheck.check(firstGradient(whole), randn64(2, 4), randn64(2, 4)));
    }

    private static void assertClose(Tensor expected, Tensor actual, double tol) {
        double[] e = expected.to(DType.FLOAT64).toDoubleArray();
        double[] a = actual.to(DType.FLOAT64).toDoubleArray();
        assertEquals(e.length, a.length);
        for (int i = 0; i < e.length; i++) assertEquals(e[i], a[i], tol * Math.max(1, Math.abs(e[i])), "at " + i);
    }
}
