package org.jtorch.distributed;

import java.time.Duration;
import java.util.Map;

/**
 * What a launcher tells a worker through its environment: torchrun's contract ({@code RANK}, {@code LOCAL_RANK},
 * {@code WORLD_SIZE}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}, {@code MASTER_ADDR}, {@code MASTER_PORT}), as
 * {@code jtorch launch} sets it. Under a bare {@code mpirun} the same facts come from Open MPI's
 * {@code OMPI_COMM_WORLD_*} variables; a process started alone is rank 0 of 1.
 *
 * @param rank this worker's rank in the job
 * @param localRank its rank among the workers of its node
 * @param worldSize the number of workers in the job
 * @param localWorldSize the number of workers on its node
 * @param groupRank the node's rank (torchrun's {@code GROUP_RANK})
 * @param masterAddr the host of rank 0's store, or null when not set
 * @param masterPort the port of rank 0's store, or 0 when not set
 * @param source where the values came from: {@code torchrun}, {@code mpirun} or {@code default}
 * @param launcherServesStore true when the launcher itself serves the {@link TcpStore} at {@code MASTER_ADDR:MASTER_PORT}
 *     and rank 0 only connects to it ({@code TORCHELASTIC_USE_AGENT_STORE=True}, as torchrun sets it; {@code jtorch
 *     launch} does when it starts the workers itself)
 */
public record LaunchEnvironment(int rank, int localRank, int worldSize, int localWorldSize, int groupRank, String masterAddr,
        int masterPort, String source, boolean launcherServesStore) {
    public LaunchEnvironment {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("LaunchEnvironment: RANK must be in [0, WORLD_SIZE), got RANK=" + rank + " WORLD_SIZE=" + worldSize);
        }
        if (localWorldSize < 1 || localRank < 0 || localRank >= localWorldSize) {
            throw new IllegalArgumentException("LaunchEnvironment: LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE), got LOCAL_RANK=" + localRank
                    + " LOCAL_WORLD_SIZE=" + localWorldSize);
        }
    }

    /** A launch environment whose store, if any, rank 0 serves. */
    public LaunchEnvironment(int rank, int localRank, int worldSize, int localWorldSize, int groupRank, String masterAddr, int masterPort,
            String source) {
        this(rank, localRank, worldSize, localWorldSize, groupRank, masterAddr, masterPort, source, false);
    }

    /**
     * Connects to the job's {@link TcpStore} at {@code MASTER_ADDR:MASTER_PORT}: rank 0 serves it unless the launcher
     * does. Throws {@link DistributedException} when the environment names no store.
     */
    public TcpStore connectStore(Duration timeout) {
        if (masterAddr == null || masterPort == 0) {
            throw new DistributedException("rank " + rank + " of " + worldSize + " needs MASTER_ADDR and MASTER_PORT (the job's store)");
        }
        return new TcpStore(masterAddr, masterPort, rank == 0 && !launcherServesStore, timeout);
    }

    /** This process's environment. */
    public static LaunchEnvironment current() {
        return from(System.getenv());
    }

    /** Reads the contract from {@code env}; a malformed value is an error naming the variable. */
    public static LaunchEnvironment from(Map<String, String> env) {
        if (env.containsKey("RANK") || env.containsKey("WORLD_SIZE")) {
            int rank = integer(env, "RANK", null);
            int world = integer(env, "WORLD_SIZE", null);
            int localRank = integer(env, "LOCAL_RANK", rank);
            int localWorld = integer(env, "LOCAL_WORLD_SIZE", world);
            String port = env.get("MASTER_PORT");
            return new LaunchEnvironment(rank, localRank, world, localWorld, integer(env, "GROUP_RANK", 0), env.get("MASTER_ADDR"),
                    port == null ? 0 : integer(env, "MASTER_PORT", null), "torchrun",
                    "true".equalsIgnoreCase(env.getOrDefault("TORCHELASTIC_USE_AGENT_STORE", "false")));
        }
        if (env.containsKey("OMPI_COMM_WORLD_RANK")) {
            int rank = integer(env, "OMPI_COMM_WORLD_RANK", null);
            int world = integer(env, "OMPI_COMM_WORLD_SIZE", null);
            return new LaunchEnvironment(rank, integer(env, "OMPI_COMM_WORLD_LOCAL_RANK", rank), world,
                    integer(env, "OMPI_COMM_WORLD_LOCAL_SIZE", world), integer(env, "OMPI_COMM_WORLD_NODE_RANK", 0), null, 0, "mpirun");
        }
        return new LaunchEnvironment(0, 0, 1, 1, 0, null, 0, "default");
    }

    private static int integer(Map<String, String> env, String name, Integer fallback) {
        String v = env.get(name);
        if (v == null) {
            if (fallback != null) return fallback;
            throw new IllegalArgumentException("LaunchEnvironment: " + name + " is not set (a launcher sets RANK, WORLD_SIZE, LOCAL_RANK, "
                    + "LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT together)");
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("LaunchEnvironment: " + name + " must be an integer, got '" + v + "'");
        }
    }
}
