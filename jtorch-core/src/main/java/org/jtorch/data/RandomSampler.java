package org.jtorch.data;

import java.util.Arrays;
import java.util.PrimitiveIterator;
import org.jtorch.types.Arguments;
import org.jtorch.types.Generator;

/**
 * Random indices into a dataset of {@code n} samples, as {@code torch.utils.data.RandomSampler}.
 * Without replacement: a permutation of {@code 0..n-1}, repeated with fresh permutations until
 * {@code numSamples} indices (default n). With replacement: {@code numSamples} independent uniform
 * draws. Each epoch draws from the generator (the default generator, seeded by
 * {@code Torch.manualSeed}, when none is given).
 */
public final class RandomSampler implements Sampler {
    private final int n;
    private final boolean replacement;
    private final int numSamples;
    private final Generator generator;

    public RandomSampler(int n, boolean replacement, Integer numSamples, Generator generator) {
        if (n < 0) throw new IllegalArgumentException("RandomSampler: negative dataset size " + n);
        if (numSamples != null && numSamples <= 0) {
            throw new IllegalArgumentException("RandomSampler: numSamples should be a positive integer value, but got numSamples=" + numSamples);
        }
        this.n = n;
        this.replacement = replacement;
        this.numSamples = numSamples == null ? n : numSamples;
        this.generator = generator;
    }

    /** A permutation of the dataset's indices per epoch. */
    public RandomSampler(Dataset<?> dataset, Generator generator) {
        Arguments.nonNull("RandomSampler", "dataset", dataset);
        this(dataset.size(), false, null, generator);
    }

    @Override
    public PrimitiveIterator.OfInt iterator() {
        Generator g = generator == null ? Generator.defaultGenerator() : generator;
        int[] out = new int[numSamples];
        if (replacement) {
            if (n == 0) throw new IllegalStateException("RandomSampler: cannot sample with replacement from an empty dataset");
            long[] bits = RandomDraws.longs(g, numSamples);
            for (int i = 0; i < numSamples; i++) out[i] = (int) Long.remainderUnsigned(bits[i], n);
        } else {
            int filled = 0;
            while (filled < numSamples && n > 0) {
                int[] perm = RandomDraws.permutation(g, n);
                int take = Math.min(n, numSamples - filled);
                System.arraycopy(perm, 0, out, filled, take);
                filled += take;
            }
        }
        return Arrays.stream(out).iterator();
    }

    @Override
    public int size() {
        return numSamples;
    }
}
