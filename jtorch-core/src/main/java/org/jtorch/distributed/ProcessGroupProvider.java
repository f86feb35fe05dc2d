package org.jtorch.distributed;

import java.time.Duration;

/**
 * A process-group backend that lives outside core (the {@code nccl} backend in jtorch-cuda), found by
 * {@link java.util.ServiceLoader} when {@link Distributed#initProcessGroup} is asked for its {@link #backend()} name.
 */
public interface ProcessGroupProvider {
    /** The name {@link Distributed#initProcessGroup} selects it by, e.g. {@code nccl}. */
    String backend();

    /**
     * Starts this process's group: rank, world size and the rendezvous ({@code MASTER_ADDR:MASTER_PORT}) come from
     * {@code env}; {@code timeout} bounds rendezvous and every {@link Work#waitFor()}.
     */
    ProcessGroup init(LaunchEnvironment env, Duration timeout);
}
