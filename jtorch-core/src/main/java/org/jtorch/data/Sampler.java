package org.jtorch.data;

import java.util.PrimitiveIterator;

/**
 * An iterable of dataset indices, as {@code torch.utils.data.Sampler}. Each call to
 * {@link #iterator()} is one epoch; random samplers draw a new order from their generator each time,
 * so successive epochs differ and a run with the same seed repeats them.
 *
 * <p>The {@link DataLoader} iterates samplers on the thread that consumes batches.
 */
public interface Sampler extends Iterable<Integer> {
    @Override
    PrimitiveIterator.OfInt iterator();

    /** Number of indices one epoch yields. */
    int size();
}
