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
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.nn.F;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code index_copy}/{@code index_copy_}, {@code masked_select} with its backward, and {@code one_hot} as declared structured
 * ops ({@link IndexingOps}): kernels per device, the trace, node names, gradients of both orders against PyTorch 1.13 and
 * against finite differences in float64, the backward against the masked scatter it replaced, and errors. Forward values
 * against PyTorch 1.13 are in {@link IndexingConformanceTest} and {@link RearrangingConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class CopySelectOneHotOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(37);
    private static final java.util.Random SIZES = new java.util.Random(37);

    private static Tensor longs(long[] shape, long... values) {
        return Torch.tensor(values).reshape(shape).to(DEVICE);
    }

    private static Tensor doubles(long[] shape, double... values) {
        return Torch.tensor(values).reshape(shape).to(DEVICE).requiresGrad_(true);
    }

    private static Tensor cpu64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theOpsAreStructuredWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {IndexingOps.INDEX_COPY, IndexingOps.MASKED_SELECT, IndexingOps.MASKED_SELECT_BACKWARD,
                IndexingOps.ONE_HOT}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
        assertTrue(!IndexingOps.ONE_HOT.isDifferentiable());
    }

    @Test
    void theTraceAndTheGraphNameEachOpAsPyTorch() {
        Tensor x = Torch.randn(3, 4).to(DEVICE).requiresGrad_(true);
        Tensor s = Torch.randn(3, 2).to(DEVICE).requiresGrad_(true);
        Tensor i = longs(new long[] {2}, 3, 0);
        Tensor mask = Torch.randn(3, 1).gt(0).to(DEVICE);
        assertEquals(List.of("index_copy"), traced(() -> x.indexCopy(1, i, s)));
        assertEquals(List.of("masked_select"), traced(() -> x.maskedSelect(mask)));
        // the CPU checks the class values on the host first (amin, amax), as PyTorch's one_hot
        List<String> oneHot = traced(() -> F.oneHot(i, 5));
        assertEquals("one_hot", oneHot.get(oneHot.size() - 1), oneHot.toString());
        assertEquals("IndexCopyBackward0", x.indexCopy(1, i, s).gradFn().name());
        Tensor y = x.mul(1.0);
        Tensor r = y.indexCopy_(1, i, s);
        assertEquals("IndexCopyBackward0", r.gradFn().name());
        Tensor m = x.maskedSelect(mask);
        assertEquals("MaskedSelectBackward0", m.gradFn().name());
        // the first gradient is a function of grad: its node is the backward's
        Tensor[] g = Autograd.grad(new Tensor[] {m}, new Tensor[] {x}, new Tensor[] {Torch.onesLike(m).requiresGrad_(true)}, true, true,
                false);
        assertEquals("MaskedSelectBackwardBackward0", g[0].gradFn().name());
        assertNull(F.oneHot(i, 5).gradFn());
    }

    /** masked_select's count is read on the host: a traced function runs it eagerly, never with the trace's count. */
    @Test
    void aTracedMaskedSelectCountsEachCallsMask() {
        org.jtorch.jit.TensorFunction f = org.jtorch.jit.Jit.trace(a -> a[0].maskedSelect(a[0].gt(0)).mul(2.0),
                Torch.tensor(new float[] {1, -1, 2, -2}).to(DEVICE));
        Tensor other = Torch.tensor(new float[] {3, 4, -5, 6}).to(DEVICE);
        assertArrayEquals(new float[] {6, 8, 12}, f.apply(other).toFloatArray());
    }

    /** PyTorch 1.13: x 2x4 float64, source 2x2, index [3, 0] along dim 1; the gradients of {@code sum(y^3)} and of their squares' sum. */
    @Test
    void indexCopyGradientsOfBothOrdersMatchPyTorch() {
        Tensor x = doubles(new long[] {2, 4}, 0.5, -1.0, 2.0, 3.0, 0.25, -0.75, 1.5, -2.0);
        Tensor s = doubles(new long[] {2, 2}, 1.0, -2.0, 0.5, 4.0);
        Tensor y = x.indexCopy(1, longs(new long[] {2}, 3, 0), s);
        assertArrayEquals(new double[] {-2.0, -1.0, 2.0, 1.0, 4.0, -0.75, 1.5, 0.5}, y.toDoubleArray(), 0);
        Tensor[] d = Autograd.grad(new Tensor[] {y.mul(y).mul(y).sum()}, new Tensor[] {x, s}, null, true, true, false);
        assertArrayEquals(new double[] {0.0, 3.0, 12.0, 0.0, 0.0, 1.6875, 6.75, 0.0}, d[0].toDoubleArray(), 0);
        assertArrayEquals(new double[] {3.0, 12.0, 0.75, 48.0}, d[1].toDoubleArray(), 0);
        Tensor[] dd = Autograd.grad(new Tensor[] {d[0].mul(d[0]).sum().add(d[1].mul(d[1]).sum())}, new Tensor[] {x, s}, null, false,
                false, false);
        assertArrayEquals(new double[] {0.0, -36.0, 288.0, 0.0, 0.0, -15.1875, 121.5, 0.0}, dd[0].toDoubleArray(), 0);
        assertArrayEquals(new double[] {36.0, -288.0, 4.5, 2304.0}, dd[1].toDoubleArray(), 0);
    }

    /** PyTorch 1.13: masked_select of a 2x3 float64 by a row mask, and of a row by a 2x3 mask (self broadcast). */
    @Test
    void maskedSelectGradientsOfBothOrdersMatchPyTorch() {
        Tensor x = doubles(new long[] {2, 3}, 0.5, -1.0, 2.0, 0.25, -0.75, 1.5);
        Tensor y = x.maskedSelect(Torch.tensor(new boolean[] {true, false, true}).to(DEVICE));
        assertArrayEquals(new double[] {0.5, 2.0, 0.25, 1.5}, y.toDoubleArray(), 0);
        Tensor g = Torch.tensor(new double[] {1, 2, 0.5, -1}).to(DEVICE);
        Tensor dx = Autograd.grad(new Tensor[] {y.mul(y)}, new Tensor[] {x}, new Tensor[] {g}, true, true, false)[0];
        assertArrayEquals(new double[] {1.0, 0.0, 8.0, 0.25, 0.0, -3.0}, dx.toDoubleArray(), 0);
        assertArrayEquals(new double[] {4.0, 0.0, 64.0, 0.5, 0.0, 12.0}, Autograd.grad(dx.mul(dx).sum(), x).toDoubleArray(), 0);
        Tensor row = doubles(new long[] {3}, 0.5, -1.0, 2.0);
        Tensor mask = Torch.tensor(new boolean[] {true, false, true, false, true, true}).reshape(2, 3).to(DEVICE);
        Tensor z = row.maskedSelect(mask);
        assertArrayEquals(new double[] {0.5, 2.0, -1.0, 2.0}, z.toDoubleArray(), 0);
        Tensor dr = Autograd.grad(new Tensor[] {z.mul(z).mul(z).sum()}, new Tensor[] {row}, null, true, true, false)[0];
        assertArrayEquals(new double[] {0.75, 3.0, 24.0}, dr.toDoubleArray(), 0);
        assertArrayEquals(new double[] {4.5, -36.0, 1152.0}, Autograd.grad(dr.mul(dr).sum(), row).toDoubleArray(), 0);
    }

    /** The backward kernel (nonzero coordinates, then an indexed write) against the index_put_ with the mask it replaced. */
    @Test
    void theMaskedSelectBackwardIsTheMaskedScatterBitForBit() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT64}) {
            for (int trial = 0; trial < 6; trial++) {
                long rows = 1 + SIZES.nextLong(9), cols = 1 + SIZES.nextLong(9);
                Tensor self = trial % 2 == 0 ? Torch.zeros(rows, cols) : Torch.zeros(cols);
                Tensor mask = Torch.rand(new long[] {rows, cols}, DType.FLOAT32, Device.cpu(), GEN).gt(0.5).to(DEVICE);
                if (trial % 3 == 2) mask = mask.t().contiguous().t(); // a strided mask
                long n = mask.sum().itemLong();
                Tensor grad = Torch.randn(new long[] {2 * n}, DType.FLOAT32, Device.cpu(), GEN).to(dtype).to(DEVICE).narrow(0, 0, n);
                Tensor fused = Dispatcher.call(IndexingOps.MASKED_SELECT_BACKWARD, new Tensor[] {grad, self.to(dtype).to(DEVICE), mask});
                Tensor expected = Torch.zeros(new long[] {rows, cols}, dtype, DEVICE).indexPut_(new Tensor[] {mask}, grad, false);
                String what = dtype + " trial " + trial;
                assertArrayEquals(expected.shape(), fused.shape(), what);
                assertArrayEquals(expected.to(DType.FLOAT64).toDoubleArray(), fused.to(DType.FLOAT64).toDoubleArray(), 0, what);
            }
        }
    }

    /** The CPU's row copies (contiguous self and source along dim 0) against the element loop (a strided source), duplicates included. */
    @Test
    void indexCopyOfContiguousRowsEqualsTheStridedPath() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT64, DType.INT64, DType.BOOL}) {
            for (int trial = 0; trial < 5; trial++) {
                long rows = 1 + SIZES.nextLong(12), cols = 1 + SIZES.nextLong(300), n = 1 + SIZES.nextLong(2 * rows);
                Tensor self = Torch.randn(new long[] {rows, cols}, DType.FLOAT32, Device.cpu(), GEN).mul(10).to(dtype).to(DEVICE);
                Tensor source = Torch.randn(new long[] {n, cols}, DType.FLOAT32, Device.cpu(), GEN).mul(10).to(dtype).to(DEVICE);
                Tensor index = Torch.randint(0, rows, new long[] {n}, DType.INT64, Device.cpu(), GEN).to(DEVICE);
                Tensor strided = source.t().contiguous().t();
                String what = dtype + " " + rows + "x" + cols + " n " + n;
                assertTrue(!strided.isContiguous() || n == 1 || cols == 1, what);
                assertArrayEquals(self.indexCopy(0, index, strided).to(DType.FLOAT64).toDoubleArray(),
                        self.indexCopy(0, index, source).to(DType.FLOAT64).toDoubleArray(), 0, what);
            }
        }
    }

    /** masked_select and nonzero on random shapes, masks of both dtypes, strided and broadcast, against the definition on the host. */
    @Test
    void maskedSelectAndNonzeroMatchTheDefinitionOnRandomMasks() {
        for (int trial = 0; trial < 12; trial++) {
            long rows = 1 + SIZES.nextLong(20), cols = 1 + SIZES.nextLong(70);
            double p = SIZES.nextDouble();
            Tensor x = Torch.randn(new long[] {rows, cols}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
            Tensor mask = Torch.rand(new long[] {cols, rows}, DType.FLOAT32, Device.cpu(), GEN).lt(p).t(); // strided
            if (trial % 3 == 1) mask = mask.to(DType.UINT8).mul(3L); // nonzero bytes above 1 select too
            if (trial % 3 == 2) mask = mask.narrow(0, 0, 1); // broadcast over the rows
            mask = mask.to(DEVICE);
            float[] xs = x.toFloatArray();
            long[] ms = mask.expand(rows, cols).contiguous().to(DType.INT64).toLongArray();
            int count = 0;
            for (long m : ms) if (m != 0) count++;
            float[] expected = new float[count];
            long[] coordinates = new long[2 * count];
            for (int e = 0, k = 0; e < ms.length; e++) {
                if (ms[e] == 0) continue;
                coordinates[2 * k] = e / cols;
                coordinates[2 * k + 1] = e % cols;
                expected[k++] = xs[e];
            }
            String what = "trial " + trial + ", " + rows + "x" + cols + ", p " + p;
            assertArrayEquals(expected, x.maskedSelect(mask).toFloatArray(), what);
            assertArrayEquals(coordinates, mask.expand(rows, cols).nonzero().toLongArray(), what);
        }
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferences() {
        Tensor i = Torch.tensor(new long[] {2, 0});
        Function<Tensor[], Tensor> indexCopy = a -> a[0].mul(a[0]).indexCopy(1, i, a[1].pow(3.0));
        assertTrue(Gradcheck.check(indexCopy, cpu64(3, 4), cpu64(3, 2)));
        assertTrue(Gradcheck.check(firstGradient(indexCopy), cpu64(3, 4), cpu64(3, 2)));
        Function<Tensor[], Tensor> indexCopyInPlace = a -> a[0].mul(a[0]).indexCopy_(0, i, a[1].pow(3.0));
        assertTrue(Gradcheck.check(indexCopyInPlace, cpu64(4, 3), cpu64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(indexCopyInPlace), cpu64(4, 3), cpu64(2, 3)));
        // 0-d source into a vector
        Function<Tensor[], Tensor> scalar = a -> a[0].mul(a[0]).indexCopy(0, Torch.tensor(1L), a[1].pow(3.0));
        assertTrue(Gradcheck.check(scalar, cpu64(3), cpu64()));
        Tensor mask = Torch.tensor(new boolean[] {true, false, true, true, false, true}).reshape(2, 3);
        Function<Tensor[], Tensor> maskedSelect = a -> a[0].pow(3.0).maskedSelect(mask);
        assertTrue(Gradcheck.check(maskedSelect, cpu64(2, 3)));
        assertTrue(Gradcheck.check(firstGradient(maskedSelect), cpu64(2, 3)));
        assertTrue(Gradcheck.check(maskedSelect, cpu64(3)), "self broadcast against the mask");
        assertTrue(Gradcheck.check(firstGradient(maskedSelect), cpu64(3)), "self broadcast against the mask");
    }

    @Test
    void oneHotOfEveryShape() {
        assertArrayEquals(new long[] {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}, F.oneHot(longs(new long[] {2, 2}, 2, 0, 1, 2)).toLongArray(),
                "PyTorch 1.13");
        Tensor scalar = F.oneHot(longs(new long[0], 3), 5);
        assertArrayEquals(new long[] {5}, scalar.shape());
        assertArrayEquals(new long[] {0, 0, 0, 1, 0}, scalar.toLongArray());
        Tensor empty = F.oneHot(Torch.zeros(new long[] {0, 3}, DType.INT64, DEVICE), 4);
        assertArrayEquals(new long[] {0, 3, 4}, empty.shape());
    }

    @Test
    void errorsNameTheOpTheShapesAndDtypes() {
        Tensor x = Torch.zeros(3, 4).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> x.indexCopy(1, longs(new long[] {2}, 0, 1).to(DType.INT32), Torch.zeros(3, 2).to(DEVICE)));
        assertEquals("index_copy: expected int64 for index, got torch.int32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> x.indexCopy_(1, longs(new long[] {2}, 0, 1), Torch.zeros(3, 3).to(DEVICE)));
        assertEquals("index_copy: number of indices (2) should be equal to source.size(1) (3)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> x.indexCopy_(1, longs(new long[] {2}, 0, 1), Torch.zeros(new long[] {3, 2}, DType.FLOAT64, DEVICE)));
        assertEquals("index_copy: self (torch.float32) and source (torch.float64) must have the same dtype", e.getMessage());
        IndexOutOfBoundsException o = assertThrows(IndexOutOfBoundsException.class,
                () -> x.indexCopy(1, longs(new long[] {2}, 0, 4), Torch.zeros(3, 2).to(DEVICE)).toFloatArray());
        assertTrue(o.getMessage().contains("4"), o.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> x.maskedSelect(Torch.zeros(3, 4).to(DEVICE)));
        assertEquals("masked_select: expected a bool mask, got torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> x.maskedSelect(Torch.zeros(new long[] {2, 4}, DType.BOOL, DEVICE)));
        assertTrue(e.getMessage().startsWith("masked_select") && e.getMessage().contains("[3, 4]") && e.getMessage().contains("[2, 4]"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> F.oneHot(x));
        assertEquals("one_hot: one_hot is only applicable to index tensor (int64), got torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> F.oneHot(Torch.zeros(new long[] {0}, DType.INT64, DEVICE)));
        assertEquals("one_hot: can not infer total number of classes from empty tensor", e.getMessage());
    }
}
