package org.jtorch.data;

/**
 * A map-style dataset, as {@code torch.utils.data.Dataset}: {@code size()} samples addressed by index.
 * Implementations must allow concurrent {@code get} calls from the DataLoader's worker threads.
 *
 * @param <T> the sample type, for example a record of an image tensor and a label
 */
public interface Dataset<T> {
    /** The sample at {@code index}, {@code 0 <= index < size()}. */
    T get(int index);

    int size();
}
