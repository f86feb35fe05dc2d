package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The JIT's pointwise chain fused into a softmax or log-softmax on CUDA ({@code FusedKernels.softmaxSource} and
 * {@code softmaxBackwardSource}): the compiled function against eager on cuda:0. Forward: eager's bits (the generated
 * kernel runs the eager softmax's row code, {@code rowreduce.cuh}'s {@code softmax_row}, with as many threads) where the
 * chain has no multiply-add to contract, else within float32 rounding. Backward: within float32 rounding of eager's
 * composition. Rows longer than a block (5,000 values, 1,024 threads), rows of 1, a
 * transposed (non-contiguous) input, an attention mask of -inf with a fully masked row (NaN, as eager), broadcast
 * operands. On the simulator, the kernel launches of an attention-score chain and a classifier head, eager against
 * compiled (docs/BENCHMARKS.md, issue 16, nineteenth session).
 */
class FusedSoftmaxDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final Device CPU = Device.cpu();

    @BeforeEach
    void needsCuda() {
        DeviceCases.assumeAvailable(CUDA);
    }

    private static Tensor randn(Generator g, long... shape) {
        return Torch.randn(shape, DType.FLOAT32, CPU, g).mul(2.0).to(CUDA);
    }

    /** A [t, t] additive mask: causal (-inf above the diagonal), with row {@code fullyMasked} all -inf (-1: none). */
    private static Tensor attentionMask(int t, int fullyMasked) {
        float[] m = new float[t * t];
        for (int i = 0; i < t; i++) {
            for (int j = 0; j < t; j++) m[i * t + j] = j > i || i == fullyMasked ? Float.NEGATIVE_INFINITY : 0f;
        }
        return Torch.tensor(m, t, t).to(CUDA);
    }

    private static float[] host(Tensor t) {
        return t.to(CPU).toFloatArray();
    }

    /** Within 1e-5 relative plus 2e-6 of the largest magnitude; NaN where the other is NaN. */
    private static void assertClose(String what, float[] want, float[] got) {
        assertEquals(want.length, got.length, what);
        float scale = 0;
        for (float w : want) if (Float.isFinite(w)) scale = Math.max(scale, Math.abs(w));
        for (int i = 0; i < want.length; i++) {
            float w = want[i], g = got[i];
            boolean ok = Float.isNaN(w) ? Float.isNaN(g) : Math.abs(w - g) <= 1e-5f * Math.abs(w) + 2e-6f * scale || w == g;
            assertTrue(ok, what + " at " + i + ": eager " + w + ", compiled " + g);
        }
    }

    /**
     * {@code f} on {@code x} compiled (its plan fuses the softmax, forward and backward) against eager: the output to
     * the bit where {@code eagersBits} (a chain without a product feeding an add, which the generated kernel may contract
     * into one fused multiply-add where eager rounds twice), else within float32 rounding, as each leaf's gradient of
     * {@code sum(f(x) * weights)}.
     */
    private static void assertFusedMatchesEager(String what, boolean eagersBits, TensorFunction f, Tensor x, Tensor... leaves) {
        String plan = Jit.explain(f, x);
        assertTrue(plan.contains("softmax of rows") && plan.contains("softmax's gradient and the group's in one pass"), what + ": " + plan);
        TensorFunction compiled = Jit.trace(f, x);
        Tensor weights = randn(new Generator(5), f.apply(x).shape());
        UnaryOperator<Tensor> loss = y -> y.mul(weights).sum();
        float[][] eager = new float[leaves.length + 1][], fused = new float[leaves.length + 1][];
        for (int pass = 0; pass < 2; pass++) {
            float[][] into = pass == 0 ? eager : fused;
            for (Tensor t : leaves) t.setGrad(null);
            Tensor y = (pass == 0 ? f : compiled).apply(x);
            loss.apply(y).backward();
            into[0] = host(y);
            for (int k = 0; k < leaves.length; k++) into[k + 1] = host(leaves[k].grad());
        }
        if (eagersBits) assertArrayEquals(eager[0], fused[0], what + ": the output, eager's bits");
        else assertClose(what + ": the output", eager[0], fused[0]);
        for (int k = 0; k < leaves.length; k++) assertClose(what + ": gradient of leaf " + k, eager[k + 1], fused[k + 1]);
    }

    @Test
    void attentionScoresWithAMaskOfMinusInfinityAndAFullyMaskedRow() {
        Generator g = new Generator(1);
        Tensor mask = attentionMask(17, 5);
        Tensor scores = randn(g, 2, 3, 17, 17).requiresGrad_(true);
        assertFusedMatchesEager("softmax", true, in -> in[0].mul(0.125).add(mask).softmax(-1), scores, scores);
        assertFusedMatchesEager("log-softmax", true, in -> F.logSoftmax(in[0].mul(0.125).add(mask), -1), scores, scores);
        // The fully masked row is NaN in both (exp(-inf - -inf)), as PyTorch's.
        Tensor y = Jit.trace(in -> in[0].mul(0.125).add(mask).softmax(-1), scores).apply(scores);
        float[] values = host(y);
        assertTrue(Float.isNaN(values[5 * 17]) && values[0] == 1f, "row 5 NaN, row 0 one value");
    }

    @Test
    void rowsLongerThanABlockAndRowsOfOne() {
        Generator g = new Generator(2);
        Tensor x = randn(g, 3, 5000).requiresGrad_(true), bias = randn(g, 5000).requiresGrad_(true);
        assertFusedMatchesEager("5,000 values a row", true, in -> in[0].mul(0.5).add(bias).softmax(-1), x, x, bias);
        assertFusedMatchesEager("5,000 values a row, log", true, in -> F.logSoftmax(in[0].sub(bias).tanh(), -1), x, x, bias);
        Tensor ones = randn(g, 7, 1).requiresGrad_(true), one = randn(g, 1).requiresGrad_(true);
        assertFusedMatchesEager("rows of 1", true, in -> in[0].mul(one).exp().softmax(-1), ones, ones, one);
        assertFusedMatchesEager("rows of 1, log", true, in -> F.logSoftmax(in[0].add(one), -1), ones, ones, one);
    }

    @Test
    void aTransposedInputAndOperandsOfTheirOwn() {
        Generator g = new Generator(3);
        Tensor base = randn(g, 40, 33).requiresGrad_(true);
        Tensor x = base.transpose(0, 1); // [33, 40], column stride 33
        assertTrue(!x.isContiguous());
        Tensor r = randn(g, 33, 40).requiresGrad_(true), col = randn(g, 40).requiresGrad_(true);
        assertFusedMatchesEager("transposed", false, in -> in[0].mul(r).add(col).softmax(-1), x, base, r, col);
        assertFusedMatchesEager("transposed, log", false, in -> F.logSoftmax(in[0].add(r).mul(2.0).sigmoid(), -1), x, base, r);
    }

    /** The simulator's kernel launches and library calls since {@code before} (after a synchronisation). */
    private static long[] since(long[] before) {
        Cuda.synchronize(CUDA);
        long[] now = GemmEpilogueDeviceTest.counts();
        return new long[] {now[0] - before[0], now[1] - before[1]};
    }

    private static long[] mark() {
        Cuda.synchronize(CUDA);
        return GemmEpilogueDeviceTest.counts();
    }

    /** Kernel launches and library calls of {@code f}'s forward, then of its backward, the second of two calls. */
    private static long[][] launches(TensorFunction f, Tensor x, Tensor[] leaves, UnaryOperator<Tensor> loss) {
        long[][] counts = new long[2][];
        for (int call = 0; call < 2; call++) {
            for (Tensor t : leaves) t.setGrad(null);
            try (MemoryScope scope = new MemoryScope()) {
                long[] before = mark();
                Tensor out = loss.apply(f.apply(x));
                counts[0] = since(before);
                before = mark();
                out.backward();
                counts[1] = since(before);
            }
        }
        return counts;
    }

    /** Kernel launches of {@code f} alone without autograd, the second of two calls. */
    private static long forwardAlone(TensorFunction f, Tensor x) {
        long launches = 0;
        for (int call = 0; call < 2; call++) {
            try (var off = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
                long[] before = mark();
                f.apply(x);
                launches = since(before)[0];
            }
        }
        return launches;
    }

    /**
     * The launches saved, counted on the simulator: an attention-score chain ({@code softmax(s * scale + mask)}) and a
     * classifier head ({@code log_softmax(h @ w + b)} then the NLL loss), eager against compiled, forward and backward.
     * Compiled, the chain is one launch each way; the head's product stays a library call.
     */
    @Test
    void launchesSavedByAnAttentionChainAndAClassifierHead() {
        GemmEpilogueDeviceTest.counts(); // skips on a real GPU
        Generator g = new Generator(4);
        Tensor mask = attentionMask(64, -1);
        Tensor scores = randn(g, 4, 64, 64).requiresGrad_(true);
        Tensor weights = randn(g, 4, 64, 64);
        TensorFunction attention = in -> in[0].mul(0.125).add(mask).softmax(-1);
        TensorFunction compiledAttention = Jit.trace(attention, scores);
        long[][] eager = launches(attention, scores, new Tensor[] {scores}, y -> y.mul(weights).sum());
        long[][] fused = launches(compiledAttention, scores, new Tensor[] {scores}, y -> y.mul(weights).sum());
        System.out.println("attention chain launches (kernels/library calls), forward | backward: eager " + eager[0][0] + "/" + eager[0][1] + " | "
                + eager[1][0] + "/" + eager[1][1] + ", compiled " + fused[0][0] + "/" + fused[0][1] + " | " + fused[1][0] + "/" + fused[1][1]);
        long eagerAlone = forwardAlone(attention, scores), fusedAlone = forwardAlone(compiledAttention, scores);
        System.out.println("attention chain alone, no autograd: eager " + eagerAlone + ", compiled " + fusedAlone);
        // The [64, 64] mask broadcast over 4 slabs is indexed in the kernel: one launch, not one a slab.
        assertEquals(1, fusedAlone, "compiled: the chain is one launch");
        assertEquals(eager[0][0] - eagerAlone + 1, fused[0][0], "compiled forward with autograd: the chain is one launch");
        assertTrue(fused[1][0] < eager[1][0], "backward launches: eager " + eager[1][0] + ", compiled " + fused[1][0]);

        Tensor h = randn(g, 32, 64), w = randn(g, 64, 10).requiresGrad_(true), b = randn(g, 10).requiresGrad_(true);
        Tensor target = Torch.tensor(new long[] {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5}).to(CUDA);
        TensorFunction head = in -> F.logSoftmax(in[0].matmul(w).add(b), -1);
        String plan = Jit.explain(head, h);
        assertTrue(plan.contains("log_softmax of rows"), plan);
        TensorFunction compiledHead = Jit.trace(head, h);
        long[][] eagerHead = launches(head, h, new Tensor[] {w, b}, y -> F.nllLoss(y, target));
        long[][] fusedHead = launches(compiledHead, h, new Tensor[] {w, b}, y -> F.nllLoss(y, target));
        System.out.println("classifier head launches (kernels/library calls), forward | backward: eager " + eagerHead[0][0] + "/" + eagerHead[0][1]
                + " | " + eagerHead[1][0] + "/" + eagerHead[1][1] + ", compiled " + fusedHead[0][0] + "/" + fusedHead[0][1] + " | "
                + fusedHead[1][0] + "/" + fusedHead[1][1]);
        long eagerHeadAlone = forwardAlone(head, h), fusedHeadAlone = forwardAlone(compiledHead, h);
        System.out.println("classifier head alone, no autograd: eager " + eagerHeadAlone + ", compiled " + fusedHeadAlone);
        assertEquals(eagerHeadAlone - 1, fusedHeadAlone, "compiled: the bias add inside the log-softmax's kernel");
        assertTrue(fusedHead[0][0] < eagerHead[0][0], "forward launches: eager " + eagerHead[0][0] + ", compiled " + fusedHead[0][0]);
        assertEquals(eagerHead[0][1], fusedHead[0][1], "the product's library calls");
        assertTrue(fusedHead[1][0] < eagerHead[1][0], "backward launches: eager " + eagerHead[1][0] + ", compiled " + fusedHead[1][0]);
        try (var off = Grad.noGrad()) {
            assertArrayEquals(host(head.apply(h)), host(compiledHead.apply(h)), "the head's log-probabilities, eager's bits");
        }
    }
}
