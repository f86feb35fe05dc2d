package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.op.NormalizationOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Batch norm's running statistics and saved {@code invstd} ({@link NormalizationOps#NATIVE_BATCH_NORM}) have the bits of
 * the tensor formulas they stand for, PyTorch's: {@code running.mul_(1 - momentum).add_(batch, momentum)} (the variance
 * unbiased, {@code batch * count / (count - 1)}, the momentum {@code 1 / num_batches_tracked} for a module whose momentum
 * is null) and {@code var.to(float64).add(eps).rsqrt()} rounded once (the variance biased), whichever kernel computes
 * them (the CPU's host loop or the composition of pointwise kernels). The batch's statistics are
 * {@link NormalizationOps#BATCH_NORM_MEAN_VAR}'s, the same kernel's; values against PyTorch 1.13 are in
 * {@code nn.NormalizationConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class BatchNormRunningStatsBitsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final double[] EPS = {1e-5, 1e-3, 0.1, 1e-12, 3.7};

    @Test
    void trainingMovesTheRunningStatisticsAndSavesInvstdWithTheFormulasBits() {
        Random random = new Random(2025);
        Generator gen = new Generator(31);
        DType[] inputs = {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16};
        for (int trial = 0; trial < 120; trial++) {
            DType input = inputs[trial % 3];
            DType stats = input == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
            // bfloat16 running statistics (a module converted whole) on every other bfloat16 trial
            DType running = input == DType.BFLOAT16 && trial % 2 == 0 ? DType.BFLOAT16 : stats;
            long n = 2 + random.nextInt(4), c = 1 + random.nextInt(70), s = 1 + random.nextInt(20);
            double momentum = switch (trial % 8) {
                case 0 -> 0;
                case 1 -> 1;
                default -> random.nextDouble();
            };
            double eps = EPS[random.nextInt(EPS.length)];
            Tensor x = Torch.randn(new long[] {n, c, s}, DType.FLOAT32, Device.cpu(), gen).mul(1 + 4 * random.nextDouble())
                    .add(random.nextGaussian()).to(input).to(DEVICE);
            Tensor rm = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), gen).to(running).to(DEVICE);
            Tensor rv = Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), gen).add(0.5).to(running).to(DEVICE);
            Tensor expectedMean = rm.clone(), expectedVar = rv.clone();
            Tensor[] meanVar = Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {x});
            double unbias = (double) (n * s) / (n * s - 1);
            expectedMean.mul_(1 - momentum).add_(meanVar[0], momentum);
            expectedVar.mul_(1 - momentum).add_(meanVar[1], momentum * unbias);
            Tensor expectedInvstd = meanVar[1].to(DType.FLOAT64).add(eps).rsqrt().to(stats);
            Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x, null, null, rm, rv}, 1, momentum, eps);
            String what = "[" + n + ", " + c + ", " + s + "] " + input + " input, " + running + " running, momentum " + momentum
                    + ", eps " + eps;
            assertSameBits(meanVar[0], r[1], "save_mean of " + what);
            assertSameBits(expectedInvstd, r[2], "save_invstd of " + what);
            assertSameBits(expectedMean, rm, "running_mean of " + what);
            assertSameBits(expectedVar, rv, "running_var of " + what);
        }
    }

    @Test
    void theJitsStatisticsFromAnEpilogueMoveTheRunningStatisticsWithTheFormulasBits() {
        Random random = new Random(5);
        Generator gen = new Generator(34);
        for (int trial = 0; trial < 60; trial++) {
            DType dtype = trial % 3 == 2 ? DType.FLOAT64 : DType.FLOAT32;
            long c = 1 + random.nextInt(70), count = 2 + random.nextInt(500);
            double momentum = trial % 5 == 0 ? 1.0 / (1 + random.nextInt(9)) : random.nextDouble();
            double eps = EPS[random.nextInt(EPS.length)];
            Tensor mean = Torch.randn(new long[] {c}, dtype, Device.cpu(), gen).to(DEVICE);
            Tensor var = Torch.rand(new long[] {c}, dtype, Device.cpu(), gen).mul(4).to(DEVICE);
            Tensor rm = Torch.randn(new long[] {c}, dtype, Device.cpu(), gen).to(DEVICE);
            Tensor rv = Torch.rand(new long[] {c}, dtype, Device.cpu(), gen).add(0.5).to(DEVICE);
            Tensor expectedMean = rm.clone().mul_(1 - momentum).add_(mean, momentum);
            Tensor expectedVar = rv.clone().mul_(1 - momentum).add_(var, momentum * ((double) count / (count - 1)));
            Tensor expectedInvstd = var.to(DType.FLOAT64).add(eps).rsqrt().to(dtype);
            Tensor[] r = Normalization.batchNormStatistics(mean, var, count, rm, rv, momentum, eps);
            String what = "[" + c + "] " + dtype + " over " + count + ", momentum " + momentum + ", eps " + eps;
            assertSameBits(expectedInvstd, r[1], "invstd of " + what);
            assertSameBits(expectedMean, rm, "running_mean of " + what);
            assertSameBits(expectedVar, rv, "running_var of " + what);
        }
    }

    @Test
    void aModuleWithoutMomentumTakesTheCumulativeAverageWithTheFormulasBits() {
        Random random = new Random(7);
        Generator gen = new Generator(32);
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            long c = 37;
            BatchNorm2d bn = new BatchNorm2d(c, 1e-5, null, true, true, dtype, DEVICE);
            Tensor expectedMean = bn.runningMean().clone(), expectedVar = bn.runningVar().clone();
            for (long step = 1; step <= 6; step++) {
                long n = 2 + random.nextInt(3), h = 1 + random.nextInt(6), w = 2 + random.nextInt(6);
                Tensor x = Torch.randn(new long[] {n, c, h, w}, dtype, Device.cpu(), gen).mul(step).to(DEVICE);
                Tensor[] meanVar = Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {x});
                double factor = 1.0 / step, unbias = (double) (n * h * w) / (n * h * w - 1);
                expectedMean.mul_(1 - factor).add_(meanVar[0], factor);
                expectedVar.mul_(1 - factor).add_(meanVar[1], factor * unbias);
                try (var off = Grad.noGrad()) {
                    bn.forward(x);
                }
                assertEquals(step, bn.numBatchesTracked().itemLong(), "num_batches_tracked");
                assertSameBits(expectedMean, bn.runningMean(), dtype + " running_mean after step " + step);
                assertSameBits(expectedVar, bn.runningVar(), dtype + " running_var after step " + step);
            }
        }
    }

    @Test
    void evaluationSavesTheRunningVariancesInvstdWithTheFormulasBits() {
        Random random = new Random(11);
        Generator gen = new Generator(33);
        for (DType input : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16}) {
            DType stats = input == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
            for (double eps : EPS) {
                long c = 1 + random.nextInt(70);
                Tensor x = Torch.randn(new long[] {3, c, 5}, DType.FLOAT32, Device.cpu(), gen).to(input).to(DEVICE);
                Tensor rm = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), gen).to(stats).to(DEVICE);
                Tensor rv = Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), gen).mul(3).to(stats).to(DEVICE);
                Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x, null, null, rm, rv}, 0, 0.1, eps);
                assertSameBits(rv.to(DType.FLOAT64).add(eps).rsqrt().to(stats), r[2], input + " save_invstd, eps " + eps);
            }
        }
    }

    /** The same dtype and every element's bits (float64 holds every float32 and bfloat16 value exactly). */
    private static void assertSameBits(Tensor expected, Tensor actual, String what) {
        assertEquals(expected.dtype(), actual.dtype(), what + ": dtype");
        double[] e = expected.toDoubleArray(), a = actual.toDoubleArray();
        assertEquals(e.length, a.length, what + ": elements");
        for (int i = 0; i < e.length; i++) {
            assertEquals(Double.doubleToRawLongBits(e[i]), Double.doubleToRawLongBits(a[i]), what + ": element " + i + ", expected " + e[i]
                    + " but was " + a[i]);
        }
    }
}
