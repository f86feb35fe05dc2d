package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * nn.Init and the layers' default initialisations follow PyTorch 1.13's distributions (bounds, means
 * and standard deviations from the formulas in torch/nn/init.py, checked with ~5-sigma tolerances;
 * jtorch's Philox streams differ from PyTorch's, so values are compared statistically).
 */
class InitTest {
    private static final Generator GEN = new Generator(42);

    /** Asserts all values in [lo, hi] and the uniform law's mean and std. */
    private static void assertUniform(Tensor t, double lo, double hi) {
        double[] v = t.toDoubleArray();
        for (double x : v) assertTrue(x >= lo && x <= hi, x + " outside [" + lo + ", " + hi + "]");
        double std = (hi - lo) / Math.sqrt(12);
        assertMoments(v, (lo + hi) / 2, std);
    }

    private static void assertMoments(double[] v, double mean, double std) {
        double m = 0;
        for (double x : v) m += x;
        m /= v.length;
        double s = 0;
        for (double x : v) s += (x - m) * (x - m);
        s = Math.sqrt(s / (v.length - 1));
        assertEquals(mean, m, 5 * std / Math.sqrt(v.length) + 1e-12, "mean");
        assertEquals(std, s, 0.05 * std + 1e-12, "std");
    }

    @Test
    void linearDefaultsToUniformOneOverSqrtFanIn() {
        try (Linear l = new Linear(400, 50, true, DType.FLOAT32, Device.cpu(), GEN)) {
            double bound = 1 / Math.sqrt(400);
            assertUniform(l.weight(), -bound, bound);
            double[] b = l.bias().toDoubleArray();
            for (double x : b) assertTrue(Math.abs(x) <= bound);
        }
    }

    @Test
    void embeddingDefaultsToStandardNormalWithZeroPaddingRow() {
        try (Embedding e = new Embedding(1000, 20, 3L, DType.FLOAT32, Device.cpu(), GEN)) {
            try (Tensor row = e.weight().select(0, 3)) {
                for (double x : row.toDoubleArray()) assertEquals(0, x);
            }
            assertMoments(e.weight().toDoubleArray(), 0, 1);
        }
    }

    @Test
    void layerNormDefaultsToOnesAndZeros() {
        try (LayerNorm ln = new LayerNorm(5)) {
            for (double x : ln.weight().toDoubleArray()) assertEquals(1, x);
            for (double x : ln.bias().toDoubleArray()) assertEquals(0, x);
        }
    }

    @Test
    void bilinearDefaultsToUniformOneOverSqrtIn1() {
        try (Bilinear b = new Bilinear(25, 30, 20, true, DType.FLOAT32, Device.cpu(), GEN)) {
            assertUniform(b.weight(), -0.2, 0.2);
        }
    }

    @Test
    void multiheadAttentionDefaults() {
        try (MultiheadAttention m = new MultiheadAttention(64, 4, 0, true, false, DType.FLOAT32, Device.cpu(), GEN)) {
            double bound = Math.sqrt(6.0 / (64 + 192));
            assertUniform(m.parameter("in_proj_weight"), -bound, bound);
            for (double x : m.parameter("in_proj_bias").toDoubleArray()) assertEquals(0, x);
            for (double x : m.outProj().bias().toDoubleArray()) assertEquals(0, x);
            double lb = 1 / Math.sqrt(64);
            for (double x : m.outProj().weight().toDoubleArray()) assertTrue(Math.abs(x) <= lb);
        }
    }

    @Test
    void xavierAndKaiming() {
        try (Tensor t = Torch.empty(200, 300)) {
            Init.xavierUniform_(t, 2.0, GEN);
            double a = 2.0 * Math.sqrt(6.0 / 500);
            assertUniform(t, -a, a);
            Init.xavierNormal_(t, 1.0, GEN);
            assertMoments(t.toDoubleArray(), 0, Math.sqrt(2.0 / 500));
            Init.kaimingUniform_(t, 0, Init.FanMode.FAN_OUT, "relu", GEN);
            double k = Math.sqrt(2.0) * Math.sqrt(3.0 / 200);
            assertUniform(t, -k, k);
            Init.kaimingNormal_(t, 0, Init.FanMode.FAN_IN, "relu", GEN);
            assertMoments(t.toDoubleArray(), 0, Math.sqrt(2.0 / 300));
        }
    }

    @Test
    void fansCountTheReceptiveField() {
        try (Tensor conv = Torch.empty(8, 3, 5, 5)) {
            long[] fans = Init.calculateFanInAndFanOut(conv);
            assertEquals(75, fans[0]);
            assertEquals(200, fans[1]);
        }
        try (Tensor v = Torch.empty(4)) {
            assertThrows(IllegalArgumentException.class, () -> Init.calculateFanInAndFanOut(v));
        }
    }

    @Test
    void gainsAreTorchNnInitsTable() {
        assertEquals(1.0, Init.calculateGain("linear"));
        assertEquals(1.0, Init.calculateGain("sigmoid"));
        assertEquals(5.0 / 3, Init.calculateGain("tanh"));
        assertEquals(Math.sqrt(2), Init.calculateGain("relu"));
        assertEquals(Math.sqrt(2 / (1 + 0.01 * 0.01)), Init.calculateGain("leaky_relu"));
        assertEquals(Math.sqrt(2 / 26.0), Init.calculateGain("leaky_relu", 5.0), 1e-15);
        assertEquals(0.75, Init.calculateGain("selu"));
        assertThrows(IllegalArgumentException.class, () -> Init.calculateGain("swish"));
    }

    @Test
    void uniformNormalConstant() {
        try (Tensor t = Torch.empty(50000)) {
            Init.uniform_(t, -3, 5, GEN);
            assertUniform(t, -3, 5);
            Init.normal_(t, 2, 0.5, GEN);
            assertMoments(t.toDoubleArray(), 2, 0.5);
            Init.constant_(t, 1.5);
            for (double x : t.toDoubleArray()) assertEquals(1.5, x);
        }
    }

    @Test
    void truncNormalStaysInBoundsWithTheTruncatedMoments() {
        try (Tensor t = Torch.empty(50000).to(DType.FLOAT64)) {
            Init.truncNormal_(t, 0, 1, -1, 2, GEN);
            double[] v = t.toDoubleArray();
            for (double x : v) assertTrue(x >= -1 && x <= 2);
            // Truncated N(0,1) on [-1, 2]: mean = (phi(-1) - phi(2)) / Z, var = 1 + (-phi(-1) - 2 phi(2)) / Z - mean^2.
            double phiA = Math.exp(-0.5) / Math.sqrt(2 * Math.PI);
            double phiB = Math.exp(-2) / Math.sqrt(2 * Math.PI);
            double z = 0.9772498680518208 - 0.15865525393145707;
            double mean = (phiA - phiB) / z;
            double var = 1 + (-1 * phiA - 2 * phiB) / z - mean * mean;
            assertMoments(v, mean, Math.sqrt(var));
        }
    }

    @Test
    void erfinvInvertsErf() {
        for (double y : new double[] {-0.999, -0.5, 0, 0.1, 0.7, 0.99999}) {
            assertEquals(y, org.jtorch.op.SpecialFunctions.erf(Init.erfinv(y)), 1e-14);
        }
    }

    @Test
    void orthogonalGivesOrthonormalRowsOrColumns() {
        for (long[] shape : new long[][] {{6, 4}, {4, 6}, {3, 2, 2}}) {
            try (Tensor t = Torch.empty(shape)) {
                Init.orthogonal_(t, 1.0, GEN);
                int rows = (int) shape[0];
                int cols = (int) (t.numel() / rows);
                double[] a = t.toDoubleArray();
                boolean tall = rows >= cols;
                int n = tall ? cols : rows;
                for (int i = 0; i < n; i++) {
                    for (int j = 0; j < n; j++) {
                        double dot = 0;
                        for (int k = 0; k < (tall ? rows : cols); k++) {
                            dot += tall ? a[k * cols + i] * a[k * cols + j] : a[i * cols + k] * a[j * cols + k];
                        }
                        assertEquals(i == j ? 1 : 0, dot, 1e-5);
                    }
                }
            }
        }
    }

    @Test
    void initRecordsNoGradientAndKeepsLeaves() {
        try (Tensor w = Torch.empty(3, 3).requiresGrad_(true)) {
            Init.kaimingUniform_(w, Math.sqrt(5), Init.FanMode.FAN_IN, "leaky_relu", GEN);
            assertTrue(w.isLeaf());
            assertFalse(w.grad() != null);
        }
    }
}
