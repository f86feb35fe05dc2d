package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.op.JoiningOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code cat} and {@code stack} as declared variadic ops ({@link JoiningOps}): kernels per device, what the trace
 * records, the meta functions' errors, dtype promotion and each input's gradient, and gradients of both orders against
 * finite differences in float64. The references are the inputs' own elements (a join only copies); values against
 * PyTorch 1.13 are in {@link IndexingConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class JoiningOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(23);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void catAndStackAreVariadicStructuredOpsWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {JoiningOps.CAT, JoiningOps.STACK}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertTrue(op.isVariadic(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
            assertTrue(op.isDifferentiable(), op.name());
        }
    }

    @Test
    void theTraceRecordsCatAsOneOpWithEveryInputAndItsDim() {
        Tensor a = Torch.randn(2, 3).to(DEVICE), b = Torch.randn(2, 1).to(DEVICE), c = Torch.randn(2, 2).to(DEVICE);
        List<Integer> inputs = new ArrayList<>();
        List<double[]> scalars = new ArrayList<>();
        TraceHook<Tensor> hook = (OpDef op, List<Tensor> in, double[] s, ReduceArgs r, Tensor out) -> {
            inputs.add(in.size());
            scalars.add(s);
        };
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            Torch.cat(new Tensor[] {a, b, c}, -1);
        }
        assertEquals(List.of(3), inputs);
        assertArrayEquals(new double[] {-1}, scalars.get(0));
        assertEquals(List.of("stack"), traced(() -> Torch.stack(new Tensor[] {a, a}, 1)));
    }

    @Test
    void catCopiesEachInputIntoItsSliceWhateverItsStrides() {
        Tensor a = Torch.arange(6).reshape(2, 3).to(DType.FLOAT32).to(DEVICE);
        Tensor b = Torch.arange(4).reshape(2, 2).to(DType.FLOAT32).to(DEVICE).t(); // transposed: not contiguous
        Tensor r = Torch.cat(new Tensor[] {a, b}, 1);
        assertArrayEquals(new float[] {0, 1, 2, 0, 2, 3, 4, 5, 1, 3}, r.toFloatArray());
        Tensor s = Torch.stack(new Tensor[] {a.narrow(1, 0, 2), b}, 2);
        assertArrayEquals(new long[] {2, 2, 2}, s.shape());
        assertArrayEquals(new float[] {0, 0, 1, 2, 3, 1, 4, 3}, s.toFloatArray());
    }

    @Test
    void shapeErrorsNameTheOpEveryInputsShapeAndTheDim() {
        Tensor a = Torch.randn(2, 3).to(DEVICE), b = Torch.randn(3, 3).to(DEVICE), c = Torch.randn(2, 1).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Torch.cat(new Tensor[] {a, c, b}, 1));
        assertEquals("cat: sizes of tensors must match except in dimension 1: expected size 2 but got size 3 for tensor 2;"
                + " shapes [2, 3], [2, 1], [3, 3], dim 1", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Torch.stack(new Tensor[] {a, c}, 0));
        assertEquals("stack: expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 1] at entry 1; shapes [2, 3],"
                + " [2, 1], dim 0", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Torch.cat(new Tensor[] {a, Torch.randn(2).to(DEVICE)}, 0));
        assertTrue(e.getMessage().startsWith("cat: tensors must have the same number of dimensions: got 2 (tensor 0) and 1 (tensor 1);"
                + " shapes [2, 3], [2], dim 0"), e.getMessage());
    }

    @Test
    void eachInputGetsItsSliceOfTheGradientInItsOwnDtype() {
        Tensor a = Torch.randn(2, 3).to(DEVICE).requiresGrad_(true);
        Tensor b = Torch.randn(2, 2).to(DEVICE).to(DType.FLOAT64).requiresGrad_(true);
        Tensor skipped = Torch.empty(new long[] {0}, DType.FLOAT32, DEVICE).requiresGrad_(true);
        Tensor r = Torch.cat(new Tensor[] {a, skipped, b}, 1);
        assertEquals(DType.FLOAT64, r.dtype());
        Tensor probe = Torch.arange(10).reshape(2, 5).to(DType.FLOAT64).to(DEVICE);
        Tensor[] g = Autograd.grad(new Tensor[] {r}, new Tensor[] {a, skipped, b}, new Tensor[] {probe}, false, false, false);
        assertEquals(DType.FLOAT32, g[0].dtype());
        assertArrayEquals(new float[] {0, 1, 2, 5, 6, 7}, g[0].toFloatArray());
        assertArrayEquals(new long[] {0}, g[1].shape());
        assertArrayEquals(new double[] {3, 4, 8, 9}, g[2].toDoubleArray());
    }

    @Test
    void catsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> cat = a -> Torch.cat(new Tensor[] {a[0].mul(a[0]), a[1], a[2].mul(a[1].narrow(1, 0, 1))}, -1);
        assertTrue(Gradcheck.check(cat, randn64(2, 3), randn64(2, 2), randn64(2, 1)));
        assertTrue(Gradcheck.check(firstGradient(cat), randn64(2, 3), randn64(2, 2), randn64(2, 1)));
    }

    @Test
    void stacksGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> stack = a -> Torch.stack(new Tensor[] {a[0].mul(a[1]), a[1], a[0]}, -2);
        assertTrue(Gradcheck.check(stack, randn64(2, 3), randn64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(stack), randn64(2, 3), randn64(2, 3)));
    }
}
