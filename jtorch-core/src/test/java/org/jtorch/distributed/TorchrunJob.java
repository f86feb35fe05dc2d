package org.jtorch.distributed;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * Runs a class's {@code main} as {@code N} child JVMs with torchrun's environment ({@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code MASTER_ADDR=127.0.0.1}, a free {@code MASTER_PORT}), for backends that meet through
 * the store rather than {@code mpirun} (nccl on the CUDA simulator). As a launcher does, it stops the other ranks
 * when one fails (after {@link #STOP_GRACE}), and kills them all at the timeout. The children's class path is the worker's, core's and every
 * {@link ProcessGroupProvider}'s (the simulator's suites run under a launcher whose {@code java.class.path} is its
 * own jar).
 */
final class TorchrunJob {
    /** How long the other ranks may go on after one failed, so that their own reports of the failure are seen. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(20);

    private TorchrunJob() {}

    /** The backends a {@link ProcessGroupProvider} on the class path offers. */
    static Set<String> providedBackends() {
        Set<String> out = new LinkedHashSet<>();
        for (ProcessGroupProvider p : ServiceLoader.load(ProcessGroupProvider.class)) out.add(p.backend());
        return out;
    }

    static MpiJob.Result run(int ranks, Duration timeout, List<String> jvmOptions, Class<?> main, String... args)
            throws IOException, InterruptedException {
        return run(ranks, timeout, java.util.Map.of(), jvmOptions, main, args);
    }

    /** As {@link #run(int, Duration, List, Class, String...)}, with {@code env} added to every rank's environment. */
    static MpiJob.Result run(int ranks, Duration timeout, java.util.Map<String, String> env, List<String> jvmOptions, Class<?> main,
            String... args) throws IOException, InterruptedException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<Process> processes = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        long start = System.nanoTime();
        boolean timedOut = false;
        int failed = 0;
        long firstFailure = 0;
        try {
            for (int r = 0; r < ranks; r++) {
                List<String> command = new ArrayList<>();
                command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
                command.addAll(List.of("--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                        "-Xmx384m"));
                command.addAll(jvmOptions);
                command.addAll(List.of("-cp", classPath(main), main.getName()));
                command.addAll(List.of(args));
                Path log = Files.createTempFile("jtorch-torchrun-rank" + r, ".txt");
                logs.add(log);
                ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
                pb.environment().putAll(java.util.Map.of("RANK", "" + r, "WORLD_SIZE", "" + ranks, "LOCAL_RANK", "" + r,
                        "LOCAL_WORLD_SIZE", "" + ranks, "GROUP_RANK", "0", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port));
                pb.environment().putAll(env);
                processes.add(pb.start());
            }
            long deadline = start + timeout.toNanos();
            while (processes.stream().anyMatch(Process::isAlive)) {
                if (System.nanoTime() > deadline) {
                    timedOut = true;
                    break;
                }
                if (firstFailure == 0 && processes.stream().anyMatch(p -> !p.isAlive() && p.exitValue() != 0)) firstFailure = System.nanoTime();
                if (firstFailure != 0 && System.nanoTime() - firstFailure > STOP_GRACE.toNanos()) break; // stop the others, as a launcher
                Thread.sleep(50);
            }
        } finally {
            for (Process p : processes) {
                if (p.isAlive()) p.destroyForcibly();
                p.waitFor();
            }
        }
        StringBuilder output = new StringBuilder();
        for (int r = 0; r < processes.size(); r++) {
            int code = processes.get(r).exitValue();
            if (code != 0 && failed == 0) failed = code;
            output.append("--- rank ").append(r).append(" (exit ").append(code).append(") ---\n")
                    .append(Files.readString(logs.get(r), StandardCharsets.UTF_8));
            Files.deleteIfExists(logs.get(r));
        }
        return new MpiJob.Result(timedOut ? -1 : failed, timedOut, output.toString(), Duration.ofNanos(System.nanoTime() - start));
    }

    /** The worker's, core's and every provider's class path entries. */
    static String classPath(Class<?> main) {
        Set<String> entries = new LinkedHashSet<>();
        List<Class<?>> classes = new ArrayList<>(List.of(main, org.jtorch.Tensor.class));
        for (ProcessGroupProvider p : ServiceLoader.load(ProcessGroupProvider.class)) classes.add(p.getClass());
        for (Class<?> c : classes) {
            try {
                entries.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }
}
