package org.jtorch.data;

/**
 * A stream-style dataset, as {@code torch.utils.data.IterableDataset}: samples come from
 * {@link #iterator()}, which the {@link DataLoader} calls once per epoch in each worker thread.
 *
 * <p>With several workers every worker iterates its own iterator, so without sharding each sample
 * appears once per worker (as in PyTorch). Shard with {@link WorkerInfo#current()}, which is null on
 * the loading thread of a loader without workers:
 *
 * <pre>{@code
 * public Iterator<Tensor> iterator() {
 *     WorkerInfo w = WorkerInfo.current();
 *     int start = w == null ? 0 : w.id(), step = w == null ? 1 : w.numWorkers();
 *     return IntStream.iterate(start, i -> i < n, i -> i + step).mapToObj(this::load).iterator();
 * }
 * }</pre>
 *
 * @param <T> the sample type
 */
public interface IterableDataset<T> extends Iterable<T> {
    /** Number of samples over all workers if known (used by {@link DataLoader#size()}), else -1. */
    default int size() {
        return -1;
    }
}
