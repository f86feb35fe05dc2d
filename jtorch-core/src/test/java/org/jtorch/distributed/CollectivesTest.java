package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The mpi backend's collectives, on 2 ranks started by {@code mpirun} (expected values are closed formulas over
 * the ranks' inputs, see {@link CollectivesWorker}).
 */
class CollectivesTest {
    @BeforeAll
    static void needsOpenMpi() {
        assumeTrue(MpiJob.available(), "Open MPI (openmpi-bin, libopenmpi3) is not installed");
    }

    private static void assertRanksOk(MpiJob.Result r, int ranks) {
        assertEquals(0, r.exitCode(), r.output());
        for (int k = 0; k < ranks; k++) assertTrue(r.output().contains("rank " + k + " ok"), r.output());
    }

    @Test
    void everyCollectiveMatchesItsFormulaForEveryDtype() throws Exception {
        assertRanksOk(MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "collectives"), 2);
    }

    @Test
    void threeRanksAgreeToo() throws Exception {
        assertRanksOk(MpiJob.run(3, Duration.ofSeconds(90), CollectivesWorker.class, "collectives"), 3);
    }

    @Test
    void ranksThatDisagreeAllFailNamingTheCollectiveAndEachRanksShape() throws Exception {
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "disagreement");
        assertRanksOk(r, 2);
        assertTrue(r.output().contains("allReduce: the ranks disagree (call 0 on rank 1 of 2): rank 0 allReduce(SUM) float32 [4, 3]; "
                + "rank 1 allReduce(SUM) float32 [4, 2]"), r.output());
    }

    @Test
    void aWaitOnARankThatNeverJoinsTimesOutLeavesTheGroupUnusableAndTheJobEnds() throws Exception {
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "timeout");
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("rank 0: allReduce(SUM) (call 0 on rank 0 of 2) did not complete within 2 s"), r.output());
        assertTrue(r.output().contains("rank 0 then: barrier (call 1 on rank 0 of 2): the process group is unusable after an earlier failure: "
                + "allReduce(SUM) (call 0 on rank 0 of 2) timed out"), r.output());
        assertTrue(r.output().contains("rank 0 closed"), r.output());
        assertTrue(r.elapsed().toSeconds() < 30, "took " + r.elapsed());
    }

    @Test
    void batchedSendsAndReceivesProgressTogetherWhicheverComesFirst() throws Exception {
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "batch-p2p");
        assertRanksOk(r, 2);
        assertTrue(r.output().contains("rank 0: batchIsendIrecv: ops[0] (isend to 0) names this rank (0) as its peer"), r.output());
        assertTrue(r.output().contains("rank 0: batchIsendIrecv on rank 0: ops[2] (irecv from 1): rank 1 sent send(tag=0) float32 [2, 3] "
                + "but this rank expects send(tag=0) float32 [3, 2]"), r.output());
    }

    /**
     * A rank killed with SIGKILL while rank 0 waits in an all-reduce: {@code mpirun} ends the job, naming the rank, long
     * before rank 0's own 60 s wait, and nothing is left running.
     */
    @Test
    void aRankKilledBySigkillEndsTheJobNamingItAndLeavesNothingRunning() throws Exception {
        String marker = "jtorch-mpi-fault-" + UUID.randomUUID();
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "killed", marker);
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("mpirun noticed that process rank 1 with PID ") && r.output().contains(" exited on signal 9 (Killed)"),
                r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
        LauncherTest.assertNothingLeftRunning(marker);
    }

    /** A rank whose main throws (its process ends without closing the group): the same, with its exception in the output. */
    @Test
    void aRankThatThrowsEndsTheJobNamingItAndLeavesNothingRunning() throws Exception {
        String marker = "jtorch-mpi-fault-" + UUID.randomUUID();
        MpiJob.Result r = MpiJob.run(2, Duration.ofSeconds(90), CollectivesWorker.class, "throws", marker);
        assertTrue(r.exitCode() != 0 && !r.timedOut(), r.output());
        assertTrue(r.output().contains("java.lang.IllegalStateException: rank 1 fails on purpose"), r.output());
        // mpirun names the first process that failed by its job id and rank: "Process name: [[17278,1],1]".
        assertTrue(java.util.regex.Pattern.compile("Process name: \\[\\[\\d+,\\d+\\],1\\]\\s+Exit code:\\s+1").matcher(r.output()).find(),
                r.output());
        assertTrue(r.elapsed().toSeconds() < 60, "took " + r.elapsed());
        LauncherTest.assertNothingLeftRunning(marker);
    }
}
