package org.jtorch.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.stream.IntStream;
import org.jtorch.Torch;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** The samplers of torch.utils.data (PyTorch 1.13 semantics; distributions checked statistically). */
class SamplersTest {
    static int[] epoch(Sampler s) {
        List<Integer> out = new ArrayList<>();
        s.forEach(out::add);
        assertEquals(s.size(), out.size(), "size() matches the number of indices");
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    static boolean isPermutation(int[] a, int n) {
        return Arrays.equals(IntStream.range(0, n).toArray(), Arrays.stream(a).sorted().toArray());
    }

    @Test
    void sequentialSamplerYieldsIndicesInOrder() {
        assertArrayEquals(new int[] {0, 1, 2, 3}, epoch(new SequentialSampler(4)));
        assertArrayEquals(new int[0], epoch(new SequentialSampler(0)));
    }

    @Test
    void randomSamplerYieldsANewPermutationEachEpoch() {
        RandomSampler s = new RandomSampler(100, false, null, new Generator(1));
        int[] e1 = epoch(s);
        int[] e2 = epoch(s);
        assertTrue(isPermutation(e1, 100));
        assertTrue(isPermutation(e2, 100));
        assertFalse(Arrays.equals(e1, e2));
    }

    @Test
    void randomSamplerRepeatsWithTheSameSeed() {
        RandomSampler a = new RandomSampler(50, false, null, new Generator(9));
        RandomSampler b = new RandomSampler(50, false, null, new Generator(9));
        assertArrayEquals(epoch(a), epoch(b));
        assertArrayEquals(epoch(a), epoch(b));
    }

    @Test
    void randomSamplerWithoutGeneratorFollowsManualSeed() {
        RandomSampler s = new RandomSampler(30, false, null, null);
        Torch.manualSeed(5);
        int[] a = epoch(s);
        Torch.manualSeed(5);
        assertArrayEquals(a, epoch(s));
    }

    @Test
    void randomSamplerWithoutReplacementConcatenatesPermutationsForMoreSamples() {
        int[] e = epoch(new RandomSampler(4, false, 10, new Generator(0)));
        assertEquals(10, e.length);
        assertTrue(isPermutation(Arrays.copyOfRange(e, 0, 4), 4));
        assertTrue(isPermutation(Arrays.copyOfRange(e, 4, 8), 4));
    }

    @Test
    void randomSamplerWithReplacementDrawsUniformly() {
        int n = 5;
        int draws = 50_000;
        int[] e = epoch(new RandomSampler(n, true, draws, new Generator(2)));
        int[] counts = new int[n];
        for (int i : e) counts[i]++;
        // Binomial sd = sqrt(draws * 0.2 * 0.8) ~ 89; 5 sd bound.
        for (int c : counts) assertEquals(draws / n, c, 450, Arrays.toString(counts));
    }

    @Test
    void randomSamplerRejectsNonPositiveNumSamples() {
        assertThrows(IllegalArgumentException.class, () -> new RandomSampler(3, true, 0, null));
    }

    @Test
    void subsetRandomSamplerPermutesTheGivenIndices() {
        int[] idx = {10, 20, 30, 40, 50};
        SubsetRandomSampler s = new SubsetRandomSampler(idx, new Generator(4));
        int[] e = epoch(s);
        assertArrayEquals(idx, Arrays.stream(e).sorted().toArray());
        boolean changed = false;
        for (int k = 0; k < 5 && !changed; k++) changed = !Arrays.equals(e, epoch(s));
        assertTrue(changed, "a new order in later epochs");
    }

    @Test
    void weightedSamplerWithReplacementFollowsTheWeights() {
        double[] w = {1, 2, 0, 7};
        int draws = 100_000;
        int[] e = epoch(new WeightedRandomSampler(w, draws, true, new Generator(11)));
        int[] counts = new int[w.length];
        for (int i : e) counts[i]++;
        assertEquals(0, counts[2], "zero weight is never drawn");
        double[] p = {0.1, 0.2, 0, 0.7};
        for (int i = 0; i < w.length; i++) {
            double sd = Math.sqrt(draws * p[i] * (1 - p[i]));
            assertEquals(draws * p[i], counts[i], 5 * sd + 1, "category " + i + ": " + Arrays.toString(counts));
        }
    }

    @Test
    void weightedSamplerWithoutReplacementDrawsDistinctIndicesFavouringHeavyWeights() {
        double[] w = {1, 1, 1, 1, 96};
        int heavyFirst = 0;
        int trials = 2000;
        Generator g = new Generator(12);
        WeightedRandomSampler s = new WeightedRandomSampler(w, 3, false, g);
        for (int t = 0; t < trials; t++) {
            int[] e = epoch(s);
            assertEquals(3, new HashSet<>(Arrays.stream(e).boxed().toList()).size(), "distinct");
            if (e[0] == 4) heavyFirst++;
        }
        // P(first = 4) = 96 / 100; sd = sqrt(2000 * 0.96 * 0.04) ~ 8.8.
        assertEquals(0.96 * trials, heavyFirst, 45);
    }

    @Test
    void weightedSamplerWithoutReplacementSecondDrawIsFromTheRemainingWeights() {
        // Weights (1, 2, 3): P(second = 0) = P(1 first) * 1/4 + P(2 first) * 1/3 = (2/6)(1/4) + (3/6)(1/3) = 1/4.
        Generator g = new Generator(13);
        WeightedRandomSampler s = new WeightedRandomSampler(new double[] {1, 2, 3}, 2, false, g);
        int trials = 20_000;
        int secondZero = 0;
        for (int t = 0; t < trials; t++) if (epoch(s)[1] == 0) secondZero++;
        assertEquals(0.25 * trials, secondZero, 5 * Math.sqrt(trials * 0.25 * 0.75));
    }

    @Test
    void weightedSamplerRejectsImpossibleRequests() {
        assertThrows(IllegalArgumentException.class, () -> new WeightedRandomSampler(new double[] {1, 0}, 2, false, null));
        assertThrows(IllegalArgumentException.class, () -> new WeightedRandomSampler(new double[] {-1, 2}, 1, true, null));
        assertThrows(IllegalArgumentException.class, () -> new WeightedRandomSampler(new double[] {0, 0}, 1, true, null));
    }

    @Test
    void batchSamplerGroupsIndicesAndKeepsOrDropsTheLastBatch() {
        BatchSampler keep = new BatchSampler(new SequentialSampler(10), 3, false);
        List<int[]> b = new ArrayList<>();
        keep.forEach(b::add);
        assertEquals(4, keep.size());
        assertEquals(4, b.size());
        assertArrayEquals(new int[] {9}, b.get(3));
        BatchSampler drop = new BatchSampler(new SequentialSampler(10), 3, true);
        List<int[]> d = new ArrayList<>();
        drop.forEach(d::add);
        assertEquals(3, drop.size());
        assertEquals(3, d.size());
        assertArrayEquals(new int[] {6, 7, 8}, d.get(2));
        BatchSampler exact = new BatchSampler(new SequentialSampler(9), 3, true);
        assertEquals(3, exact.size());
        assertThrows(IllegalArgumentException.class, () -> new BatchSampler(new SequentialSampler(3), 0, false));
    }
}
