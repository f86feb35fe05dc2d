package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * DDP on CUDA tensors over the nccl backend, 2 ranks each with the CUDA simulator's {@code cuda:0}, against
 * single-process training on the global batch on the same device (see {@link DdpWorker}): parameters agree to 1e-6
 * after 5 SGD-with-momentum steps. Runs in the simulator pass, as {@link NcclCollectivesTest}.
 */
class NcclDistributedDataParallelTest {
    @BeforeAll
    static void needsCudaAndNccl() {
        NcclCollectivesTest.assumeNccl();
    }

    /**
     * The job's backstop, not its hang detector (every collective wait is bounded by the group's 60 s timeout, and the
     * simulator's NCCL fails a rank's peers when its process ends). Sized for a cold kernel cache under load: each
     * scenario's first run compiles its kernels with the simulator's g++ (sync-bn-unequal: 11 modules, 96-122 s at load
     * 14-19 with the ranks sharing each compile; 191-259 s when both ranks compiled every module, past the old 240 s at
     * load 25), 4-7 s once they are cached. Under JUnit's 600 s default of {@code scripts/cuda-sim test}.
     */
    private static final Duration JOB_TIMEOUT = Duration.ofSeconds(480);

    private static void run(String scenario) throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, JOB_TIMEOUT, NcclCollectivesTest.NCCL, DdpWorker.class, scenario);
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(r.output().contains("rank 0 ok") && r.output().contains("rank 1 ok"), r.output());
        r.output().lines().filter(l -> l.contains(" ok max")).forEach(l -> System.out.println("nccl " + scenario + " (" + r.elapsed().toMillis()
                + " ms): " + l));
    }

    @Test
    void mlpTrainsAsOneProcessOnTheGlobalBatch() throws Exception {
        run("mlp");
    }

    @Test
    void smallBucketsRebuiltInArrivalOrderGiveTheSameResult() throws Exception {
        run("mlp-small-buckets");
    }

    @Test
    void replicasWithDifferentShapesFailAtConstructionNamingTheParameter() throws Exception {
        run("layout-differs");
    }

    @Test
    void gradientsAsBucketViewsGiveTheSameResult() throws Exception {
        run("mlp-bucket-view");
    }

    @Test
    void noSyncAccumulationIntoBucketViewsEqualsOneStepOnTheWholeBatch() throws Exception {
        run("no-sync-bucket-view");
    }

    @Test
    void noSyncAccumulationEqualsOneStepOnTheWholeBatch() throws Exception {
        run("no-sync");
    }

    @Test
    void unusedParametersFoundByTheGraphWalkTakePartWithZeros() throws Exception {
        run("unused-found");
    }

    @Test
    void syncBatchNormTrainsAsOneProcessWithBatchNormOnTheGlobalBatch() throws Exception {
        run("sync-bn");
    }

    /** 4 rows on rank 0 and 9 on rank 1 against batch norm on the 13 rows, in float64, and in float32 around 1e4. */
    @Test
    void syncBatchNormWithUnequalBatchesPerRankEqualsBatchNormOnTheConcatenatedBatch() throws Exception {
        run("sync-bn-unequal");
    }

    /** Plain batch norm per rank, buffers broadcast from rank 0 (the MPI test's CNN, on 2 simulated GPUs). */
    @Test
    void cnnWithBatchNormTrainsAsOneProcessOverTheRanksShards() throws Exception {
        run("cnn");
    }

    /** No rows on rank 0 and 13 on rank 1: the empty rank still takes part in every collective, and gets empty outputs and gradients. */
    @Test
    void syncBatchNormWithARankWithoutRowsEqualsBatchNormOnTheOtherRanksRows() throws Exception {
        run("sync-bn-empty-rank");
    }
}
