package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * flip, roll, rot90, repeat, tile, repeat_interleave, tril, triu, diag, diagonal, trace, cross, cdist, one_hot
 * and normalize against PyTorch 1.13 ({@code tools/fixtures/gen_rearranging.py}): values, and the gradients
 * of {@code sum(value * cos(0, 1, 2, ...))} with respect to each floating input; PyTorch's errors are errors
 * naming the op. Runs on the test device (the CUDA suites run it on cuda:0).
 */
class RearrangingConformanceTest {
    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("rearranging").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            List<Tensor> in = new ArrayList<>(c.inputTensors());
            if (c.expectsError()) {
                // The copy to the host is a synchronisation: CUDA reports a bad index there (one_hot, as PyTorch's).
                RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, in).to(Device.cpu()), c + ": PyTorch raises");
                String camel = Fixtures.javaName(c.op());
                assertTrue(e.getMessage().contains(c.op()) || e.getMessage().contains(camel), c + ": message should name the op: " + e.getMessage());
                return;
            }
            int expected = c.expected().getAsJsonArray().size();
            for (int i = 0; i < in.size(); i++) {
                if (expected > 1 && in.get(i).dtype().isFloatingPoint()) in.set(i, in.get(i).detach().requiresGrad_(true));
            }
            Tensor out = run(c, in);
            Fixtures.assertMatches(c.expectedTensor(0), out.detach(), c + " value");
            if (expected > 1) {
                Tensor w = Torch.arange(0, out.numel(), 1, DType.FLOAT64, out.device()).cos().reshape(out.shape()).to(out.dtype());
                out.mul(w).sum().backward();
                int g = 1;
                for (Tensor t : in) {
                    if (t.requiresGrad()) Fixtures.assertMatches(c.expectedTensor(g++), t.grad(), c + " grad " + (g - 1));
                }
            }
        }
    }

    static Tensor run(Case c, List<Tensor> in) {
        Tensor x = in.get(0);
        return switch (c.op()) {
            case "flip" -> x.flip(c.intsArg("dims"));
            case "fliplr" -> x.fliplr();
            case "flipud" -> x.flipud();
            case "roll" -> x.roll(c.longsArg("shifts"), c.intsArg("dims"));
            case "rot90" -> {
                int[] d = c.intsArg("dims");
                yield x.rot90((int) c.longArg("k", 1), d[0], d[1]);
            }
            case "repeat" -> x.repeat(c.longsArg("sizes"));
            case "tile" -> x.tile(c.longsArg("dims"));
            case "repeat_interleave" -> in.size() > 1
                    ? x.repeatInterleave(in.get(1), (int) c.longArg("dim", 0))
                    : c.args().has("dim") ? x.repeatInterleave(c.longArg("repeats", 1), (int) c.longArg("dim", 0))
                    : x.repeatInterleave(c.longArg("repeats", 1));
            case "tril" -> x.tril(c.longArg("diagonal", 0));
            case "triu" -> x.triu(c.longArg("diagonal", 0));
            case "diag" -> x.diag(c.longArg("diagonal", 0));
            case "diagonal" -> x.diagonal(c.longArg("offset", 0), (int) c.longArg("dim1", 0), (int) c.longArg("dim2", 1));
            case "trace" -> x.trace();
            case "cross" -> c.args().has("dim") ? x.cross(in.get(1), (int) c.longArg("dim", -1)) : x.cross(in.get(1));
            case "cdist" -> Torch.cdist(x, in.get(1), c.doubleArg("p", 2));
            case "one_hot" -> F.oneHot(x, c.longArg("num_classes", -1));
            case "normalize" -> F.normalize(x, c.doubleArg("p", 2), (int) c.longArg("dim", 1), c.doubleArg("eps", 1e-12));
            default -> throw new IllegalArgumentException("no runner for " + c.op());
        };
    }

    @Test
    void gradcheckOfTheDifferentiableOnesInFloat64() {
        Torch.manualSeed(18);
        Tensor a = Torch.randn(3, 4).to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
        Tensor b = Torch.randn(3, 4).to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
        assertTrue(Gradcheck.check(t -> t[0].flip(0, 1), a));
        assertTrue(Gradcheck.check(t -> t[0].roll(new long[] {1, -2}, 0, 1), a));
        assertTrue(Gradcheck.check(t -> t[0].rot90(3, 0, 1), a));
        assertTrue(Gradcheck.check(t -> t[0].repeat(2, 1, 2), a));
        assertTrue(Gradcheck.check(t -> t[0].repeatInterleave(2, 1), a));
        assertTrue(Gradcheck.check(t -> t[0].tril(1), a));
        assertTrue(Gradcheck.check(t -> t[0].diag(-1), a));
        assertTrue(Gradcheck.check(t -> t[0].select(0, 0).diag(1), a));
        assertTrue(Gradcheck.check(t -> t[0].diagonal(1, 1, 0), a));
        assertTrue(Gradcheck.check(t -> t[0].narrow(1, 0, 3).cross(t[1].narrow(1, 1, 3), 1), a, b));
        assertTrue(Gradcheck.check(t -> Torch.cdist(t[0], t[1], 2), a, b));
        assertTrue(Gradcheck.check(t -> F.normalize(t[0]), a));
    }

    @Test
    void newTensorsFollowThisTensorsDtypeAndDevice() {
        Tensor x = Torch.ones(2).to(DType.FLOAT64).to(Fixtures.device());
        try (Tensor z = x.newZeros(3, 1); Tensor o = x.newOnes(2); Tensor f = x.newFull(new long[] {2}, 7); Tensor e = x.newEmpty(4)) {
            for (Tensor t : new Tensor[] {z, o, f, e}) {
                assertTrue(t.dtype() == DType.FLOAT64 && t.device().equals(x.device()), t.toString());
            }
            assertTrue(f.toDoubleArray()[1] == 7 && o.sum().item() == 2 && z.sum().item() == 0);
        }
        Tensor i = Torch.tensor(new long[] {1, 2, 3, 4});
        assertTrue(i.viewAs(Torch.zeros(2, 2)).dim() == 2);
        assertTrue(i.typeAs(x).dtype() == DType.FLOAT64);
        assertTrue(Torch.zeros(2, 3, 4).flatten(1).shape()[1] == 12);
    }

    /**
     * tril and triu against the definition element by element: odd and batched shapes, a transposed input, integer,
     * bool and half dtypes, and diagonals far outside the matrix (which must keep all or nothing, not overflow).
     */
    @Test
    void trilAndTriuKeepExactlyTheirSideOfTheDiagonal() {
        Torch.manualSeed(21);
        long[] diagonals = {0, 1, -1, 3, -4, 40, -40, Long.MAX_VALUE, Long.MIN_VALUE};
        DType[] types = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT32, DType.BOOL, DType.BFLOAT16};
        for (long[] shape : new long[][] {{1, 1}, {5, 3}, {3, 7}, {2, 17, 19}, {2, 3, 4, 33}}) {
            for (DType t : types) {
                for (boolean transposed : new boolean[] {false, true}) {
                    try (MemoryScope scope = new MemoryScope()) {
                        Tensor base = Torch.randn(shape).mul(3).to(t).to(Fixtures.device());
                        Tensor x = transposed ? base.transpose(-1, -2) : base;
                        long rows = x.size(-2), cols = x.size(-1);
                        double[] v = x.contiguous().to(DType.FLOAT64).toDoubleArray();
                        for (long k : diagonals) {
                            double[] lower = x.tril(k).to(DType.FLOAT64).toDoubleArray();
                            double[] upper = x.triu(k).to(DType.FLOAT64).toDoubleArray();
                            for (int e = 0; e < v.length; e++) {
                                long i = e / cols % rows, j = e % cols;
                                String at = t + " " + Arrays.toString(shape) + (transposed ? " transposed" : "") + " k=" + k + " element " + e;
                                boolean below = j - i <= k;
                                boolean above = j - i >= k;
                                assertEquals(below ? v[e] : 0, lower[e], 0, "tril " + at);
                                assertEquals(above ? v[e] : 0, upper[e], 0, "triu " + at);
                            }
                        }
                    }
                }
            }
        }
    }

    /** one_hot against the definition, for given and inferred class counts and a non-contiguous index tensor. */
    @Test
    void oneHotSetsExactlyTheIndexedClass() {
        Torch.manualSeed(22);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor idx = Torch.randint(0, 13, new long[] {7, 5}).to(Fixtures.device());
            for (Tensor x : new Tensor[] {idx, idx.t(), idx.narrow(1, 1, 3)}) {
                long[] values = x.contiguous().toLongArray();
                for (long classes : new long[] {-1, 13, 40}) {
                    Tensor got = F.oneHot(x, classes);
                    long n = classes == -1 ? Arrays.stream(values).max().getAsLong() + 1 : classes;
                    assertEquals(DType.INT64, got.dtype());
                    assertEquals(n, got.size(-1));
                    long[] g = got.toLongArray();
                    for (int e = 0; e < values.length; e++) {
                        for (int c = 0; c < n; c++) assertEquals(values[e] == c ? 1 : 0, g[(int) (e * n + c)], "element " + e + " class " + c);
                    }
                }
            }
            assertOutOfRangeClassesFail(() -> F.oneHot(idx, 5));
            assertOutOfRangeClassesFail(() -> F.oneHot(idx.sub(20), 13));
        }
    }

    /**
     * The CPU checks the class values at the op. With num_classes given, CUDA (as PyTorch's) does not synchronise to
     * check them and relies on its scatter's device-side index check, which raises at the next synchronisation: here,
     * reading the result.
     */
    private static void assertOutOfRangeClassesFail(java.util.function.Supplier<Tensor> oneHot) {
        if (Fixtures.device().isCpu()) {
            assertThrows(IllegalArgumentException.class, oneHot::get);
            return;
        }
        RuntimeException e = assertThrows(RuntimeException.class, () -> {
            try (Tensor t = oneHot.get()) {
                t.toLongArray();
            }
        });
        assertTrue(e.getMessage().startsWith("one_hot: "), e.getMessage());
    }
}
