package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.autograd.Grad;
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
 * {@code masked_fill}, {@code where}, {@code embedding} and its backward ops as declared structured ops
 * ({@link IndexingOps}): kernels per device, the trace, node names, errors, the fused embedding backward against the
 * composition it replaced, second gradients against PyTorch 1.13, and gradients of both orders against finite differences
 * in float64. Forward values against PyTorch 1.13 are in {@link IndexingConformanceTest} and the nn conformance tests.
 */
@ExtendWith(ScopePerTest.class)
class MaskAndEmbeddingOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(31);
    private static final java.util.Random SIZES = new java.util.Random(31);

    private static Tensor longs(long[] shape, long... values) {
        return Torch.tensor(values).reshape(shape).to(DEVICE);
    }

    private static Tensor cpu64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theOpsAreStructuredWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {IndexingOps.MASKED_FILL, IndexingOps.WHERE, IndexingOps.EMBEDDING,
                IndexingOps.EMBEDDING_DENSE_BACKWARD, IndexingOps.EMBEDDING_DENSE_DOUBLE_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
        }
    }

    @Test
    void theTraceAndTheGraphNameEachOpAsPyTorch() {
        Tensor x = Torch.randn(3, 4).to(DEVICE).requiresGrad_(true);
        Tensor mask = Torch.randn(3, 1).gt(0).to(DEVICE);
        Tensor i = longs(new long[] {2}, 2, 0);
        assertEquals(List.of("masked_fill"), traced(() -> x.maskedFill(mask, 1.5)));
        Tensor y = x.neg();
        assertEquals(List.of("where"), traced(() -> Torch.where(mask, x, y)));
        assertEquals(List.of("embedding"), traced(() -> F.embedding(i, x)));
        assertEquals("MaskedFillBackward0", x.maskedFill(mask, 1.5).gradFn().name());
        assertEquals("WhereBackward0", Torch.where(mask, x, Torch.zerosLike(x)).gradFn().name());
        Tensor e = F.embedding(i, x);
        assertEquals("EmbeddingBackward0", e.gradFn().name());
        // the first gradient is a function of grad_output: its node is the backward's
        Tensor[] g = Autograd.grad(new Tensor[] {e}, new Tensor[] {x}, new Tensor[] {Torch.onesLike(e).requiresGrad_(true)}, true, true,
                false);
        assertEquals("EmbeddingDenseBackwardBackward0", g[0].gradFn().name());
    }

    @Test
    void valuesBroadcastAndPromoteAsPyTorch() {
        Tensor x = Torch.arange(6).reshape(2, 3).to(DType.FLOAT32).to(DEVICE);
        Tensor mask = Torch.tensor(new boolean[] {true, false, true}).to(DEVICE);
        assertArrayEquals(new float[] {-1, 1, -1, -1, 4, -1}, x.maskedFill(mask, -1).toFloatArray());
        // the mask broadcasts self: the result has the broadcast shape
        Tensor row = Torch.tensor(new float[] {7, 8, 9}).to(DEVICE);
        Tensor m2 = Torch.tensor(new boolean[] {true, false, false, false, false, true}).reshape(2, 3).to(DEVICE);
        assertArrayEquals(new float[] {0, 8, 9, 7, 8, 0}, row.maskedFill(m2, 0).toFloatArray());
        // int64 and float32 promote to float32; a CPU zero-dim operand joins tensors on any device
        Tensor ints = longs(new long[] {3}, 10, 20, 30);
        Tensor w = Torch.where(mask, ints, Torch.tensor(0.5f).reshape());
        assertEquals(DType.FLOAT32, w.dtype());
        assertEquals(DEVICE, w.device());
        assertArrayEquals(new float[] {10, 0.5f, 30}, w.toFloatArray());
        // embedding: rows of the weight, of shape indices.shape + [embedding_dim], from int32 indices too
        Tensor weight = Torch.arange(8).reshape(4, 2).to(DType.FLOAT32).to(DEVICE);
        Tensor e = F.embedding(longs(new long[] {2, 1}, 3, 1).to(DType.INT32), weight);
        assertArrayEquals(new long[] {2, 1, 2}, e.shape());
        assertArrayEquals(new float[] {6, 7, 2, 3}, e.toFloatArray());
    }

    /**
     * PyTorch 1.13: weight 4x2 of float64, indices [[1, 3], [1, 0]], grad_output g, the gradients of {@code e * e}. With
     * {@code scale_grad_by_freq} the second gradient is jtorch's, which divides by the frequency in the double backward as in
     * the backward (row 1, twice looked up: 32); PyTorch 1.13's double backward does not divide (64).
     */
    @Test
    void embeddingGradientsOfBothOrdersMatchPyTorch() {
        double[][] expected = {
                {0.25, -8.0, 16.0, 0.0, 0.0, 0.0, 1.0, -6.0}, {0.25, -128.0, 256.0, 0.0, 0.0, 0.0, 2.0, 24.0},
                {0.25, -8.0, 8.0, 0.0, 0.0, 0.0, 1.0, -6.0}, {0.25, -128.0, 32.0, 0.0, 0.0, 0.0, 2.0, 24.0},
                {0.25, -8.0, 16.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.25, -128.0, 256.0, 0.0, 0.0, 0.0, 0.0, 0.0},
                {0.25, -8.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.25, -128.0, 32.0, 0.0, 0.0, 0.0, 0.0, 0.0}};
        int k = 0;
        for (Long pad : new Long[] {null, 3L}) {
            for (boolean scale : new boolean[] {false, true}) {
                Tensor w = Torch.tensor(new double[] {0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.0, 3.0}).reshape(4, 2).to(DEVICE)
                        .requiresGrad_(true);
                Tensor idx = longs(new long[] {2, 2}, 1, 3, 1, 0);
                Tensor g = Torch.tensor(new double[] {1, 2, 0.5, -1, 3, -2, 0.25, 4}).reshape(2, 2, 2).to(DEVICE);
                Tensor e = F.embedding(idx, w, F.Embedding.options().paddingIdx(pad).scaleGradByFreq(scale));
                Tensor dw = Autograd.grad(new Tensor[] {e.mul(e)}, new Tensor[] {w}, new Tensor[] {g}, true, true, false)[0];
                assertArrayEquals(expected[k++], dw.toDoubleArray(), 0, "first, padding_idx " + pad + ", scale " + scale);
                Tensor ddw = Autograd.grad(dw.mul(dw).sum(), w);
                assertArrayEquals(expected[k++], ddw.toDoubleArray(), 0, "second, padding_idx " + pad + ", scale " + scale);
            }
        }
    }

    /** The fused backward against the ops it replaced: zeros.index_add_ of the masked (and scaled) rows, bit for bit. */
    @Test
    void theFusedEmbeddingBackwardIsTheCompositionBitForBit() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT64}) {
            for (int trial = 0; trial < 6; trial++) {
                long num = 1 + SIZES.nextLong(40), dim = 1 + SIZES.nextLong(20);
                long pad = trial % 3 == 0 ? -1 : SIZES.nextLong(num);
                boolean scale = trial % 2 == 1;
                Tensor idx = Torch.randint(0, num, new long[] {3, 1 + SIZES.nextLong(30)}, DType.INT64, Device.cpu(), GEN).to(DEVICE);
                // non-contiguous indices and gradient
                Tensor idxT = idx.t();
                Tensor grad = Torch.randn(new long[] {idx.size(1), 3, dim}, DType.FLOAT32, Device.cpu(), GEN).to(dtype).to(DEVICE)
                        .transpose(0, 1).transpose(0, 1);
                Tensor fused = Dispatcher.call(IndexingOps.EMBEDDING_DENSE_BACKWARD, new Tensor[] {grad, idxT}, num,
                        pad < 0 ? Double.NaN : pad, scale ? 1 : 0);
                Tensor expected;
                try (Grad.Mode m = Grad.noGrad()) {
                    Tensor flat = idxT.reshape(-1);
                    Tensor rows = grad.reshape(flat.numel(), dim);
                    if (pad >= 0) rows = rows.maskedFill(flat.eq((double) pad).unsqueeze(1), 0);
                    if (scale) {
                        Tensor counts = Torch.zeros(new long[] {num}, dtype, DEVICE).indexAdd_(0, flat, Torch.onesLike(flat).to(dtype));
                        rows = rows.div(counts.indexSelect(0, flat).unsqueeze(1));
                    }
                    expected = Torch.zeros(new long[] {num, dim}, dtype, DEVICE).indexAdd_(0, flat, rows);
                }
                String what = dtype + " trial " + trial + " pad " + pad + " scale " + scale;
                assertArrayEquals(expected.shape(), fused.shape(), what);
                assertArrayEquals(expected.to(DType.FLOAT64).toDoubleArray(), fused.to(DType.FLOAT64).toDoubleArray(), 0, what);
            }
        }
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferences() {
        Tensor mask = Torch.tensor(new boolean[] {true, false, false, true}).reshape(4, 1);
        Function<Tensor[], Tensor> maskedFill = a -> a[0].mul(a[0]).maskedFill(mask, 2.0);
        assertTrue(Gradcheck.check(maskedFill, cpu64(1, 3)));
        assertTrue(Gradcheck.check(firstGradient(maskedFill), cpu64(1, 3)));
        Tensor cond = Torch.tensor(new boolean[] {true, false, true, true, false, false}).reshape(2, 3);
        Function<Tensor[], Tensor> where = a -> Torch.where(cond, a[0].mul(a[0]), a[1].mul(a[1]));
        assertTrue(Gradcheck.check(where, cpu64(2, 3), cpu64(3)));
        assertTrue(Gradcheck.check(firstGradient(where), cpu64(2, 3), cpu64(3)));
        Tensor idx = Torch.tensor(new long[] {4, 0, 4, 2, 1, 4}).reshape(3, 2);
        // padding_idx and scale_grad_by_freq change the gradient by design (finite differences would not agree): a
        // padding_idx that is not looked up (3) runs the padding path and leaves the derivative as it is
        for (Long pad : new Long[] {null, 3L}) {
            F.Embedding options = F.Embedding.options().paddingIdx(pad);
            Function<Tensor[], Tensor> embedding = a -> F.embedding(idx, a[0], options).pow(2.0);
            assertTrue(Gradcheck.check(embedding, cpu64(5, 3)), "padding_idx " + pad);
            assertTrue(Gradcheck.check(firstGradient(embedding), cpu64(5, 3)), "padding_idx " + pad);
        }
    }

    @Test
    void errorsNameTheOpTheShapesAndDtypes() {
        Tensor x = Torch.randn(3, 4).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> x.maskedFill(Torch.zeros(new long[] {3, 4}, DType.FLOAT32, DEVICE), 1));
        assertEquals("masked_fill: expected a bool mask, got torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> x.maskedFill(Torch.zeros(new long[] {2, 4}, DType.BOOL, DEVICE), 1));
        assertTrue(e.getMessage().startsWith("masked_fill") && e.getMessage().contains("[3, 4]") && e.getMessage().contains("[2, 4]"),
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Torch.where(x, x, x));
        assertEquals("where: expected a bool condition, got torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> F.embedding(longs(new long[] {2}, 0, 1), Torch.randn(4).to(DEVICE)));
        assertTrue(e.getMessage().startsWith("embedding: expected a 2-D weight") && e.getMessage().contains("[4]"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> F.embedding(x, x));
        assertEquals("embedding: expected indices of dtype int64 or int32, got torch.float32", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(IndexingOps.EMBEDDING_DENSE_BACKWARD,
                new Tensor[] {x, longs(new long[] {2}, 0, 1)}, 5, Double.NaN, 0));
        assertTrue(e.getMessage().startsWith("embedding_dense_backward: expected grad_output of shape indices.shape + [embedding_dim]"),
                e.getMessage());
        IndexOutOfBoundsException o = assertThrows(IndexOutOfBoundsException.class,
                () -> F.embedding(longs(new long[] {1}, 3), x).toFloatArray());
        assertTrue(o.getMessage().contains("3"), o.getMessage());
    }
}
