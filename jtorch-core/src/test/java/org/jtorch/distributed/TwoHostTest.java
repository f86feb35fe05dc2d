package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two hosts on one machine: two network namespaces joined by a veth pair, with addresses only inside them, and a
 * launcher in each ({@code --nnodes 2}, one worker each) that meet over TCP at node 0's address. Needs root and
 * iproute2's {@code ip}; skips saying why where namespaces cannot be made.
 *
 * <p>The store-only job runs everywhere (plain {@code mvn test}). The training job is DDP over the nccl backend on
 * the CUDA simulator (its pass of {@code scripts/test}): the ranks meet and exchange the NCCL unique id through the
 * launcher's store over the veth pair; the simulator's NCCL then moves the gradients through shared memory, which
 * the namespaces share, not over TCP. (The mpi backend is not used here: an MPI world over two hosts is started by
 * one mpirun through ssh, which {@code jtorch launch} refuses.)
 */
class TwoHostTest {
    private static String nsA;
    private static String nsB;
    private static String addrA;
    private static String ip;

    private record Job(int codeA, int codeB, String logA, String logB, long millis) {}

    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IOException(String.join(" ", command) + ": " + out);
        return out;
    }

    @BeforeAll
    static void makeTwoHosts() throws Exception {
        ip = List.of("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip").stream().filter(p -> Files.isExecutable(Path.of(p))).findFirst().orElse(null);
        assumeTrue(ip != null, "two-host test skipped: iproute2's ip is not installed (apt-get install iproute2)");
        assumeTrue("root".equals(System.getProperty("user.name")), "two-host test skipped: network namespaces need root");
        String id = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(2); // 6 hex digits: names stay under 15 chars
        int subnet = ThreadLocalRandom.current().nextInt(1, 255);
        nsA = "jtA" + id;
        try {
            run(ip, "netns", "add", nsA);
        } catch (IOException e) {
            nsA = null;
            assumeTrue(false, "two-host test skipped: cannot create a network namespace: " + e.getMessage());
        }
        nsB = "jtB" + id;
        run(ip, "netns", "add", nsB);
        run(ip, "link", "add", "jta" + id, "type", "veth", "peer", "name", "jtb" + id);
        run(ip, "link", "set", "jta" + id, "netns", nsA);
        run(ip, "link", "set", "jtb" + id, "netns", nsB);
        addrA = "10.233." + subnet + ".1";
        run(ip, "-n", nsA, "addr", "add", addrA + "/24", "dev", "jta" + id);
        run(ip, "-n", nsB, "addr", "add", "10.233." + subnet + ".2/24", "dev", "jtb" + id);
        for (String[] ns : new String[][] {{nsA, "jta" + id}, {nsB, "jtb" + id}}) {
            run(ip, "-n", ns[0], "link", "set", "lo", "up");
            run(ip, "-n", ns[0], "link", "set", ns[1], "up");
        }
    }

    @AfterAll
    static void removeThem() throws Exception {
        // Deleting a namespace deletes its end of the veth pair, and with it the pair.
        if (nsA != null) run(ip, "netns", "del", nsA);
        if (nsB != null) run(ip, "netns", "del", nsB);
    }

    /** One launcher per namespace, node 0 in A; {@code worker} is each worker's command. */
    private static Job job(List<String> worker, Duration timeout) throws Exception {
        int port = LauncherTest.freePort();
        List<Process> launchers = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        long start = System.nanoTime();
        try {
            for (int node = 0; node < 2; node++) {
                List<String> command = new ArrayList<>(List.of(ip, "netns", "exec", node == 0 ? nsA : nsB));
                command.addAll(ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx128m"), LauncherMain.class, "1", "2",
                        Integer.toString(node), addrA, Integer.toString(port), "--").command());
                command.addAll(worker);
                Path log = Files.createTempFile("jtorch-two-host-node" + node, ".txt");
                logs.add(log);
                launchers.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start());
            }
            long deadline = start + timeout.toNanos();
            for (Process p : launchers) p.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            int[] codes = new int[2];
            for (int n = 0; n < 2; n++) codes[n] = launchers.get(n).isAlive() ? -1 : launchers.get(n).exitValue();
            return new Job(codes[0], codes[1], Files.readString(logs.get(0)), Files.readString(logs.get(1)), (System.nanoTime() - start) / 1_000_000);
        } finally {
            for (Process p : launchers) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
            }
            for (Path l : logs) Files.deleteIfExists(l);
        }
    }

    @Test
    void theAddressesExistOnlyInsideTheNamespaces() throws Exception {
        assertFalse(run(ip, "-o", "addr").contains(addrA + "/"), "node 0's address leaked into the test's namespace");
        assertTrue(run(ip, "-n", nsA, "-o", "addr").contains(addrA + "/"));
    }

    @Test
    void launchersInTwoNamespacesMeetOverTcpAndNumberTheirWorkers() throws Exception {
        String marker = "jtorch-two-host-" + System.nanoTime();
        Job j = job(LauncherTest.worker("ok", marker), Duration.ofSeconds(120));
        assertEquals(0, j.codeA(), j.logA() + j.logB());
        assertEquals(0, j.codeB(), j.logA() + j.logB());
        assertTrue(j.logA().contains("[rank0]: env RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 GROUP_RANK=0 MASTER=" + addrA), j.logA());
        assertTrue(j.logB().contains("[rank1]: env RANK=1 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 GROUP_RANK=1 MASTER=" + addrA), j.logB());
        assertTrue(j.logB().contains("[rank1]: store: 2 arrived, rank 0 says pid"), j.logB());
        LauncherTest.assertNothingLeftRunning(marker);
    }

    @Test
    void aWorkerFailingOnOneHostStopsTheOther() throws Exception {
        String marker = "jtorch-two-host-" + System.nanoTime();
        Job j = job(LauncherTest.worker("throw", marker), Duration.ofSeconds(120));
        assertEquals(1, j.codeB(), j.logB());
        assertTrue(j.logB().contains("jtorch launch: rank 1 of 2 (node 1, local rank 0) exited with status 1"), j.logB());
        assertEquals(1, j.codeA(), j.logA());
        assertTrue(j.logA().contains("because another node failed: rank 1 of 2 (node 1, local rank 0) exited with status 1"), j.logA());
        assertTrue(j.millis() < 60_000, "took " + j.millis() + " ms");
        LauncherTest.assertNothingLeftRunning(marker);
    }

    /** DDP on an MLP, one rank per host, equal to single-process training on the global batch (see {@link DdpWorker}). */
    @Test
    void ddpTrainsAcrossTwoHostsAsOneProcessOnTheGlobalBatch() throws Exception {
        NcclCollectivesTest.assumeNccl();
        List<String> worker = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-Xmx384m",
                "-Djtorch.test.backend=nccl", "-cp", TorchrunJob.classPath(DdpWorker.class), DdpWorker.class.getName(), "mlp"));
        Job j = job(worker, Duration.ofSeconds(300));
        assertEquals(0, j.codeA(), j.logA() + j.logB());
        assertEquals(0, j.codeB(), j.logA() + j.logB());
        assertTrue(j.logA().contains("[rank0]: rank 0 ok max|diff|="), j.logA());
        assertTrue(j.logB().contains("[rank1]: rank 1 ok max|diff|="), j.logB());
    }
}
