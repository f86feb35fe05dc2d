package org.jtorch.distributed;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jtorch.testing.ChildJvm;

/**
 * Runs a class's {@code main} as an MPI job of child JVMs ({@code mpirun -np N}), for the tests of the
 * distributed package: each rank is a separate process, so a rank that crashes or hangs cannot take the test JVM
 * with it, and the job is killed (with every process under it) at the timeout.
 */
final class MpiJob {
    record Result(int exitCode, boolean timedOut, String output, Duration elapsed) {}

    private MpiJob() {}

    static boolean available() {
        return Files.isExecutable(Path.of("/usr/bin/mpirun")) && Files.exists(Path.of("/usr/lib/x86_64-linux-gnu/libmpi.so.40"));
    }

    /** The {@code mpirun} options for ranks on this machine: shared memory, no core binding (CI has 2 cores). */
    static List<String> mpirun(int ranks) {
        return new ArrayList<>(List.of("mpirun", "-np", Integer.toString(ranks), "--oversubscribe", "--bind-to", "none",
                "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"));
    }

    static Result run(int ranks, Duration timeout, Class<?> main, String... args) throws IOException, InterruptedException {
        List<String> command = mpirun(ranks);
        command.addAll(ChildJvm.command(null, List.of("-XX:TieredStopAtLevel=1", "-Xmx256m"), main, args).command());
        return runCommand(command, timeout);
    }

    static Result runCommand(List<String> command, Duration timeout) throws IOException, InterruptedException {
        Path log = Files.createTempFile("jtorch-mpi-job", ".txt");
        try {
            ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().put("OMPI_ALLOW_RUN_AS_ROOT", "1");
            pb.environment().put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            long start = System.nanoTime();
            Process p = pb.start();
            boolean finished = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
            Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
            return new Result(finished ? p.exitValue() : -1, !finished, Files.readString(log, StandardCharsets.UTF_8), elapsed);
        } finally {
            Files.deleteIfExists(log);
        }
    }
}
