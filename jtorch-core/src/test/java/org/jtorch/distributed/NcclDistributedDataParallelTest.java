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

    private static void run(String scenario) throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(240), NcclCollectivesTest.NCCL, DdpWorker.class, scenario);
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(r.output().contains("rank 0 ok") && r.output().contains("rank 1 ok"), r.output());
        r.output().lines().filter(l -> l.contains(" ok max")).forEach(l -> System.out.println("nccl " + scenario + ": " + l));
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
}
