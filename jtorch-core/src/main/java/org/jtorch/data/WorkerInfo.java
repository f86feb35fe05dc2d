package org.jtorch.data;

import org.jtorch.types.Generator;

/**
 * Identity of a {@link DataLoader} worker thread, as {@code torch.utils.data.get_worker_info()}:
 * {@link #current()} returns it inside a worker (in {@code Dataset.get}, in an
 * {@code IterableDataset}'s iterator, in collate functions and in the worker init function) and null
 * on any other thread.
 *
 * <p>{@link #seed()} is the loader's base seed (drawn from its generator when workers start) plus the
 * worker id, as PyTorch's; {@link #generator()} is a {@link Generator} seeded with it, owned by this
 * worker's thread, for reproducible random transforms.
 */
public final class WorkerInfo {
    private static final ThreadLocal<WorkerInfo> CURRENT = new ThreadLocal<>();

    private final int id;
    private final int numWorkers;
    private final long seed;
    private final Generator generator;

    WorkerInfo(int id, int numWorkers, long seed) {
        this.id = id;
        this.numWorkers = numWorkers;
        this.seed = seed;
        this.generator = new Generator(seed);
    }

    /** The worker running on this thread, or null outside DataLoader workers. */
    public static WorkerInfo current() {
        return CURRENT.get();
    }

    static void setCurrent(WorkerInfo info) {
        if (info == null) CURRENT.remove();
        else CURRENT.set(info);
    }

    /** Worker index, {@code 0 <= id < numWorkers}. */
    public int id() {
        return id;
    }

    public int numWorkers() {
        return numWorkers;
    }

    public long seed() {
        return seed;
    }

    /** A generator seeded with {@link #seed()}; use it only from this worker's thread. */
    public Generator generator() {
        return generator;
    }

    @Override
    public String toString() {
        return "WorkerInfo(id=" + id + ", numWorkers=" + numWorkers + ", seed=" + seed + ")";
    }
}
