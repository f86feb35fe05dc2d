package org.jtorch.data;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.types.Arguments;
import org.jtorch.types.Generator;

/** Functions over datasets. */
public final class Datasets {
    private Datasets() {}

    /**
     * Splits {@code dataset} into non-overlapping random {@link Subset}s of the given lengths, as
     * {@code torch.utils.data.random_split}: a permutation drawn from {@code generator} (the default
     * generator if null) is cut into consecutive pieces.
     */
    public static <T> List<Subset<T>> randomSplit(Dataset<T> dataset, int[] lengths, Generator generator) {
        Arguments.nonNull("Datasets.randomSplit", "dataset", dataset);
        Arguments.nonNull("Datasets.randomSplit", "lengths", lengths);
        long sum = 0;
        for (int l : lengths) {
            if (l < 0) throw new IllegalArgumentException("randomSplit: negative length in " + Arrays.toString(lengths));
            sum += l;
        }
        if (sum != dataset.size()) {
            throw new IllegalArgumentException("randomSplit: sum of input lengths " + Arrays.toString(lengths) + " = " + sum
                    + " does not equal the length of the input dataset (" + dataset.size() + ")");
        }
        int[] perm = RandomDraws.permutation(generator == null ? Generator.defaultGenerator() : generator, dataset.size());
        List<Subset<T>> out = new ArrayList<>(lengths.length);
        int offset = 0;
        for (int l : lengths) {
            out.add(new Subset<>(dataset, Arrays.copyOfRange(perm, offset, offset + l)));
            offset += l;
        }
        return out;
    }

    /**
     * Splits by fractions summing to 1: each split gets {@code floor(size * fraction)} samples and the
     * remainder is dealt one by one to the splits in order, as PyTorch 1.13.
     */
    public static <T> List<Subset<T>> randomSplit(Dataset<T> dataset, double[] fractions, Generator generator) {
        Arguments.nonNull("Datasets.randomSplit", "dataset", dataset);
        Arguments.nonNull("Datasets.randomSplit", "fractions", fractions);
        double total = 0;
        for (double f : fractions) {
            if (!(f >= 0 && f <= 1)) throw new IllegalArgumentException("randomSplit: fraction " + f + " is not between 0 and 1");
            total += f;
        }
        if (Math.abs(total - 1) > 1e-9) {
            throw new IllegalArgumentException("randomSplit: fractions " + Arrays.toString(fractions) + " sum to " + total + ", not 1");
        }
        int n = dataset.size();
        int[] lengths = new int[fractions.length];
        int assigned = 0;
        for (int i = 0; i < fractions.length; i++) {
            lengths[i] = (int) Math.floor(n * fractions[i]);
            assigned += lengths[i];
        }
        for (int i = 0; i < n - assigned; i++) lengths[i % lengths.length]++;
        return randomSplit(dataset, lengths, generator);
    }
}
