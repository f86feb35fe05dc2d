package org.jtorch.data;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.PrimitiveIterator;
import org.jtorch.types.Arguments;

/**
 * Groups a sampler's indices into batches of {@code batchSize}, as
 * {@code torch.utils.data.BatchSampler}; the last, smaller batch is dropped when {@code dropLast}.
 * Subclass it for custom batching (override {@link #iterator()} and {@link #size()}).
 */
public class BatchSampler implements Iterable<int[]> {
    private final Sampler sampler;
    private final int batchSize;
    private final boolean dropLast;

    public BatchSampler(Sampler sampler, int batchSize, boolean dropLast) {
        Arguments.nonNull("BatchSampler", "sampler", sampler);
        if (batchSize <= 0) {
            throw new IllegalArgumentException("BatchSampler: batchSize should be a positive integer value, but got batchSize=" + batchSize);
        }
        this.sampler = sampler;
        this.batchSize = batchSize;
        this.dropLast = dropLast;
    }

    @Override
    public Iterator<int[]> iterator() {
        PrimitiveIterator.OfInt it = sampler.iterator();
        return new Iterator<>() {
            int[] next = advance();

            private int[] advance() {
                int[] b = new int[batchSize];
                int n = 0;
                while (n < batchSize && it.hasNext()) b[n++] = it.nextInt();
                if (n == 0 || (n < batchSize && dropLast)) return null;
                return n == batchSize ? b : Arrays.copyOf(b, n);
            }

            @Override
            public boolean hasNext() {
                return next != null;
            }

            @Override
            public int[] next() {
                if (next == null) throw new NoSuchElementException();
                int[] r = next;
                next = advance();
                return r;
            }
        };
    }

    /** Number of batches per epoch. */
    public int size() {
        int n = sampler.size();
        return dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
    }

    public int batchSize() {
        return batchSize;
    }

    public boolean dropLast() {
        return dropLast;
    }

    public Sampler sampler() {
        return sampler;
    }
}
