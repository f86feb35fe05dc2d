package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.kernelCalls;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.AttentionOps;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Scaled dot-product attention as declared ops ({@link AttentionOps}): the trace's nodes, kernel calls, the fused kernels
 * against their decomposition on random shapes, the backward composite against autograd through the composition, gradcheck
 * of both orders in float64, autocast from the declaration, and errors naming the ops.
 */
@ExtendWith(ScopePerTest.class)
class AttentionOpsTest {
    private static final String FLASH = AttentionOps.FLASH_ATTENTION.name();
    private static final String FLASH_BACKWARD = AttentionOps.FLASH_ATTENTION_BACKWARD.name();
    private final Generator gen = new Generator(21);

    private Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen).to(dtype);
    }

    @Test
    void theTraceSeesTheFusedOpAsOneNode() {
        Tensor q = randn(DType.FLOAT32, 2, 3, 5, 4), k = randn(DType.FLOAT32, 2, 3, 6, 4), v = randn(DType.FLOAT32, 2, 3, 6, 4);
        assertEquals(List.of(FLASH), traced(() -> F.scaledDotProductAttention(q, k, v, null, 0, true)));
        Tensor m = randn(DType.FLOAT32, 5, 6);
        assertEquals(List.of(FLASH), traced(() -> F.scaledDotProductAttention(q, k, v, m, 0, false)));
        // float64 runs the composition: its parts are traced, the fused op is not
        Tensor q64 = q.to(DType.FLOAT64), k64 = k.to(DType.FLOAT64), v64 = v.to(DType.FLOAT64);
        List<String> parts = traced(() -> F.scaledDotProductAttention(q64, k64, v64, null, 0, false));
        assertFalse(parts.contains(FLASH), parts.toString());
        assertTrue(parts.contains("softmax"), parts.toString());
    }

    @Test
    void oneKernelCallForwardAndOneBackward() {
        Tensor q = randn(DType.FLOAT32, 2, 7, 4).requiresGrad_(true), k = randn(DType.FLOAT32, 2, 9, 4), v = randn(DType.FLOAT32, 2, 9, 3);
        Tensor[] out = new Tensor[1];
        assertEquals(1, kernelCalls(FLASH, () -> out[0] = F.scaledDotProductAttention(q, k, v, null, 0.2, false, new Generator(1))));
        assertEquals("ScaledDotProductFlashAttentionForCpuBackward0", out[0].gradFn().name());
        assertEquals(1, kernelCalls(FLASH_BACKWARD, () -> Autograd.grad(new Tensor[] {out[0].sum()}, new Tensor[] {q})));
    }

    /** The fused kernels against their decomposition (the same op's composition, float32 both) on random shapes, masks and dropout. */
    @Test
    void fusedAgainstTheDecompositionOnRandomShapes() {
        Random r = new Random(3);
        for (int trial = 0; trial < 30; trial++) {
            int nb = r.nextInt(3);
            long[] batch = new long[nb];
            for (int d = 0; d < nb; d++) batch[d] = 1 + r.nextInt(3);
            long l = 1 + r.nextInt(80), s = 1 + r.nextInt(80), e = 1 + r.nextInt(20), ev = 1 + r.nextInt(20);
            Tensor q = randn(DType.FLOAT32, rows(batch, l, e)), k = randn(DType.FLOAT32, rows(batch, s, e));
            Tensor v = randn(DType.FLOAT32, rows(batch, s, ev));
            boolean causal = r.nextBoolean();
            Tensor mask = !causal && r.nextBoolean() ? randn(DType.FLOAT32, l, s) : null;
            Tensor drop = r.nextBoolean() ? Torch.rand(rows(batch, l, s), DType.FLOAT32, Device.cpu(), gen).lt(0.7).to(DType.FLOAT32).div(0.7) : null;
            double scale = 0.1 + r.nextDouble();
            String what = "trial " + trial + ": batch " + java.util.Arrays.toString(batch) + " l " + l + " s " + s + " e " + e + " ev " + ev
                    + " causal " + causal + " mask " + (mask != null) + " dropout " + (drop != null);
            Tensor[] x = {q.requiresGrad_(true), k.requiresGrad_(true), v.requiresGrad_(true)};
            Tensor[] in = {q, k, v, mask, drop};
            Tensor fused = Dispatcher.call(AttentionOps.FLASH_ATTENTION, in, causal ? 1 : 0, scale);
            Tensor composed = Dispatcher.call(AttentionOps.ATTENTION_MATH, in, causal ? 1 : 0, scale);
            assertEquals("ScaledDotProductFlashAttentionForCpuBackward0", fused.gradFn().name(), what);
            assertCloseRelative(composed, fused, 2e-5, what + ": output");
            Tensor gradOut = randn(DType.FLOAT32, fused.shape());
            Tensor[] gf = Autograd.grad(new Tensor[] {fused}, x, new Tensor[] {gradOut}, false, false, false);
            Tensor[] gc = Autograd.grad(new Tensor[] {composed}, x, new Tensor[] {gradOut}, false, false, false);
            for (int i = 0; i < 3; i++) assertCloseRelative(gc[i], gf[i], 1e-4, what + ": gradient " + i);
        }
    }

    private static long[] rows(long[] batch, long rows, long cols) {
        long[] shape = java.util.Arrays.copyOf(batch, batch.length + 2);
        shape[batch.length] = rows;
        shape[batch.length + 1] = cols;
        return shape;
    }

    /** The backward as ops (what a create_graph backward runs) against autograd through the composition, float64. */
    @Test
    void theBackwardCompositeIsTheCompositionsGradient() {
        Tensor q = randn(DType.FLOAT64, 2, 5, 3).requiresGrad_(true), k = randn(DType.FLOAT64, 2, 4, 3).requiresGrad_(true);
        Tensor v = randn(DType.FLOAT64, 2, 4, 2).requiresGrad_(true), m = randn(DType.FLOAT64, 5, 4);
        Tensor drop = Torch.rand(new long[] {2, 5, 4}, DType.FLOAT64, Device.cpu(), gen).lt(0.6).to(DType.FLOAT64).div(0.6);
        Tensor gradOut = randn(DType.FLOAT64, 2, 5, 2);
        for (boolean causal : new boolean[] {false, true}) {
            Tensor mask = causal ? null : m;
            Tensor out = Dispatcher.call(AttentionOps.ATTENTION_MATH, new Tensor[] {q, k, v, mask, drop}, causal ? 1 : 0, 0.8);
            Tensor[] expected = Autograd.grad(new Tensor[] {out}, new Tensor[] {q, k, v}, new Tensor[] {gradOut}, false, false, false);
            for (int j = 0; j < 3; j++) {
                Tensor g = Dispatcher.call(AttentionOps.FLASH_ATTENTION_BACKWARD_COMPOSITE, new Tensor[] {gradOut, q, k, v, mask, drop},
                        causal ? 1 : 0, 0.8, j);
                assertCloseRelative(expected[j], g, 1e-12, "causal " + causal + ", gradient " + j);
            }
        }
    }

    /** First and second order in float64 through the front end (the composition), with each kind of mask and dropout. */
    @Test
    void gradcheckBothOrdersInFloat64() {
        Tensor q = randn(DType.FLOAT64, 2, 4, 3).requiresGrad_(true), k = randn(DType.FLOAT64, 2, 5, 3).requiresGrad_(true);
        Tensor v = randn(DType.FLOAT64, 2, 5, 2).requiresGrad_(true), m = randn(DType.FLOAT64, 4, 5).requiresGrad_(true);
        Tensor keep = Torch.rand(new long[] {4, 5}, DType.FLOAT32, Device.cpu(), gen).gt(0.3).logicalOr(Torch.arange(0, 5, 1, DType.INT64, Device.cpu()).eq(0.0));
        List<Function<Tensor[], Tensor>> fns = List.of(
                a -> F.scaledDotProductAttention(a[0], a[1], a[2], null, 0, true),
                a -> F.scaledDotProductAttention(a[0], a[1], a[2], keep, 0.3, false, new Generator(4)),
                a -> F.scaledDotProductAttention(a[0], a[1], a[2], F.ScaledDotProductAttention.options().attnMask(a[3]).scale(0.6)));
        for (int i = 0; i < fns.size(); i++) {
            Tensor[] inputs = i == 2 ? new Tensor[] {q, k, v, m} : new Tensor[] {q, k, v};
            assertTrue(Gradcheck.check(fns.get(i), inputs), "case " + i + ": first order");
            assertTrue(Gradcheck.check(OpTestSupport.firstGradient(fns.get(i)), inputs), "case " + i + ": second order");
        }
    }

    /**
     * A backward that records a graph runs the backward composite over the fused op's inputs: the float32 second derivative
     * agrees with float64's.
     */
    @Test
    void secondOrderThroughTheFusedOp() {
        Tensor q = randn(DType.FLOAT32, 2, 6, 4), k = randn(DType.FLOAT32, 2, 5, 4), v = randn(DType.FLOAT32, 2, 5, 3);
        Tensor w = randn(DType.FLOAT32, 2, 6, 4);
        Tensor[][] dd = new Tensor[2][];
        DType[] types = {DType.FLOAT32, DType.FLOAT64};
        for (int r = 0; r < 2; r++) {
            Tensor[] x = {q.to(types[r]).requiresGrad_(true), k.to(types[r]).requiresGrad_(true), v.to(types[r]).requiresGrad_(true)};
            Tensor out = F.scaledDotProductAttention(x[0], x[1], x[2], null, 0, true);
            assertEquals(r == 0, "ScaledDotProductFlashAttentionForCpuBackward0".equals(out.gradFn().name()));
            Tensor[] g = Autograd.grad(new Tensor[] {out.sum()}, x, null, true, true, false);
            Tensor s = g[0].mul(w.to(types[r])).sum().add(g[1].mul(g[1]).sum()).add(g[2].sin().sum());
            dd[r] = Autograd.grad(new Tensor[] {s}, x, null, false, false, false);
        }
        for (int i = 0; i < 3; i++) assertCloseRelative(dd[1][i], dd[0][i], 1e-4, "second order, input " + i);
    }

    @Test
    void autocastFromTheDeclaration() {
        Tensor q = randn(DType.FLOAT32, 2, 5, 4), k = randn(DType.FLOAT32, 2, 6, 4), v = randn(DType.FLOAT32, 2, 6, 4);
        try (Autocast ac = Autocast.enable(Device.cpu())) {
            assertEquals(DType.BFLOAT16, F.scaledDotProductAttention(q, k, v, null, 0, true).dtype());
        }
        assertEquals(org.jtorch.op.CastPolicy.LOWER_PRECISION, AttentionOps.SCALED_DOT_PRODUCT_ATTENTION.autocast(Device.Type.CUDA));
    }

    @Test
    void errorsNameTheOps() {
        Tensor q = randn(DType.FLOAT64, 2, 5, 4), k = randn(DType.FLOAT64, 2, 6, 4), v = randn(DType.FLOAT64, 2, 6, 4);
        UnsupportedOperationException u = assertThrows(UnsupportedOperationException.class,
                () -> Dispatcher.callAll(AttentionOps.FLASH_ATTENTION, new Tensor[] {q, k, v}, 0, 1));
        assertTrue(u.getMessage().startsWith(FLASH + ": no cpu kernel takes these arguments"), u.getMessage());
        Tensor q32 = q.to(DType.FLOAT32), k32 = k.to(DType.FLOAT32), v32 = v.to(DType.FLOAT32);
        Tensor[] outs = Dispatcher.callAll(AttentionOps.FLASH_ATTENTION, new Tensor[] {q32, k32, v32}, 0, 1);
        Tensor badGrad = randn(DType.FLOAT32, 2, 5, 3);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callAll(AttentionOps.FLASH_ATTENTION_BACKWARD,
                new Tensor[] {badGrad, q32, k32, v32, outs[0], outs[1]}, 0, 1));
        assertTrue(e.getMessage().startsWith(FLASH_BACKWARD + ": expected float32 grad_out and out of shape [2, 5, 4]"), e.getMessage());
        IllegalArgumentException shapes = assertThrows(IllegalArgumentException.class,
                () -> F.scaledDotProductAttention(q32, randn(DType.FLOAT32, 2, 6, 3), v32));
        assertTrue(shapes.getMessage().contains("must agree on the embedding size"), shapes.getMessage());
    }
}
