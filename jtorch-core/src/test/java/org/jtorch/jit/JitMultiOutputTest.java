package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertClose;
import static org.jtorch.jit.JitChecks.assertCompiledMatchesEager;
import static org.jtorch.jit.JitChecks.randn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.ops.Recurrent;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Ops with several outputs in compiled functions: the trace records one node with all its outputs (an LSTM cell's
 * {@code hy}, {@code cy} and workspace; max pooling's values and indices; max's values and indices),
 * the program reads any of them (a fused group too), replays the op once with all of them, and records autograd as
 * eager does. Compiled equals eager in values and every gradient; before, a read of a second output broke the trace
 * and the whole function ran eagerly.
 */
class JitMultiOutputTest {
    private static int count(String text, String what) {
        return text.split(java.util.regex.Pattern.quote(what), -1).length - 1;
    }

    /** Three LSTM steps reading the previous step's hy and cy, then a fused chain over the last hy and cy. */
    private static TensorFunction lstmLoop(Tensor wi, Tensor wh, Tensor bias) {
        return in -> {
            Tensor x = in[0];
            Tensor h = Torch.zeros(new long[] {x.size(0), wh.size(1)}, DType.FLOAT32, x.device());
            Tensor c = x.slice(1, 0, wh.size(1), 1).tanh();
            for (int t = 0; t < 3; t++) {
                Recurrent.LstmStep s = Recurrent.lstmCell(F.linear(x.mul(t + 1.0), wi, bias), F.linear(h, wh, null), c);
                h = s.hy();
                c = s.cy();
            }
            return h.mul(c.sigmoid()).add(c);
        };
    }

    @Test
    void anLstmCellLoopReadingHyAndCyCompilesAndMatchesEager() {
        Torch.manualSeed(51);
        int hidden = 8;
        Tensor wi = randn(4 * hidden, 12).mul(0.3).requiresGrad_(true);
        Tensor wh = randn(4 * hidden, hidden).mul(0.3).requiresGrad_(true);
        Tensor bias = randn(4 * hidden).requiresGrad_(true);
        Tensor x = randn(5, 12).requiresGrad_(true);
        TensorFunction f = lstmLoop(wi, wh, bias);
        String plan = Jit.explain(f, x);
        assertFalse(plan.contains("runs eagerly"), plan);
        if (DEVICE.isCpu()) {
            // The fused cell is one node with three outputs; each step reads the previous one's cy.
            assertEquals(3, count(plan, "_thnn_fused_lstm_cell (eager, 3 outputs, also read: "), plan);
            assertTrue(plan.contains("= _thnn_fused_lstm_cell(%") && plan.contains(".1 : torch.float32[5, 8], %"), plan);
            // The last step's hy and cy feed one fused group.
            assertTrue(plan.matches("(?s).*fused 3 ops over \\(%\\d+, %\\d+\\.1\\).*"), plan);
        }
        assertCompiledMatchesEager(f, x, new Tensor[] {x, wi, wh, bias}, 1e-5f);
    }

    @Test
    void maxPoolingIndicesFeedMaxUnpooling() {
        Torch.manualSeed(52);
        Tensor img = randn(2, 3, 8, 8).requiresGrad_(true);
        Tensor scale = randn(3, 1, 1).requiresGrad_(true);
        int[] two = {2};
        TensorFunction f = in -> {
            var pooled = F.maxPool2dWithIndices(in[0], two, two, new int[] {0}, new int[] {1}, false);
            Tensor y = pooled.values().mul(scale).relu();
            return F.maxUnpool2d(y, pooled.indices(), two, two, new int[] {0}, null).add(in[0].mul(0.5));
        };
        String plan = Jit.explain(f, img);
        assertFalse(plan.contains("runs eagerly"), plan);
        assertTrue(plan.contains("max_pool2d_with_indices (eager, 2 outputs, also read: %0.1)"), plan);
        assertTrue(plan.contains("= max_unpool2d(%2, %0.1; "), plan);
        assertTrue(plan.contains("fused 2 ops over (%0, const[3, 1, 1])"), plan);
        assertCompiledMatchesEager(f, img, new Tensor[] {img, scale}, 1e-6f);
    }

    @Test
    void topkAndMaxValuesAndIndices() {
        Torch.manualSeed(53);
        Tensor x = randn(6, 10).requiresGrad_(true);
        TensorFunction topk = in -> {
            var r = in[0].mul(2.0).topk(3, 1);
            return r.values().mul(r.indices().to(DType.FLOAT32).add(1.0));
        };
        TensorFunction max = in -> {
            var r = in[0].exp().max(1, true);
            return r.values().mul(r.indices().to(DType.FLOAT32)).add(in[0]);
        };
        for (TensorFunction f : List.of(topk, max)) {
            String plan = Jit.explain(f, x);
            assertFalse(plan.contains("runs eagerly"), plan);
            assertCompiledMatchesEager(f, x, new Tensor[] {x}, 1e-6f);
        }
        String plan = Jit.explain(max, x);
        assertTrue(plan.contains("max_dim (eager, 2 outputs, also read: %1.1)"), plan);
    }

    /**
     * A GLU-style gate: a linear layer's output chunked in two, one half gating the other, in one fused group (a chunk
     * traces as one narrow per part, each a view of the layer's output).
     */
    @Test
    void chunksOfALinearsOutputFeedOneFusedGate() {
        Torch.manualSeed(54);
        Tensor w = randn(32, 12).mul(0.3).requiresGrad_(true);
        Tensor b = randn(32).requiresGrad_(true);
        Tensor x = randn(7, 12).requiresGrad_(true);
        TensorFunction glu = in -> {
            List<Tensor> halves = F.linear(in[0], w, b).chunk(2, 1);
            return halves.get(0).mul(halves.get(1).sigmoid());
        };
        String plan = Jit.explain(glu, x);
        assertFalse(plan.contains("runs eagerly"), plan);
        // chunk is one node with two outputs (its backward one split_with_sizes_backward)
        assertEquals(1, count(plan, "= chunk(%0; "), plan);
        assertTrue(plan.contains("fused 2 ops over (%1, %1.1): mul(%1, sigmoid(%1.1))"), plan);
        assertCompiledMatchesEager(glu, x, new Tensor[] {x, w, b}, 1e-6f);
        // Three parts, the middle one unread, and split by sizes.
        TensorFunction three = in -> {
            List<Tensor> parts = F.linear(in[0], w, b).split(new long[] {10, 12, 10}, 1);
            return parts.get(0).tanh().mul(parts.get(2));
        };
        assertFalse(Jit.explain(three, x).contains("runs eagerly"));
        assertCompiledMatchesEager(three, x, new Tensor[] {x, w, b}, 1e-6f);
    }

    /** Only the first output read, and the same multi-output op twice (one node after common subexpressions). */
    @Test
    void unreadOutputsAndCommonSubexpressions() {
        Torch.manualSeed(55);
        Tensor x = randn(4, 9).requiresGrad_(true);
        TensorFunction f = in -> {
            var a = in[0].max(1);
            var b = in[0].max(1);
            Tensor first = in[0].min(1).values(); // the indices unread
            return a.values().add(b.indices().to(DType.FLOAT32)).mul(first);
        };
        String plan = Jit.explain(f, x);
        assertFalse(plan.contains("runs eagerly"), plan);
        assertEquals(1, count(plan, "max_dim (eager"), plan);
        assertTrue(plan.contains("min_dim (eager, 2 outputs, the first read)"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {x}, 1e-6f);
        // A later output as the function's result.
        TensorFunction indices = in -> in[0].mul(3.0).max(0).indices();
        TensorFunction compiled = Jit.trace(indices, x);
        try (var g = Grad.noGrad()) {
            assertEquals(indices.apply(x).toLongArray()[0], compiled.apply(x).toLongArray()[0]);
            assertArrayEqualsLong(indices.apply(x), compiled.apply(x));
        }
    }

    private static void assertArrayEqualsLong(Tensor expected, Tensor actual) {
        org.junit.jupiter.api.Assertions.assertArrayEquals(expected.toLongArray(), actual.toLongArray());
    }

    /** New shapes retrace; a host read in the middle breaks the graph and the function still gives eager's values. */
    @Test
    void guardsRetraceAndAGraphBreakStillMatches() {
        Torch.manualSeed(56);
        int hidden = 8;
        Tensor wi = randn(4 * hidden, 12).mul(0.3).requiresGrad_(true);
        Tensor wh = randn(4 * hidden, hidden).mul(0.3).requiresGrad_(true);
        TensorFunction f = lstmLoop(wi, wh, null);
        TensorFunction compiled = Jit.trace(f, randn(5, 12));
        for (long batch : new long[] {5, 3, 5, 9}) {
            Tensor x = randn(batch, 12);
            assertClose(f.apply(x), compiled.apply(x), 1e-5f);
            assertClose(f.apply(x), compiled.apply(x), 1e-5f);
        }
        TensorFunction broken = in -> {
            var pooled = F.maxPool2dWithIndices(in[0], new int[] {2}, new int[] {2}, new int[] {0}, new int[] {1}, false);
            double shift = pooled.values().sum().item();
            return F.maxUnpool2d(pooled.values().add(shift), pooled.indices(), new int[] {2}, new int[] {2}, new int[] {0}, null);
        };
        Tensor img = randn(2, 3, 6, 6).requiresGrad_(true);
        assertTrue(Jit.explain(broken, img).contains("runs eagerly: item read a tensor"), Jit.explain(broken, img));
        assertCompiledMatchesEager(broken, img, new Tensor[] {img}, 1e-6f);
    }

    /** A ResNet basic block: conv, batch norm (training), ReLU, conv, batch norm, the residual add and ReLU. */
    static final class Block extends Module {
        final Conv2d conv1 = registerModule("conv1", new Conv2d(8, 8, 3, Conv2d.options().padding(1).bias(false)));
        final BatchNorm2d bn1 = registerModule("bn1", new BatchNorm2d(8));
        final Conv2d conv2 = registerModule("conv2", new Conv2d(8, 8, 3, Conv2d.options().padding(1).bias(false)));
        final BatchNorm2d bn2 = registerModule("bn2", new BatchNorm2d(8));

        @Override
        public Tensor forward(Tensor x) {
            Tensor h = bn1.forward(conv1.forward(x)).relu();
            Tensor y = bn2.forward(conv2.forward(h)).add(x).relu();
            // A max pooling whose indices the block's caller reads too: the pooled values weighted by their position.
            var pooled = F.maxPool2dWithIndices(y, new int[] {2}, new int[] {2}, new int[] {0}, new int[] {1}, false);
            // (No integer division of the indices: on CUDA its zero-divisor check reads the host and breaks the graph.)
            return pooled.values().mul(pooled.indices().to(DType.FLOAT32).mul(0.01).add(1.0));
        }
    }

    private static Block block(long seed) {
        Torch.manualSeed(seed);
        Block b = new Block();
        b.to(DEVICE);
        return b;
    }

    @Test
    void batchNormInTrainingInsideACompiledResNetBlock() {
        Block eager = block(57);
        Block traced = block(57);
        TensorFunction compiled = Jit.compile(traced);
        SGD sgdEager = new SGD(eager.parameters(), SGD.options().lr(0.05).momentum(0.9));
        SGD sgdTraced = new SGD(traced.parameters(), SGD.options().lr(0.05).momentum(0.9));
        Tensor x = randn(4, 8, 8, 8);
        String plan = Jit.explain(in -> traced.forward(in[0]), x);
        assertFalse(plan.contains("runs eagerly"), plan);
        assertTrue(plan.contains("max_pool2d_with_indices (eager, 2 outputs, also read: "), plan);
        if (DEVICE.isCpu()) assertEquals(2, count(plan, "= batch norm statistics of "), plan);
        // Explaining ran the block once in training: the eager twin's running statistics take the same step.
        try (var g = Grad.noGrad()) {
            eager.forward(x).close();
        }
        for (int step = 0; step < 3; step++) {
            Tensor xe = x.mul(1.0 + step);
            Tensor a = eager.forward(xe);
            Tensor b = compiled.apply(xe);
            assertClose(a, b, 2e-5f);
            a.mul(a).mean().backward();
            b.mul(b).mean().backward();
            List<Tensor> pe = eager.parameters(), pt = traced.parameters();
            for (int i = 0; i < pe.size(); i++) assertClose(pe.get(i).grad(), pt.get(i).grad(), 2e-5f);
            sgdEager.step();
            sgdTraced.step();
            sgdEager.zeroGrad();
            sgdTraced.zeroGrad();
            try (var g = Grad.noGrad()) {
                assertClose(eager.bn1.runningMean(), traced.bn1.runningMean(), 1e-5f);
                assertClose(eager.bn2.runningVar(), traced.bn2.runningVar(), 1e-5f);
            }
        }
    }

    /**
     * A causal self-attention block as the char GPT's: positions from {@code Torch.arange}, the causal mask built from
     * two more, layer norm (three outputs, the first read), dropout with p = 0 in training (an alias) and the residual:
     * all traced, compiled, and equal to eager in values and gradients.
     */
    @Test
    void aCausalAttentionBlockWithPositionsAndAnAliasingDropoutCompiles() {
        Torch.manualSeed(58);
        int d = 16, t = 6;
        Tensor pos = randn(t, d).requiresGrad_(true);
        Tensor g = randn(d).requiresGrad_(true);
        Tensor b = randn(d).requiresGrad_(true);
        Tensor wqkv = randn(3 * d, d).mul(0.3).requiresGrad_(true);
        Tensor x = randn(2, t, d).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor h = in[0].add(F.embedding(Torch.arange(0, t, 1, DType.INT64, in[0].device()), pos));
            Tensor qkv = F.linear(F.layerNorm(h, new long[] {d}, g, b, 1e-5), wqkv, null);
            List<Tensor> parts = qkv.chunk(3, 2);
            Tensor y = F.scaledDotProductAttention(parts.get(0), parts.get(1), parts.get(2), null, 0, true);
            return h.add(F.dropout(y, 0.0, true));
        };
        String plan = Jit.explain(f, x);
        assertFalse(plan.contains("runs eagerly"), plan);
        assertTrue(plan.contains("= arange(; [0.0, 6.0, 1.0, "), plan);
        assertTrue(plan.contains("= alias(%"), plan);
        assertCompiledMatchesEager(f, x, new Tensor[] {x, pos, g, b, wqkv}, 1e-5f);
    }

    /**
     * The word language model of pytorch/examples (embedding, dropout, a two-layer LSTM with dropout between its layers,
     * dropout, the decoder, log-softmax) in training compiles whole: the dropouts are traced random nodes with their
     * masks, each layer's initial state a traced {@code select}, the LSTM layers multi-output nodes. From the same seed
     * the compiled call draws the same masks as the eager one, so values and every gradient match.
     */
    @Test
    void aWordLanguageModelWithDropoutCompilesAndDrawsAsEager() {
        Torch.manualSeed(59);
        org.jtorch.nn.Embedding embedding = new org.jtorch.nn.Embedding(40, 12);
        org.jtorch.nn.Dropout drop = new org.jtorch.nn.Dropout(0.2);
        org.jtorch.nn.LSTM lstm = new org.jtorch.nn.LSTM(12, 10, org.jtorch.nn.LSTM.options().numLayers(2).dropout(0.3));
        org.jtorch.nn.Linear decoder = new org.jtorch.nn.Linear(10, 40);
        List<Module> modules = List.of(embedding, drop, lstm, decoder);
        for (Module m : modules) m.to(DEVICE);
        Tensor h0 = Torch.zeros(new long[] {2, 3, 10}, DType.FLOAT32, DEVICE);
        TensorFunction f = in -> {
            Tensor emb = drop.forward(embedding.forward(in[0]));
            Tensor out = lstm.forward(emb, new org.jtorch.nn.LSTM.State(h0, h0)).output();
            return F.logSoftmax(decoder.forward(drop.forward(out)).view(-1, 40), 1);
        };
        Tensor tokens = Torch.randint(0, 40, 7, 3).to(DEVICE);
        String plan = Jit.explain(f, tokens);
        assertFalse(plan.contains("runs eagerly"), plan);
        assertEquals(3, count(plan, "= native_dropout("), plan);
        assertEquals(2, count(plan, "= _lstm_layer("), plan);
        TensorFunction compiled = Jit.trace(f, tokens);
        List<Tensor> params = new java.util.ArrayList<>();
        for (Module m : modules) params.addAll(m.parameters());
        Tensor[] eagerGrads = new Tensor[params.size()];
        for (int round = 0; round < 2; round++) {
            Torch.manualSeed(60 + round);
            Tensor a = f.apply(tokens);
            a.mul(a.exp()).sum().backward();
            for (int i = 0; i < params.size(); i++) {
                eagerGrads[i] = params.get(i).grad().clone();
                params.get(i).grad().zero_();
            }
            Torch.manualSeed(60 + round);
            Tensor b = compiled.apply(tokens);
            assertClose(a, b, 1e-5f);
            b.mul(b.exp()).sum().backward();
            for (int i = 0; i < params.size(); i++) {
                assertClose(eagerGrads[i], params.get(i).grad(), 1e-5f);
                params.get(i).grad().zero_();
            }
        }
    }
    /**
     * {@code f(x)} weighted by fixed random values and summed, its gradients with respect to {@code leaves} taken with
     * {@code createGraph}, then the gradients of the sum of those gradients' squares: the second derivatives.
     */
    private static Tensor[] secondDerivatives(TensorFunction f, Tensor x, Tensor[] leaves) {
        Tensor out = f.apply(x);
        Torch.manualSeed(98);
        Tensor y = out.mul(Torch.randn(out.shape()).to(DEVICE)).sum();
        Tensor[] first = org.jtorch.autograd.Autograd.grad(new Tensor[] {y}, leaves, null, true, true, false);
        Tensor z = first[0].mul(first[0]).sum();
        for (int i = 1; i < first.length; i++) z = z.add(first[i].mul(first[i]).sum());
        Tensor[] second = org.jtorch.autograd.Autograd.grad(new Tensor[] {z}, leaves, null, false, false, true);
        Tensor[] all = new Tensor[1 + 2 * leaves.length];
        all[0] = out.detach();
        for (int i = 0; i < leaves.length; i++) {
            all[1 + i] = first[i].detach();
            all[1 + leaves.length + i] = second[i] == null ? Torch.zerosLike(leaves[i]) : second[i];
        }
        return all;
    }

    private static void assertSecondDerivativesMatchEager(TensorFunction f, Tensor x, Tensor[] leaves) {
        TensorFunction compiled = Jit.trace(f, x);
        Tensor[] eager = secondDerivatives(f, x, leaves);
        secondDerivatives(compiled, x, leaves);
        Tensor[] replayed = secondDerivatives(compiled, x, leaves);
        for (int i = 0; i < eager.length; i++) assertClose(eager[i], replayed[i], 1e-4f);
    }

    /**
     * A double backward (createGraph) through replayed multi-output nodes: the replay records each op's autograd as
     * eagerly (its registry derivative, differentiable under createGraph), so the second derivatives are eager's.
     * An LSTM cell loop reading hy and cy (the later outputs replayed with the first).
     */
    @Test
    void aDoubleBackwardThroughAnLstmCellLoopMatchesEager() {
        Torch.manualSeed(61);
        int hidden = 6;
        Tensor wi = randn(4 * hidden, 5).mul(0.3).requiresGrad_(true);
        Tensor wh = randn(4 * hidden, hidden).mul(0.3).requiresGrad_(true);
        Tensor x = randn(3, 5).requiresGrad_(true);
        TensorFunction f = in -> {
            Tensor h = Torch.zeros(new long[] {in[0].size(0), hidden}, DType.FLOAT32, in[0].device());
            Tensor c = h;
            for (int t = 0; t < 2; t++) {
                Recurrent.LstmStep s = Recurrent.lstmCell(F.linear(in[0], wi, null), F.linear(h, wh, null), c);
                h = s.hy();
                c = s.cy();
            }
            return h.mul(c);
        };
        String plan = Jit.explain(f, x);
        assertTrue(!plan.contains("runs eagerly") && plan.contains(", 0 fused)"), plan);
        assertSecondDerivativesMatchEager(f, x, new Tensor[] {x, wi, wh});
    }

    /**
     * Max pooling's indices read (values and indices from one replayed node), and layer norm's first output alone (on
     * the CPU one node of three outputs; CUDA composes it with batch norm's three). Without affine parameters so that no
     * pointwise chain is fused after it (a fused group's backward refuses a double backward with a clear error).
     */
    @Test
    void aDoubleBackwardThroughPoolingIndicesAndLayerNormMatchesEager() {
        Torch.manualSeed(62);
        Tensor img = randn(2, 3, 6, 6).requiresGrad_(true);
        int[] two = {2};
        TensorFunction f = in -> {
            var pooled = F.maxPool2dWithIndices(in[0], two, two, new int[] {0}, new int[] {1}, false);
            Tensor unpooled = F.maxUnpool2d(pooled.values().tanh(), pooled.indices(), two, two, new int[] {0}, null);
            Tensor rows = unpooled.reshape(2, 3, 36).slice(2, 0, 18, 1);
            return F.layerNorm(rows, new long[] {18}, null, null, 1e-5).sigmoid();
        };
        String plan = Jit.explain(f, img);
        assertTrue(!plan.contains("runs eagerly") && plan.contains(", 0 fused)"), plan);
        assertTrue(plan.contains("max_pool2d_with_indices (eager, 2 outputs, also read: %0.1)"), plan);
        if (DEVICE.isCpu()) assertTrue(plan.contains("native_layer_norm (eager, 3 outputs, the first read)"), plan);
        assertSecondDerivativesMatchEager(f, img, new Tensor[] {img});
    }
}
