package org.jtorch.data;

/**
 * A failure while loading a batch, re-thrown on the thread that consumes the {@link DataLoader}: the
 * cause is the original exception from the dataset, the collate function or the worker; the message
 * names the worker, the dataset index that failed (or the batch's indices when collation failed).
 */
public final class DataLoaderException extends RuntimeException {
    private final int workerId;
    private final int index;
    private final int[] batchIndices;

    DataLoaderException(String message, Throwable cause, int workerId, int index, int[] batchIndices) {
        super(message, cause);
        this.workerId = workerId;
        this.index = index;
        this.batchIndices = batchIndices == null ? null : batchIndices.clone();
    }

    /** The worker that failed (or, for a timeout, is late), or -1 for the consuming thread of a loader without workers. */
    public int workerId() {
        return workerId;
    }

    /**
     * The dataset index whose {@code get} failed, or for a timeout the one the late worker is loading; -1 when
     * there is none (collation, iterable datasets).
     */
    public int index() {
        return index;
    }

    /** The indices of the batch being loaded (for a timeout, the late batch's), or null when unknown (iterable datasets). */
    public int[] batchIndices() {
        return batchIndices == null ? null : batchIndices.clone();
    }
}
