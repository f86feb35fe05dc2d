package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The nccl backend's collectives on 2 ranks, each a process with the CUDA simulator's {@code cuda:0} (its NCCL
 * moves the data through shared memory): the same checks as {@link CollectivesTest} on CUDA tensors. Runs where
 * {@code -Djtorch.test.device=cuda:0} and jtorch-cuda are present (the simulator pass of {@code scripts/test}).
 */
class NcclCollectivesTest {
    static final List<String> NCCL = List.of("-Djtorch.test.backend=nccl");

    @BeforeAll
    static void needsCudaAndNccl() {
        assumeNccl();
    }

    static void assumeNccl() {
        assumeTrue(System.getProperty("jtorch.test.device", "cpu").startsWith("cuda"), "runs on a CUDA device (-Djtorch.test.device=cuda:0)");
        assumeTrue(TorchrunJob.providedBackends().contains("nccl"), "the nccl backend (jtorch-cuda) is not on the class path");
    }

    private static void assertRanksOk(MpiJob.Result r, int ranks) {
        assertEquals(0, r.exitCode(), r.output());
        for (int k = 0; k < ranks; k++) assertTrue(r.output().contains("rank " + k + " ok"), r.output());
    }

    @Test
    void everyCollectiveMatchesItsFormulaForEveryDtype() throws Exception {
        assertRanksOk(TorchrunJob.run(2, Duration.ofSeconds(180), NCCL, CollectivesWorker.class, "collectives"), 2);
    }

    /**
     * The header round trip delays each operation past the simulator's 20 ms hold on kernels, which would hide a
     * missing stream order; without it, the worker's stream-order checks (a kernel before the collective, one after
     * its wait) fail unless the events order the streams.
     */
    @Test
    void withoutHeaderChecksCollectivesStillMatchAndAreOrderedWithTheCallersStream() throws Exception {
        assertRanksOk(TorchrunJob.run(2, Duration.ofSeconds(180), Map.of("JTORCH_NCCL_CHECK_HEADERS", "0"), NCCL, CollectivesWorker.class,
                "collectives"), 2);
    }

    @Test
    void ranksThatDisagreeAllFailNamingTheCollectiveAndEachRanksShape() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(180), NCCL, CollectivesWorker.class, "disagreement");
        assertRanksOk(r, 2);
        assertTrue(r.output().contains("allReduce: the ranks disagree (call 0 on rank 1 of 2): rank 0 allReduce(SUM) float32 [4, 3]; "
                + "rank 1 allReduce(SUM) float32 [4, 2]"), r.output());
    }

    @Test
    void aWaitOnARankThatNeverJoinsTimesOutAbortsTheCommunicatorAndTheJobEnds() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(120), NCCL, CollectivesWorker.class, "timeout");
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("rank 0: allReduce(SUM) (call 0 on rank 0 of 2) did not complete within 2 s"), r.output());
        assertTrue(r.output().contains("rank 0 then: barrier (call 1 on rank 0 of 2): the process group is unusable after an earlier failure: "
                + "allReduce(SUM) (call 0 on rank 0 of 2) timed out"), r.output());
        assertTrue(r.output().contains("rank 0 closed"), r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
    }

    @Test
    void aKilledRankFailsTheOthersAtOnceNamingIt() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(120), NCCL, CollectivesWorker.class, "killed");
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("--- rank 1 (exit 137) ---"), r.output());
        assertTrue(r.output().contains("rank 0: allReduce(SUM) (call 0 on rank 0 of 2) failed on rank 0: ") && r.output().contains("rank 1 (pid ")
                && r.output().contains(" exited"), r.output());
        assertTrue(r.output().contains("--- rank 0 (exit 3) ---"), "rank 0 reported and exited by itself: " + r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
    }

    /** A rank whose main throws ends its process without closing the communicator: as a killed one, rank 0 fails at once naming it. */
    @Test
    void aRankThatThrowsFailsTheOthersAtOnceNamingIt() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(120), NCCL, CollectivesWorker.class, "throws");
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("--- rank 1 (exit 1) ---") && r.output().contains("java.lang.IllegalStateException: rank 1 fails on purpose"),
                r.output());
        assertTrue(r.output().contains("rank 0: allReduce(SUM) (call 0 on rank 0 of 2) failed on rank 0: ") && r.output().contains("rank 1 (pid ")
                && r.output().contains(" exited"), r.output());
        assertTrue(r.output().contains("--- rank 0 (exit 3) ---"), "rank 0 reported and exited by itself: " + r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
    }

    @Test
    void aCollectiveHungOnTheDeviceIsAbortedByTheWatchdogNamingItsTensorsAndRank() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(120), Map.of("JTORCH_NCCL_CHECK_HEADERS", "0"), NCCL, CollectivesWorker.class,
                "watchdog");
        assertTrue(r.output().contains("rank 0 ok"), r.output());
        String why = "nccl watchdog: allReduce(SUM) of float32 [4, 3] (call 0 on rank 0 of 2) did not complete within 3 s of being enqueued on "
                + "the device (a peer rank stopped taking part?); the communicator was aborted";
        assertTrue(r.output().contains("jtorch: " + why), r.output());
        assertTrue(r.output().contains("rank 0 then: barrier (call 1 on rank 0 of 2): the process group is unusable after an earlier failure: "
                + why), r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
    }

    @Test
    void batchedSendsAndReceivesProgressTogetherWhicheverComesFirst() throws Exception {
        MpiJob.Result r = TorchrunJob.run(2, Duration.ofSeconds(180), NCCL, CollectivesWorker.class, "batch-p2p");
        assertRanksOk(r, 2);
        assertTrue(r.output().contains("rank 0: batchIsendIrecv: ops[0] (isend to 0) names this rank (0) as its peer"), r.output());
        assertTrue(r.output().contains("rank 0: batchIsendIrecv on rank 0: ops[2] (irecv from 1): rank 1 sent send(tag=0) float32 [2, 3] "
                + "but this rank expects send(tag=0) float32 [3, 2]"), r.output());
    }
}
