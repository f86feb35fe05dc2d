package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The launcher that starts workers itself (no mpirun): torchrun's environment, the store served by node 0's
 * launcher, rank-prefixed output, and failures that stop every worker on every node within a bounded time. Several
 * nodes are several launchers on this machine's loopback ({@link TwoHostTest} puts them in network namespaces).
 */
class LauncherTest {
    private static final Duration GRACE = Duration.ofSeconds(3);

    record Node(Launcher.Outcome outcome, String out, String err, long millis) {}

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static List<String> worker(String scenario, String marker) {
        return ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx128m"), LauncherWorker.class, scenario, marker).command();
    }

    private static Node node(int nproc, int nnodes, int nodeRank, int port, List<String> command, Duration rendezvous) {
        return node(new Launcher.Options(nproc, nnodes, nodeRank, "127.0.0.1", port, rendezvous, GRACE), command);
    }

    private static Node node(Launcher.Options options, List<String> command) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long start = System.nanoTime();
        Launcher.Outcome o;
        try (PrintStream po = new PrintStream(out, true, StandardCharsets.UTF_8); PrintStream pe = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            o = Launcher.run(options, command, Map.of(), po, pe);
        }
        return new Node(o, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), (System.nanoTime() - start) / 1_000_000);
    }

    /** {@code nnodes} launchers of {@code nproc} workers each, on loopback, each in its own thread. */
    private static List<Node> job(int nproc, int nnodes, String scenario, String marker) {
        int port = freePort();
        List<CompletableFuture<Node>> nodes = new ArrayList<>();
        for (int n = 0; n < nnodes; n++) {
            int rank = n;
            nodes.add(inThread(() -> node(nproc, nnodes, rank, port, worker(scenario, marker), Duration.ofSeconds(60))));
        }
        return nodes.stream().map(CompletableFuture::join).toList();
    }

    /** Each launcher on a thread of its own (the common pool may have one thread on 2 cores, and launchers wait for each other). */
    private static CompletableFuture<Node> inThread(java.util.function.Supplier<Node> launcher) {
        CompletableFuture<Node> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                f.complete(launcher.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    static void assertNothingLeftRunning(String marker) {
        List<String> left = ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(marker))
                .map(p -> p.pid() + " " + p.info().commandLine().orElse("")).toList();
        assertTrue(left.isEmpty(), "left running: " + left);
    }

    private static String marker() {
        return "jtorch-launcher-test-" + UUID.randomUUID();
    }

    @Test
    void workersGetTorchrunsEnvironmentAndMeetInTheLaunchersStore() {
        String marker = marker();
        int port = freePort();
        Node n = node(2, 1, 0, port, worker("ok", marker), Duration.ofSeconds(60));
        assertEquals(0, n.outcome().exitCode(), n.out() + n.err());
        for (int rank = 0; rank < 2; rank++) {
            assertTrue(n.out().contains("[rank" + rank + "]: env RANK=" + rank + " LOCAL_RANK=" + rank + " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
                    + "GROUP_RANK=0 MASTER=127.0.0.1:" + port + " launcherServesStore=true"), n.out());
            assertTrue(n.out().contains("[rank" + rank + "]: store: 2 arrived, rank " + (1 - rank) + " says pid"), n.out());
        }
        assertNothingLeftRunning(marker);
    }

    @Test
    void twoNodesNumberTheirWorkersByGroupRank() {
        String marker = marker();
        List<Node> nodes = job(2, 2, "ok", marker);
        for (Node n : nodes) assertEquals(0, n.outcome().exitCode(), n.out() + n.err());
        String node1 = nodes.get(1).out();
        for (int local = 0; local < 2; local++) {
            int rank = 2 + local;
            assertTrue(node1.contains("[rank" + rank + "]: env RANK=" + rank + " LOCAL_RANK=" + local + " WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1"), node1);
            assertTrue(node1.contains("[rank" + rank + "]: store: 4 arrived"), node1);
        }
        assertTrue(nodes.get(0).out().contains("[rank1]: env RANK=1 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=0"), nodes.get(0).out());
        assertNothingLeftRunning(marker);
    }

    @Test
    void aWorkerThatThrowsStopsEveryNodeAndIsNamedWithItsError() {
        String marker = marker();
        List<Node> nodes = job(1, 2, "throw", marker);
        Node failing = nodes.get(1);
        assertEquals(1, failing.outcome().exitCode(), failing.out() + failing.err());
        assertEquals(1, failing.outcome().failedRank());
        assertTrue(failing.err().contains("jtorch launch: rank 1 of 2 (node 1, local rank 0) exited with status 1; the other workers were stopped. "
                + "Its last output:"), failing.err());
        assertTrue(failing.err().contains("[rank1]: Exception in thread \"main\" java.lang.IllegalStateException: rank 1 fails on purpose"), failing.err());
        Node other = nodes.get(0);
        assertEquals(1, other.outcome().exitCode(), other.out() + other.err());
        assertEquals(1, other.outcome().failedRank());
        assertTrue(other.err().contains("jtorch launch: stopped this node's workers (node 0) because another node failed: rank 1 of 2 (node 1, local rank 0) "
                + "exited with status 1"), other.err());
        assertTrue(other.err().contains("rank 1 fails on purpose"), other.err());
        for (Node n : nodes) assertTrue(n.millis() < 40_000, "took " + n.millis() + " ms");
        assertNothingLeftRunning(marker);
    }

    /** A worker that fails because a peer on another node failed first is reported as a consequence, not as the cause. */
    @Test
    void aFailureCausedByAnotherNodesFailureNamesTheFirst() {
        String marker = marker();
        List<Node> nodes = job(1, 2, "cascade", marker);
        Node node0 = nodes.get(0);
        assertEquals(1, node0.outcome().failedRank(), node0.out() + node0.err());
        assertTrue(node0.err().contains("jtorch launch: stopped this node's workers (node 0) because another node failed: rank 1 of 2 (node 1, "
                + "local rank 0) exited with status 1"), node0.err());
        assertTrue(node0.err().contains("; then rank 0 of 2 (node 0, local rank 0) exited with status 2. Its last output:"), node0.err());
        assertEquals(1, nodes.get(1).outcome().failedRank());
        assertNothingLeftRunning(marker);
    }

    @Test
    void aWorkerKilledBySigkillStopsTheOthersAndIsNamed() {
        String marker = marker();
        Node n = node(2, 1, 0, freePort(), worker("sigkill", marker), Duration.ofSeconds(60));
        assertEquals(137, n.outcome().exitCode(), n.out() + n.err());
        assertTrue(n.err().contains("jtorch launch: rank 1 of 2 (node 0, local rank 1) exited with status 137 (killed by SIGKILL); the other workers "
                + "were stopped. Its last output:"), n.err());
        assertTrue(n.err().endsWith("  [rank1]: killing myself\n"), n.err());
        assertTrue(n.millis() < 40_000, "took " + n.millis() + " ms");
        assertNothingLeftRunning(marker);
    }

    @Test
    void aNodeThatNeverJoinsIsNamedAndNoWorkerStarts() {
        String marker = marker();
        Node n = node(1, 2, 0, freePort(), worker("ok", marker), Duration.ofSeconds(2));
        assertEquals(1, n.outcome().exitCode());
        assertTrue(n.err().contains("jtorch launch: node(s) [1] of 2 did not join the job at 127.0.0.1:"), n.err());
        assertTrue(n.err().contains("within 2 s; no worker was started"), n.err());
        assertTrue(n.out().isEmpty(), n.out());
    }

    /**
     * SIGTERM to node 0's launcher stops its workers with SIGTERM (their shutdown hooks run), and node 1's launcher stops
     * its own, saying why.
     */
    @Test
    void sigtermToALauncherStopsEveryNode() throws Exception {
        String marker = marker();
        int port = freePort();
        List<String> command = new ArrayList<>(ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx128m"), LauncherMain.class,
                "1", "2", "0", "127.0.0.1", Integer.toString(port), "--").command());
        command.addAll(worker("sleep", marker));
        Path log = Files.createTempFile("jtorch-launcher", ".txt");
        Process launcher = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            CompletableFuture<Node> node1 = inThread(() -> node(1, 2, 1, port, worker("sleep", marker), Duration.ofSeconds(60)));
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!Files.readString(log).contains("[rank0]: sleeping")) {
                assertTrue(System.nanoTime() < deadline && launcher.isAlive(), "workers did not start: " + Files.readString(log));
                Thread.sleep(100);
            }
            long start = System.nanoTime();
            launcher.destroy(); // SIGTERM
            assertTrue(launcher.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "the launcher did not exit: " + Files.readString(log));
            assertTrue(launcher.exitValue() != 0);
            Node n = node1.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(1, n.outcome().exitCode(), n.out() + n.err());
            assertTrue(n.err().contains("because another node failed: the launcher of node 0 was stopped by a signal (SIGTERM)"), n.err() + "\nnode 0: "
                    + Files.readString(log));
            assertTrue((System.nanoTime() - start) / 1e9 < 30);
            // Each launcher passed a catchable SIGTERM on to its worker (a SIGKILL would have skipped the worker's hook).
            assertTrue(Files.readString(log).contains("[rank0]: rank 0 stopping on a signal"), Files.readString(log));
            assertTrue(n.out().contains("[rank1]: rank 1 stopping on a signal"), n.out() + n.err());
            Thread.sleep(200);
            assertNothingLeftRunning(marker);
        } finally {
            killAll(launcher, marker, log);
        }
    }

    /**
     * SIGINT, SIGHUP or SIGTERM to a launcher reach its workers as that same signal (torchrun's behaviour: a worker's
     * Ctrl-C handler sees SIGINT), and the launcher exits as the signal would have made it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INT", "HUP", "TERM"})
    void aLauncherPassesOnTheSignalItReceived(String signal) throws Exception {
        Assumptions.assumeFalse(ignoredHere(signal), "SIG" + signal + " is ignored in this process (a background job or nohup), "
                + "so a launcher started from it ignores it too");
        String marker = marker();
        List<String> command = new ArrayList<>(ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx128m"), LauncherMain.class,
                "2", "1", "0", "127.0.0.1", Integer.toString(freePort()), "--").command());
        command.addAll(worker("signals", marker));
        Path log = Files.createTempFile("jtorch-launcher", ".txt");
        Process launcher = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!(Files.readString(log).contains("[rank0]: sleeping") && Files.readString(log).contains("[rank1]: sleeping"))) {
                assertTrue(System.nanoTime() < deadline && launcher.isAlive(), "workers did not start: " + Files.readString(log));
                Thread.sleep(100);
            }
            assertEquals(0, new ProcessBuilder("kill", "-s", signal, Long.toString(launcher.pid())).start().waitFor());
            assertTrue(launcher.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "the launcher did not exit: " + Files.readString(log));
            String output = Files.readString(log);
            assertEquals(128 + number(signal), launcher.exitValue(), output);
            assertTrue(output.contains("[rank0]: rank 0 got SIG" + signal) && output.contains("[rank1]: rank 1 got SIG" + signal), output);
            Thread.sleep(200);
            assertNothingLeftRunning(marker);
        } finally {
            killAll(launcher, marker, log);
        }
    }

    /** Whatever a test's launcher process left behind, gone even when the test failed. */
    private static void killAll(Process launcher, String marker, Path log) throws IOException {
        launcher.destroyForcibly();
        ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(marker)).forEach(ProcessHandle::destroyForcibly);
        Files.deleteIfExists(log);
    }

    /** Whether this process ignores the signal (its children inherit that, and the JVM then installs no handler for it). */
    private static boolean ignoredHere(String signal) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("SigIgn:")) return (Long.parseUnsignedLong(line.substring(7).trim(), 16) >>> (number(signal) - 1) & 1) != 0;
        }
        return false;
    }

    private static int number(String signal) {
        return switch (signal) {
            case "INT" -> StopSignal.SIGINT;
            case "HUP" -> StopSignal.SIGHUP;
            default -> StopSignal.SIGTERM;
        };
    }

    /**
     * A launcher killed with SIGKILL posts nothing: node 0's launcher notices its silence within the heartbeat timeout,
     * stops its own workers and names the lost node, where before it waited for the workers' collectives to time out.
     */
    @Test
    void aNodeWhoseLauncherIsKilledIsNamedWithinTheHeartbeatTimeout() throws Exception {
        String marker = marker();
        int port = freePort();
        Path log = Files.createTempFile("jtorch-launcher", ".txt");
        CompletableFuture<Node> node0 = inThread(() -> node(new Launcher.Options(1, 2, 0, "127.0.0.1", port, Duration.ofSeconds(60), GRACE,
                Duration.ofSeconds(3)), worker("sleep", marker)));
        List<String> command = new ArrayList<>(ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx128m"), LauncherMain.class,
                "1", "2", "1", "127.0.0.1", Integer.toString(port), "3", "--").command());
        command.addAll(worker("sleep", marker));
        Process launcher1 = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!Files.readString(log).contains("[rank1]: sleeping")) {
                assertTrue(System.nanoTime() < deadline && launcher1.isAlive() && !node0.isDone(), "workers did not start: "
                        + Files.readString(log));
                Thread.sleep(100);
            }
            long start = System.nanoTime();
            launcher1.destroyForcibly(); // SIGKILL: no shutdown hook, nothing posted
            Node n = node0.get(30, java.util.concurrent.TimeUnit.SECONDS);
            double seconds = (System.nanoTime() - start) / 1e9;
            assertEquals(1, n.outcome().exitCode(), n.out() + n.err());
            assertTrue(n.err().contains("jtorch launch: node 1 (ranks 1-1) was lost: its launcher has not been heard from for 3 s"), n.err());
            assertTrue(seconds > 2 && seconds < 15, "took " + seconds + " s");
        } finally {
            // node 1's worker was orphaned with its launcher; the job's other side is gone, so nothing else ends it here
            killAll(launcher1, marker, log);
        }
    }
}
