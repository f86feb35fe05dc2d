package org.jtorch.distributed;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Starts and supervises this node's workers of a data-parallel job, as torchrun's agent does (static rendezvous):
 * the processes themselves, no {@code mpirun}, so that a job spans machines with nothing but TCP between them.
 *
 * <p>Rendezvous: the launcher of node 0 serves the job's {@link TcpStore} at {@code MASTER_ADDR:MASTER_PORT}; every
 * node's launcher joins it and waits for all {@code nnodes} before it starts any worker. The workers get torchrun's
 * environment ({@code RANK = GROUP_RANK * nprocPerNode + LOCAL_RANK}, ...) and {@code TORCHELASTIC_USE_AGENT_STORE=True},
 * so that rank 0 connects to the launcher's store instead of serving its own (see {@link LaunchEnvironment#connectStore}).
 *
 * <p>Supervision: each output line of a worker is printed with its global rank ({@code [rank3]: ...}). When a worker
 * fails, the launcher posts the failure to the store, stops its other workers (SIGTERM, then SIGKILL after
 * {@link Options#stopGrace()}) and returns the worker's status; the launchers of the other nodes see the post within
 * {@link #POLL} and stop theirs too, naming the failing rank. A node whose store connection breaks (node 0's launcher
 * is gone) stops its workers as well. SIGINT, SIGTERM or SIGHUP to a launcher stop its workers the same way, with
 * the signal the launcher received (as torchrun; {@link StopSignal}), and post that to the other nodes. So a job
 * ends within the stop grace plus a poll of a failure, never hangs, and leaves no worker running. A launcher killed with SIGKILL on a node other than 0 posts nothing:
 * node 0's launcher notices its silence within the heartbeat timeout and stops the job (that node's own workers,
 * orphaned, end when their collectives with the stopped peers fail).
 */
public final class Launcher {
    /** How often the launcher looks at its workers and at the store. */
    static final Duration POLL = Duration.ofMillis(100);
    private static final int LAST_LINES = 8;
    /** The first failure, {@code "NODE RANK message"}, posted by the node where it happened. */
    private static final String FAILURE = "launch/failure";
    /** {@code SEEN + node}: that node has read the failure; node 0 keeps the store up until all have (see lingerForTheOtherNodes). */
    private static final String SEEN = "launch/failure-seen/";

    /**
     * One node's part of the job.
     *
     * @param nprocPerNode workers on this node
     * @param nnodes nodes in the job
     * @param nodeRank this node's rank, {@code GROUP_RANK}
     * @param masterAddr where node 0's launcher serves the store
     * @param masterPort the store's port
     * @param rendezvousTimeout how long a launcher waits for the other nodes to join, and a worker for the store
     * @param stopGrace how long stopped workers get between SIGTERM and SIGKILL
     * @param heartbeatTimeout how long node 0's launcher waits for news from another node's launcher before it calls that
     *     node lost (its launcher was killed, or its host went away) and stops the job
     */
    public record Options(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, Duration rendezvousTimeout,
            Duration stopGrace, Duration heartbeatTimeout) {
        /** torchrun's elastic agent gives up on a silent node after its 30 s keep-alive; so does this launcher by default. */
        public static final Duration DEFAULT_HEARTBEAT_TIMEOUT = Duration.ofSeconds(30);

        public Options(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, Duration rendezvousTimeout,
                Duration stopGrace) {
            this(nprocPerNode, nnodes, nodeRank, masterAddr, masterPort, rendezvousTimeout, stopGrace, DEFAULT_HEARTBEAT_TIMEOUT);
        }

        public Options {
            if (heartbeatTimeout == null || heartbeatTimeout.toMillis() < 1) {
                throw new IllegalArgumentException("launch: --heartbeat-timeout must be positive, got " + heartbeatTimeout);
            }
            if (nprocPerNode < 1) throw new IllegalArgumentException("launch: --nproc-per-node must be at least 1, got " + nprocPerNode);
            if (nnodes < 1) throw new IllegalArgumentException("launch: --nnodes must be at least 1, got " + nnodes);
            if (nodeRank < 0 || nodeRank >= nnodes) {
                throw new IllegalArgumentException("launch: --node-rank must be in [0, " + nnodes + "), got " + nodeRank);
            }
            if (masterAddr == null || masterAddr.isBlank()) throw new IllegalArgumentException("launch: --master-addr is empty");
            if (masterPort < 1 || masterPort > 65535) throw new IllegalArgumentException("launch: --master-port must be in [1, 65535], got " + masterPort);
        }

        /** One node of {@code nprocPerNode} workers, its store on loopback at {@code port}; torchrun's 300 s rendezvous, a 5 s stop grace. */
        public static Options local(int nprocPerNode, int port) {
            return new Options(nprocPerNode, 1, 0, "127.0.0.1", port, Duration.ofSeconds(300), Duration.ofSeconds(5));
        }

        /** Workers in the whole job. */
        public int worldSize() {
            return nprocPerNode * nnodes;
        }
    }

    /** What ended the job: a worker's failure, here or on another node, or success ({@code failedRank} -1, code 0). */
    public record Outcome(int exitCode, int failedRank, String message) {}

    private final Options options;
    private final List<String> command;
    private final Map<String, String> extraEnv;
    private final PrintStream out;
    private final PrintStream err;
    private final List<Worker> workers = new ArrayList<>();
    private volatile boolean stopping;
    /** This node posted the job's first failure (the other nodes read it; this one does not). */
    private volatile boolean posted;
    private volatile TcpStore store;
    /** The watch ended because another node posted a failure; this node's workers were not the cause. */
    private volatile boolean stoppedForAnotherNode;

    private Launcher(Options options, List<String> command, Map<String, String> extraEnv, PrintStream out, PrintStream err) {
        this.options = options;
        this.command = List.copyOf(command);
        this.extraEnv = Map.copyOf(extraEnv);
        this.out = out;
        this.err = err;
    }

    /**
     * Runs this node's part of the job to its end: {@code command} is each worker's command line, {@code extraEnv} is
     * added to its environment (after torchrun's variables, which it may override, e.g. {@code OMP_NUM_THREADS}).
     * Failures are reported on {@code err}, one line starting {@code jtorch launch:}, with the failing worker's last
     * lines of output.
     */
    public static Outcome run(Options options, List<String> command, Map<String, String> extraEnv, PrintStream out, PrintStream err) {
        if (command.isEmpty()) throw new IllegalArgumentException("launch: no worker command");
        Launcher launcher = new Launcher(options, command, extraEnv, out, err);
        StopSignal.watch();
        Thread hook = new Thread(launcher::interrupted, "jtorch-launch-signals");
        Runtime.getRuntime().addShutdownHook(hook);
        Outcome outcome = null;
        try {
            outcome = launcher.supervise();
        } finally {
            launcher.stopAll();
            if (outcome != null) outcome = launcher.withLocalConsequence(outcome);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running
            }
            if (outcome == null || outcome.exitCode() != 0) launcher.lingerForTheOtherNodes();
            if (launcher.store != null) launcher.store.close();
        }
        if (outcome.exitCode() != 0) {
            synchronized (err) {
                err.println("jtorch launch: " + outcome.message());
            }
        }
        return outcome;
    }

    /** One worker process, its output pumps and its last lines. */
    private static final class Worker {
        final int rank;
        final int localRank;
        final Process process;
        final ArrayDeque<String> last = new ArrayDeque<>();
        final List<Thread> pumps = new ArrayList<>();
        /** The signal the launcher sent to stop it; 0 while it has sent none. */
        volatile int stopSignal;

        Worker(int rank, int localRank, Process process) {
            this.rank = rank;
            this.localRank = localRank;
            this.process = process;
        }

        void remember(String line) {
            synchronized (last) {
                if (last.size() == LAST_LINES) last.removeFirst();
                last.addLast(line);
            }
        }

        String lastOutput() {
            StringBuilder sb = new StringBuilder();
            synchronized (last) {
                for (String l : last) sb.append("\n  [rank").append(rank).append("]: ").append(l);
            }
            return sb.toString();
        }
    }

    private Outcome supervise() {
        String where = options.masterAddr() + ":" + options.masterPort();
        try {
            store = new TcpStore(options.masterAddr(), options.masterPort(), options.nodeRank() == 0, options.rendezvousTimeout());
        } catch (DistributedException e) {
            return new Outcome(1, -1, (options.nodeRank() == 0 ? "cannot serve the job's store at " : "cannot reach the job's store at ")
                    + where + ": " + e.getMessage());
        }
        Outcome joined = join(where);
        if (joined != null) return joined;
        for (int local = 0; local < options.nprocPerNode(); local++) {
            int rank = options.nodeRank() * options.nprocPerNode() + local;
            ProcessBuilder pb = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            pb.environment().putAll(environment(rank, local));
            try {
                Worker w = new Worker(rank, local, pb.start());
                synchronized (workers) {
                    if (stopping) {
                        w.process.destroyForcibly();
                        return new Outcome(130, -1, "stopped by a signal while starting the workers");
                    }
                    workers.add(w);
                }
                w.pumps.add(pump(w, w.process.getInputStream(), out));
                w.pumps.add(pump(w, w.process.getErrorStream(), err));
            } catch (IOException e) {
                Outcome failed = new Outcome(1, rank, "rank " + rank + " of " + options.worldSize() + " could not start: " + e.getMessage());
                post(failed);
                return failed;
            }
        }
        return watch(where);
    }

    /** Every node's launcher announces itself and waits for the others; null when all came. */
    private Outcome join(String where) {
        List<String> nodes = new ArrayList<>();
        for (int n = 0; n < options.nnodes(); n++) nodes.add("launch/node/" + n);
        try {
            store.set(nodes.get(options.nodeRank()), "pid " + ProcessHandle.current().pid());
            store.waitFor(nodes, options.rendezvousTimeout());
            return null;
        } catch (DistributedException e) {
            List<Integer> missing = new ArrayList<>();
            try {
                for (int n = 0; n < options.nnodes(); n++) if (!store.check(List.of(nodes.get(n)))) missing.add(n);
            } catch (DistributedException lost) {
                return new Outcome(1, -1, "lost the job's store at " + where + " while waiting for the other nodes: " + lost.getMessage());
            }
            return new Outcome(1, -1, "node(s) " + missing + " of " + options.nnodes() + " did not join the job at " + where + " within "
                    + options.rendezvousTimeout().toSeconds() + " s; no worker was started");
        }
    }

    private Map<String, String> environment(int rank, int localRank) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("RANK", Integer.toString(rank));
        env.put("LOCAL_RANK", Integer.toString(localRank));
        env.put("WORLD_SIZE", Integer.toString(options.worldSize()));
        env.put("LOCAL_WORLD_SIZE", Integer.toString(options.nprocPerNode()));
        env.put("GROUP_RANK", Integer.toString(options.nodeRank()));
        env.put("MASTER_ADDR", options.masterAddr());
        env.put("MASTER_PORT", Integer.toString(options.masterPort()));
        env.put("TORCHELASTIC_USE_AGENT_STORE", "True");
        env.putAll(extraEnv);
        return env;
    }

    /** Polls the workers and the store until the job ends one way or the other. */
    private Outcome watch(String where) {
        List<String> doneKeys = new ArrayList<>();
        for (int n = 0; n < options.nnodes(); n++) doneKeys.add("launch/done/" + n);
        Heartbeats heartbeats = new Heartbeats(doneKeys);
        boolean localDone = false;
        while (true) {
            if (!localDone) {
                Worker failed = null;
                boolean allExited = true;
                for (Worker w : workers) {
                    if (w.process.isAlive()) {
                        allExited = false;
                    } else if (w.process.exitValue() != 0 && failed == null) {
                        failed = w;
                    }
                }
                if (failed != null) {
                    drain(failed);
                    String here = describe(failed);
                    // A worker that fails because a peer on another node failed first (its collective broke) is not the cause.
                    Outcome first = null;
                    try {
                        first = failureElsewhere();
                    } catch (DistributedException lost) {
                        // no store to ask: this node's failure is all it knows
                    }
                    if (first != null) return then(first, failed);
                    Outcome o = new Outcome(failed.process.exitValue(), failed.rank, here + "; the other workers were stopped."
                            + (failed.last.isEmpty() ? "" : " Its last output:" + failed.lastOutput()));
                    post(o);
                    return o;
                }
                if (allExited) {
                    for (Worker w : workers) drain(w);
                    localDone = true;
                    try {
                        store.set(doneKeys.get(options.nodeRank()), "ok");
                    } catch (DistributedException e) {
                        // node 0 is gone, but this node's workers all succeeded
                    }
                    // Node 0 serves the store: it stays until every node has finished with it.
                    if (options.nodeRank() != 0) return new Outcome(0, -1, "all " + workers.size() + " workers finished");
                }
            }
            try {
                if (posted) return new Outcome(130, -1, "stopped by a signal; the workers were stopped"); // see interrupted()
                Outcome lost = heartbeats.beatAndCheck();
                if (lost != null) {
                    post(lost);
                    return lost;
                }
                Outcome elsewhere = failureElsewhere();
                if (elsewhere != null) {
                    stoppedForAnotherNode = true;
                    return elsewhere;
                }
                if (localDone && store.check(doneKeys)) return new Outcome(0, -1, "all " + options.worldSize() + " workers finished");
            } catch (DistributedException e) {
                return new Outcome(1, -1, "lost the job's store at " + where + " (node 0's launcher ended?); stopped this node's workers: "
                        + e.getMessage());
            }
            try {
                Thread.sleep(POLL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Outcome(130, -1, "interrupted; the workers were stopped");
            }
        }
    }

    /**
     * Every launcher counts up its key in the store about once a second; node 0's launcher watches the other nodes'
     * counts and calls a node lost when its count has not moved for the heartbeat timeout. A launcher killed with
     * SIGKILL posts nothing, and its host may be gone altogether: without this, the other nodes would wait for their
     * workers' collectives to time out. (The other nodes notice node 0's loss as their store connection breaking.)
     */
    private final class Heartbeats {
        private static final String ALIVE = "launch/alive/";
        private final List<String> doneKeys;
        private final long intervalNanos;
        private final long[] lastCount;
        private final long[] lastChange;
        private long nextBeat;

        Heartbeats(List<String> doneKeys) {
            this.doneKeys = doneKeys;
            this.intervalNanos = Math.min(1_000_000_000L, options.heartbeatTimeout().toNanos() / 4);
            this.lastCount = new long[options.nnodes()];
            this.lastChange = new long[options.nnodes()];
            long now = System.nanoTime();
            java.util.Arrays.fill(lastChange, now);
            this.nextBeat = now;
        }

        /** Beats when due; on node 0, also returns the outcome for the first node found silent, else null. */
        Outcome beatAndCheck() {
            if (options.nnodes() == 1) return null;
            long now = System.nanoTime();
            if (now < nextBeat) return null;
            nextBeat = now + intervalNanos;
            store.add(ALIVE + options.nodeRank(), 1);
            if (options.nodeRank() != 0) return null;
            for (int n = 1; n < options.nnodes(); n++) {
                long count = store.add(ALIVE + n, 0);
                if (count != lastCount[n]) {
                    lastCount[n] = count;
                    lastChange[n] = now;
                } else if (now - lastChange[n] > options.heartbeatTimeout().toNanos() && !store.check(List.of(doneKeys.get(n)))) {
                    int first = n * options.nprocPerNode();
                    return new Outcome(1, first, "node " + n + " (ranks " + first + "-" + (first + options.nprocPerNode() - 1)
                            + ") was lost: its launcher has not been heard from for " + options.heartbeatTimeout().toSeconds()
                            + " s (killed, or its host unreachable); stopped this node's workers");
                }
            }
            return null;
        }
    }

    private String describe(Worker w) {
        return "rank " + w.rank + " of " + options.worldSize() + " (node " + options.nodeRank() + ", local rank " + w.localRank + ") "
                + how(w.process.exitValue());
    }

    /** The failure elsewhere as the cause, and this node's failed worker as its consequence. */
    private Outcome then(Outcome cause, Worker failed) {
        return new Outcome(cause.exitCode(), cause.failedRank(), cause.message() + "; then " + describe(failed)
                + (failed.last.isEmpty() ? "" : ". Its last output:" + failed.lastOutput()));
    }

    /**
     * After this node stopped its workers because another node failed: a worker that had failed on its own meanwhile
     * (its collective broke between two polls, or while it was being stopped) is named as a consequence. A worker
     * that ended with the signal sent to stop it is not.
     */
    private Outcome withLocalConsequence(Outcome o) {
        if (!stoppedForAnotherNode) return o;
        for (Worker w : workers) {
            if (w.process.isAlive()) continue;
            int status = w.process.exitValue();
            if (status == 0 || (w.stopSignal != 0 && (status == 128 + w.stopSignal || status == 128 + 9))) continue;
            return then(o, w);
        }
        return o;
    }

    /** The failure another node posted, now marked as read by this one; null when there is none. */
    private Outcome failureElsewhere() {
        if (options.nnodes() == 1 || posted || !store.check(List.of(FAILURE))) return null;
        String[] failure = store.getString(FAILURE).split(" ", 3);
        store.set(SEEN + options.nodeRank(), "yes");
        return new Outcome(1, Integer.parseInt(failure[1]), "stopped this node's workers (node " + options.nodeRank()
                + ") because another node failed: " + failure[2]);
    }

    /** How a worker's status reads: Java reports a worker killed by signal N as 128 + N, as shells do. */
    static String how(int status) {
        if (status > 128 && status < 128 + 65) {
            int signal = status - 128;
            return "exited with status " + status + " (killed by " + StopSignal.name(signal) + ")";
        }
        return "exited with status " + status;
    }

    /** Tells the other nodes, first failure first ({@code "RANK message"}); best effort, as the store may be gone. */
    private void post(Outcome o) {
        if (options.nnodes() == 1 || store == null) return;
        try {
            if (store.add("launch/failures", 1) == 1) {
                posted = true;
                store.set(FAILURE, options.nodeRank() + " " + o.failedRank() + " " + o.message());
            }
        } catch (DistributedException e) {
            // node 0's launcher is gone: the other nodes see their store connection break instead
        }
    }

    /** A signal to the launcher: stop the workers, and tell the other nodes why. */
    private void interrupted() {
        post(new Outcome(130, -1, "the launcher of node " + options.nodeRank() + " was stopped by a signal ("
                + StopSignal.name(StopSignal.toForward()) + ")"));
        stopAll();
        lingerForTheOtherNodes();
    }

    /**
     * Node 0 serves the store: after a failure it keeps it up until every other node has read the failure (or the
     * stop grace has passed), so that they report its cause rather than a lost store.
     */
    private void lingerForTheOtherNodes() {
        if (options.nodeRank() != 0 || options.nnodes() == 1 || store == null) return;
        long deadline = System.nanoTime() + options.stopGrace().toNanos();
        try {
            if (!store.check(List.of(FAILURE))) return;
            int poster = Integer.parseInt(store.getString(FAILURE).split(" ", 2)[0]);
            List<String> readers = new ArrayList<>();
            for (int n = 1; n < options.nnodes(); n++) if (n != poster) readers.add(SEEN + n);
            while (!readers.isEmpty() && !store.check(readers) && System.nanoTime() < deadline) Thread.sleep(POLL.toMillis());
        } catch (DistributedException | InterruptedException e) {
            // the store or the wait ended: nothing more to do for the other nodes
        }
    }

    /**
     * The signal that stops the launcher (SIGTERM after a failure) to every worker still running, SIGKILL to what is
     * left of them and what they started after the grace.
     */
    private void stopAll() {
        List<Worker> running;
        synchronized (workers) {
            stopping = true;
            running = List.copyOf(workers);
        }
        List<ProcessHandle> tree = new ArrayList<>();
        int signal = StopSignal.toForward();
        for (Worker w : running) {
            if (!w.process.isAlive()) continue;
            tree.addAll(w.process.descendants().toList());
            tree.add(w.process.toHandle());
            w.stopSignal = signal;
            // Through the handle: Process.destroy() also closes the pipes, losing what the worker prints while it stops.
            StopSignal.send(w.process.toHandle(), signal);
        }
        long deadline = System.nanoTime() + options.stopGrace().toNanos();
        for (ProcessHandle p : tree) {
            try {
                long left = deadline - System.nanoTime();
                if (left > 0) p.onExit().get(left, java.util.concurrent.TimeUnit.NANOSECONDS);
            } catch (Exception timedOut) {
                // killed below
            }
            if (p.isAlive()) p.destroyForcibly();
        }
        for (Worker w : running) drain(w);
    }

    /** Waits briefly for a finished worker's last lines to be printed. */
    private static void drain(Worker w) {
        for (Thread t : w.pumps) {
            try {
                t.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static Thread pump(Worker w, InputStream stream, PrintStream target) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    w.remember(line);
                    synchronized (target) {
                        target.println("[rank" + w.rank + "]: " + line);
                    }
                }
            } catch (IOException e) {
                // the worker ended
            }
        }, "jtorch-launch-rank" + w.rank);
        t.setDaemon(true);
        t.start();
        return t;
    }
}
