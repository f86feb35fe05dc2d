package org.jtorch.distributed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A worker started by {@link Launcher} in {@link LauncherTest} and {@link TwoHostTest}: it meets the others in the
 * job's store (served by node 0's launcher) and then does what its scenario says. Its last argument is a marker
 * that lets a test find any of its processes left running.
 */
public final class LauncherWorker {
    public static void main(String[] args) throws Exception {
        LaunchEnvironment env = LaunchEnvironment.current();
        int rank = env.rank();
        System.out.println("env RANK=" + System.getenv("RANK") + " LOCAL_RANK=" + System.getenv("LOCAL_RANK") + " WORLD_SIZE="
                + System.getenv("WORLD_SIZE") + " LOCAL_WORLD_SIZE=" + System.getenv("LOCAL_WORLD_SIZE") + " GROUP_RANK="
                + System.getenv("GROUP_RANK") + " MASTER=" + System.getenv("MASTER_ADDR") + ":" + System.getenv("MASTER_PORT")
                + " launcherServesStore=" + env.launcherServesStore());
        try (TcpStore store = env.connectStore(Duration.ofSeconds(60))) {
            store.set("worker/" + rank, "pid " + ProcessHandle.current().pid());
            List<String> all = new ArrayList<>();
            for (int r = 0; r < env.worldSize(); r++) all.add("worker/" + r);
            store.waitFor(all);
            int last = env.worldSize() - 1;
            switch (args[0]) {
                case "ok" -> System.out.println("store: " + env.worldSize() + " arrived, rank " + (rank + 1) % env.worldSize() + " says "
                        + store.getString("worker/" + (rank + 1) % env.worldSize()).split(" ")[0]);
                case "throw" -> {
                    if (rank == last) throw new IllegalStateException("rank " + rank + " fails on purpose");
                    Thread.sleep(120_000);
                }
                case "cascade" -> {
                    // The others fail because the last rank did, as a collective with a dead peer would, once its launcher
                    // has posted the failure. They outlive the launcher's SIGTERM, so that they fail on their own whichever
                    // comes first: their failure or this node's launcher reading the post.
                    if (rank == last) throw new IllegalStateException("rank " + rank + " fails on purpose");
                    sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> {});
                    while (!store.check(List.of("launch/failure"))) Thread.sleep(2);
                    System.out.println("rank " + rank + " fails because rank " + last + " did");
                    System.out.flush();
                    Runtime.getRuntime().halt(2);
                }
                case "sigkill" -> {
                    if (rank == last) {
                        System.out.println("killing myself");
                        System.out.flush();
                        new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                    }
                    Thread.sleep(120_000);
                }
                case "signals" -> {
                    // Says which signal stopped it: the launcher passes on the one it received, as torchrun does.
                    for (String name : new String[] {"INT", "TERM", "HUP"}) {
                        sun.misc.Signal.handle(new sun.misc.Signal(name), signal -> {
                            System.out.println("rank " + rank + " got SIG" + signal.getName());
                            System.out.flush();
                            Runtime.getRuntime().halt(128 + signal.getNumber());
                        });
                    }
                    System.out.println("sleeping");
                    Thread.sleep(120_000);
                }
                case "sleep" -> {
                    // Runs on SIGTERM or SIGINT, not on SIGKILL: shows that a launcher's stop lets the worker clean up.
                    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                        System.out.println("rank " + rank + " stopping on a signal");
                        System.out.flush();
                    }));
                    System.out.println("sleeping");
                    Thread.sleep(120_000);
                }
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
    }
}
