package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.BatchNorm;
import org.jtorch.nn.BatchNorm1d;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.SyncBatchNorm;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * SyncBatchNorm in one process: its statistics through centred sums and an all-gather (here over a world of one, where the
 * all-reduce is the identity) equal batch norm's (itself checked against PyTorch 1.13's fixtures), its gradients pass
 * gradcheck in float64, and the conversion. The synchronisation across ranks is tested on 2 MPI ranks and 2 simulated
 * NCCL ranks ({@link DdpWorker}'s sync-bn scenario).
 */
class SyncBatchNormTest {
    private static Tensor input() {
        Torch.manualSeed(3);
        try (Tensor x = Torch.randn(5, 3, 4, 2)) {
            return x.to(DType.FLOAT64).mul(1.5).add(0.7);
        }
    }

    @Test
    void statisticsAndRunningStatsEqualBatchNormsInTraining() {
        Tensor x = input();
        Tensor w = Torch.tensor(new double[] {0.5, -1.0, 2.0});
        Tensor b = Torch.tensor(new double[] {0.1, 0.2, -0.3});
        Tensor rm1 = Torch.zeros(new long[] {3}, DType.FLOAT64, Device.cpu());
        Tensor rv1 = Torch.ones(new long[] {3}, DType.FLOAT64, Device.cpu());
        Tensor rm2 = rm1.clone();
        Tensor rv2 = rv1.clone();
        Tensor got = SyncBatchNorm.syncBatchNorm(x, rm1, rv1, w, b, 0.1, 1e-5, new WorldOfOne());
        Tensor expected = F.batchNorm(x, rm2, rv2, w, b, true, 0.1, 1e-5);
        assertArrayEquals(expected.toDoubleArray(), got.toDoubleArray(), 1e-12);
        assertArrayEquals(rm2.toDoubleArray(), rm1.toDoubleArray(), 1e-12);
        assertArrayEquals(rv2.toDoubleArray(), rv1.toDoubleArray(), 1e-12);
    }

    /**
     * Rows around 1e4 with deviation about 1, in float32: the statistics come from centred sums, so the output stays
     * within 2e-3 of batch norm on the same values in float64 (the formula E[x^2] - E[x]^2 is off by units there).
     */
    @Test
    void float32StatisticsStayAccurateWhenTheMeanIsLargeAgainstTheDeviation() {
        Tensor x64 = input().add(1e4);
        Tensor x32 = x64.to(DType.FLOAT32);
        Tensor rv32 = Torch.ones(3);
        Tensor rv64 = Torch.ones(new long[] {3}, DType.FLOAT64, Device.cpu());
        Tensor got = SyncBatchNorm.syncBatchNorm(x32, null, rv32, null, null, 0.1, 1e-5, new WorldOfOne());
        Tensor expected = F.batchNorm(x32.to(DType.FLOAT64), null, rv64, null, null, true, 0.1, 1e-5);
        assertArrayEquals(expected.toDoubleArray(), got.toDoubleArray(), 2e-3);
        assertArrayEquals(rv64.toDoubleArray(), rv32.toDoubleArray(), 2e-3);
    }

    @Test
    void gradientsPassGradcheckInFloat64() {
        Tensor x = input().requiresGrad_(true);
        Tensor w = Torch.tensor(new double[] {0.5, -1.0, 2.0}).requiresGrad_(true);
        Tensor b = Torch.tensor(new double[] {0.1, 0.2, -0.3}).requiresGrad_(true);
        WorldOfOne group = new WorldOfOne();
        assertTrue(Gradcheck.check(t -> SyncBatchNorm.syncBatchNorm(t[0], null, null, t[1], t[2], 0.1, 1e-5, group), x, w, b));
        assertTrue(group.allReduces > 0, "the statistics' gradients go through the group's all-reduce");
    }

    @Test
    void convertSyncBatchnormSynchronisesEveryBatchNormInPlaceAndReturnsTheModule() {
        BatchNorm2d inner = new BatchNorm2d(4);
        BatchNorm1d last = new BatchNorm1d(2);
        Module model = new Sequential(new Sequential(inner), new Linear(2, 2), last);
        assertFalse(inner.isSynchronized());
        assertSame(model, SyncBatchNorm.convertSyncBatchnorm(model, new WorldOfOne()));
        assertTrue(inner.isSynchronized() && last.isSynchronized());
        assertTrue(new SyncBatchNorm(3).isSynchronized());
    }

    @Test
    void aWorldOfOneOrEvaluationIsPlainBatchNorm() {
        BatchNorm plain = new BatchNorm2d(3);
        BatchNorm synced = SyncBatchNorm.convertSyncBatchnorm(new BatchNorm2d(3), new WorldOfOne());
        Tensor x = input().to(DType.FLOAT32);
        assertArrayEquals(plain.forward(x).toDoubleArray(), synced.forward(x).toDoubleArray(), 0);
        plain.eval();
        synced.eval();
        assertArrayEquals(plain.forward(x).toDoubleArray(), synced.forward(x).toDoubleArray(), 0);
    }

    @Test
    void trainingWithoutAProcessGroupSaysHowToMakeOne() {
        SyncBatchNorm bn = new SyncBatchNorm(3);
        Tensor x = input().to(DType.FLOAT32);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> bn.forward(x));
        assertEquals("SyncBatchNorm: synchronised batch norm in training needs a process group: call Distributed.initProcessGroup first, "
                + "or pass a group to SyncBatchNorm", e.getMessage());
        IllegalArgumentException dim = assertThrows(IllegalArgumentException.class, () -> bn.forward(Torch.ones(3)));
        assertEquals("SyncBatchNorm: expected at least 2D input (got 1D input)", dim.getMessage());
    }
}
