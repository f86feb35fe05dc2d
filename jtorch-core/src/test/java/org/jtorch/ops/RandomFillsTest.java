package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.function.DoubleUnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Init;
import org.jtorch.op.OpRegistry;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * The in-place random fills ({@code bernoulli_}, {@code exponential_}, {@code geometric_}, {@code log_normal_},
 * {@code cauchy_}, {@code random_}, {@code uniform_}, {@code normal_}), {@code randperm} and {@code multinomial} as
 * registry ops, on the test device. Their streams cannot match PyTorch's, so the fills are checked against their laws:
 * under fixed seeds, the Kolmogorov-Smirnov distance of 200,000 draws to the exact CDF below 1.95 / sqrt(n) (the 0.001
 * level) and mean and variance within a few standard errors: bounds a wrong law (a rate read as a scale, a shifted
 * support) fails by far. Error messages are PyTorch 1.13's ({@code /usr/bin/python3}, torch 1.13, e.g.
 * {@code torch.zeros(3).exponential_(-1)}), with the shape where jtorch adds it.
 */
class RandomFillsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final int N = 200_000;
    private static final double KS_BOUND = 1.95 / Math.sqrt(N);

    private static double[] values(Tensor t) {
        try (Tensor c = t.to(Device.cpu())) {
            return c.toDoubleArray();
        }
    }

    private static double[] drawn(java.util.function.Function<Tensor, Tensor> fill, DType dtype) {
        try (Tensor t = Torch.zeros(new long[] {N}, dtype, DEVICE)) {
            return values(fill.apply(t));
        }
    }

    /** The largest distance between the empirical CDF of {@code x} and {@code cdf} (both sides of each step). */
    private static double ks(double[] x, DoubleUnaryOperator cdf) {
        double[] s = x.clone();
        Arrays.sort(s);
        double d = 0;
        for (int i = 0; i < s.length; i++) {
            double f = cdf.applyAsDouble(s[i]);
            d = Math.max(d, Math.max(Math.abs(f - (double) i / s.length), Math.abs((double) (i + 1) / s.length - f)));
        }
        return d;
    }

    private static double mean(double[] x) {
        double s = 0;
        for (double v : x) s += v;
        return s / x.length;
    }

    private static double variance(double[] x) {
        double m = mean(x), s = 0;
        for (double v : x) s += (v - m) * (v - m);
        return s / (x.length - 1);
    }

    /** The standard normal CDF (Abramowitz-Stegun 26.2.17, error below 7.5e-8: far inside the KS bound). */
    private static double phi(double z) {
        double t = 1 / (1 + 0.2316419 * Math.abs(z));
        double poly = t * (0.319381530 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
        double tail = Math.exp(-z * z / 2) / Math.sqrt(2 * Math.PI) * poly;
        return z >= 0 ? 1 - tail : tail;
    }

    private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable call) {
        RuntimeException e = assertThrows(RuntimeException.class, call);
        assertTrue(e.getMessage().contains(expected), "message should contain '" + expected + "': " + e.getMessage());
    }

    @Test
    void everyFillIsARandomRegistryOp() {
        for (String name : new String[] {"bernoulli_Tensor", "exponential", "geometric", "log_normal", "cauchy", "randperm_generator_out",
                "multinomial"}) {
            assertTrue(OpRegistry.get(name).isRandom(), name);
        }
    }

    @Test
    void exponentialFollowsItsRateNotItsScale() {
        double lambda = 2.5;
        double[] x = drawn(t -> t.exponential_(lambda, new Generator(11)), DType.FLOAT64);
        assertTrue(ks(x, v -> v <= 0 ? 0 : 1 - Math.exp(-lambda * v)) < KS_BOUND);
        assertEquals(1 / lambda, mean(x), 4 * (1 / lambda) / Math.sqrt(N));
        assertEquals(1 / (lambda * lambda), variance(x), 0.02 / (lambda * lambda));
        assertTrue(Arrays.stream(x).allMatch(v -> v >= 0 && Double.isFinite(v)));
        // A scale of 2.5 (mean 2.5) would be 0.5+ away in KS distance.
        assertTrue(ks(x, v -> v <= 0 ? 0 : 1 - Math.exp(-v / lambda)) > 0.3);
        double[] f = drawn(t -> t.exponential_(0.5, new Generator(12)), DType.FLOAT32);
        assertTrue(ks(f, v -> v <= 0 ? 0 : 1 - Math.exp(-0.5 * v)) < KS_BOUND);
    }

    @Test
    void geometricCountsTrialsFromOne() {
        double p = 0.3;
        for (DType t : new DType[] {DType.FLOAT32, DType.INT64}) {
            double[] x = drawn(s -> s.geometric_(p, new Generator(21)), t);
            assertTrue(Arrays.stream(x).allMatch(v -> v >= 1 && v == Math.rint(v)), t.toString());
            // P(X <= k) = 1 - (1 - p)^k at the integers k.
            double[] s = x.clone();
            Arrays.sort(s);
            double d = 0;
            for (int k = 1; k <= 30; k++) {
                int kk = k;
                long below = Arrays.stream(s).filter(v -> v <= kk).count();
                d = Math.max(d, Math.abs((double) below / N - (1 - Math.pow(1 - p, k))));
            }
            assertTrue(d < KS_BOUND, t + ": " + d);
            assertEquals(1 / p, mean(x), 4 * Math.sqrt((1 - p) / (p * p)) / Math.sqrt(N));
            assertEquals((1 - p) / (p * p), variance(x), 0.03 * (1 - p) / (p * p));
        }
    }

    @Test
    void logNormalIsTheExpOfANormal() {
        double mu = 0.5, sigma = 0.75;
        double[] x = drawn(t -> t.logNormal_(mu, sigma, new Generator(31)), DType.FLOAT64);
        assertTrue(Arrays.stream(x).allMatch(v -> v > 0));
        assertTrue(ks(x, v -> v <= 0 ? 0 : phi((Math.log(v) - mu) / sigma)) < KS_BOUND);
        assertEquals(Math.exp(mu + sigma * sigma / 2), mean(x), 0.01 * Math.exp(mu + sigma * sigma / 2));
    }

    @Test
    void cauchyHasItsMedianAndScale() {
        double median = -1, sigma = 2;
        double[] x = drawn(t -> t.cauchy_(median, sigma, new Generator(41)), DType.FLOAT64);
        assertTrue(ks(x, v -> 0.5 + Math.atan((v - median) / sigma) / Math.PI) < KS_BOUND);
        double[] f = drawn(t -> t.cauchy_(0, 1, new Generator(42)), DType.FLOAT32);
        assertTrue(ks(f, v -> 0.5 + Math.atan(v) / Math.PI) < KS_BOUND);
    }

    @Test
    void bernoulliInPlaceDrawsEachProbabilityInAnyDtype() {
        for (DType t : new DType[] {DType.FLOAT32, DType.INT64, DType.BOOL, DType.FLOAT16}) {
            double[] x = drawn(s -> s.bernoulli_(0.3, new Generator(51)), t);
            assertTrue(Arrays.stream(x).allMatch(v -> v == 0 || v == 1), t.toString());
            assertEquals(0.3, mean(x), 4 * Math.sqrt(0.3 * 0.7 / N), t.toString());
        }
        try (MemoryScope scope = new MemoryScope()) {
            // A row of probabilities broadcast over 50,000 rows: each column keeps its own rate.
            Tensor p = Torch.tensor(new double[] {0, 0.1, 0.5, 0.9, 1}, 1, 5).to(DEVICE);
            Tensor x = Torch.zeros(new long[] {50_000, 5}, DType.FLOAT32, DEVICE).bernoulli_(p, new Generator(52));
            double[] v = values(x);
            for (int c = 0; c < 5; c++) {
                double sum = 0;
                for (int r = 0; r < 50_000; r++) sum += v[r * 5 + c];
                double q = new double[] {0, 0.1, 0.5, 0.9, 1}[c];
                assertEquals(q, sum / 50_000, 4 * Math.sqrt(q * (1 - q) / 50_000) + 1e-12, "column " + c);
            }
        }
    }

    @Test
    void bernoulliInPlaceMatchesTheOutOfPlaceDraws() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.zeros(new long[] {33, 7}, DType.FLOAT32, DEVICE);
            Tensor expected = x.bernoulli(0.4, new Generator(5));
            assertArrayEquals(values(expected), values(x.bernoulli_(0.4, new Generator(5))));
            Tensor p = Torch.rand(new long[] {33, 7}, DType.FLOAT32, DEVICE, new Generator(6));
            Tensor fromP = p.bernoulli(new Generator(7));
            assertArrayEquals(values(fromP), values(Torch.zeros(new long[] {33, 7}, DType.FLOAT32, DEVICE).bernoulli_(p, new Generator(7))));
        }
    }

    @Test
    void tensorUniformNormalAndRandomFillAsTheirInitsAndFactories() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor a = Torch.zeros(new long[] {1001}, DType.FLOAT32, DEVICE);
            Tensor b = Torch.zeros(new long[] {1001}, DType.FLOAT32, DEVICE);
            assertArrayEquals(values(Init.uniform_(a, -2, 3, new Generator(8))), values(b.uniform_(-2, 3, new Generator(8))));
            assertArrayEquals(values(Init.normal_(a, 1, 2, new Generator(9))), values(b.normal_(1, 2, new Generator(9))));
            Tensor r = Torch.zeros(new long[] {N}, DType.INT32, DEVICE).random_(-3, 7, new Generator(10));
            double[] v = values(r);
            assertTrue(Arrays.stream(v).allMatch(e -> e >= -3 && e < 7));
            assertEquals(1.5, mean(v), 4 * Math.sqrt(99.0 / 12 / N));
            assertArrayEquals(values(Torch.randint(-3, 7, new long[] {N}, DType.INT32, DEVICE, new Generator(10))), v);
        }
    }

    @Test
    void aStridedFillMatchesTheContiguousFill() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor c = Torch.zeros(new long[] {9, 13}, DType.FLOAT64, DEVICE).exponential_(3, new Generator(60));
            Tensor s = Torch.zeros(new long[] {13, 9}, DType.FLOAT64, DEVICE).transpose(0, 1).exponential_(3, new Generator(60));
            assertArrayEquals(values(c), values(s));
        }
    }

    @Test
    void aFillOfANonLeafPassesAZeroGradient() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor w = Torch.ones(new long[] {4}, DType.FLOAT64, DEVICE).requiresGrad_(true);
            Tensor y = w.mul(2);
            y.cauchy_(0, 1, new Generator(1));
            y.sum().backward();
            assertArrayEquals(new double[4], values(w.grad()));
        }
    }

    @Test
    void fillsRejectWhatPyTorchRejects() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.zeros(new long[] {3}, DType.FLOAT32, DEVICE);
            Tensor i = Torch.zeros(new long[] {3}, DType.INT64, DEVICE);
            Generator g = new Generator(1);
            assertMessage("exponential_ expects lambda >= 0.0, but found lambda=-1", () -> x.exponential_(-1, g));
            assertMessage("exponential_: expected a floating point tensor, got torch.int64 of shape [3]", () -> i.exponential_(1, g));
            assertMessage("geometric_ expects p to be in (0, 1), but got p=0", () -> x.geometric_(0, g));
            assertMessage("geometric_ expects p to be in (0, 1), but got p=1", () -> x.geometric_(1, g));
            assertMessage("log_normal_: expects std > 0.0, but found std=0", () -> x.logNormal_(1, 0, g));
            assertMessage("log_normal_: expected a floating point tensor, got torch.int64", () -> i.logNormal_(1, 2, g));
            assertMessage("cauchy_: expected a floating point tensor, got torch.int64", () -> i.cauchy_(0, 1, g));
            assertMessage("bernoulli: expects p to be in [0, 1], but got p=1.5", () -> x.bernoulli_(1.5, g));
            assertMessage("The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 0.  Target sizes: [3]."
                    + "  Tensor sizes: [2]", () -> x.bernoulli_(Torch.tensor(new double[] {0.5, 0.5}).to(DEVICE), g));
            assertMessage("random_ expects 'from' to be less than 'to', but got from=5 >= to=3", () -> x.random_(5, 3, g));
            assertMessage("uniform_ expects to return a [from, to) range, but found from=2 > to=1", () -> x.uniform_(2, 1, g));
            assertMessage("normal_: expects std >= 0.0, but found std -1", () -> x.normal_(0, -1, g));
            assertArrayEquals(new long[] {1, 0}, g.getState(), "a refused fill draws nothing");
            if (DEVICE.isCpu()) {
                // Checked by the kernel, as PyTorch's CPU kernel checks it (a device's draws saturate instead).
                assertMessage("Expected p_in >= 0 && p_in <= 1 to be true, but got false", () -> x.bernoulli_(Torch.tensor(new double[] {0.5, 1.5, 0.2}), g));
            }
        }
    }

    @Test
    void randpermIsAPermutationInEveryDtypeAndTheSameOnEveryDevice() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor ref = Torch.randperm(1000, new Generator(3));
            assertEquals(DType.INT64, ref.dtype());
            double[] r = values(ref);
            for (DType t : new DType[] {DType.INT32, DType.INT16, DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
                long n = t == DType.BFLOAT16 ? 200 : 1000; // bfloat16 holds the integers up to 256 exactly
                Tensor p = Torch.randperm(n, t, DEVICE, new Generator(3));
                assertEquals(t, p.dtype());
                assertEquals(DEVICE, p.device());
                double[] v = values(p);
                if (n == 1000) assertArrayEquals(r, v, t.toString());
                double[] sorted = v.clone();
                Arrays.sort(sorted);
                for (int k = 0; k < n; k++) assertEquals(k, sorted[k], t.toString());
            }
            assertEquals(0, Torch.randperm(0, DType.INT64, DEVICE, new Generator(3)).numel());
            assertArrayEquals(new double[] {0}, values(Torch.randperm(1, DType.INT64, DEVICE, new Generator(3))));
        }
    }

    @Test
    void aLargeRandpermIsAUniformPermutation() {
        try (Tensor p = Torch.randperm(1_000_000, DType.INT64, DEVICE, new Generator(4))) {
            double[] v = values(p);
            boolean[] seen = new boolean[v.length];
            long fixed = 0;
            for (int k = 0; k < v.length; k++) {
                int e = (int) v[k];
                assertFalse(seen[e]);
                seen[e] = true;
                if (e == k) fixed++;
            }
            // Fixed points of a uniform permutation: Poisson(1).
            assertTrue(fixed <= 8, "fixed points " + fixed);
            // Where element 0 lands is uniform: its position's mean over the first 2,000 values' positions is n / 2.
            long[] position = new long[v.length];
            for (int k = 0; k < v.length; k++) position[(int) v[k]] = k;
            double m = 0;
            for (int e = 0; e < 2000; e++) m += position[e];
            m /= 2000;
            assertEquals(500_000, m, 4 * 1_000_000 / Math.sqrt(12 * 2000));
        }
    }

    @Test
    void randpermRejectsWhatPyTorchRejects() {
        assertMessage("n cannot be greater than 2049 for Half type.", () -> Torch.randperm(3000, DType.FLOAT16, DEVICE, new Generator(1)));
        assertMessage("n cannot be greater than 2^24+1 for Float type.", () -> Torch.randperm((1L << 24) + 2, DType.FLOAT32, DEVICE, new Generator(1)));
        assertMessage("without overflow", () -> Torch.randperm(200, DType.INT8, DEVICE, new Generator(1)));
        assertMessage("\"randperm\" not implemented for 'Bool'", () -> Torch.randperm(3, DType.BOOL, DEVICE, new Generator(1)));
        assertMessage("randperm: n must be non-negative, got -1", () -> Torch.randperm(-1, DType.INT64, DEVICE, new Generator(1)));
    }

    @Test
    void multinomialErrorsNameTheOpAndShape() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor p = Torch.tensor(new double[] {1, 1, 0, 0}, 2, 2).to(DEVICE);
            assertMessage("multinomial(): invalid multinomial distribution (sum of probabilities <= 0) (prob_dist of shape [2, 2], row 1)",
                    () -> p.multinomial(2, true, new Generator(1)).toLongArray()); // a device reports at the read
            Tensor nan = Torch.tensor(new double[] {1, Double.NaN}).to(DEVICE);
            assertMessage("multinomial(): probability tensor contains either `inf`, `nan` or element < 0 (prob_dist of shape [2])",
                    () -> nan.multinomial(1, false, new Generator(1)).toLongArray());
        }
    }

    @Test
    void multinomialNeverDrawsZeroCategoriesAndFollowsTheWeights() {
        try (MemoryScope scope = new MemoryScope()) {
            double[] w = {0, 3, 0, 1, 0, 4, 0};
            Tensor p = Torch.tensor(w, 1, 7).expand(3, 7).to(DEVICE);
            double[] v = values(p.multinomial(20_000, true, new Generator(2)));
            long[] counts = new long[7];
            for (double e : v) counts[(int) e]++;
            for (int c = 0; c < 7; c++) {
                if (w[c] == 0) assertEquals(0, counts[c], "category " + c);
                else assertEquals(w[c] / 8, counts[c] / 60_000.0, 4 * Math.sqrt(w[c] / 8 * (1 - w[c] / 8) / 60_000), "category " + c);
            }
            double[] all = values(p.multinomial(7, false, new Generator(3)));
            for (int r = 0; r < 3; r++) {
                for (int s = 3; s < 7; s++) assertEquals(0, w[(int) all[r * 7 + s]], "zero categories come last");
            }
        }
    }

    /** Two replays of a traced function against two eager calls after the same seed: one random node per op, fresh draws each time. */
    @Test
    void tracedFillsReplayFreshDrawsAsEagerCallsDo() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {6}, DType.FLOAT32, DEVICE);
            Tensor w = Torch.tensor(new double[] {1, 2, 0, 3, 1, 1}, 2, 3).to(DEVICE);
            Generator g = new Generator(70);
            TensorFunction f = in -> {
                Tensor e = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).exponential_(2, g);
                Tensor e2 = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).exponential_(2, g); // never merged with e
                Tensor b = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).bernoulli_(0.5, g);
                Tensor c = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).cauchy_(0, 1, g);
                Tensor q = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).geometric_(0.4, g);
                Tensor l = Torch.zeros(new long[] {6}, DType.FLOAT32, DEVICE).logNormal_(0, 1, g);
                Tensor perm = Torch.randperm(6, DType.FLOAT32, DEVICE, g);
                Tensor m = w.multinomial(2, false, g).reshape(4).to(DType.FLOAT32);
                Tensor m2 = w.multinomial(3, true, g).reshape(6).to(DType.FLOAT32);
                return Torch.cat(new Tensor[] {in[0], e, e2, b, c, q, l, perm, m, m2}, 0);
            };
            String plan = Jit.explain(f, x);
            assertFalse(plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x);
            g.manualSeed(5);
            double[] r1 = values(compiled.apply(x)), r2 = values(compiled.apply(x));
            long[] state = g.getState();
            g.manualSeed(5);
            assertArrayEquals(values(f.apply(new Tensor[] {x})), r1);
            assertArrayEquals(values(f.apply(new Tensor[] {x})), r2);
            assertArrayEquals(state, g.getState());
            assertFalse(Arrays.equals(r1, r2));
            assertFalse(Arrays.equals(Arrays.copyOfRange(r1, 6, 12), Arrays.copyOfRange(r1, 12, 18)), "two exponential_ calls merged");
        }
    }

    @Test
    void randpermAndMultinomialAreTracedAsOneNodeEach() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor w = Torch.tensor(new double[] {1, 2, 3}).to(DEVICE);
            Generator g = new Generator(71);
            TensorFunction f = in -> Torch.cat(new Tensor[] {in[0].multinomial(2, true, g), Torch.randperm(5, DType.INT64, DEVICE, g)}, 0);
            String plan = Jit.explain(f, w);
            assertEquals(1, count(plan, "= multinomial(input0"), plan);
            assertEquals(1, count(plan, "= randperm("), plan);
            assertFalse(plan.contains("runs eagerly"), plan);
        }
    }

    /**
     * exponential_, geometric_, log_normal_ and cauchy_ transform float64 draws in float64 on every device: float64
     * samples keep float64's precision (a float32 computation leaves every value on float32's grid), and a device's
     * samples are the CPU's for the same generator state, up to its double log, exp and tan (float32 samples, rounded
     * once from those, to an ulp of float32).
     */
    @Test
    void distributionFillsComputeInFloat64OnEveryDevice() {
        java.util.Map<String, java.util.function.BiFunction<Tensor, Generator, Tensor>> fills = new java.util.LinkedHashMap<>();
        fills.put("exponential_", (t, g) -> t.exponential_(2.5, g));
        fills.put("geometric_", (t, g) -> t.geometric_(0.3, g));
        fills.put("log_normal_", (t, g) -> t.logNormal_(0.5, 0.75, g));
        fills.put("cauchy_", (t, g) -> t.cauchy_(-1, 2, g));
        for (var fill : fills.entrySet()) {
            for (DType t : new DType[] {DType.FLOAT64, DType.FLOAT32}) {
                double[] here, cpu;
                try (Tensor x = Torch.zeros(new long[] {4099}, t, DEVICE); Tensor c = Torch.zeros(new long[] {4099}, t, Device.cpu())) {
                    here = values(fill.getValue().apply(x, new Generator(90)));
                    cpu = values(fill.getValue().apply(c, new Generator(90)));
                }
                String what = fill.getKey() + " " + t + " on " + DEVICE;
                if (t == DType.FLOAT64 && !fill.getKey().equals("geometric_")) {
                    assertTrue(Arrays.stream(here).anyMatch(v -> v != (float) v), what + ": every sample is a float32 value");
                }
                double tolerance = t == DType.FLOAT64 ? 1e-13 : 2e-7;
                for (int i = 0; i < here.length; i++) {
                    assertEquals(cpu[i], here[i], tolerance * Math.max(1, Math.abs(cpu[i])), what + ", element " + i);
                }
            }
        }
    }

    private static int count(String s, String word) {
        int n = 0;
        for (int at = s.indexOf(word); at >= 0; at = s.indexOf(word, at + 1)) n++;
        return n;
    }
}
