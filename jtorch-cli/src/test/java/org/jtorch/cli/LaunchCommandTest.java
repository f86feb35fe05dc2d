package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** {@code jtorch launch} on 2 workers: the environment contract, rank-prefixed output, and failing workers. */
class LaunchCommandTest {
    @BeforeAll
    static void needsOpenMpi() {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/mpirun")), "Open MPI's mpirun is not installed");
    }

    private record Run(int exitCode, String out, String err, long millis, String marker, int port) {}

    /** A port free a moment ago: other jobs on this machine may use the default 29500. */
    private static int freePort() {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            return s.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static String location(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static List<String> workerProgram(String scenario, String marker) {
        List<String> java = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-Xmx256m",
                "-cp", location(LaunchWorker.class) + File.pathSeparator + location(org.jtorch.Tensor.class),
                LaunchWorker.class.getName(), scenario, marker));
        return java;
    }

    private static Run launch(String scenario) {
        String marker = "jtorch-launch-test-" + UUID.randomUUID();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long start = System.nanoTime();
        int code;
        int port = freePort();
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8); PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = LaunchCommand.launch(2, "127.0.0.1", port, workerProgram(scenario, marker), o, e);
        }
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), (System.nanoTime() - start) / 1_000_000, marker, port);
    }

    private static void assertNothingLeftRunning(String marker) {
        List<String> left = ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(marker))
                .map(p -> p.pid() + " " + p.info().commandLine().orElse("")).toList();
        assertTrue(left.isEmpty(), "left running: " + left);
    }

    @Test
    void workersGetTorchrunsEnvironmentAndRankPrefixedOutput() {
        Run r = launch("ok");
        assertEquals(0, r.exitCode(), r.out() + r.err());
        for (int rank = 0; rank < 2; rank++) {
            assertTrue(r.out().contains("[rank" + rank + "]: env RANK=" + rank + " LOCAL_RANK=" + rank + " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
                    + "GROUP_RANK=0 MASTER=127.0.0.1:" + r.port() + " source=torchrun"), r.out());
            assertTrue(r.out().contains("[rank" + rank + "]: sum 2.0"), r.out());
        }
        assertNothingLeftRunning(r.marker());
    }

    @Test
    void workersMeetInATcpStoreAtTheMasterAddressAndPort() {
        Run r = launch("store");
        assertEquals(0, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("[rank0]: store: arrived") && r.out().contains("[rank1]: store: arrived"), r.out());
        assertTrue(r.out().contains("peer says pid"), r.out());
        assertNothingLeftRunning(r.marker());
    }

    @Test
    void aWorkerThatThrowsStopsTheOthersAndIsNamedWithItsError() {
        Run r = launch("throw");
        assertEquals(1, r.exitCode(), r.out() + r.err());
        assertTrue(r.err().contains("jtorch launch: rank 1 of 2 exited with status 1; the other workers were stopped. Its last output:"), r.err());
        assertTrue(r.err().contains("[rank1]: Exception in thread \"main\" java.lang.IllegalStateException: rank 1 fails on purpose"), r.err());
        assertTrue(r.millis() < 30_000, "took " + r.millis() + " ms");
        assertNothingLeftRunning(r.marker());
    }

    @Test
    void aWorkerKilledBySigkillStopsTheOthersAndIsNamed() {
        Run r = launch("sigkill");
        assertTrue(r.exitCode() != 0, r.out() + r.err());
        assertTrue(r.err().contains("jtorch launch: rank 1 of 2 was killed by signal 9 (Killed); the other workers were stopped."), r.err());
        assertTrue(r.millis() < 30_000, "took " + r.millis() + " ms");
        assertNothingLeftRunning(r.marker());
    }

    /**
     * SIGTERM to the launcher reaches the workers through mpirun: their shutdown hooks run and what they print arrives,
     * all of them end, and the launcher exits.
     */
    @Test
    void sigtermToTheLauncherStopsEveryWorker() throws Exception {
        String marker = "jtorch-launch-test-" + UUID.randomUUID();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", location(Main.class) + File.pathSeparator + location(org.jtorch.Tensor.class), Main.class.getName(), "launch", "--nproc-per-node", "2", "--"));
        command.addAll(workerProgram("sleep", marker));
        Path log = Files.createTempFile("jtorch-launch", ".txt");
        try {
            Process launcher = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!(Files.readString(log).contains("[rank0]: sleeping") && Files.readString(log).contains("[rank1]: sleeping"))) {
                assertTrue(System.nanoTime() < deadline && launcher.isAlive(), "workers did not start: " + Files.readString(log));
                Thread.sleep(100);
            }
            long start = System.nanoTime();
            launcher.destroy(); // SIGTERM
            assertTrue(launcher.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "the launcher did not exit: " + Files.readString(log));
            assertTrue(launcher.exitValue() != 0);
            assertTrue((System.nanoTime() - start) / 1e9 < 30);
            String output = Files.readString(log);
            assertTrue(output.contains("[rank0]: rank 0 stopping on a signal") && output.contains("[rank1]: rank 1 stopping on a signal"), output);
            Thread.sleep(200);
            assertNothingLeftRunning(marker);
        } finally {
            ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(marker)).forEach(ProcessHandle::destroyForcibly);
            Files.deleteIfExists(log);
        }
    }

    /** --backend store starts the workers without mpirun (org.jtorch.distributed.LauncherTest tests the launcher itself). */
    @Test
    void theStoreBackendStartsTheWorkersItselfAndReturnsAFailingWorkersStatus() {
        String port = Integer.toString(freePort());
        assertEquals(0, LaunchCommand.run(new String[] {"--nproc-per-node", "2", "--backend", "store", "--master-port", port, "--", "sh", "-c",
                "test \"$RANK $LOCAL_RANK $WORLD_SIZE $GROUP_RANK $TORCHELASTIC_USE_AGENT_STORE\" = \"$LOCAL_RANK $LOCAL_RANK 2 0 True\""}));
        assertEquals(3, LaunchCommand.run(new String[] {"--nproc-per-node", "2", "--backend", "store", "--master-port", port, "--", "sh", "-c",
                "exit $((RANK * 3))"}));
    }

    @Test
    void usageErrorsSayWhatIsWrong() {
        assertEquals(2, LaunchCommand.run(new String[] {"--", "train"}));
        assertEquals(2, LaunchCommand.run(new String[] {"--nproc-per-node", "2"}));
        assertEquals(2, LaunchCommand.run(new String[] {"--nproc-per-node", "2", "--nnodes", "2", "--", "train"})); // mpi: one mpirun instead
        assertEquals(2, LaunchCommand.run(new String[] {"--nproc-per-node", "2", "--backend", "store", "--nnodes", "2", "--node-rank", "2", "--", "train"}));
    }
}
