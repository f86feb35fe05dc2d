package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Instance, group and local response norm: gradients against finite differences in float64 (PyTorch's
 * gradcheck tolerances), module construction and state against PyTorch 1.13's behaviour; values against
 * PyTorch are in {@link NormalizationConformanceTest}.
 */
class NormalizationTest {
    private static final Generator GEN = new Generator(5);

    private static Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    private static void gradcheck(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try {
            assertTrue(Gradcheck.check(fn, inputs));
        } finally {
            for (Tensor t : inputs) t.close();
        }
    }

    @Test
    void instanceNormGradientsMatchFiniteDifferences() {
        gradcheck(x -> F.instanceNorm(x[0], null, null, x[1], x[2], true, 0.1, 1e-5), randn(2, 3, 4), randn(3), randn(3));
    }

    @Test
    void groupNormGradientsMatchFiniteDifferences() {
        gradcheck(x -> F.groupNorm(x[0], 2, x[1], x[2], 1e-5), randn(2, 4, 3), randn(4), randn(4));
    }

    @Test
    void localResponseNormGradientsMatchFiniteDifferences() {
        gradcheck(x -> F.localResponseNorm(x[0], 3, 0.1, 0.75, 1.0), randn(2, 4, 3));
    }

    @Test
    void groupNormWithOneGroupPerChannelIsInstanceNorm() {
        try (Tensor x = Torch.randn(2, 3, 5); Tensor a = F.groupNorm(x, 3); Tensor b = F.instanceNorm(x)) {
            assertArrayEquals(b.toFloatArray(), a.toFloatArray(), 1e-5f);
        }
    }

    @Test
    void groupNormRequiresChannelsDivisibleByGroups() {
        String msg = assertThrows(IllegalArgumentException.class, () -> new GroupNorm(4, 6)).getMessage();
        assertTrue(msg.contains("num_channels must be divisible by num_groups"), msg);
        try (GroupNorm gn = new GroupNorm(2, 4)) {
            assertEquals("GroupNorm(2, 4, eps=1.0E-5, affine=True)", gn.toString());
            Map<String, Tensor> sd = gn.stateDict();
            assertEquals(List.of("weight", "bias"), List.copyOf(sd.keySet()));
            sd.values().forEach(Tensor::close);
        }
    }

    @Test
    void instanceNormDefaultsHaveNoParametersOrBuffers() {
        try (InstanceNorm2d in = new InstanceNorm2d(3)) {
            assertTrue(in.stateDict().isEmpty());
            assertEquals("InstanceNorm2d(3, eps=1.0E-5, momentum=0.1, affine=False, track_running_stats=False)", in.toString());
        }
    }

    @Test
    void instanceNormTreatsAnUnbatchedInputAsABatchOfOne() {
        try (InstanceNorm1d in = new InstanceNorm1d(2); Tensor x = Torch.randn(2, 6); Tensor y = in.forward(x);
             Tensor x3 = x.unsqueeze(0); Tensor y3 = in.forward(x3)) {
            assertArrayEquals(new long[] {2, 6}, y.shape());
            assertArrayEquals(y3.toFloatArray(), y.toFloatArray(), 0f);
        }
    }

    @Test
    void instanceNormWithRunningStatsAveragesTheSamplesStatistics() {
        try (InstanceNorm1d in = new InstanceNorm1d(1, 1e-5, 1.0, false, true, DType.FLOAT64, Device.cpu());
             Tensor x = Torch.tensor(new double[] {0, 2, 10, 14}, 2, 1, 2)) {
            in.forward(x).close();
            // momentum 1: the running mean is the mean of the per-sample means (1, 12), the variance of the
            // unbiased per-sample variances (2, 8).
            assertEquals(6.5, in.runningMean().item(), 1e-12);
            assertEquals(5.0, in.runningVar().item(), 1e-12);
            in.eval();
            try (Tensor y = in.forward(x)) {
                assertEquals((0 - 6.5) / Math.sqrt(5 + 1e-5), y.toDoubleArray()[0], 1e-12);
            }
        }
    }

    @Test
    void affineInstanceNormChecksTheFeatureCount() {
        try (InstanceNorm2d in = new InstanceNorm2d(3, 1e-5, 0.1, true, false); Tensor x = Torch.randn(2, 4, 3, 3)) {
            String msg = assertThrows(IllegalArgumentException.class, () -> in.forward(x)).getMessage();
            assertTrue(msg.contains("expected input's size at dim=1 to match num_features (3), but got: 4."), msg);
        }
    }

    @Test
    void localResponseNormOfAConstantInputMatchesItsFormula() {
        // Every window of 3 channels in the middle holds 3 ones: 1 / (1 + 0.3 / 3 * 3)^0.5; the first has 2.
        try (LocalResponseNorm lrn = new LocalResponseNorm(3, 0.3, 0.5, 1.0); Tensor x = Torch.ones(1, 4, 1);
             Tensor y = lrn.forward(x)) {
            double mid = 1 / Math.sqrt(1 + 0.3);
            double edge = 1 / Math.sqrt(1 + 0.2);
            assertArrayEquals(new double[] {edge, mid, mid, edge}, y.toDoubleArray(), 1e-6);
        }
    }
}
