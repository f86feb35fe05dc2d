package org.jtorch.data;

import java.util.Arrays;
import java.util.PrimitiveIterator;
import org.jtorch.types.Arguments;
import org.jtorch.types.Generator;

/**
 * Indices {@code 0..weights.length-1} drawn with probability proportional to their weights, as
 * {@code torch.utils.data.WeightedRandomSampler} ({@code torch.multinomial}). With replacement each
 * draw is independent (inverse CDF); without replacement the draws are successive, each from the
 * remaining weights (computed with Efraimidis-Spirakis keys {@code log(u) / w}: the {@code numSamples}
 * largest keys form such a sample).
 */
public final class WeightedRandomSampler implements Sampler {
    private final double[] weights;
    private final int numSamples;
    private final boolean replacement;
    private final Generator generator;

    public WeightedRandomSampler(double[] weights, int numSamples, boolean replacement, Generator generator) {
        Arguments.nonNull("WeightedRandomSampler", "weights", weights);
        if (numSamples <= 0) {
            throw new IllegalArgumentException("WeightedRandomSampler: numSamples should be a positive integer value, but got numSamples=" + numSamples);
        }
        if (weights.length == 0) throw new IllegalArgumentException("WeightedRandomSampler: weights must not be empty");
        int positive = 0;
        for (double w : weights) {
            if (!(w >= 0) || Double.isInfinite(w)) {
                throw new IllegalArgumentException("WeightedRandomSampler: weights must be finite and non-negative, got " + w);
            }
            if (w > 0) positive++;
        }
        if (positive == 0) throw new IllegalArgumentException("WeightedRandomSampler: weights sum to zero");
        if (!replacement && numSamples > positive) {
            throw new IllegalArgumentException("WeightedRandomSampler: cannot draw " + numSamples
                    + " samples without replacement from " + positive + " categories with non-zero weight");
        }
        this.weights = weights.clone();
        this.numSamples = numSamples;
        this.replacement = replacement;
        this.generator = generator;
    }

    @Override
    public PrimitiveIterator.OfInt iterator() {
        Generator g = generator == null ? Generator.defaultGenerator() : generator;
        double[] u = RandomDraws.uniforms(g, replacement ? numSamples : weights.length);
        int[] out = new int[numSamples];
        if (replacement) {
            double[] cdf = new double[weights.length];
            double acc = 0;
            for (int i = 0; i < weights.length; i++) cdf[i] = acc += weights[i];
            for (int s = 0; s < numSamples; s++) {
                double target = u[s] * acc;
                int lo = 0;
                int hi = cdf.length - 1;
                while (lo < hi) { // first i with cdf[i] > target: zero weights are never chosen
                    int mid = (lo + hi) >>> 1;
                    if (cdf[mid] > target) hi = mid;
                    else lo = mid + 1;
                }
                out[s] = lo;
            }
        } else {
            Integer[] order = new Integer[weights.length];
            double[] key = new double[weights.length];
            for (int i = 0; i < weights.length; i++) {
                order[i] = i;
                // 1 - u lies in (0, 1]: log is finite; zero weights get -inf and come last.
                key[i] = weights[i] > 0 ? Math.log(1 - u[i]) / weights[i] : Double.NEGATIVE_INFINITY;
            }
            Arrays.sort(order, (a, b) -> Double.compare(key[b], key[a]));
            for (int s = 0; s < numSamples; s++) out[s] = order[s];
        }
        return Arrays.stream(out).iterator();
    }

    @Override
    public int size() {
        return numSamples;
    }
}
