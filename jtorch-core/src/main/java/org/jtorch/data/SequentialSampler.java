package org.jtorch.data;

import java.util.PrimitiveIterator;
import java.util.stream.IntStream;
import org.jtorch.types.Arguments;

/** Indices {@code 0..size-1} in order. */
public final class SequentialSampler implements Sampler {
    private final int size;

    public SequentialSampler(int size) {
        if (size < 0) throw new IllegalArgumentException("SequentialSampler: negative size " + size);
        this.size = size;
    }

    public SequentialSampler(Dataset<?> dataset) {
        Arguments.nonNull("SequentialSampler", "dataset", dataset);
        this(dataset.size());
    }

    @Override
    public PrimitiveIterator.OfInt iterator() {
        return IntStream.range(0, size).iterator();
    }

    @Override
    public int size() {
        return size;
    }
}
