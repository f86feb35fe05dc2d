package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * multinomial and bernoulli on the test device. Their random streams cannot match PyTorch's, so the tests check
 * the distributions: Pearson's chi-square against the exact probabilities with a fixed threshold (the 0.999
 * quantile of the chi-square law with k - 1 degrees of freedom) under fixed seeds, so each run is deterministic;
 * also that zero-probability categories are never drawn, that draws without replacement are distinct, that a seed
 * reproduces its draws, and PyTorch 1.13's errors.
 */
class SamplingTest {
    private static final Device DEVICE = Fixtures.device();

    private static Tensor on(double[] values, long... shape) {
        try (Tensor host = Torch.tensor(values, shape)) {
            return host.to(DEVICE);
        }
    }

    /** Pearson's statistic of {@code counts} against {@code n * p} over the categories with p > 0. */
    private static double chiSquare(long[] counts, double[] p, long n) {
        double stat = 0;
        for (int i = 0; i < p.length; i++) {
            if (p[i] == 0) continue;
            double expected = n * p[i];
            stat += (counts[i] - expected) * (counts[i] - expected) / expected;
        }
        return stat;
    }

    private static long[] histogram(long[] samples, int categories) {
        long[] counts = new long[categories];
        for (long s : samples) counts[(int) s]++;
        return counts;
    }

    @Test
    void withReplacementFollowsTheWeightsAndNeverDrawsZeroCategories() {
        double[] w = {1, 0, 3, 6, 0};  // unnormalised weights: p = w / 10
        double[] p = {0.1, 0, 0.3, 0.6, 0};
        try (Tensor probs = on(w, 5); Tensor s = Torch.multinomial(probs, 20000, true, new Generator(7))) {
            assertEquals(DType.INT64, s.dtype());
            assertArrayEquals(new long[] {20000}, s.shape());
            long[] counts = histogram(s.toLongArray(), 5);
            assertEquals(0, counts[1]);
            assertEquals(0, counts[4]);
            double stat = chiSquare(counts, p, 20000);
            assertTrue(stat < 13.82, "chi-square " + stat + " (2 degrees of freedom) for counts " + Arrays.toString(counts));
        }
    }

    @Test
    void rowsOfAMatrixAreSampledIndependently() {
        double[] w = {0.5, 0.5, 0, 0, 0, 0.25, 0.75, 0};
        try (Tensor probs = on(w, 2, 4); Tensor s = Torch.multinomial(probs, 8000, true, new Generator(11))) {
            assertArrayEquals(new long[] {2, 8000}, s.shape());
            long[] all = s.toLongArray();
            long[] row0 = histogram(Arrays.copyOfRange(all, 0, 8000), 4);
            long[] row1 = histogram(Arrays.copyOfRange(all, 8000, 16000), 4);
            assertEquals(0, row0[2] + row0[3] + row1[0] + row1[3]);
            assertTrue(chiSquare(row0, new double[] {0.5, 0.5, 0, 0}, 8000) < 10.83);
            assertTrue(chiSquare(row1, new double[] {0, 0.25, 0.75, 0}, 8000) < 10.83);
        }
    }

    @Test
    void withoutReplacementDrawsDistinctCategoriesWithTheSequentialLaw() {
        // 6000 independent rows drawing 2 of 3 without replacement: the first draw has law p, the second
        // P(j) = sum_{i != j} p_i p_j / (1 - p_i).
        double[] p = {0.2, 0.3, 0.5};
        int rows = 6000;
        double[] w = new double[rows * 3];
        for (int r = 0; r < rows; r++) System.arraycopy(p, 0, w, 3 * r, 3);
        double[] second = new double[3];
        for (int j = 0; j < 3; j++) {
            for (int i = 0; i < 3; i++) if (i != j) second[j] += p[i] * p[j] / (1 - p[i]);
        }
        try (Tensor probs = on(w, rows, 3); Tensor s = Torch.multinomial(probs, 2, false, new Generator(5))) {
            long[] all = s.toLongArray();
            long[] firsts = new long[rows], seconds = new long[rows];
            for (int r = 0; r < rows; r++) {
                firsts[r] = all[2 * r];
                seconds[r] = all[2 * r + 1];
                assertTrue(firsts[r] != seconds[r], "row " + r + " drew " + firsts[r] + " twice");
            }
            double s1 = chiSquare(histogram(firsts, 3), p, rows), s2 = chiSquare(histogram(seconds, 3), second, rows);
            assertTrue(s1 < 13.82, "first draws: chi-square " + s1);
            assertTrue(s2 < 13.82, "second draws: chi-square " + s2);
        }
    }

    @Test
    void withoutReplacementOfEveryPositiveCategoryIsAPermutationOfThem() {
        try (Tensor probs = on(new double[] {0.1, 0, 2, 0.5, 0, 1}, 6); Tensor s = Torch.multinomial(probs, 4, false, new Generator(3))) {
            long[] drawn = s.toLongArray();
            Arrays.sort(drawn);
            assertArrayEquals(new long[] {0, 2, 3, 5}, drawn);
        }
    }

    @Test
    void aSeedReproducesItsDraws() {
        try (Tensor probs = on(new double[] {1, 2, 3, 4}, 4);
             Tensor a = Torch.multinomial(probs, 50, true, new Generator(42));
             Tensor b = Torch.multinomial(probs, 50, true, new Generator(42));
             Tensor c = Torch.multinomial(probs, 50, true, new Generator(43));
             Tensor d = Torch.multinomial(probs, 3, false, new Generator(42));
             Tensor e = Torch.multinomial(probs, 3, false, new Generator(42))) {
            assertArrayEquals(a.toLongArray(), b.toLongArray());
            assertFalse(Arrays.equals(a.toLongArray(), c.toLongArray()));
            assertArrayEquals(d.toLongArray(), e.toLongArray());
        }
    }

    @Test
    void multinomialRejectsWhatPyTorchRejects() {
        try (Tensor negative = on(new double[] {1, -1}, 2); Tensor zeros = on(new double[] {0, 0}, 2);
             Tensor infinite = on(new double[] {1, Double.POSITIVE_INFINITY}, 2); Tensor cube = on(new double[] {1, 1}, 1, 1, 2);
             Tensor ints = Torch.tensor(new long[] {1, 2}).to(DEVICE); Tensor ok = on(new double[] {1, 1}, 2)) {
            Generator g = new Generator(1);
            // a device checks the weights on the device and reports at the next synchronisation: the read
            assertMessage("encountering probability entry < 0", () -> Torch.multinomial(negative, 2, true, g).toLongArray());
            assertMessage("element < 0", () -> Torch.multinomial(negative, 1, false, g).toLongArray());
            assertMessage("sum of probabilities <= 0", () -> Torch.multinomial(zeros, 2, true, g).toLongArray());
            assertMessage("sum of probabilities <= 0", () -> Torch.multinomial(zeros, 1, false, g).toLongArray());
            assertMessage("infinity or NaN", () -> Torch.multinomial(infinite, 2, true, g).toLongArray());
            assertMessage("n_sample > prob_dist.size(-1) samples without replacement", () -> Torch.multinomial(ok, 3, false, g));
            assertMessage("n_sample <= 0", () -> Torch.multinomial(ok, 0, true, g));
            assertMessage("prob_dist must be 1 or 2 dim", () -> Torch.multinomial(cube, 1, true, g));
            assertMessage("floating-point dtypes", () -> Torch.multinomial(ints, 1, true, g));
        }
    }

    private static void assertMessage(String part, org.junit.jupiter.api.function.Executable call) {
        RuntimeException e = assertThrows(RuntimeException.class, call);
        assertTrue(e.getMessage().contains(part), "message should contain '" + part + "': " + e.getMessage());
        assertTrue(e.getMessage().contains("multinomial") || e.getMessage().contains("bernoulli"), e.getMessage());
    }

    @Test
    void bernoulliOfATensorFollowsEachProbability() {
        double[] p = {0, 0.25, 0.5, 0.9, 1};
        int rows = 8000;
        double[] w = new double[rows * p.length];
        for (int r = 0; r < rows; r++) System.arraycopy(p, 0, w, p.length * r, p.length);
        try (Tensor probs0 = on(w, rows, p.length); Tensor probs = probs0.to(DType.FLOAT32);
             Tensor b = Torch.bernoulli(probs, new Generator(9))) {
            assertEquals(DType.FLOAT32, b.dtype());
            double[] v = b.toDoubleArray();
            long[] ones = new long[p.length];
            for (int i = 0; i < v.length; i++) {
                assertTrue(v[i] == 0 || v[i] == 1);
                if (v[i] == 1) ones[i % p.length]++;
            }
            assertEquals(0, ones[0]);
            assertEquals(rows, ones[4]);
            for (int j = 1; j < 4; j++) {
                // Two categories (1, 0): chi-square with one degree of freedom, 0.999 quantile 10.83.
                double e1 = rows * p[j], e0 = rows * (1 - p[j]);
                double stat = (ones[j] - e1) * (ones[j] - e1) / e1 + (ones[j] - e1) * (ones[j] - e1) / e0;
                assertTrue(stat < 10.83, "p = " + p[j] + ": " + ones[j] + " ones of " + rows + ", chi-square " + stat);
            }
        }
    }

    @Test
    void bernoulliWithAScalarProbabilityKeepsTheShapeAndDtype() {
        try (Tensor x = Torch.zeros(new long[] {100, 100}, DType.FLOAT64, DEVICE); Tensor b = Torch.bernoulli(x, 0.3, new Generator(2));
             Tensor again = Torch.bernoulli(x, 0.3, new Generator(2)); Tensor never = Torch.bernoulli(x, 0, new Generator(2));
             Tensor sum = b.sum(); Tensor neverSum = never.sum()) {
            assertArrayEquals(new long[] {100, 100}, b.shape());
            assertEquals(DType.FLOAT64, b.dtype());
            assertArrayEquals(b.toDoubleArray(), again.toDoubleArray());
            double ones = sum.item();
            double stat = (ones - 3000) * (ones - 3000) / 3000 + (ones - 3000) * (ones - 3000) / 7000;
            assertTrue(stat < 10.83, ones + " ones of 10000 at p = 0.3");
            assertEquals(0, neverSum.item());
        }
    }

    @Test
    void bernoulliRejectsProbabilitiesOutsideTheUnitInterval() {
        try (Tensor high = on(new double[] {0.5, 1.5}, 2); Tensor nan = on(new double[] {Double.NaN}, 1);
             Tensor ints = Torch.tensor(new long[] {0, 1}).to(DEVICE); Tensor x = on(new double[] {0}, 1)) {
            Generator g = new Generator(1);
            // the result read, so that a device's deferred check surfaces (the CPU raises at the call)
            assertMessage("p_in >= 0 && p_in <= 1", () -> Torch.bernoulli(high, g).toDoubleArray());
            assertMessage("p_in >= 0 && p_in <= 1", () -> Torch.bernoulli(nan, g).toDoubleArray());
            assertMessage("floating", () -> Torch.bernoulli(ints, g));
            assertMessage("p to be in [0, 1]", () -> Torch.bernoulli(x, 1.5, g));
        }
    }
}
