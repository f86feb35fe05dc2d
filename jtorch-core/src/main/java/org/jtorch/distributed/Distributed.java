package org.jtorch.distributed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The process-wide default group, as {@code torch.distributed}'s module functions: {@link #initProcessGroup}
 * once per process, then {@link #defaultGroup()} (or {@link #rank()}, {@link #worldSize()}) anywhere, and
 * {@link #destroyProcessGroup()} at the end.
 *
 * <p>Backends: {@code mpi} (CPU tensors, Open MPI; the processes come from {@code mpirun} or {@code jtorch
 * launch}, which runs {@code mpirun} underneath) and {@code nccl} (CUDA tensors, with jtorch-cuda on the class path:
 * rank and world size from the launch environment, the NCCL unique id exchanged through a {@link TcpStore} at
 * {@code MASTER_ADDR:MASTER_PORT}). The launch environment (see {@link LaunchEnvironment}) must
 * agree with the backend's world: a worker that the environment calls rank 1 of 2 but that MPI started alone was
 * not started through MPI, and that is an error that says so.
 */
public final class Distributed {
    /** PyTorch's default collective timeout: 30 minutes. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);

    private static ProcessGroup group;

    private Distributed() {}

    public static ProcessGroup initProcessGroup(String backend) {
        return initProcessGroup(backend, DEFAULT_TIMEOUT);
    }

    /** Starts the default group on {@code backend}; {@code timeout} bounds every {@link Work#waitFor()}. */
    public static synchronized ProcessGroup initProcessGroup(String backend, Duration timeout) {
        if (backend == null) throw new NullPointerException("initProcessGroup: backend is null");
        if (group != null) throw new IllegalStateException("initProcessGroup: the default process group is already initialised (" + group.backend() + ")");
        LaunchEnvironment env = LaunchEnvironment.current();
        ProcessGroup pg = backend.equals("mpi") ? MpiProcessGroup.init(timeout) : provider(backend).init(env, timeout);
        if (!env.source().equals("default") && (env.rank() != pg.rank() || env.worldSize() != pg.size())) {
            int rank = pg.rank();
            int size = pg.size();
            pg.close();
            throw new DistributedException("initProcessGroup(" + backend + "): the environment (" + env.source() + ") says rank "
                    + env.rank() + " of " + env.worldSize() + " but the " + backend + " world is rank " + rank + " of " + size
                    + (size == 1 ? ": start the workers with mpirun or jtorch launch" : ""));
        }
        group = pg;
        return pg;
    }

    private static ProcessGroupProvider provider(String backend) {
        List<String> available = new ArrayList<>(List.of("mpi"));
        for (ProcessGroupProvider p : ServiceLoader.load(ProcessGroupProvider.class)) {
            if (p.backend().equals(backend)) return p;
            available.add(p.backend());
        }
        String hint = backend.equals("nccl") ? " (the nccl backend needs jtorch-cuda on the class path)" : "";
        throw new IllegalArgumentException("initProcessGroup: unknown backend '" + backend + "' (available: " + String.join(", ", available) + ")" + hint);
    }

    public static synchronized boolean isInitialized() {
        return group != null;
    }

    /** The default group; throws when {@link #initProcessGroup} has not been called. */
    public static synchronized ProcessGroup defaultGroup() {
        if (group == null) throw new IllegalStateException("Distributed: the default process group is not initialised; call Distributed.initProcessGroup first");
        return group;
    }

    public static int rank() {
        return defaultGroup().rank();
    }

    public static int worldSize() {
        return defaultGroup().size();
    }

    /** Closes the default group (for mpi: {@code MPI_Finalize}, which every rank must reach). */
    public static synchronized void destroyProcessGroup() {
        if (group == null) return;
        try {
            group.close();
        } finally {
            group = null;
        }
    }
}
