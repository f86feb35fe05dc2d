package org.jtorch.data;

import java.util.Arrays;
import java.util.PrimitiveIterator;
import org.jtorch.types.Arguments;
import org.jtorch.types.Generator;

/** The given indices in a random order per epoch, as {@code torch.utils.data.SubsetRandomSampler}. */
public final class SubsetRandomSampler implements Sampler {
    private final int[] indices;
    private final Generator generator;

    public SubsetRandomSampler(int[] indices, Generator generator) {
        Arguments.nonNull("SubsetRandomSampler", "indices", indices);
        this.indices = indices.clone();
        this.generator = generator;
    }

    @Override
    public PrimitiveIterator.OfInt iterator() {
        int[] perm = RandomDraws.permutation(generator == null ? Generator.defaultGenerator() : generator, indices.length);
        int[] out = new int[indices.length];
        for (int i = 0; i < out.length; i++) out[i] = indices[perm[i]];
        return Arrays.stream(out).iterator();
    }

    @Override
    public int size() {
        return indices.length;
    }
}
