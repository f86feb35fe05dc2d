package org.jtorch.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.distributed.Launcher;
import org.jtorch.distributed.StopSignal;

/**
 * {@code jtorch launch}: starts the workers of a data-parallel job, as {@code torchrun}.
 *
 * <p>With {@code --backend nccl} or {@code store} the launcher starts the workers itself ({@link Launcher}: torchrun's
 * environment, node 0's launcher serving the job's {@code TcpStore} at {@code MASTER_ADDR:MASTER_PORT}, one launcher
 * per machine with {@code --nnodes}), so a job spans machines over TCP alone.
 *
 * <p>With {@code --backend mpi} (the default) the workers must form one MPI world: the launcher runs Open MPI's
 * {@code mpirun}, which starts them, wires their shared-memory transport, and stops every worker when one fails.
 * Each worker starts through a one-line {@code sh} shim that exports torchrun's environment contract ({@code RANK}
 * from {@code OMPI_COMM_WORLD_RANK}, ...) and then {@code exec}s the program, so the program is the MPI process
 * itself and signals reach it. The launcher reads {@code mpirun}'s tagged output, prints each line prefixed with
 * its rank, forwards SIGINT, SIGTERM and SIGHUP (to {@code mpirun}, which stops the workers), and when a worker
 * fails exits with its status, naming the rank, how it ended and its last lines of output. An MPI world over
 * several machines is one {@code mpirun} over a host list (its processes are started through ssh from one place),
 * so {@code --nnodes > 1} with mpi is refused with that advice rather than run as N separate worlds.
 */
final class LaunchCommand {
    private static final Set<String> SUBCOMMANDS = Set.of("train", "info", "bench");
    /**
     * mpirun's --tag-output prefix, {@code [jobid,rank]<stdout>:}. It tags each chunk a worker wrote, so a line
     * written in pieces holds several tags, and pieces of different ranks can share a line.
     */
    private static final Pattern TAG = Pattern.compile("\\[(\\d+),(\\d+)\\]<(stdout|stderr)>:");
    private static final Pattern EXITED = Pattern.compile("Process name: \\[\\[\\d+,\\d+\\],(\\d+)\\]");
    private static final Pattern EXIT_CODE = Pattern.compile("Exit code:\\s+(\\d+)");
    private static final Pattern SIGNALLED = Pattern.compile("process rank (\\d+) with PID \\d+ on node \\S+ exited on signal (\\d+) \\(([^)]*)\\)");
    private static final int LAST_LINES = 8;
    /** How long workers get to stop after SIGTERM before they are killed. */
    private static final long STOP_GRACE_MS = 5_000;

    private LaunchCommand() {}

    static CommandLine commandLine() {
        return new CommandLine("launch", """
                Starts data-parallel workers, as torchrun: jtorch launch [options] -- PROGRAM [ARGS]
                PROGRAM is a jtorch command (train, info, bench) or any executable. Each worker gets RANK, LOCAL_RANK,
                WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT. Output lines are prefixed with
                the rank; when a worker fails the others are stopped (on every node) and the launcher exits non-zero,
                naming it. --backend nccl or store: the launcher starts the workers itself, and the launcher of node 0
                serves the job's TcpStore at MASTER_ADDR:MASTER_PORT, where the workers meet (nccl: each on
                cuda:LOCAL_RANK); several machines: run one launcher on each with --nnodes M --node-rank R and node
                0's address as --master-addr. --backend mpi: the workers form one MPI world on this machine (Open
                MPI's mpirun runs underneath), which Distributed.initProcessGroup("mpi") joins; for several machines
                run one mpirun over a hostfile (mpirun --hostfile H -np N ./jtorch train ...) instead.""")
                .option("nproc-per-node", "N", null, "workers on this machine (required)")
                .option("nnodes", "M", "1", "machines in the job (nccl or store; mpi: 1, see above)")
                .option("node-rank", "R", "0", "this machine's rank, 0 .. M-1")
                .option("master-addr", "ADDR", "127.0.0.1", "address of node 0, where its launcher serves the job's store")
                .option("master-port", "PORT", "29500", "port of the job's store")
                .option("rdzv-timeout", "SECONDS", "300", "how long to wait for the other nodes to join (nccl or store)")
                .option("heartbeat-timeout", "SECONDS", "30", "node 0 stops the job when another node's launcher has been silent "
                        + "this long (killed, or its host lost; nccl or store)")
                .option("backend", "NAME", "mpi", "mpi (CPU tensors, one MPI world through mpirun), nccl (CUDA tensors) or store (any "
                        + "program meeting in the TcpStore)");
    }

    static int run(String[] args) {
        int dash = Arrays.asList(args).indexOf("--");
        String[] own = dash < 0 ? args : Arrays.copyOfRange(args, 0, dash);
        List<String> program = dash < 0 ? List.of() : List.of(Arrays.copyOfRange(args, dash + 1, args.length));
        CommandLine cl = commandLine();
        try {
            if (!cl.parse(own)) return 0;
            if (cl.get("nproc-per-node") == null) throw new CommandLine.UsageException("--nproc-per-node is required");
            int nproc = cl.getInt("nproc-per-node");
            if (nproc < 1) throw new CommandLine.UsageException("--nproc-per-node must be at least 1, got " + nproc);
            int nnodes = cl.getInt("nnodes");
            int nodeRank = cl.getInt("node-rank");
            int port = cl.getInt("master-port");
            String backend = cl.choice("backend", List.of("mpi", "nccl", "store"));
            if (program.isEmpty()) throw new CommandLine.UsageException("no program: put it after '--', e.g. jtorch launch --nproc-per-node 2 -- train");
            if (backend.equals("mpi")) {
                if (nnodes != 1 || nodeRank != 0) {
                    throw new CommandLine.UsageException("--nnodes " + nnodes + " --node-rank " + nodeRank + " with the mpi backend: an MPI world "
                            + "over several machines is started by one mpirun over a host list (mpirun --hostfile HOSTS -np N ./jtorch ...); "
                            + "or use --backend nccl (GPUs) or store, whose workers meet over TCP");
                }
                return launch(nproc, cl.get("master-addr"), port, program, System.out, System.err);
            }
            Launcher.Options options;
            try {
                options = new Launcher.Options(nproc, nnodes, nodeRank, cl.get("master-addr"), port,
                        Duration.ofSeconds(cl.getInt("rdzv-timeout")), Duration.ofMillis(STOP_GRACE_MS),
                        Duration.ofSeconds(cl.getInt("heartbeat-timeout")));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.UsageException(e.getMessage().substring("launch: ".length()));
            }
            return launchDirect(options, program, System.out, System.err);
        } catch (CommandLine.UsageException e) {
            System.err.println("jtorch launch: " + e.getMessage());
            System.err.println(cl.usage());
            return 2;
        }
    }

    /** Starts this node's workers without mpirun (nccl, store): see {@link Launcher}. */
    static int launchDirect(Launcher.Options options, List<String> program, PrintStream out, PrintStream err) {
        return Launcher.run(options, workerCommand(program), Map.of("OMP_NUM_THREADS", threadsPerWorker(options.nprocPerNode())), out, err)
                .exitCode();
    }

    /** As torchrun, keep the workers' compute threads within the machine's cores (oversubscribed kernels wait on descheduled threads). */
    private static String threadsPerWorker(int nproc) {
        return System.getenv().getOrDefault("OMP_NUM_THREADS", Integer.toString(Math.max(1, Runtime.getRuntime().availableProcessors() / nproc)));
    }

    /** What the job's outcome was; {@code failedRank} is -1 when every worker succeeded. */
    record Outcome(int exitCode, int failedRank, String how) {}

    static int launch(int nproc, String masterAddr, int masterPort, List<String> program, PrintStream out, PrintStream err) {
        Path mpirun = findMpirun();
        if (mpirun == null) {
            err.println("jtorch launch: mpirun was not found on PATH; install Debian's openmpi-bin (and libopenmpi3)");
            return 1;
        }
        List<String> command = new ArrayList<>(List.of(mpirun.toString(), "-np", Integer.toString(nproc), "--oversubscribe",
                "--bind-to", "none", "--tag-output", "--stdin", "none"));
        Map<String, String> contract = new java.util.LinkedHashMap<>(Map.of("WORLD_SIZE", Integer.toString(nproc),
                "LOCAL_WORLD_SIZE", Integer.toString(nproc), "GROUP_RANK", "0", "MASTER_ADDR", masterAddr, "MASTER_PORT", Integer.toString(masterPort)));
        contract.put("OMP_NUM_THREADS", threadsPerWorker(nproc));
        for (String name : contract.keySet()) command.addAll(List.of("-x", name));
        command.addAll(List.of("sh", "-c", "export RANK=$OMPI_COMM_WORLD_RANK LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK; exec \"$@\"", "jtorch-worker"));
        command.addAll(workerCommand(program));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(contract);
        if (isRoot()) {
            pb.environment().putIfAbsent("OMPI_ALLOW_RUN_AS_ROOT", "1");
            pb.environment().putIfAbsent("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        }
        Process job;
        try {
            job = pb.start();
        } catch (IOException e) {
            err.println("jtorch launch: cannot start " + mpirun + ": " + e.getMessage());
            return 1;
        }
        StopSignal.watch();
        Thread forward = new Thread(() -> stop(job), "jtorch-launch-signals");
        Runtime.getRuntime().addShutdownHook(forward); // SIGINT/SIGTERM/SIGHUP to the launcher stop the workers
        Outcome outcome;
        try {
            outcome = supervise(job, nproc, out, err);
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(forward);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running
            }
        }
        if (outcome.failedRank() >= 0 || outcome.exitCode() != 0) err.println("jtorch launch: " + outcome.how());
        return outcome.exitCode();
    }

    /** Copies the job's output with rank prefixes until it ends; works out which rank failed first and how. */
    static Outcome supervise(Process job, int nproc, PrintStream out, PrintStream err) {
        Map<Integer, ArrayDeque<String>> last = new ConcurrentHashMap<>();
        List<String> runtimeLines = java.util.Collections.synchronizedList(new ArrayList<>());
        Thread stdout = pump(job.getInputStream(), out, err, last, runtimeLines);
        Thread stderr = pump(job.getErrorStream(), out, err, last, runtimeLines);
        int code;
        try {
            code = job.waitFor();
            stdout.join();
            stderr.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop(job);
            return new Outcome(130, -1, "interrupted; the workers were stopped");
        }
        int rank = -1;
        String how = null;
        synchronized (runtimeLines) {
            for (int i = 0; i < runtimeLines.size() && rank < 0; i++) {
                String line = runtimeLines.get(i);
                Matcher s = SIGNALLED.matcher(line);
                Matcher e = EXITED.matcher(line);
                if (s.find()) {
                    rank = Integer.parseInt(s.group(1));
                    how = "was killed by signal " + s.group(2) + " (" + s.group(3) + ")";
                } else if (e.find()) {
                    rank = Integer.parseInt(e.group(1));
                    how = "exited with status ?";
                    for (int j = i + 1; j < Math.min(runtimeLines.size(), i + 3); j++) {
                        Matcher c = EXIT_CODE.matcher(runtimeLines.get(j));
                        if (c.find()) how = "exited with status " + c.group(1);
                    }
                }
            }
        }
        if (code == 0 && rank < 0) return new Outcome(0, -1, "all " + nproc + " workers finished");
        if (rank < 0) return new Outcome(code == 0 ? 1 : code, -1, "mpirun exited with status " + code);
        StringBuilder sb = new StringBuilder("rank ").append(rank).append(" of ").append(nproc).append(' ').append(how)
                .append("; the other workers were stopped.");
        ArrayDeque<String> tail = last.get(rank);
        if (tail != null && !tail.isEmpty()) {
            sb.append(" Its last output:");
            for (String l : tail) sb.append("\n  [rank").append(rank).append("]: ").append(l);
        }
        return new Outcome(code == 0 ? 1 : code, rank, sb.toString());
    }

    private static Thread pump(InputStream stream, PrintStream out, PrintStream err, Map<Integer, ArrayDeque<String>> last,
            List<String> runtimeLines) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                String line;
                Map<String, StringBuilder> partial = new java.util.HashMap<>();
                while ((line = r.readLine()) != null) {
                    Matcher m = TAG.matcher(line);
                    if (!m.lookingAt()) {
                        runtimeLines.add(line);
                        // mpirun's own report; the launcher sums it up at the end, so show it only as detail.
                        if (!line.isBlank() && !line.startsWith("-----")) {
                            synchronized (err) {
                                err.println("[mpirun]: " + line.strip());
                            }
                        }
                        continue;
                    }
                    // Each tagged piece continues its rank's line; the piece that ends this physical line completes it.
                    List<int[]> tags = new ArrayList<>();
                    List<String> keys = new ArrayList<>();
                    do {
                        tags.add(new int[] {m.start(), m.end(), Integer.parseInt(m.group(2))});
                        keys.add(m.group(2) + m.group(3));
                    } while (m.find());
                    for (int k = 0; k < tags.size(); k++) {
                        int end = k + 1 < tags.size() ? tags.get(k + 1)[0] : line.length();
                        partial.computeIfAbsent(keys.get(k), x -> new StringBuilder()).append(line, tags.get(k)[1], end);
                    }
                    String key = keys.get(keys.size() - 1);
                    int rank = tags.get(tags.size() - 1)[2];
                    String text = partial.remove(key).toString();
                    ArrayDeque<String> tail = last.computeIfAbsent(rank, k -> new ArrayDeque<>());
                    synchronized (tail) {
                        if (tail.size() == LAST_LINES) tail.removeFirst();
                        tail.addLast(text);
                    }
                    PrintStream target = key.endsWith("stdout") ? out : err;
                    synchronized (target) {
                        target.println("[rank" + rank + "]: " + text);
                    }
                }
            } catch (IOException e) {
                // the job ended
            }
        }, "jtorch-launch-output");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * The signal that stops the launcher (SIGTERM after a failure) to mpirun, which stops the workers, then SIGKILL to
     * everything under it after a grace period.
     */
    static void stop(Process job) {
        if (!job.isAlive()) return;
        List<ProcessHandle> tree = job.descendants().toList();
        // Through the handle: Process.destroy() also closes the pipes, losing what the workers print while they stop.
        StopSignal.send(job.toHandle(), StopSignal.toForward());
        try {
            if (!job.waitFor(STOP_GRACE_MS, TimeUnit.MILLISECONDS)) job.destroyForcibly();
        } catch (InterruptedException e) {
            job.destroyForcibly();
        }
        for (ProcessHandle p : tree) if (p.isAlive()) p.destroyForcibly();
    }

    /** A jtorch subcommand runs in a JVM like this one (same class path and flags); anything else is run as given. */
    static List<String> workerCommand(List<String> program) {
        if (!SUBCOMMANDS.contains(program.get(0))) return program;
        List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!a.startsWith("-agentlib") && !a.startsWith("-javaagent")) java.add(a);
        }
        java.addAll(List.of("-cp", System.getProperty("java.class.path"),
                program.get(0).equals("bench") ? "org.jtorch.bench.BenchMain" : Main.class.getName()));
        java.addAll(program.get(0).equals("bench") ? program.subList(1, program.size()) : program);
        return java;
    }

    private static Path findMpirun() {
        String override = System.getenv("JTORCH_MPIRUN");
        if (override != null) return Path.of(override);
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            Path p = Path.of(dir, "mpirun");
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }
}
