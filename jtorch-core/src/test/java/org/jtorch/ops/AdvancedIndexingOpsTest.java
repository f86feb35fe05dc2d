package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.AutocastPolicy;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.TraceHook;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Advanced indexing ({@code index} with tensor indices), its backward and {@code index_put}/{@code index_put_} as declared
 * structured ops ({@link IndexingOps#INDEX_TENSOR}, {@link IndexingOps#INDEX_BACKWARD}, {@link IndexingOps#INDEX_PUT}): kernels
 * per device, the trace (one op each, index_put_ in place), node names, gradients of both orders against PyTorch 1.13 and
 * against finite differences in float64, the fused backward against the index_put_ into zeros it replaced, autocast, and
 * errors. Forward values against PyTorch 1.13 are in {@link IndexingConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class AdvancedIndexingOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(41);
    private static final java.util.Random SIZES = new java.util.Random(41);

    private static Tensor longs(long... values) {
        return Torch.tensor(values).to(DEVICE);
    }

    /** x0 of PyTorch's script: {@code arange(12).reshape(3, 4) * 0.25 - 1} in float64, requiring grad. */
    private static Tensor x0() {
        return Torch.arange(0.0, 12.0, 1.0).to(DType.FLOAT64).reshape(3, 4).mul(0.25).sub(1.0).to(DEVICE).requiresGrad_(true);
    }

    private static Tensor cpu64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theOpsAreStructuredWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {IndexingOps.INDEX_TENSOR, IndexingOps.INDEX_BACKWARD, IndexingOps.INDEX_PUT}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertEquals(1, IndexingOps.INDEX_TENSOR.listFrom());
        assertEquals(2, IndexingOps.INDEX_PUT.listFrom());
        assertEquals("index_put(Tensor self, Tensor values, Tensor?[] indices, bool accumulate=False) -> Tensor",
                IndexingOps.INDEX_PUT.signature().toString());
        // PyTorch 1.13's autocast promotes index_put on CUDA and leaves it alone on the CPU
        assertEquals(CastPolicy.PROMOTE, AutocastPolicy.of("index_put", Device.Type.CUDA));
        assertNull(AutocastPolicy.of("index_put", Device.Type.CPU));
    }

    @Test
    void theTraceAndTheGraphNameEachOpAsPyTorch() {
        Tensor x = Torch.randn(3, 4).to(DEVICE).requiresGrad_(true);
        Tensor v = Torch.randn(4).to(DEVICE).requiresGrad_(true);
        Tensor rows = longs(2, 0, 2);
        assertEquals(List.of("index"), traced(() -> x.index(rows)));
        Tensor columns = longs(-1, 1); // made outside the trace: to(device) of a literal is an alias the trace records
        assertEquals(List.of("index"), traced(() -> x.index(null, columns)));
        assertEquals(List.of("index_put"), traced(() -> x.indexPut(new Tensor[] {rows}, v, true)));
        Tensor y = x.mul(1.0);
        assertEquals(List.of("index_put_"), tracedInPlace(() -> y.indexPut_(new Tensor[] {rows}, v, false)));
        assertEquals("IndexBackward0", x.index(rows).gradFn().name());
        assertEquals("IndexPutBackward0", x.indexPut(new Tensor[] {rows}, v, true).gradFn().name());
        assertEquals("IndexPutBackward0", y.gradFn().name());
        Tensor r = x.index(rows, longs(1));
        Tensor[] g = Autograd.grad(new Tensor[] {r}, new Tensor[] {x}, new Tensor[] {Torch.onesLike(r).requiresGrad_(true)}, true, true,
                false);
        assertEquals("IndexBackwardBackward0", g[0].gradFn().name());
    }

    /** The ops a trace records in place while {@code body} runs, named with their trailing underscore. */
    private static List<String> tracedInPlace(Runnable body) {
        List<String> names = new java.util.ArrayList<>();
        TraceHook<Tensor> hook = new TraceHook<>() {
            @Override
            public void record(OpDef op, List<Tensor> inputs, double[] scalars, org.jtorch.op.ReduceArgs reduce, Tensor output) {
                names.add(op.name());
            }

            @Override
            public void recordInPlace(OpDef op, List<Tensor> inputs, double[] scalars) {
                names.add(op.name() + "_");
            }
        };
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            body.run();
        }
        return names;
    }

    /** PyTorch 1.13: x0[[2, 0, 2], [-1, 1, 1]] (a duplicate, a negative index), the gradients of y * y by g and of their squares' sum. */
    @Test
    void indexGradientsOfBothOrdersMatchPyTorch() {
        Tensor x = x0();
        Tensor y = x.index(longs(2, 0, 2), longs(-1, 1, 1));
        assertArrayEquals(new double[] {1.75, -0.75, 1.25}, y.toDoubleArray(), 0);
        Tensor g = Torch.tensor(new double[] {1.0, -2.0, 0.5}).to(DEVICE);
        Tensor dx = Autograd.grad(new Tensor[] {y.mul(y)}, new Tensor[] {x}, new Tensor[] {g}, true, true, false)[0];
        assertArrayEquals(new double[] {0, 3.0, 0, 0, 0, 0, 0, 0, 0, 1.25, 0, 3.5}, dx.toDoubleArray(), 0);
        assertArrayEquals(new double[] {0, -24.0, 0, 0, 0, 0, 0, 0, 0, 2.5, 0, 14.0}, Autograd.grad(dx.mul(dx).sum(), x).toDoubleArray(), 0);
        // a bool mask, expanded by the front end: sum(y^3) and the squares' sum of its gradient
        Tensor x2 = x0();
        Tensor mask = Torch.tensor(new boolean[] {true, false, true, false, false, false, true, true, true, true, false, false})
                .reshape(3, 4).to(DEVICE);
        Tensor m = x2.index(mask);
        assertArrayEquals(new double[] {-1.0, -0.5, 0.5, 0.75, 1.0, 1.25}, m.toDoubleArray(), 0);
        Tensor dm = Autograd.grad(new Tensor[] {m.mul(m).mul(m).sum()}, new Tensor[] {x2}, null, true, true, false)[0];
        assertArrayEquals(new double[] {3.0, 0, 0.75, 0, 0, 0, 0.75, 1.6875, 3.0, 4.6875, 0, 0}, dm.toDoubleArray(), 0);
        assertArrayEquals(new double[] {-36.0, 0, -4.5, 0, 0, 0, 4.5, 15.1875, 36.0, 70.3125, 0, 0},
                Autograd.grad(dm.mul(dm).sum(), x2).toDoubleArray(), 0);
    }

    /** PyTorch 1.13: x0.index_put(([2, 0, 2],), v, accumulate), v of 4; the gradients of sum(p^3) and of their squares' sum. */
    @Test
    void indexPutGradientsOfBothOrdersMatchPyTorch() {
        double[][][] expected = {
                {{0.5, -1.5, 2.0, 3.0, 0.0, 0.25, 0.5, 0.75, 0.5, -1.5, 2.0, 3.0}, {0, 0, 0, 0, 0, 0.1875, 0.75, 1.6875, 0, 0, 0, 0},
                        {2.25, 20.25, 36.0, 81.0}, {0, 0, 0, 0, 0, 0.5625, 4.5, 15.1875, 0, 0, 0, 0}, {67.5, -1822.5, 4320.0, 14580.0}},
                {{-0.5, -2.25, 1.5, 2.75, 0.0, 0.25, 0.5, 0.75, 2.0, -1.75, 5.5, 7.75},
                        {0.75, 15.1875, 6.75, 22.6875, 0.0, 0.1875, 0.75, 1.6875, 12.0, 9.1875, 90.75, 180.1875},
                        {24.75, 33.5625, 188.25, 383.0625},
                        {-153.0, -1316.25, 3510.0, 13389.75, 0.0, 0.5625, 4.5, 15.1875, 1476.0, -1602.5625, 30838.5, 88007.0625},
                        {2799.0, -4521.375, 65187.0, 189403.875}}};
        for (int k = 0; k < 2; k++) {
            boolean acc = k == 1;
            Tensor x = x0();
            Tensor v = Torch.tensor(new double[] {0.5, -1.5, 2.0, 3.0}).to(DEVICE).requiresGrad_(true);
            Tensor p = x.indexPut(new Tensor[] {longs(2, 0, 2)}, v, acc);
            assertArrayEquals(expected[k][0], p.toDoubleArray(), 0, "accumulate " + acc);
            Tensor[] d = Autograd.grad(new Tensor[] {p.mul(p).mul(p).sum()}, new Tensor[] {x, v}, null, true, true, false);
            assertArrayEquals(expected[k][1], d[0].toDoubleArray(), 0, "dx, accumulate " + acc);
            assertArrayEquals(expected[k][2], d[1].toDoubleArray(), 0, "dv, accumulate " + acc);
            Tensor[] dd = Autograd.grad(new Tensor[] {d[0].mul(d[0]).sum().add(d[1].mul(d[1]).sum())}, new Tensor[] {x, v}, null, false,
                    false, false);
            assertArrayEquals(expected[k][3], dd[0].toDoubleArray(), 0, "ddx, accumulate " + acc);
            assertArrayEquals(expected[k][4], dd[1].toDoubleArray(), 0, "ddv, accumulate " + acc);
        }
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        Tensor rows = Torch.tensor(new long[] {2, 0, 2, -1}).reshape(4, 1);
        Tensor cols = Torch.tensor(new long[] {1, -2, 1});
        Tensor mask = Torch.tensor(new boolean[] {true, false, true, true, false});
        List<Function<Tensor[], Tensor>> fns = List.of(
                a -> a[0].index(rows, null, cols),                 // None between the index tensors: the broadcast shape first
                a -> a[0].index(null, Torch.tensor(new long[] {2, 0, 2})), // one dimension in, duplicates
                a -> a[0].index(null, null, mask),                 // a mask over the last dimension
                a -> a[0].indexPut(new Tensor[] {rows.reshape(-1), null, null}, a[1], true),
                a -> a[0].indexPut(new Tensor[] {null, Torch.tensor(new long[] {1, 0})}, a[1], false),
                a -> a[0].mul(1.0).indexPut_(new Tensor[] {rows, null, cols}, a[1], true));
        long[][] values = {null, null, null, {5}, {3, 1, 5}, {4}};
        for (int c = 0; c < fns.size(); c++) {
            int k = c;
            Tensor[] in = values[k] == null ? new Tensor[] {cpu64(3, 4, 5)} : new Tensor[] {cpu64(3, 4, 5), cpu64(values[k])};
            assertTrue(Gradcheck.check(fns.get(k), in), "first order, case " + k);
            // the ops are linear: squared, their first gradient is a function of the inputs through the backward ops
            Function<Tensor[], Tensor> squared = a -> {
                Tensor y = fns.get(k).apply(a);
                return y.mul(y);
            };
            assertTrue(Gradcheck.check(firstGradient(squared), in), "second order, case " + k);
        }
    }

    /** The backward op (one kernel fills and adds) against the index_put_ with accumulate into zeros it replaced, bit for bit. */
    @Test
    void theIndexBackwardIsTheAccumulatingPutIntoZerosBitForBit() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT64}) {
            for (int trial = 0; trial < 8; trial++) {
                long a = 1 + SIZES.nextLong(6), b = 1 + SIZES.nextLong(7), c = 1 + SIZES.nextLong(5), n = 1 + SIZES.nextLong(9);
                Tensor self = Torch.zeros(new long[] {a, b, c}, dtype, DEVICE);
                Tensor i0 = Torch.randint(-a, a, new long[] {n, 1}, DType.INT64, Device.cpu(), GEN).to(DEVICE);
                Tensor i2 = Torch.randint(-c, c, new long[] {1 + trial % 3}, DType.INT64, Device.cpu(), GEN).to(DEVICE);
                Tensor[] entries = trial % 2 == 0 ? new Tensor[] {i0, null, i2} : new Tensor[] {null, null, i2};
                long[] shape;
                try (Tensor probe = self.index(entries)) {
                    shape = probe.shape();
                }
                Tensor grad = Torch.randn(shape, DType.FLOAT32, Device.cpu(), GEN).to(dtype).to(DEVICE);
                if (trial % 3 == 2) grad = grad.transpose(0, 2).contiguous().transpose(0, 2); // a strided gradient
                Tensor[] in = new Tensor[2 + entries.length];
                in[0] = self;
                in[1] = grad;
                System.arraycopy(entries, 0, in, 2, entries.length);
                Tensor fused = Dispatcher.call(IndexingOps.INDEX_BACKWARD, in);
                Tensor expected = Torch.zeros(new long[] {a, b, c}, dtype, DEVICE).indexPut_(entries, grad, true);
                String what = dtype + " trial " + trial;
                assertArrayEquals(expected.to(DType.FLOAT64).toDoubleArray(), fused.to(DType.FLOAT64).toDoubleArray(), 0, what);
            }
        }
    }

    /** index_put_ without an index tensor writes (or adds) everywhere, through the op, and differentiates as PyTorch's. */
    @Test
    void anIndexOfFullSlicesOnlyWritesEveryElement() {
        Tensor x = Torch.tensor(new double[] {1, 2, 3, 4}).reshape(2, 2).to(DEVICE);
        Tensor v = Torch.tensor(new double[] {10, 20}).to(DEVICE).requiresGrad_(true);
        assertArrayEquals(new double[] {10, 20, 10, 20}, x.indexPut(new Tensor[] {null}, v, false).toDoubleArray(), 0);
        Tensor p = x.indexPut(new Tensor[] {null, null}, v, true);
        assertArrayEquals(new double[] {11, 22, 13, 24}, p.toDoubleArray(), 0);
        assertArrayEquals(new double[] {2, 2}, Autograd.grad(p.sum(), v).toDoubleArray(), 0);
        assertArrayEquals(new double[] {1, 2, 3, 4}, x.index(null, null).toDoubleArray(), 0);
    }

    @Test
    void badIndicesAreErrorsNamingTheOp() {
        Tensor x = Torch.randn(3, 4).to(DEVICE);
        IndexOutOfBoundsException range = assertThrows(IndexOutOfBoundsException.class, () -> readBack(x.index(longs(1, 3))));
        // (on CUDA found by the deferred check, which says so after the message)
        assertTrue(range.getMessage().startsWith("index: index 3 is out of bounds for dimension with size 3"), range.getMessage());
        // an empty result visits no index: the range is checked on the host first, as PyTorch's
        Tensor empty = Torch.randn(3, 0).to(DEVICE);
        assertEquals("index: index -4 is out of bounds for dimension with size 3",
                assertThrows(IndexOutOfBoundsException.class, () -> empty.index(longs(-4))).getMessage());
        IllegalArgumentException dtype = assertThrows(IllegalArgumentException.class,
                () -> x.indexPut_(new Tensor[] {longs(0)}, Torch.randn(4).to(DType.FLOAT64).to(DEVICE), false));
        assertEquals("index_put: index put requires the source and destination dtypes match, got torch.float32 for the destination and "
                + "torch.float64 for the source", dtype.getMessage());
        IllegalArgumentException shape = assertThrows(IllegalArgumentException.class,
                () -> x.indexPut(new Tensor[] {longs(0, 2)}, Torch.randn(3).to(DEVICE), true));
        assertTrue(shape.getMessage().startsWith("index_put: shapes [2, 4] and [3] cannot be broadcast"), shape.getMessage());
        IllegalArgumentException floats = assertThrows(IllegalArgumentException.class, () -> x.index(Torch.tensor(1.0f).to(DEVICE)));
        assertEquals("index: tensors used as indices must be long, byte or bool tensors, got torch.float32", floats.getMessage());
        assertEquals("index: too many indices for tensor of dimension 2 (got 3 index entries)",
                assertThrows(IndexOutOfBoundsException.class, () -> x.index(null, null, longs(0))).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> x.index(longs(0, 1), longs(0, 1, 2))).getMessage()
                .startsWith("index: shapes [2] and [3] cannot be broadcast"));
        // calling the op directly with a mask: the front end expands masks
        IllegalArgumentException mask = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(IndexingOps.INDEX_TENSOR, new Tensor[] {x, Torch.tensor(true, false, true).to(DEVICE)}));
        assertTrue(mask.getMessage().startsWith("index: tensors used as indices must be long tensors here"), mask.getMessage());
        Tensor leaf = Torch.randn(3, 4).to(DEVICE).requiresGrad_(true);
        assertTrue(assertThrows(RuntimeException.class, () -> leaf.indexPut_(new Tensor[] {longs(0)}, Torch.randn(4).to(DEVICE), false))
                .getMessage().startsWith("index_put_: "));
    }

    /** Reads a result back, where an accelerator reports a bad index (CUDA's deferred checks). */
    private static void readBack(Tensor t) {
        t.toFloatArray();
    }
}
