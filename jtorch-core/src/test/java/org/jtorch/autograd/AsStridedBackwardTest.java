package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.other;
import static org.jtorch.autograd.ViewBackwardOpsTest.gradientOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.ViewOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * {@code as_strided}'s backward as the declared op {@code as_strided_backward} (PyTorch's function of that name: the
 * gradient added by storage position, overlapping elements summed, read back through the input's geometry and divided by
 * the count where the input overlaps itself) and {@code as_strided_scatter}, which the in-place write through a view
 * ({@code CopySlices}) uses: against PyTorch 1.13 (fixtures from tools/fixtures/gen_as_strided_backward.py, float64), by
 * gradcheck in float64 to first and second order, and their errors.
 */
class AsStridedBackwardTest {

    // ---------------------------------------------------------------- PyTorch 1.13

    @TestFactory
    List<DynamicTest> gradientsAndScattersMatchPyTorch() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fixtures.Case c : Fixtures.load("as_strided_backward")) {
            tests.add(DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> run(c)));
        }
        return tests;
    }

    private static void run(Fixtures.Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            long[] size = c.longsArg("size");
            long[] stride = c.longsArg("stride");
            Tensor actual;
            if (c.op().equals("as_strided_scatter")) {
                actual = Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {c.input(0), c.input(1)},
                        scatterScalars(size, stride, c.longArg("offset", 0)));
            } else {
                Tensor leaf = c.input(0).requiresGrad_();
                Tensor x = switch (c.stringArg("pre", "none")) {
                    case "t" -> leaf.t();
                    case "narrow" -> leaf.narrow(0, 2, leaf.size(0) - 2);
                    case "expand" -> leaf.expand(prepend(4, leaf.shape()));
                    default -> leaf;
                };
                boolean own = c.args().get("offset").isJsonNull();
                Tensor y = own ? x.asStrided(size, stride) : x.asStrided(size, stride, c.longArg("offset", 0));
                y.mul(c.input(1)).sum().backward();
                actual = leaf.grad();
            }
            // sums of overlapping elements in another order than ATen's index_add_: a rounding apart at most
            Fixtures.assertMatches(c.expectedTensor(), actual, 1e-14, 1e-15, c.op() + "/" + c.name());
        }
    }

    private static long[] prepend(long first, long[] shape) {
        long[] r = new long[shape.length + 1];
        r[0] = first;
        System.arraycopy(shape, 0, r, 1, shape.length);
        return r;
    }

    /** as_strided_scatter's scalars: size, stride, storage offset. */
    private static double[] scatterScalars(long[] size, long[] stride, long offset) {
        double[] r = new double[2 * size.length + 1];
        for (int i = 0; i < size.length; i++) {
            r[i] = size[i];
            r[size.length + i] = stride[i];
        }
        r[r.length - 1] = offset;
        return r;
    }

    // ---------------------------------------------------------------- gradcheck

    @Test
    void overlappingAndBroadcastViewsSumTheirGradients() {
        try (Tensor x = input(10)) {
            gradcheck(a -> a[0].asStrided(new long[] {3, 3}, new long[] {2, 1}, 1), x);
            gradcheck(a -> a[0].asStrided(new long[] {3, 4}, new long[] {1, 1}, 0), x);
            gradcheck(a -> a[0].asStrided(new long[] {3, 2, 3}, new long[] {0, 1, 2}, 1), x);
            gradcheck(a -> a[0].asStrided(new long[] {2, 5}, new long[] {5, 1}, 0), x);
        }
    }

    @Test
    void nonContiguousInputsWithOffsets() {
        // every place the views read is one of the input's elements (elsewhere the storage is not the input's: no gradient)
        try (Tensor x = input(6, 4)) {
            gradcheck(a -> a[0].t().asStrided(new long[] {3, 4}, new long[] {6, 1}, 2), x);
            gradcheck(a -> a[0].narrow(0, 2, 3).asStrided(new long[] {2, 4}, new long[] {4, 2}, 9), x);
            gradcheck(a -> a[0].narrow(1, 1, 2).asStrided(new long[] {3, 2, 2}, new long[] {8, 1, 0}), x);
        }
    }

    @Test
    void anInputThatOverlapsItselfGetsTheGradientDividedByItsCount() {
        try (Tensor x = input(3)) {
            // every element of the expanded input shares its place with three others: PyTorch's step (3)
            Tensor[] g = Autograd.grad(new Tensor[] {x.expand(4, 3).asStrided(new long[] {2, 2}, new long[] {1, 1}, 0).sum()},
                    new Tensor[] {x});
            assertEquals(List.of(1.0, 2.0, 1.0), boxed(g[0].toDoubleArray()));
            gradcheck(a -> a[0].expand(2, 3).asStrided(new long[] {2, 2}, new long[] {1, 1}, 0).mul(a[0].sum()), x);
        }
    }

    @Test
    void zeroDimAndEmptyShapes() {
        try (Tensor x = input(5); Tensor s = input()) {
            gradcheck(a -> a[0].asStrided(new long[0], new long[0], 3), x);
            gradcheck(a -> a[0].asStrided(new long[] {2, 3}, new long[] {0, 0}, 0), s);
            gradcheck(a -> a[0].asStrided(new long[0], new long[0]), s);
            try (Tensor y = x.asStrided(new long[] {0, 3}, new long[] {1, 1}, 2); Tensor g = Autograd.grad(y.sum(), x)) {
                assertEquals(List.of(0.0, 0.0, 0.0, 0.0, 0.0), boxed(g.toDoubleArray()));
            }
        }
    }

    @Test
    void theBackwardIsDifferentiable() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(10)) {
            gradcheck(gradientOf(t -> t.asStrided(new long[] {3, 3}, new long[] {2, 1}, 1)), x, other(3, 3));
            gradcheck(gradientOf(t -> t.asStrided(new long[] {2, 2, 3}, new long[] {0, 3, 2}, 1)), x, other(2, 2, 3));
            gradcheck(gradientOf(t -> t.narrow(0, 4, 6).asStrided(new long[] {2, 4}, new long[] {1, 2}, 1)), x, other(2, 4));
            // the adjoint form divides by the overlapping input's count too
            gradcheck(gradientOf(t -> t.narrow(0, 0, 3).expand(2, 3).asStrided(new long[] {2, 2}, new long[] {1, 1}, 0)), x, other(2, 2));
        }
    }

    @Test
    void asStridedRecordsTheDeclaredNodeAndSavesNoTensor() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(4, 6)) {
            Tensor y = x.mul(2.0).asStrided(new long[] {3, 3}, new long[] {1, 2}, 1);
            assertEquals("AsStridedBackward0", y.gradFn().name());
            assertEquals(0, y.gradFn().savedCount());
            assertTrue(!ViewOps.AS_STRIDED.derivatives().get(0).readsInput(0));
        }
    }

    // ---------------------------------------------------------------- as_strided_scatter

    @Test
    void asStridedScatterIsDifferentiableInBothInputs() {
        double[] geometry = scatterScalars(new long[] {2, 3}, new long[] {5, 2}, 3);
        try (MemoryScope scope = new MemoryScope(); Tensor x = input(3, 5); Tensor src = other(2, 3)) {
            gradcheck(a -> Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {a[0], a[1]}, geometry), x, src);
            gradcheck(a -> Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {a[0].t().t(), a[1].mul(a[1])}, geometry), x, src);
            // second order
            gradcheck(a -> {
                Tensor r = Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {a[0].mul(a[0]), a[1].mul(a[1])}, geometry);
                return Autograd.grad(new Tensor[] {r.mul(r).sum()}, new Tensor[] {a[0], a[1]}, null, true, true, false)[1];
            }, x, src);
        }
    }

    @Test
    void aSelfOfAnotherLayoutIsReadAsContiguous() {
        try (MemoryScope scope = new MemoryScope(); Tensor x = Torch.arange(6).to(org.jtorch.types.DType.FLOAT64).reshape(2, 3)) {
            Tensor r = Dispatcher.call(ViewOps.AS_STRIDED_SCATTER, new Tensor[] {x.t(), Torch.full(new long[] {2}, -1.0,
                    org.jtorch.types.DType.FLOAT64, x.device())}, scatterScalars(new long[] {2}, new long[] {1}, 1));
            // x.t() is [[0, 3], [1, 4], [2, 5]]: contiguously its places 1 and 2 are 3 and 1
            assertEquals(List.of(0.0, -1.0, -1.0, 4.0, 2.0, 5.0), boxed(r.toDoubleArray()));
            assertTrue(r.isContiguous());
        }
    }

    // ---------------------------------------------------------------- errors

    @Test
    void errorsNameTheOpAndTheShapes() {
        try (Tensor g = Torch.zeros(3, 3); Tensor x = Torch.zeros(2, 5)) {
            RuntimeException e;
            double[] view = {0, 1, 10, 1, 0, 3, 2, 2, 1, 0};
            e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(ViewOps.AS_STRIDED_BACKWARD, new Tensor[] {g}, view));
            assertTrue(e.getMessage().startsWith("as_strided_backward: the gradient has shape [3, 3], expected [3, 2]"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(ViewOps.AS_STRIDED_SCATTER,
                    new Tensor[] {x, Torch.zeros(3)}, scatterScalars(new long[] {2}, new long[] {1}, 0)));
            // PyTorch 1.13's message
            assertTrue(e.getMessage().contains("expected src to have a size equal to the slice of self. src size = [3], slice size = [2]"),
                    e.getMessage());
            e = assertThrows(IndexOutOfBoundsException.class, () -> Dispatcher.call(ViewOps.AS_STRIDED_SCATTER,
                    new Tensor[] {x, Torch.zeros(4)}, scatterScalars(new long[] {4}, new long[] {3}, 1)));
            assertTrue(e.getMessage().contains("out of bounds for a storage of 10 elements"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(ViewOps.AS_STRIDED_BACKWARD, new Tensor[] {g},
                    0, 1, 10, -1, 0, 3, 3, 2, 1, 0));
            assertTrue(e.getMessage().startsWith("as_strided_backward: negative size or stride"), e.getMessage());
        }
    }

    private static List<Double> boxed(double[] v) {
        List<Double> r = new ArrayList<>();
        for (double d : v) r.add(d);
        return r;
    }
}
