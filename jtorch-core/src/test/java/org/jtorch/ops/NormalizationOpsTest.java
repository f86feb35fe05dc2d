package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
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
 * RMS norm and group norm as declared compositions, and layer norm's formula ({@link NormalizationOps}): what the trace and autograd
 * see of them, and the formulas they compute (references computed here in double). Values against PyTorch 1.13 are in
 * {@code nn.NormalizationConformanceTest} and {@code nn.NnConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class NormalizationOpsTest {
    private static final Device DEVICE = Fixtures.device();
    @Test
    void theNormsAreCompositesDifferentiatedThroughTheirParts() {
        for (OpDef op : new OpDef[] {NormalizationOps.RMS_NORM, NormalizationOps.GROUP_NORM}) {
            assertEquals(OpDef.Kind.COMPOSITE, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(op.differentiatesThroughComposition(), op.name());
            assertTrue(op.isDifferentiable(), op.name());
        }
    }

    @Test
    void theTraceSeesLayerNormAsOneOp() {
        Tensor x = Torch.randn(3, 4, 5).to(DEVICE);
        Tensor w = Torch.randn(4, 5).to(DEVICE);
        Tensor b = Torch.randn(4, 5).to(DEVICE);
        List<String> ops = traced(() -> F.layerNorm(x, new long[] {4, 5}, w, b, 1e-5));
        assertEquals(List.of("native_layer_norm"), ops);
    }

    @Test
    void theTraceSeesGroupNormsReshapesAndReductions() {
        Tensor x = Torch.randn(2, 4, 3).to(DEVICE);
        List<String> ops = traced(() -> F.groupNorm(x, 2, Torch.ones(4).to(DEVICE), Torch.zeros(4).to(DEVICE), 1e-5));
        assertFalse(ops.contains("group_norm"), ops.toString());
        assertTrue(ops.containsAll(List.of("reshape", "var", "rsqrt")), ops.toString());
    }

    /** Layer norm of each row of {@code x} ({@code [rows, n]}) in double: {@code (x - mean) / sqrt(var + eps) * w + b}. */
    private static double[] layerNormReference(float[] x, float[] w, float[] b, int rows, int n, double eps) {
        double[] r = new double[x.length];
        for (int i = 0; i < rows; i++) {
            double mean = 0;
            for (int j = 0; j < n; j++) mean += x[i * n + j];
            mean /= n;
            double var = 0;
            for (int j = 0; j < n; j++) var += (x[i * n + j] - mean) * (x[i * n + j] - mean);
            var /= n;
            for (int j = 0; j < n; j++) r[i * n + j] = (x[i * n + j] - mean) / Math.sqrt(var + eps) * w[j] + b[j];
        }
        return r;
    }

    private static void assertClose(double[] expected, float[] actual, double tolerance) {
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < actual.length; i++) assertEquals(expected[i], actual[i], tolerance, "at " + i);
    }

    @Test
    void layerNormOverTwoTrailingDimensionsMatchesTheFormula() {
        Torch.manualSeed(7);
        Tensor x = Torch.randn(3, 2, 5).to(DEVICE);
        Tensor w = Torch.randn(2, 5).to(DEVICE);
        Tensor b = Torch.randn(2, 5).to(DEVICE);
        Tensor y = F.layerNorm(x, new long[] {2, 5}, w, b, 1e-5);
        assertArrayEquals(new long[] {3, 2, 5}, y.shape());
        assertClose(layerNormReference(x.toFloatArray(), w.toFloatArray(), b.toFloatArray(), 3, 10, 1e-5), y.toFloatArray(), 1e-5);
    }

    @Test
    void groupNormIsLayerNormOfEachGroupThenAPerChannelAffine() {
        Torch.manualSeed(8);
        Tensor x = Torch.randn(2, 4, 3).to(DEVICE);
        Tensor w = Torch.randn(4).to(DEVICE);
        Tensor b = Torch.randn(4).to(DEVICE);
        Tensor y = F.groupNorm(x, 2, w, b, 1e-5);
        // each (sample, group) is 2 channels x 3 positions: 4 rows of 6 normalised, then channel c scaled by w[c]
        float[] ones = new float[6];
        java.util.Arrays.fill(ones, 1);
        double[] normed = layerNormReference(x.toFloatArray(), ones, new float[6], 4, 6, 1e-5);
        float[] wv = w.toFloatArray();
        float[] bv = b.toFloatArray();
        for (int i = 0; i < normed.length; i++) normed[i] = normed[i] * wv[(i / 3) % 4] + bv[(i / 3) % 4];
        assertClose(normed, y.toFloatArray(), 1e-5);
    }

    @Test
    void groupNormOfBfloat16ComputesInFloat32AndRoundsOnce() {
        Torch.manualSeed(9);
        Tensor x = Torch.randn(2, 4, 8).to(DEVICE);
        Tensor low = x.to(DType.BFLOAT16);
        Tensor y = F.groupNorm(low, 2, null, null, 1e-5);
        assertEquals(DType.BFLOAT16, y.dtype());
        Tensor expected = F.groupNorm(low.to(DType.FLOAT32), 2, null, null, 1e-5).to(DType.BFLOAT16);
        assertArrayEquals(expected.toFloatArray(), y.toFloatArray());
    }

    private static final Generator GEN = new Generator(11);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void layerNormsSecondDerivativesMatchFiniteDifferences() {
        Function<Tensor[], Tensor> ln = a -> F.layerNorm(a[0], new long[] {4}, a[1], a[2], 1e-5);
        assertTrue(Gradcheck.check(firstGradient(ln), randn64(3, 4), randn64(4), randn64(4)));
    }

    @Test
    void groupNormsSecondDerivativesMatchFiniteDifferences() {
        Function<Tensor[], Tensor> gn = a -> F.groupNorm(a[0], 2, a[1], a[2], 1e-5);
        assertTrue(Gradcheck.check(firstGradient(gn), randn64(2, 4, 3), randn64(4), randn64(4)));
    }

    @Test
    void rmsNormsGradientsMatchFiniteDifferences() {
        assertTrue(Gradcheck.check(a -> F.rmsNorm(a[0], new long[] {2, 3}, a[1], 1e-6), randn64(4, 2, 3), randn64(2, 3)));
    }
}
