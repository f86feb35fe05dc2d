package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The fused float32 attention ({@link org.jtorch.op.AttentionOps#FLASH_ATTENTION}) against the composition of ops, which float64 calls still run:
 * the same inputs in float64, forward and all three gradients, over shapes that span several query and key blocks with
 * ragged last blocks, head sizes that are not whole vectors, and every kind of mask.
 */
@ExtendWith(ScopePerTest.class)
class FusedAttentionTest {
    private static final String FUSED = "ScaledDotProductFlashAttentionForCpuBackward0";
    private final Generator gen = new Generator(11);

    private enum MaskKind { NONE, CAUSAL, FLOAT_2D, BOOL_BROADCAST, FLOAT_FULL }

    private Tensor randn(long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen);
    }

    /** An attention mask for {@code [b, h, l, s]} scores (null for none or causal); bool masks keep key 0 of every row. */
    private Tensor mask(MaskKind kind, long b, long h, long l, long s) {
        return switch (kind) {
            case NONE, CAUSAL -> null;
            case FLOAT_2D -> randn(l, s);
            case FLOAT_FULL -> randn(b, h, l, s).mul(3);
            case BOOL_BROADCAST -> {
                Tensor keep = Torch.rand(new long[] {b, 1, l, s}, DType.FLOAT32, Device.cpu(), gen).gt(0.4);
                Tensor first = Torch.arange(0, s, 1, DType.INT64, Device.cpu()).eq(0.0);
                yield keep.logicalOr(first);
            }
        };
    }

    /** Forward and gradients of the float32 call (which must take the fused path) against the float64 composition. */
    private void compare(long b, long h, long l, long s, long e, long ev, MaskKind kind, boolean transposedHeads) {
        String what = "b=" + b + " h=" + h + " l=" + l + " s=" + s + " e=" + e + " ev=" + ev + " " + kind
                + (transposedHeads ? " transposed heads" : "");
        Tensor q, k, v;
        if (transposedHeads) {
            // As a model's heads: [b, l, h, e] projections seen as [b, h, l, e] (no unit stride along l).
            q = randn(b, l, h, e).transpose(1, 2);
            k = randn(b, s, h, e).transpose(1, 2);
            v = randn(b, s, h, ev).transpose(1, 2);
        } else {
            q = randn(b, h, l, e);
            k = randn(b, h, s, e);
            v = randn(b, h, s, ev);
        }
        Tensor m = mask(kind, b, h, l, s);
        boolean causal = kind == MaskKind.CAUSAL;
        Tensor gradOut = randn(b, h, l, ev);
        Tensor[] x32 = {q.detach().requiresGrad_(true), k.detach().requiresGrad_(true), v.detach().requiresGrad_(true)};
        Tensor[] x64 = new Tensor[3];
        Tensor[] src = {q, k, v};
        for (int i = 0; i < 3; i++) x64[i] = src[i].to(DType.FLOAT64).requiresGrad_(true);
        Tensor m64 = m == null || m.dtype() == DType.BOOL ? m : m.to(DType.FLOAT64);
        Tensor out32 = F.scaledDotProductAttention(x32[0], x32[1], x32[2], m, 0, causal);
        Tensor out64 = F.scaledDotProductAttention(x64[0], x64[1], x64[2], m64, 0, causal);
        assertEquals(FUSED, out32.gradFn().name(), what);
        assertNotEquals(FUSED, out64.gradFn().name(), what);
        assertClose(out64, out32, what + ": output");
        Tensor[] g32 = Autograd.grad(new Tensor[] {out32}, x32, new Tensor[] {gradOut}, false, false, false);
        Tensor[] g64 = Autograd.grad(new Tensor[] {out64}, x64, new Tensor[] {gradOut.to(DType.FLOAT64)}, false, false, false);
        String[] names = {"query gradient", "key gradient", "value gradient"};
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(x32[i].shape(), g32[i].shape(), what + ": " + names[i]);
            assertClose(g64[i], g32[i], what + ": " + names[i]);
        }
    }

    /** float32 sums of up to a few hundred products against float64: 2e-5 of the values' scale. */
    private static void assertClose(Tensor expected, Tensor actual, String what) {
        double scale;
        try (Tensor a = expected.abs(); Tensor mx = a.max()) {
            scale = Math.max(1, mx.item());
        }
        Fixtures.assertClose(expected, actual.to(DType.FLOAT64), 0, 2e-5 * scale, what);
    }

    @Test
    void everyMaskKindMatchesTheComposition() {
        for (MaskKind kind : MaskKind.values()) {
            compare(2, 3, 9, 9, 8, 8, kind, false);
            compare(1, 2, 70, 130, 16, 16, kind, false);
            compare(2, 1, 130, 70, 5, 7, kind, false);
        }
    }

    @Test
    void blockEdgesAndHeadSizes() {
        compare(1, 1, 1, 1, 1, 1, MaskKind.NONE, false);
        compare(1, 1, 64, 64, 32, 32, MaskKind.CAUSAL, false);
        compare(1, 1, 65, 65, 33, 17, MaskKind.CAUSAL, false);
        compare(1, 1, 128, 128, 80, 48, MaskKind.FLOAT_2D, false);
        compare(1, 2, 3, 200, 100, 3, MaskKind.NONE, false);
    }

    /**
     * The char GPT's layout: heads split from one projection, so rows are strided and the heads interleaved. The output
     * and the gradients come in the same order of dimensions, so that merging the heads back is a view.
     */
    @Test
    void transposedHeadsNeedNoCopy() {
        compare(2, 4, 64, 64, 32, 32, MaskKind.CAUSAL, true);
        compare(3, 2, 19, 19, 6, 6, MaskKind.FLOAT_2D, true);
        Tensor q = randn(2, 5, 3, 4).transpose(1, 2).requiresGrad_(true), k = randn(2, 5, 3, 4).transpose(1, 2);
        Tensor v = randn(2, 5, 3, 4).transpose(1, 2);
        Tensor out = F.scaledDotProductAttention(q, k, v, null, 0, true);
        assertTrue(out.transpose(1, 2).isContiguous(), "output in [b, l, h, e] order");
        Tensor gq = Autograd.grad(new Tensor[] {out.sum()}, new Tensor[] {q})[0];
        assertTrue(gq.transpose(1, 2).isContiguous(), "query gradient in [b, l, h, e] order");
        assertTrue(F.scaledDotProductAttention(q.contiguous(), k, v, null, 0, true).isContiguous(), "contiguous heads, contiguous output");
    }

    @Test
    void batchesOfOtherRanks() {
        Tensor q = randn(5, 7, 4).requiresGrad_(true), k = randn(5, 9, 4), v = randn(5, 9, 3);
        Tensor out = F.scaledDotProductAttention(q, k, v, null, 0, false);
        assertEquals(FUSED, out.gradFn().name());
        Tensor ref = F.scaledDotProductAttention(q.to(DType.FLOAT64), k.to(DType.FLOAT64), v.to(DType.FLOAT64), null, 0, false);
        assertClose(ref, out, "3-D");
        Tensor q2 = randn(7, 4), k2 = randn(9, 4), v2 = randn(9, 3);
        Tensor out2 = F.scaledDotProductAttention(q2, k2, v2, null, 0, true);
        Tensor ref2 = F.scaledDotProductAttention(q2.to(DType.FLOAT64), k2.to(DType.FLOAT64), v2.to(DType.FLOAT64), null, 0, true);
        assertClose(ref2, out2, "2-D causal");
    }

    /**
     * The backward under createGraph runs as ops, so a second derivative is that of the composition: float64 without
     * dropout, and with dropout the float32 composition drawing the same mask.
     */
    @Test
    void doubleBackwardMatchesTheComposition() {
        Tensor q = randn(2, 2, 6, 4), k = randn(2, 2, 5, 4), v = randn(2, 2, 5, 3), w = randn(2, 2, 6, 4);
        Tensor m = randn(6, 5);
        for (double p : new double[] {0, 0.4}) {
            double[][] secondOrder = new double[2][];
            for (int r = 0; r < 2; r++) {
                DType t = r == 1 && p == 0 ? DType.FLOAT64 : DType.FLOAT32;
                Tensor qq = q.to(t).requiresGrad_(true), kk = k.to(t).requiresGrad_(true), vv = v.to(t).requiresGrad_(true);
                Tensor out = F.attention(qq, kk, vv, m.to(t), p, false, new Generator(9), r == 1).output();
                assertEquals(r == 0, FUSED.equals(out.gradFn().name()));
                Tensor gq = Autograd.grad(new Tensor[] {out.sum()}, new Tensor[] {qq}, null, true, true, false)[0];
                Tensor gv = Autograd.grad(new Tensor[] {gq.mul(w.to(t)).sum()}, new Tensor[] {vv}, null, false, false, false)[0];
                secondOrder[r] = gv.to(DType.FLOAT64).toDoubleArray();
            }
            for (int i = 0; i < secondOrder[0].length; i++) {
                assertEquals(secondOrder[1][i], secondOrder[0][i], 1e-4, "dropout " + p + ", element " + i);
            }
        }
    }

    /** A row whose every key is masked is NaN, as the composition's softmax over -inf. */
    @Test
    void aFullyMaskedRowIsNaN() {
        Tensor q = randn(1, 3, 4), k = randn(1, 5, 4), v = randn(1, 5, 2);
        Tensor keep = Torch.ones(new long[] {3, 5}, DType.BOOL, Device.cpu());
        keep.select(0, 1).fill_(0);
        float[] out = F.scaledDotProductAttention(q, k, v, keep, 0, false).toFloatArray();
        for (int i = 0; i < out.length; i++) assertEquals(i / 2 == 1, Float.isNaN(out[i]), "element " + i);
    }

    /**
     * Each task's arithmetic does not depend on how tasks are shared out: one thread and two give the same bits. The
     * shapes split the forward's query blocks over two threads: [3, 4, 100, 16] (two blocks per head) and the
     * Transformer word LM's [20, 2, 35, 100] heads (one short block each) with its additive causal mask, with and
     * without dropout.
     */
    @Test
    void threadCountDoesNotChangeTheResult() {
        Tensor causalMask = Torch.full(new long[] {35, 35}, Double.NEGATIVE_INFINITY, DType.FLOAT32, Device.cpu()).triu(1);
        compareThreadCounts(new long[] {3, 4, 100, 16}, null, 0, true);
        compareThreadCounts(new long[] {20, 2, 35, 100}, causalMask, 0, false);
        compareThreadCounts(new long[] {20, 2, 35, 100}, causalMask, 0.2, false);
    }

    private void compareThreadCounts(long[] shape, Tensor mask, double dropout, boolean causal) {
        int threads = Torch.getNumThreads();
        Tensor q = randn(shape).requiresGrad_(true), k = randn(shape), v = randn(shape);
        float[][] results = new float[2][];
        float[][] grads = new float[2][];
        try {
            for (int r = 0; r < 2; r++) {
                Torch.setNumThreads(r + 1);
                F.Attention a = F.attention(q, k, v, mask, dropout, causal, new Generator(3), false);
                assertEquals(FUSED, a.output().gradFn().name());
                results[r] = a.output().toFloatArray();
                grads[r] = Autograd.grad(new Tensor[] {a.output().sum()}, new Tensor[] {q})[0].toFloatArray();
            }
        } finally {
            Torch.setNumThreads(threads);
        }
        String what = java.util.Arrays.toString(shape) + ", dropout " + dropout;
        assertArrayEquals(results[0], results[1], "output, " + what);
        assertArrayEquals(grads[0], grads[1], "query gradient, " + what);
    }

    /**
     * With dropout the fused kernels draw the composition's mask from the same generator state, so both paths give the
     * same output and gradients (float32 both: the composition runs when the weights are kept).
     */
    @Test
    void dropoutDrawsTheCompositionsMask() {
        for (boolean causal : new boolean[] {false, true}) {
            Tensor q = randn(2, 3, 70, 8), k = randn(2, 3, 90, 8), v = randn(2, 3, 90, 5), gradOut = randn(2, 3, 70, 5);
            Tensor m = causal ? null : randn(70, 90);
            Tensor[][] grads = new Tensor[2][];
            Tensor[] outs = new Tensor[2];
            for (int r = 0; r < 2; r++) {
                Tensor[] x = {q.detach().requiresGrad_(true), k.detach().requiresGrad_(true), v.detach().requiresGrad_(true)};
                Generator g = new Generator(5);
                F.Attention a = F.attention(x[0], x[1], x[2], m, 0.3, causal, g, r == 1);
                assertEquals(r == 0, FUSED.equals(a.output().gradFn().name()));
                outs[r] = a.output();
                grads[r] = Autograd.grad(new Tensor[] {a.output()}, x, new Tensor[] {gradOut}, false, false, false);
            }
            assertClose(outs[1].to(DType.FLOAT64), outs[0], "dropout output, causal " + causal);
            for (int i = 0; i < 3; i++) assertClose(grads[1][i].to(DType.FLOAT64), grads[0][i], "dropout gradient " + i + ", causal " + causal);
        }
    }

    /** Calls the kernels do not serve run the composition: float64, dropout 1, a mask that needs a gradient, kept weights. */
    @Test
    void unservedCallsAreComposed() {
        Tensor q = randn(2, 4, 3).requiresGrad_(true), k = randn(2, 5, 3), v = randn(2, 5, 3);
        assertNotEquals(FUSED, F.scaledDotProductAttention(q.to(DType.FLOAT64), k.to(DType.FLOAT64), v.to(DType.FLOAT64), null, 0, false).gradFn().name());
        assertNotEquals(FUSED, F.scaledDotProductAttention(q, k, v, null, 1, false).gradFn().name());
        Tensor m = randn(4, 5).requiresGrad_(true);
        Tensor out = F.scaledDotProductAttention(q, k, v, m, 0, false);
        assertNotEquals(FUSED, out.gradFn().name());
        assertTrue(Autograd.grad(new Tensor[] {out.sum()}, new Tensor[] {m})[0].abs().sum().item() > 0);
        F.Attention a = F.attention(q, k, v, null, 0, false, Generator.defaultGenerator(), true);
        assertNotEquals(FUSED, a.output().gradFn().name());
    }
}
