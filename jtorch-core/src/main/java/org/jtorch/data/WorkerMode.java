package org.jtorch.data;

/** Where a {@link DataLoader}'s workers run. */
public enum WorkerMode {
    /** Worker threads in this JVM (the default): cheap, but a worker stuck in code that ignores interrupts is abandoned. */
    THREAD,
    /**
     * Each worker in a child JVM that builds the dataset from its class (public, with a public no-arg constructor) and
     * sends samples back through files: a worker that times out, or is still loading at close, is killed, so a
     * dataset blocked in native code or ignoring interrupts leaves nothing running. Samples must be a
     * {@code Tensor} or a {@link Sample}; collation and pinning run in this JVM.
     */
    PROCESS
}
