package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The structured ops' path through the dispatcher ({@link OpDef.Kind#STRUCTURED}): meta function, kernel per device,
 * derivative written with ops. References are the formulas (sums of products computed here in double).
 */
@ExtendWith(ScopePerTest.class)
class StructuredOpsTest {
    private static final Device DEVICE = Fixtures.device();
    @Test
    void theMatrixProductsAreStructuredWithAKernelOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {LinalgOps.MM, LinalgOps.BMM, LinalgOps.ADDMM, LinalgOps.BADDBMM, LinalgOps.LINEAR}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
            assertTrue(op.isDifferentiable(), op.name());
        }
    }

    /** {@code x @ w.T + b} in double from the tensors' values: x {@code [rows, in]}, w {@code [out, in]}. */
    private static double[] linearReference(float[] x, float[] w, float[] b, int rows, int in, int out) {
        double[] r = new double[rows * out];
        for (int i = 0; i < rows; i++) {
            for (int o = 0; o < out; o++) {
                double s = b == null ? 0 : b[o];
                for (int k = 0; k < in; k++) s += (double) x[i * in + k] * w[o * in + k];
                r[i * out + o] = s;
            }
        }
        return r;
    }

    private static void assertClose(double[] expected, Tensor actual) {
        float[] a = actual.toFloatArray();
        assertEquals(expected.length, a.length);
        for (int i = 0; i < a.length; i++) assertEquals(expected[i], a[i], 1e-5 * Math.max(1, Math.abs(expected[i])), "at " + i);
    }

    @Test
    void linearOfRowsThatNoViewCanMergeCopiesThemFirst() {
        Torch.manualSeed(3);
        Tensor base = Torch.randn(3, 4, 5).to(DEVICE);
        Tensor x = base.transpose(0, 1); // [4, 3, 5]: its 12 rows are not evenly strided
        Tensor w = Torch.randn(6, 5).to(DEVICE);
        Tensor b = Torch.randn(6).to(DEVICE);
        Tensor y = Torch.linear(x, w, b);
        assertArrayEquals(new long[] {4, 3, 6}, y.shape());
        assertClose(linearReference(x.contiguous().toFloatArray(), w.toFloatArray(), b.toFloatArray(), 12, 5, 6), y);
        // the input is left as it was
        assertArrayEquals(base.toFloatArray(), x.transpose(0, 1).contiguous().toFloatArray());
    }

    @Test
    void linearOfATransposedWeightReadsItInPlace() {
        Torch.manualSeed(4);
        Tensor x = Torch.randn(7, 5).to(DEVICE);
        Tensor w = Torch.randn(5, 3).to(DEVICE).t(); // [3, 5], column-major
        Tensor y = Torch.linear(x, w, null);
        assertClose(linearReference(x.toFloatArray(), w.contiguous().toFloatArray(), null, 7, 5, 3), y);
    }

    @Test
    void aFrozenWeightIsNotSavedSoItsInputMayChangeBeforeBackward() {
        Torch.manualSeed(5);
        Tensor x = Torch.randn(4, 3).to(DEVICE).requiresGrad_();
        Tensor w = Torch.randn(2, 3).to(DEVICE);
        Tensor b = Torch.randn(2).to(DEVICE);
        Tensor y = Torch.linear(x, w, b);
        // x's gradient reads only the weight: x itself is not saved, so changing it in place is harmless
        try (var g = Grad.noGrad()) {
            x.add_(1.0);
        }
        y.sum().backward();
        float[] expected = new float[12];
        float[] wv = w.toFloatArray();
        for (int i = 0; i < 4; i++) for (int k = 0; k < 3; k++) expected[i * 3 + k] = wv[k] + wv[3 + k];
        assertArrayEquals(expected, x.grad().toFloatArray(), 1e-6f);
    }

    @Test
    void aTrainedWeightStillSavesTheInput() {
        Tensor x = Torch.randn(4, 3).to(DEVICE);
        Tensor w = Torch.randn(2, 3).to(DEVICE).requiresGrad_();
        Tensor y = Torch.linear(x, w, null);
        try (var g = Grad.noGrad()) {
            x.add_(1.0);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> y.sum().backward());
        assertTrue(e.getMessage().contains("modified by an inplace operation"), e.getMessage());
    }

    @Test
    void addmmScalesAndItsGradientsMatchTheFormula() {
        Torch.manualSeed(6);
        Tensor input = Torch.randn(3).to(DEVICE).requiresGrad_(); // broadcast over rows
        Tensor m1 = Torch.randn(2, 4).to(DEVICE).requiresGrad_();
        Tensor m2 = Torch.randn(4, 3).to(DEVICE).requiresGrad_();
        Tensor y = Torch.addmm(input, m1, m2, 0.5, 2.0);
        float[] in = input.toFloatArray(), a = m1.toFloatArray(), bm = m2.toFloatArray();
        double[] expected = new double[6];
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 3; j++) {
                double s = 0;
                for (int k = 0; k < 4; k++) s += (double) a[i * 4 + k] * bm[k * 3 + j];
                expected[i * 3 + j] = 0.5 * in[j] + 2.0 * s;
            }
        }
        assertClose(expected, y);
        y.sum().backward();
        // d/d input: beta summed over the broadcast rows
        assertArrayEquals(new float[] {1, 1, 1}, input.grad().toFloatArray(), 1e-6f);
        // d/d m1[i, k] = alpha * sum_j m2[k, j]
        float[] g1 = m1.grad().toFloatArray();
        for (int i = 0; i < 2; i++) {
            for (int k = 0; k < 4; k++) {
                double s = 0;
                for (int j = 0; j < 3; j++) s += bm[k * 3 + j];
                assertEquals(2.0 * s, g1[i * 4 + k], 1e-5);
            }
        }
    }

    @Test
    void theMetaFunctionNamesTheOpAndShapes() {
        Tensor a = Torch.randn(2, 3).to(DEVICE);
        Tensor b = Torch.randn(4, 5).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.mm(b));
        assertEquals("mm: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Torch.addmm(Torch.randn(3, 3).to(DEVICE), a, Torch.randn(3, 2).to(DEVICE), 1, 1));
        assertTrue(e.getMessage().startsWith("addmm:"), e.getMessage());
    }

    /** A convolution primitive called generically (as the JIT replays it) with its geometry: n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow. */
    private static final double[] GEOMETRY = {2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 5, 5};

    @Test
    void aConvolutionPrimitiveCalledWithItsGeometryIsConv2d() {
        Torch.manualSeed(7);
        Tensor x = Torch.randn(2, 3, 5, 5).to(DEVICE);
        Tensor w = Torch.randn(4, 3, 3, 3).to(DEVICE);
        Tensor b = Torch.randn(4).to(DEVICE);
        Tensor y = Dispatcher.call(org.jtorch.op.ConvolutionOps.CONVOLUTION, new Tensor[] {x, w, b}, GEOMETRY);
        Tensor expected = org.jtorch.nn.F.conv2d(x, w, b, new int[] {1}, new int[] {1}, new int[] {1}, 1);
        assertArrayEquals(expected.toFloatArray(), y.toFloatArray(), 0f);
    }

    @Test
    void aConvolutionPrimitiveChecksItsOperandsAgainstTheGeometry() {
        Tensor x = Torch.randn(2, 3, 6, 5).to(DEVICE);
        Tensor w = Torch.randn(4, 3, 3, 3).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(org.jtorch.op.ConvolutionOps.CONVOLUTION, new Tensor[] {x, w, null}, GEOMETRY));
        assertEquals("convolution: expected input of shape [2, 3, 5, 5] for its geometry, got [2, 3, 6, 5]", e.getMessage());
    }
}
