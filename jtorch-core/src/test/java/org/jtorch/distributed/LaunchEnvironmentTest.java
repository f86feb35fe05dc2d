package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.Map;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/** torchrun's environment contract, Open MPI's fallback, and the check that the backend's world agrees with it. */
class LaunchEnvironmentTest {
    @Test
    void readsTorchrunsVariables() {
        LaunchEnvironment e = LaunchEnvironment.from(Map.of("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2",
                "GROUP_RANK", "1", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500"));
        assertEquals(new LaunchEnvironment(3, 1, 4, 2, 1, "10.0.0.1", 29500, "torchrun"), e);
    }

    /** torchrun (and jtorch launch without mpirun) serve the store in the launcher: rank 0 then only connects. */
    @Test
    void readsWhetherTheLauncherServesTheStore() {
        Map<String, String> env = new java.util.HashMap<>(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500"));
        assertFalse(LaunchEnvironment.from(env).launcherServesStore());
        env.put("TORCHELASTIC_USE_AGENT_STORE", "True");
        assertTrue(LaunchEnvironment.from(env).launcherServesStore());
    }

    @Test
    void fallsBackToOpenMpisVariablesUnderMpirun() {
        LaunchEnvironment e = LaunchEnvironment.from(Map.of("OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "2"));
        assertEquals(new LaunchEnvironment(1, 1, 2, 2, 0, null, 0, "mpirun"), e);
    }

    @Test
    void aProcessStartedAloneIsRankZeroOfOne() {
        assertEquals(new LaunchEnvironment(0, 0, 1, 1, 0, null, 0, "default"), LaunchEnvironment.from(Map.of()));
    }

    @Test
    void badValuesNameTheVariable() {
        var e = assertThrows(IllegalArgumentException.class, () -> LaunchEnvironment.from(Map.of("RANK", "x", "WORLD_SIZE", "2")));
        assertTrue(e.getMessage().contains("RANK must be an integer, got 'x'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> LaunchEnvironment.from(Map.of("RANK", "2", "WORLD_SIZE", "2")));
        assertTrue(e.getMessage().contains("RANK must be in [0, WORLD_SIZE), got RANK=2 WORLD_SIZE=2"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> LaunchEnvironment.from(Map.of("RANK", "0")));
        assertTrue(e.getMessage().contains("WORLD_SIZE is not set"), e.getMessage());
    }

    /** A worker told it is rank 1 of 2 but started without mpirun (an MPI world of one) fails saying how to start it. */
    @Test
    void initProcessGroupRefusesAWorldThatDisagreesWithTheEnvironment() throws Exception {
        assumeTrue(MpiJob.available(), "Open MPI is not installed");
        ChildJvm.Result r = ChildJvm.run(InitWorker.class, Duration.ofSeconds(60), Map.of("RANK", "1", "WORLD_SIZE", "2"));
        assertTrue(r.output().contains("initProcessGroup(mpi): the environment (torchrun) says rank 1 of 2 but the mpi world is rank 0 of 1: "
                + "start the workers with mpirun or jtorch launch"), r.output());
        assertTrue(r.exitCode() != 0, r.output());
    }

    public static final class InitWorker {
        public static void main(String[] args) {
            Distributed.initProcessGroup("mpi");
        }
    }
}
