package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * DDP on 2 MPI ranks against single-process training on the global batch (the reference runs inside each rank, see
 * {@link DdpWorker}): parameters agree to 1e-6 after 5 SGD-with-momentum steps.
 */
class DistributedDataParallelTest {
    @BeforeAll
    static void needsOpenMpi() {
        assumeTrue(MpiJob.available(), "Open MPI (openmpi-bin, libopenmpi3) is not installed");
    }

    private static MpiJob.Result run(String scenario) throws Exception {
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(120), DdpWorker.class, scenario);
        assertEquals(0, r.exitCode(), r.output());
        assertTrue(r.output().contains("rank 0 ok") && r.output().contains("rank 1 ok"), r.output());
        r.output().lines().filter(l -> l.contains(" ok max")).forEach(l -> System.out.println(scenario + ": " + l));
        return r;
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
    void gradientsAsBucketViewsGiveTheSameResult() throws Exception {
        run("mlp-bucket-view");
    }

    @Test
    void noSyncAccumulationIntoBucketViewsEqualsOneStepOnTheWholeBatch() throws Exception {
        run("no-sync-bucket-view");
    }

    @Test
    void cnnWithBatchNormTrainsAsOneProcessOverTheRanksShards() throws Exception {
        run("cnn");
    }

    @Test
    void noSyncAccumulationEqualsOneStepOnTheWholeBatch() throws Exception {
        run("no-sync");
    }

    @Test
    void replicasWithDifferentShapesFailAtConstructionNamingTheParameter() throws Exception {
        MpiJob.Result r = run("layout-differs");
        assertTrue(r.output().contains("rank 1: DistributedDataParallel: the ranks' replicas differ"), r.output());
    }

    @Test
    void parametersWithoutGradientAreNamedOnEveryRank() throws Exception {
        MpiJob.Result r = run("unused");
        assertTrue(r.output().contains("rank 1: DistributedDataParallel: rank 1: 2 of 4 parameters got no gradient in this backward: "
                + "unused.weight, unused.bias."), r.output());
    }

    @Test
    void findUnusedParametersTrainsTheUsedOnesAsOneProcess() throws Exception {
        run("unused-found");
    }

    @Test
    void anLstmChainTakingInputAndStateTrainsAsOneProcessThroughTheTypedForm() throws Exception {
        run("lstm-typed");
    }

    @Test
    void anEncoderLayerTakingSrcAndMaskTrainsAsOneProcessThroughTheTypedForm() throws Exception {
        run("encoder-typed");
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

    /** No rows on rank 0 and 13 on rank 1: the empty rank still takes part in every collective, and gets empty outputs and gradients. */
    @Test
    void syncBatchNormWithARankWithoutRowsEqualsBatchNormOnTheOtherRanksRows() throws Exception {
        run("sync-bn-empty-rank");
    }
}
