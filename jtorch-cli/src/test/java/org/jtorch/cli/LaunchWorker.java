package org.jtorch.cli;

import java.time.Duration;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.LaunchEnvironment;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.TcpStore;

/**
 * A worker started by {@link LaunchCommandTest} through {@code jtorch launch}. Its last argument is a marker that
 * lets the test find any of its processes left running.
 */
public final class LaunchWorker {
    public static void main(String[] args) throws Exception {
        ProcessGroup pg = Distributed.initProcessGroup("mpi", Duration.ofSeconds(60));
        LaunchEnvironment env = LaunchEnvironment.current();
        int rank = pg.rank();
        System.out.println("env RANK=" + System.getenv("RANK") + " LOCAL_RANK=" + System.getenv("LOCAL_RANK") + " WORLD_SIZE="
                + System.getenv("WORLD_SIZE") + " LOCAL_WORLD_SIZE=" + System.getenv("LOCAL_WORLD_SIZE") + " GROUP_RANK="
                + System.getenv("GROUP_RANK") + " MASTER=" + System.getenv("MASTER_ADDR") + ":" + System.getenv("MASTER_PORT")
                + " source=" + env.source());
        switch (args[0]) {
            case "ok" -> {
                try (Tensor t = Torch.ones(2)) {
                    pg.allReduce(t).waitFor();
                    System.out.println("sum " + t.toDoubleArray()[0]);
                }
            }
            case "throw" -> {
                if (rank == 1) throw new IllegalStateException("rank 1 fails on purpose");
                try (Tensor t = Torch.ones(2)) {
                    pg.allReduce(t).waitFor(); // never completes: rank 1 is gone
                }
            }
            case "sigkill" -> {
                if (rank == 1) {
                    System.out.println("killing myself");
                    System.out.flush();
                    new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                }
                try (Tensor t = Torch.ones(2)) {
                    pg.allReduce(t).waitFor();
                }
            }
            case "store" -> {
                // Rendezvous through the launcher's MASTER_ADDR:MASTER_PORT: rank 0 serves, everyone counts in and waits.
                try (TcpStore store = new TcpStore(env.masterAddr(), env.masterPort(), rank == 0, Duration.ofSeconds(30))) {
                    store.set("worker/" + rank, "pid " + ProcessHandle.current().pid());
                    long arrived = store.add("arrived", 1);
                    store.waitFor(java.util.List.of("worker/0", "worker/1"));
                    System.out.println("store: arrived " + arrived + ", peer says " + store.getString("worker/" + (1 - rank)).split(" ")[0]);
                    pg.barrier().waitFor(); // the server stays up until every rank has read
                }
            }
            case "sleep" -> {
                // Runs on SIGTERM, not on SIGKILL: shows that the launcher's stop reached the worker and its output still arrives.
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    System.out.println("rank " + rank + " stopping on a signal");
                    System.out.flush();
                }));
                System.out.println("sleeping");
                System.out.flush();
                Thread.sleep(120_000);
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
        Distributed.destroyProcessGroup();
    }
}
