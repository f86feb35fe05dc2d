package org.jtorch.data;

import org.jtorch.Tensor;

/**
 * A supervised sample or batch: an input and its target. The default collate stacks a list of samples
 * field-wise into one {@code Sample} whose tensors have a leading batch dimension.
 *
 * <p>{@link #close()} closes both tensors (for samples or batches the caller owns, e.g. one taken with
 * {@link DataLoader.BatchIterator#keep()}).
 */
public record Sample(Tensor input, Tensor target) implements AutoCloseable {
    @Override
    public void close() {
        if (input != null) input.close();
        if (target != null) target.close();
    }
}
