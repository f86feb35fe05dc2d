package org.jtorch.data;

/**
 * A map-style dataset, as {@code torch.utils.data.Dataset}: {@code size()} samples addressed by index.
 *
 * <p>Threading: implementations must allow concurrent {@code get} calls from the {@link DataLoader}'s
 * worker threads.
 *
 * <p>Ownership: tensors that {@code get} creates (views of stored tensors, results of transforms)
 * belong to the caller. The {@link DataLoader} calls {@code get} inside a memory scope and releases
 * them once the batch is collated; tensors the dataset merely returns from its own storage (created
 * outside that scope) are never closed by the loader.
 *
 * @param <T> the sample type, for example a {@link Sample} of an image tensor and a label
 */
public interface Dataset<T> {
    /** The sample at {@code index}, {@code 0 <= index < size()}. */
    T get(int index);

    int size();
}
