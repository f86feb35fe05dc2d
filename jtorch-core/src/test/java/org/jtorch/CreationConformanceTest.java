package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Factories. Deterministic ones equal PyTorch 1.13 ({@code tools/fixtures/gen_creation.py}). Random
 * ones use Philox, not PyTorch's CPU mt19937, so they are checked against their distributions'
 * formulas (1e5 samples: mean and variance within ~5 standard errors) and for reproducibility: the
 * same seed gives the same values, whatever the thread count.
 */
class CreationConformanceTest {
    private static final int N = 100_000;

    @TestFactory
    Stream<DynamicTest> factoriesMatchPyTorch() {
        return Fixtures.load("creation").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        if (c.expectsError()) {
            RuntimeException e = assertThrows(IllegalArgumentException.class, () -> run(c).close(), c.toString());
            assertTrue(e.getMessage().contains(c.op()), c + ": " + e.getMessage());
            return;
        }
        try (Tensor r = run(c)) {
            Fixtures.assertMatches(c.expectedTensor(), r, c.toString());
        }
    }

    private static Tensor run(Case c) {
        String dt = c.stringArg("dtype", null);
        DType dtype = dt == null ? null : DType.parse(dt);
        Device cpu = Device.cpu();
        long[] shape = c.longsArg("shape");
        if (shape == null && c.args().has("shape")) shape = new long[0];
        boolean isInt = "int".equals(c.stringArg("kind", null));
        return switch (c.op()) {
            case "zeros" -> dtype == null ? Torch.zeros(shape) : Torch.zeros(shape, dtype, cpu);
            case "ones" -> dtype == null ? Torch.ones(shape) : Torch.ones(shape, dtype, cpu);
            case "full" -> dtype != null ? Torch.full(shape, c.doubleArg("value", 0), dtype, cpu)
                    : isInt ? Torch.full(shape, c.longArg("value", 0)) : Torch.full(shape, c.doubleArg("value", 0));
            case "arange" -> {
                if (dtype != null) {
                    yield Torch.arange(c.doubleArg("start", 0), c.doubleArg("end", 0), c.doubleArg("step", 1), dtype, cpu);
                }
                if (isInt) {
                    yield c.args().has("start") ? Torch.arange(c.longArg("start", 0), c.longArg("end", 0), c.longArg("step", 1))
                            : Torch.arange(c.longArg("end", 0));
                }
                yield Torch.arange(c.doubleArg("start", 0), c.doubleArg("end", 0), c.doubleArg("step", 1));
            }
            case "linspace" -> dtype == null
                    ? Torch.linspace(c.doubleArg("start", 0), c.doubleArg("end", 0), c.longArg("steps", 0))
                    : Torch.linspace(c.doubleArg("start", 0), c.doubleArg("end", 0), c.longArg("steps", 0), dtype, cpu);
            case "eye" -> dtype == null ? Torch.eye(c.longArg("n", 0))
                    : Torch.eye(c.longArg("n", 0), c.longArg("m", 0), dtype, cpu);
            default -> throw new AssertionError("no mapping for " + c);
        };
    }

    // ---------------------------------------------------------------- random factories

    private static double[] sample(Supplier<Tensor> f) {
        try (Tensor t = f.get()) {
            return t.toDoubleArray();
        }
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) s += x;
        return s / v.length;
    }

    private static double variance(double[] v) {
        double m = mean(v);
        double s = 0;
        for (double x : v) s += (x - m) * (x - m);
        return s / (v.length - 1);
    }

    @Test
    void randIsUniformOnZeroOne() {
        for (DType dt : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16, DType.FLOAT16}) {
            double[] v = sample(() -> Torch.rand(new long[] {N}, dt, Device.cpu(), new Generator(1)));
            for (double x : v) assertTrue(x >= 0 && x < 1, dt + ": " + x + " outside [0, 1)");
            // U(0,1): mean 1/2 (standard error 0.29/sqrt(N) ~ 0.0009), variance 1/12.
            assertEquals(0.5, mean(v), 0.005, dt + " mean");
            assertEquals(1.0 / 12, variance(v), 0.003, dt + " variance");
        }
    }

    @Test
    void randnIsStandardNormal() {
        for (DType dt : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            double[] v = sample(() -> Torch.randn(new long[] {N}, dt, Device.cpu(), new Generator(2)));
            assertEquals(0.0, mean(v), 0.02, dt + " mean");
            assertEquals(1.0, variance(v), 0.03, dt + " variance");
            long within1 = Arrays.stream(v).filter(x -> Math.abs(x) < 1).count();
            assertEquals(0.6827, within1 / (double) N, 0.01, dt + ": P(|z| < 1)");
        }
    }

    @Test
    void randintCoversItsHalfOpenRangeUniformly() {
        double[] v = sample(() -> Torch.randint(-3, 7, new long[] {N}, DType.INT64, Device.cpu(), new Generator(3)));
        long[] counts = new long[10];
        for (double x : v) {
            assertTrue(x >= -3 && x < 7, "randint value " + x);
            counts[(int) x + 3]++;
        }
        for (long n : counts) assertEquals(N / 10.0, n, 5 * Math.sqrt(N * 0.1 * 0.9), "bucket counts " + Arrays.toString(counts));
        try (Tensor t = Torch.randint(0, 5, 3)) {
            assertEquals(DType.INT64, t.dtype());
        }
    }

    @Test
    void randpermIsAPermutation() {
        for (int n : new int[] {0, 1, 2, 17, 1000}) {
            try (Tensor p = Torch.randperm(n, new Generator(4))) {
                assertEquals(DType.INT64, p.dtype());
                long[] v = p.toLongArray();
                Arrays.sort(v);
                for (int i = 0; i < n; i++) assertEquals(i, v[i], "randperm(" + n + ") sorted");
            }
        }
        try (Tensor a = Torch.randperm(50, new Generator(5)); Tensor b = Torch.randperm(50, new Generator(6))) {
            assertNotEquals(Arrays.toString(a.toLongArray()), Arrays.toString(b.toLongArray()), "different seeds differ");
        }
    }

    @Test
    void sameSeedGivesSameValuesAndTheStreamAdvances() {
        Torch.manualSeed(42);
        double[] a = sample(() -> Torch.rand(1000));
        double[] a2 = sample(() -> Torch.rand(1000));
        Torch.manualSeed(42);
        double[] b = sample(() -> Torch.rand(1000));
        assertArrayEquals(a, b);
        assertTrue(!Arrays.equals(a, a2), "consecutive draws differ");
    }

    @Test
    void valuesDoNotDependOnTheThreadCount() {
        int saved = Torch.getNumThreads();
        try {
            long big = 300_000; // above the parallel grain, so two threads really split the work
            Torch.setNumThreads(1);
            double[] u1 = sample(() -> Torch.rand(new long[] {big}, DType.FLOAT32, Device.cpu(), new Generator(7)));
            double[] n1 = sample(() -> Torch.randn(new long[] {big}, DType.FLOAT64, Device.cpu(), new Generator(7)));
            double[] i1 = sample(() -> Torch.randint(0, 1000, new long[] {big}, DType.INT32, Device.cpu(), new Generator(7)));
            Torch.setNumThreads(2);
            assertArrayEquals(u1, sample(() -> Torch.rand(new long[] {big}, DType.FLOAT32, Device.cpu(), new Generator(7))));
            assertArrayEquals(n1, sample(() -> Torch.randn(new long[] {big}, DType.FLOAT64, Device.cpu(), new Generator(7))));
            assertArrayEquals(i1, sample(() -> Torch.randint(0, 1000, new long[] {big}, DType.INT32, Device.cpu(), new Generator(7))));
        } finally {
            Torch.setNumThreads(saved);
        }
    }

    @Test
    void randRejectsIntegerDtypesNamingTheOp() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Torch.rand(new long[] {2}, DType.INT32, Device.cpu(), new Generator(1)));
        assertTrue(e.getMessage().startsWith("rand:"), e.getMessage());
    }
}
