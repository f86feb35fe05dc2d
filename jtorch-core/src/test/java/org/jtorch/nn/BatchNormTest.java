package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Batch norm's behaviour as a layer (buffers, state-dict keys, train/eval, momentum) against formulas,
 * and its gradients against finite differences in float64 (PyTorch's gradcheck tolerances). Values
 * against PyTorch 1.13 are in {@link NormalizationConformanceTest}.
 */
class BatchNormTest {
    private static final Generator GEN = new Generator(11);

    private static Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN);
    }

    private static void gradcheck(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try {
            assertTrue(Gradcheck.check(fn, inputs));
        } finally {
            for (Tensor t : inputs) if (t != null) t.close();
        }
    }

    @Test
    void trainingGradientsOfInputWeightAndBiasMatchFiniteDifferences() {
        gradcheck(x -> F.batchNorm(x[0], null, null, x[1], x[2], true, 0.1, 1e-5),
                randn(3, 2, 4).requiresGrad_(), randn(2).requiresGrad_(), randn(2).requiresGrad_());
        gradcheck(x -> F.batchNorm(x[0], null, null, x[1], x[2], true, 0.1, 1e-5),
                randn(2, 3, 2, 3).requiresGrad_(), randn(3).requiresGrad_(), randn(3).requiresGrad_());
        gradcheck(x -> F.batchNorm(x[0], null, null, null, null, true, 0.1, 1e-5), randn(5, 3).requiresGrad_());
    }

    @Test
    void evalGradientsUseTheRunningStatisticsAsConstants() {
        try (Tensor rm = randn(3); Tensor rv = Torch.rand(new long[] {3}, DType.FLOAT64, Device.cpu(), GEN).add(0.5)) {
            gradcheck(x -> F.batchNorm(x[0], rm, rv, x[1], x[2], false, 0.1, 1e-5),
                    randn(2, 3, 4).requiresGrad_(), randn(3).requiresGrad_(), randn(3).requiresGrad_());
        }
    }

    @Test
    void gradientOfTheGradientMatchesFiniteDifferences() {
        try (Tensor w = randn(2, 3, 4)) {
            Function<Tensor[], Tensor> gradOfSum = x -> {
                try (Tensor y = F.batchNorm(x[0], null, null, x[1], x[2], true, 0.1, 1e-5); Tensor yw = y.mul(w);
                     Tensor loss = yw.sum()) {
                    Tensor[] g = Autograd.grad(new Tensor[] {loss}, new Tensor[] {x[0], x[1]}, null, true, true, false);
                    try (Tensor a = g[0]; Tensor b = g[1]; Tensor a2 = a.mul(a); Tensor s1 = a2.sum(); Tensor b2 = b.mul(b);
                         Tensor s2 = b2.sum()) {
                        return s1.add(s2);
                    }
                }
            };
            gradcheck(gradOfSum, randn(2, 3, 4).requiresGrad_(), randn(3).requiresGrad_(), randn(3).requiresGrad_());
        }
    }

    @Test
    void evalGradientOfTheGradientMatchesFiniteDifferences() {
        try (Tensor w = randn(2, 3, 4); Tensor rm = randn(3); Tensor rv = Torch.rand(new long[] {3}, DType.FLOAT64, Device.cpu(), GEN).add(0.5)) {
            Function<Tensor[], Tensor> gradOfSum = x -> {
                try (Tensor y = F.batchNorm(x[0], rm, rv, x[1], x[2], false, 0.1, 1e-5); Tensor yw = y.mul(y).mul(w);
                     Tensor loss = yw.sum()) {
                    Tensor[] g = Autograd.grad(new Tensor[] {loss}, new Tensor[] {x[0], x[1]}, null, true, true, false);
                    try (Tensor a = g[0]; Tensor b = g[1]; Tensor a2 = a.mul(a); Tensor s1 = a2.sum(); Tensor b2 = b.mul(b);
                         Tensor s2 = b2.sum()) {
                        return s1.add(s2);
                    }
                }
            };
            gradcheck(gradOfSum, randn(2, 3, 4).requiresGrad_(), randn(3).requiresGrad_(), randn(3).requiresGrad_());
        }
    }

    @Test
    void nonContiguousInputGradientsMatchFiniteDifferences() {
        try (Tensor base = randn(4, 3)) {
            gradcheck(x -> F.batchNorm(x[0], null, null, x[1], x[2], true, 0.1, 1e-5),
                    base.t().requiresGrad_(), randn(4).requiresGrad_(), randn(4).requiresGrad_());
        }
    }

    /**
     * The float32 vector paths flush their f32 partial sums every 2048 elements, within a plane or across
     * planes; these shapes cross those points (and have vector tails), which the small PyTorch fixtures do
     * not. Reference: the same values through the float64 (double) path.
     */
    @Test
    void float32PathsAgreeWithFloat64OnLargePlanesAndManyPlanes() {
        for (long[] shape : new long[][] {{3, 2, 4100}, {70, 2, 40}, {600, 19}}) {
            long c = shape[1];
            try (Tensor x64 = randn(shape).mul(3).add(5); Tensor g64 = randn(shape); Tensor w64 = randn(c); Tensor b64 = randn(c);
                 Tensor x32 = x64.to(DType.FLOAT32); Tensor g32 = g64.to(DType.FLOAT32); Tensor w32 = w64.to(DType.FLOAT32);
                 Tensor b32 = b64.to(DType.FLOAT32); Tensor rm64 = Torch.zeros(new long[] {c}, DType.FLOAT64, Device.cpu());
                 Tensor rv64 = Torch.ones(new long[] {c}, DType.FLOAT64, Device.cpu()); Tensor rm32 = Torch.zeros(c);
                 Tensor rv32 = Torch.ones(c)) {
                Tensor[] r64 = forwardBackward(x64, g64, w64, b64, rm64, rv64);
                Tensor[] r32 = forwardBackward(x32, g32, w32, b32, rm32, rv32);
                String[] what = {"output", "grad input", "grad weight", "grad bias"};
                for (int i = 0; i < 4; i++) {
                    org.jtorch.testing.Fixtures.assertClose(r64[i], r32[i], 1e-4, 1e-4, java.util.Arrays.toString(shape) + " " + what[i]);
                }
                org.jtorch.testing.Fixtures.assertClose(rm64, rm32, 1e-5, 1e-5, "running mean");
                org.jtorch.testing.Fixtures.assertClose(rv64, rv32, 1e-5, 1e-5, "running var");
                for (Tensor t : r64) t.close();
                for (Tensor t : r32) t.close();
            }
        }
    }

    /** Output and the gradients of sum(output * g) with respect to input, weight and bias, in training mode. */
    private static Tensor[] forwardBackward(Tensor x, Tensor g, Tensor w, Tensor b, Tensor rm, Tensor rv) {
        try (Tensor xl = x.detach().requiresGrad_(); Tensor wl = w.detach().requiresGrad_(); Tensor bl = b.detach().requiresGrad_();
             Tensor y = F.batchNorm(xl, rm, rv, wl, bl, true, 0.1, 1e-5)) {
            y.backward(g);
            return new Tensor[] {y.detach(), xl.grad().alias(), wl.grad().alias(), bl.grad().alias()};
        }
    }

    @Test
    void trainingStepUpdatesRunningStatisticsWithMomentumAndUnbiasedVariance() {
        try (BatchNorm2d bn = new BatchNorm2d(2, 1e-5, 0.1, true, true, DType.FLOAT64, Device.cpu());
             Tensor x = randn(3, 2, 2, 2); Tensor y = bn.forward(x)) {
            double[] xs = x.toDoubleArray();
            for (int ch = 0; ch < 2; ch++) {
                double sum = 0;
                double sq = 0;
                for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) sum += xs[i * 8 + ch * 4 + j];
                double mean = sum / 12;
                for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) sq += Math.pow(xs[i * 8 + ch * 4 + j] - mean, 2);
                assertEquals(0.1 * mean, bn.runningMean().toDoubleArray()[ch], 1e-12);
                assertEquals(0.9 + 0.1 * sq / 11, bn.runningVar().toDoubleArray()[ch], 1e-12);
                double expected0 = (xs[ch * 4] - mean) / Math.sqrt(sq / 12 + 1e-5);
                assertEquals(expected0, y.toDoubleArray()[ch * 4], 1e-12);
            }
            assertEquals(1L, bn.numBatchesTracked().itemLong());
            assertEquals(DType.INT64, bn.numBatchesTracked().dtype());
        }
    }

    @Test
    void nullMomentumIsACumulativeAverageOfTheBatchMeans() {
        try (BatchNorm1d bn = new BatchNorm1d(1, 1e-5, null, false, true, DType.FLOAT64, Device.cpu());
             Tensor a = Torch.tensor(new double[] {1, 3}, 2, 1); Tensor b = Torch.tensor(new double[] {5, 7}, 2, 1);
             Tensor c = Torch.tensor(new double[] {9, 11}, 2, 1)) {
            bn.forward(a).close();
            bn.forward(b).close();
            bn.forward(c).close();
            assertEquals((2 + 6 + 10) / 3.0, bn.runningMean().item(), 1e-12);
            assertEquals(2.0, bn.runningVar().item(), 1e-12); // every batch has unbiased variance 2
            assertEquals(3L, bn.numBatchesTracked().itemLong());
        }
    }

    @Test
    void evalNormalisesWithTheRunningStatistics() {
        try (BatchNorm1d bn = new BatchNorm1d(2, 0.0, 0.1, false, true, DType.FLOAT64, Device.cpu())) {
            bn.runningMean().copy_(Torch.tensor(new double[] {1, 2}));
            bn.runningVar().copy_(Torch.tensor(new double[] {4, 16}));
            bn.eval();
            try (Tensor x = Torch.tensor(new double[] {3, 6, 5, 10}, 2, 2); Tensor y = bn.forward(x)) {
                assertArrayEquals(new double[] {1, 1, 2, 2}, y.toDoubleArray(), 1e-12);
            }
            assertEquals(0L, bn.numBatchesTracked().itemLong());
        }
    }

    @Test
    void withoutRunningStatisticsEvalUsesBatchStatisticsAndTheStateDictHasNoBuffers() {
        try (BatchNorm2d bn = new BatchNorm2d(3, 1e-5, 0.1, false, false)) {
            assertNull(bn.runningMean());
            assertTrue(bn.stateDict().isEmpty());
            bn.eval();
            try (Tensor x = Torch.randn(4, 3, 2, 2); Tensor y = bn.forward(x); Tensor m = y.mean(0, 2, 3)) {
                for (double v : m.toDoubleArray()) assertEquals(0, v, 1e-5);
            }
        }
    }

    @Test
    void stateDictKeysAreThoseOfPyTorch() {
        try (BatchNorm2d bn = new BatchNorm2d(4)) {
            Map<String, Tensor> sd = bn.stateDict();
            assertEquals(java.util.List.of("weight", "bias", "running_mean", "running_var", "num_batches_tracked"),
                    java.util.List.copyOf(sd.keySet()));
            sd.values().forEach(Tensor::close);
            assertEquals("BatchNorm2d(4, eps=1.0E-5, momentum=0.1, affine=True, track_running_stats=True)", bn.toString());
        }
    }

    @Test
    void resetRunningStatsAndResetParametersRestoreTheInitialState() {
        try (BatchNorm2d bn = new BatchNorm2d(2); Tensor x = Torch.randn(3, 2, 2, 2)) {
            bn.forward(x).close();
            bn.weight().detach().fill_(3.0);
            bn.resetRunningStats();
            assertArrayEquals(new double[] {0, 0}, bn.runningMean().toDoubleArray());
            assertArrayEquals(new double[] {1, 1}, bn.runningVar().toDoubleArray());
            assertEquals(0L, bn.numBatchesTracked().itemLong());
            assertArrayEquals(new double[] {3, 3}, bn.weight().toDoubleArray());
            bn.resetParameters();
            assertArrayEquals(new double[] {1, 1}, bn.weight().toDoubleArray());
        }
    }

    @Test
    void inputRanksAreCheckedWithPyTorchsMessages() {
        try (BatchNorm2d b2 = new BatchNorm2d(3); BatchNorm1d b1 = new BatchNorm1d(3); BatchNorm3d b3 = new BatchNorm3d(3);
             Tensor x2 = Torch.randn(4, 3); Tensor x4 = Torch.randn(2, 3, 2, 2)) {
            assertEquals("BatchNorm2d: expected 4D input (got 2D input)",
                    assertThrows(IllegalArgumentException.class, () -> b2.forward(x2)).getMessage());
            assertEquals("BatchNorm1d: expected 2D or 3D input (got 4D input)",
                    assertThrows(IllegalArgumentException.class, () -> b1.forward(x4)).getMessage());
            assertEquals("BatchNorm3d: expected 5D input (got 4D input)",
                    assertThrows(IllegalArgumentException.class, () -> b3.forward(x4)).getMessage());
        }
    }

    @Test
    void trainingWithOneValuePerChannelFails() {
        try (BatchNorm1d bn = new BatchNorm1d(3); Tensor x = Torch.randn(1, 3)) {
            String msg = assertThrows(IllegalArgumentException.class, () -> bn.forward(x)).getMessage();
            assertTrue(msg.contains("Expected more than 1 value per channel when training, got input size [1, 3]"), msg);
        }
    }

    @Test
    void backwardAccumulatesIntoModuleParameters() {
        try (BatchNorm2d bn = new BatchNorm2d(2); Tensor x = Torch.randn(4, 2, 3, 3).requiresGrad_(); Tensor y = bn.forward(x);
             Tensor y2 = y.mul(y); Tensor loss = y2.sum()) {
            loss.backward();
            // d/dw sum((xhat w + b)^2) = sum(2 xhat^2) = 2 * count with w = 1, b = 0 (biased variance, eps aside).
            for (double g : bn.weight().grad().toDoubleArray()) assertEquals(2 * 36, g, 1e-2);
            for (double g : bn.bias().grad().toDoubleArray()) assertEquals(0, g, 1e-3);
            // sum(y^2) is (nearly) constant in x because y is normalised: the input gradient vanishes.
            for (double g : x.grad().toDoubleArray()) assertEquals(0, g, 1e-3);
        }
    }
}
