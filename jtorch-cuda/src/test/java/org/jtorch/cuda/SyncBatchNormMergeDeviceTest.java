package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.ops.Dispatcher;
import org.jtorch.op.NormalizationOps;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The synchronised batch norm's merge ({@code batch_norm_gather_stats_with_counts}) and {@code batch_norm_backward_elemt}'s
 * coefficients as one {@code syncbn.cu} kernel each on cuda:0: the bits of the composition of float64 pointwise kernels
 * that CUDA ran before (written here with tensor ops on the device, step for step), running statistics of every floating
 * dtype, strided operands, a rank without rows; one launch for the merge, two for backward_elemt (coefficients, input
 * gradient). The CPU's own composition differs in the last bit where its kernels round differently (its add with alpha,
 * its input-gradient loop), so it is compared within a tolerance.
 */
class SyncBatchNormMergeDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;

    @BeforeEach
    void needsCuda() {
        DeviceCases.assumeAvailable(CUDA);
    }

    /** {@code [ranks, c]} per-rank statistics in {@code t}: means around {@code offset}, invstds in (0.2, 2.2); rank 1 without rows. */
    private static Tensor[] rankStatistics(long seed, int ranks, int c, DType t, double offset) {
        Generator g = new Generator(seed);
        double[] mean = Torch.randn(new long[] {ranks, c}, DType.FLOAT64, Device.cpu(), g).toDoubleArray();
        double[] invstd = Torch.rand(new long[] {ranks, c}, DType.FLOAT64, Device.cpu(), g).toDoubleArray();
        double[] counts = new double[ranks];
        for (int r = 0; r < ranks; r++) {
            counts[r] = r == 1 ? 0 : 3 + 5 * r;
            for (int j = 0; j < c; j++) {
                mean[r * c + j] = r == 1 ? 0 : offset + mean[r * c + j];
                invstd[r * c + j] = r == 1 ? 0 : 0.2 + 2 * invstd[r * c + j];
            }
        }
        return new Tensor[] {Torch.tensor(mean).reshape(ranks, c).to(t), Torch.tensor(invstd).reshape(ranks, c).to(t),
                             Torch.tensor(counts).to(t)};
    }

    /** |a - b| <= tol (1 + |a|) elementwise, NaN where the other is. */
    private static void assertClose(Tensor expected, Tensor got, double tol, String what) {
        double[] a = expected.to(Device.cpu()).to(DType.FLOAT64).toDoubleArray(), b = got.to(Device.cpu()).to(DType.FLOAT64).toDoubleArray();
        assertEquals(a.length, b.length, what);
        for (int i = 0; i < a.length; i++) {
            assertTrue(Double.isNaN(a[i]) ? Double.isNaN(b[i]) : Math.abs(a[i] - b[i]) <= tol * (1 + Math.abs(a[i])),
                    what + " at " + i + ": " + a[i] + " against " + b[i]);
        }
    }

    private static long[] bits(Tensor t) {
        double[] v = t.to(Device.cpu()).to(DType.FLOAT64).toDoubleArray();
        long[] b = new long[v.length];
        for (int i = 0; i < v.length; i++) b[i] = Double.doubleToRawLongBits(v[i]);
        return b;
    }

    /** The per-rank statistics on the device, their {@code [ranks, c]} matrices stored transposed when asked. */
    private static Tensor[] onDevice(Tensor[] stats, boolean transposed) {
        Tensor mean = stats[0].to(CUDA), invstd = stats[1].to(CUDA);
        if (transposed) { // the same values through [c, ranks] storage
            mean = mean.transpose(0, 1).contiguous().transpose(0, 1);
            invstd = invstd.transpose(0, 1).contiguous().transpose(0, 1);
        }
        return new Tensor[] {mean, invstd, stats[2].to(CUDA)};
    }

    /** Running statistics of {@code c} channels in {@code t} on {@code device}: {mean, var}. */
    private static Tensor[] running(int c, DType t, Device device) {
        return new Tensor[] {Torch.linspace(-1, 1, c).to(t).to(device), Torch.linspace(0.5, 2, c).to(t).to(device)};
    }

    /** The merge by the op: {mean, invstd, running mean, running var} after one call. */
    private static Tensor[] gather(Tensor[] stats, Tensor[] run, double momentum) {
        Tensor x = Torch.ones(new long[] {2, stats[0].size(1)}, stats[0].dtype(), stats[0].device());
        Tensor[] out = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS,
                new Tensor[] {x, stats[0], stats[1], run[0], run[1], stats[2]}, momentum, EPS);
        return new Tensor[] {out[0], out[1], run[0], run[1]};
    }

    private static final double EPS = 1e-5, TINY = 1e-150;

    /**
     * The merge as NormalizationOpKernels composed it before this kernel, with tensor ops (each a float64 pointwise kernel
     * on the device, rounded once): the running statistics moved as {@code running.mul_(1 - momentum).add_(batch, momentum)}.
     */
    private static Tensor[] composed(Tensor[] stats, Tensor[] run, double momentum) {
        Tensor mean = stats[0].to(DType.FLOAT64), invstd = stats[1].to(DType.FLOAT64), counts = stats[2].to(DType.FLOAT64);
        int ranks = (int) mean.size(0);
        long c = mean.size(1);
        Tensor total = Torch.zeros(new long[] {c}, DType.FLOAT64, CUDA), weighted = Torch.zeros(new long[] {c}, DType.FLOAT64, CUDA);
        for (int r = 0; r < ranks; r++) {
            total = total.add(counts.select(0, r));
            weighted = weighted.add(counts.select(0, r).mul(mean.select(0, r)));
        }
        Tensor m = weighted.div(total), m2 = Torch.zeros(new long[] {c}, DType.FLOAT64, CUDA);
        for (int r = 0; r < ranks; r++) {
            Tensor n = counts.select(0, r), t = invstd.select(0, r).clampMin(TINY);
            t = n.mul(t.mul(t).reciprocal().sub(EPS));
            Tensor e = mean.select(0, r).sub(m);
            m2 = m2.add(t.add(n.mul(e).mul(e)));
        }
        Tensor inv = m2.div(total).add(EPS).rsqrt();
        Tensor d = total.sub(1);
        d = d.add(d.log().mul(0.0));
        run[0].mul_(1 - momentum).add_(m, momentum);
        run[1].mul_(1 - momentum).add_(m2.div(d), momentum);
        return new Tensor[] {m.to(stats[0].dtype()), inv.to(stats[1].dtype()), run[0], run[1]};
    }

    @Test
    void theMergeHasTheCompositionsBits() {
        String[] names = {"mean", "invstd", "running mean", "running var"};
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (DType runningType : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
                for (double offset : new double[] {0, 1e4}) {
                    Tensor[] stats = rankStatistics(7, 4, 37, t, offset);
                    Tensor[] cpu = gather(stats, running(37, runningType, Device.cpu()), 0.1);
                    for (boolean transposed : new boolean[] {false, true}) {
                        Tensor[] dev = onDevice(stats, transposed);
                        Tensor[] got = gather(dev, running(37, runningType, CUDA), 0.1);
                        Tensor[] expected = composed(dev, running(37, runningType, CUDA), 0.1);
                        String what = t + " statistics, " + runningType + " running, offset " + offset + (transposed ? ", strided" : "");
                        for (int i = 0; i < 4; i++) {
                            assertArrayEquals(bits(expected[i]), bits(got[i]), names[i] + ", " + what);
                            assertClose(cpu[i], got[i], runningType == DType.FLOAT16 || runningType == DType.BFLOAT16 ? 1e-2 : 1e-6,
                                    names[i] + " against the CPU, " + what);
                        }
                    }
                }
            }
        }
        // one rank of one row: the unbiased running variance is NaN, as the composition's
        Tensor[] one = onDevice(new Tensor[] {Torch.tensor(new float[] {0.5f, -1f}).reshape(1, 2), Torch.tensor(new float[] {2f, 4f}).reshape(1, 2),
                                              Torch.tensor(new float[] {1f})}, false);
        Tensor[] got = gather(one, running(2, DType.FLOAT32, CUDA), 0.3), expected = composed(one, running(2, DType.FLOAT32, CUDA), 0.3);
        for (int i = 0; i < 4; i++) assertArrayEquals(bits(expected[i]), bits(got[i]), names[i] + ", one row");
        assertTrue(Double.isNaN(got[3].toDoubleArray()[0]));
    }

    /** backward_elemt's operands on {@code device}: {grad_out, x, mean, invstd, weight or null, sum_dy, sum_dy_xmu, counts}. */
    private static Tensor[] backwardOperands(Device device, DType t, boolean weighted) {
        Generator g = new Generator(3);
        int n = 5, c = 6, s = 4;
        Tensor go = Torch.randn(new long[] {n, c, s}, t, Device.cpu(), g).to(device), x = Torch.randn(new long[] {n, c, s}, t, Device.cpu(), g).to(device);
        Tensor mean = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), g).to(device);
        Tensor invstd = Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), g).add(0.3).to(device);
        Tensor w = Torch.randn(new long[] {c}, t, Device.cpu(), g).to(device);
        Tensor sumDy = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), g).to(device);
        Tensor sumDyXmu = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), g).to(device);
        Tensor counts = Torch.tensor(new float[] {5f, 0f, 11f}).to(device);
        return new Tensor[] {go, x, mean, invstd, weighted ? w : null, sumDy, sumDyXmu, counts};
    }

    @Test
    void theInputGradientsCoefficientsHaveTheCompositionsBits() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (boolean weighted : new boolean[] {true, false}) {
                Tensor[] in = backwardOperands(CUDA, t, weighted);
                // the coefficients by the kernel, and as composed with float64 tensor ops
                Tensor coef = Torch.zeros(new long[] {6, 3}, DType.FLOAT64, CUDA);
                Backends.of(CUDA).normalization().syncBatchNormCoefficients(Dispatcher.view(in[3]), in[4] == null ? null : Dispatcher.view(in[4]),
                        Dispatcher.view(in[5]), Dispatcher.view(in[6]), Dispatcher.view(in[7]), Dispatcher.view(coef));
                Tensor invstd = in[3].to(DType.FLOAT64), total = Torch.zeros(new long[] {6}, DType.FLOAT64, CUDA);
                for (int r = 0; r < 3; r++) total = total.add(in[7].to(DType.FLOAT64).select(0, r));
                Tensor scale = in[4] == null ? invstd : invstd.mul(in[4].to(DType.FLOAT64));
                Tensor centred = in[6].to(DType.FLOAT64).div(total).mul(invstd).mul(invstd);
                Tensor expected = Torch.stack(new Tensor[] {scale, centred, in[5].to(DType.FLOAT64).div(total)}, 1);
                assertArrayEquals(bits(expected), bits(coef), "coefficients, " + t + ", weight " + weighted);
                // the input gradient, against the CPU's
                Tensor got = Dispatcher.call(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT, in);
                Tensor cpu = Dispatcher.call(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT, backwardOperands(Device.cpu(), t, weighted));
                assertClose(cpu, got, 1e-5, "input gradient, " + t);
            }
        }
    }

    @Test
    void oneLaunchForTheMergeTwoForBackwardElemt() {
        GemmEpilogueDeviceTest.counts(); // skips on a real GPU
        int c = 64;
        Tensor[] stats = rankStatistics(5, 8, c, DType.FLOAT32, 0);
        Tensor mean = stats[0].to(CUDA), invstd = stats[1].to(CUDA), counts = stats[2].to(CUDA);
        Tensor rm = Torch.zeros(new long[] {c}, DType.FLOAT32, CUDA), rv = Torch.ones(new long[] {c}, DType.FLOAT32, CUDA);
        Tensor x = Torch.randn(new long[] {4, c, 9}, DType.FLOAT32, Device.cpu(), new Generator(1)).to(CUDA);
        Tensor go = Torch.randn(new long[] {4, c, 9}, DType.FLOAT32, Device.cpu(), new Generator(2)).to(CUDA);
        Tensor w = Torch.ones(new long[] {c}, DType.FLOAT32, CUDA), sums = Torch.ones(new long[] {c}, DType.FLOAT32, CUDA);
        Cuda.synchronize(CUDA);
        long before = GemmEpilogueDeviceTest.counts()[0];
        Tensor[] merged = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS, new Tensor[] {x, mean, invstd, rm, rv, counts}, 0.1, 1e-5);
        Cuda.synchronize(CUDA);
        long gather = GemmEpilogueDeviceTest.counts()[0] - before;
        before = GemmEpilogueDeviceTest.counts()[0];
        Dispatcher.call(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT, new Tensor[] {go, x, merged[0], merged[1], w, sums, sums, counts});
        Cuda.synchronize(CUDA);
        long elemt = GemmEpilogueDeviceTest.counts()[0] - before;
        // the merge of 8 ranks ([8, 64]) in one launch; backward_elemt's coefficients and its input gradient in two
        assertEquals("merge 1, backward_elemt 2", "merge " + gather + ", backward_elemt " + elemt, "launches, " + Arrays.toString(stats[0].shape()));
    }
}
