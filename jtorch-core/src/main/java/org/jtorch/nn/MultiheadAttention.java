package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * Multi-head attention with equal query, key and value sizes, as PyTorch 1.13's
 * {@code torch.nn.MultiheadAttention}: parameters {@code in_proj_weight} {@code [3E, E]},
 * {@code in_proj_bias} {@code [3E]} and the {@code out_proj} linear layer; inputs are
 * {@code [L, N, E]} ({@code [N, L, E]} with {@code batchFirst}) or unbatched {@code [L, E]}.
 *
 * <p>Masks follow the module's (not {@link F#scaledDotProductAttention}'s) convention: in a bool
 * {@code attnMask} ({@code [L, S]} or {@code [N * numHeads, L, S]}) or {@code keyPaddingMask}
 * ({@code [N, S]}), true means "may not attend"; floating masks are added to the scores.
 * Initialised as PyTorch: xavier_uniform in_proj_weight, zero biases, out_proj.weight as Linear.
 */
public class MultiheadAttention extends Module implements TupleModule<MultiheadAttention.Input, MultiheadAttention.Output> {
    /**
     * PyTorch's {@code (query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
     * average_attn_weights=True, is_causal=False)}: {@code new Input(q, k, v)} holds the defaults, and a wither per
     * keyword changes one, as the {@link F} options records: {@code new Input(x, x, x).attnMask(mask).needWeights(false)}.
     */
    public record Input(Tensor query, Tensor key, Tensor value, Tensor keyPaddingMask, boolean needWeights, Tensor attnMask,
                        boolean averageAttnWeights, boolean isCausal) {
        public Input {
            Arguments.nonNull("MultiheadAttention.Input", "query", query);
            Arguments.nonNull("MultiheadAttention.Input", "key", key);
            Arguments.nonNull("MultiheadAttention.Input", "value", value);
        }

        public Input(Tensor query, Tensor key, Tensor value) {
            this(query, key, value, null, true, null, true, false);
        }

        public Input keyPaddingMask(Tensor mask) {
            return new Input(query, key, value, mask, needWeights, attnMask, averageAttnWeights, isCausal);
        }

        public Input needWeights(boolean need) {
            return new Input(query, key, value, keyPaddingMask, need, attnMask, averageAttnWeights, isCausal);
        }

        public Input attnMask(Tensor mask) {
            return new Input(query, key, value, keyPaddingMask, needWeights, mask, averageAttnWeights, isCausal);
        }

        public Input averageAttnWeights(boolean average) {
            return new Input(query, key, value, keyPaddingMask, needWeights, attnMask, average, isCausal);
        }

        public Input isCausal(boolean causal) {
            return new Input(query, key, value, keyPaddingMask, needWeights, attnMask, averageAttnWeights, causal);
        }
    }

    private final long embedDim;
    private final long numHeads;
    private final double dropout;
    private final boolean batchFirst;
    private final Generator gen;
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private Linear outProj;

    /** The attention output and, when requested, the attention weights (null otherwise). Closing closes both. */
    public record Output(Tensor output, Tensor weights) implements AutoCloseable {
        public Output {
            Arguments.nonNull("MultiheadAttention.Output", "output", output);
        }

        @Override
        public void close() {
            output.close();
            if (weights != null) weights.close();
        }
    }

    public MultiheadAttention(long embedDim, long numHeads) {
        this(embedDim, numHeads, 0.0, true, false);
    }

    public MultiheadAttention(long embedDim, long numHeads, double dropout, boolean bias, boolean batchFirst) {
        this(embedDim, numHeads, dropout, bias, batchFirst, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public MultiheadAttention(long embedDim, long numHeads, double dropout, boolean bias, boolean batchFirst, DType dtype, Device device,
                              Generator gen) {
        Arguments.nonNull("MultiheadAttention", "dtype", dtype);
        Arguments.nonNull("MultiheadAttention", "device", device);
        Arguments.nonNull("MultiheadAttention", "gen", gen);
        if (numHeads <= 0 || embedDim % numHeads != 0) {
            throw new IllegalArgumentException("MultiheadAttention: embed_dim (" + embedDim + ") must be divisible by num_heads (" + numHeads + ")");
        }
        this.embedDim = embedDim;
        this.numHeads = numHeads;
        this.dropout = dropout;
        this.batchFirst = batchFirst;
        this.gen = gen;
        registerParameter("in_proj_weight", Tensor.empty(new long[] {3 * embedDim, embedDim}, dtype, device));
        registerParameter("in_proj_bias", bias ? Tensor.empty(new long[] {3 * embedDim}, dtype, device) : null);
        outProj = registerModule("out_proj", new Linear(embedDim, embedDim, bias, dtype, device, gen));
        resetParameters(gen);
    }

    public void resetParameters(Generator g) {
        Init.xavierUniform_(parameter("in_proj_weight"), 1.0, g);
        if (parameter("in_proj_bias") != null) {
            Init.zeros_(parameter("in_proj_bias"));
            Init.zeros_(outProj.bias());
        }
    }

    public Linear outProj() {
        return outProj;
    }

    /** Self-attention {@code forward(x, x, x)} without masks, returning the output only. */
    @Override
    public Tensor forward(Tensor x) {
        Output o = forward(x, x, x, null, false, null, true);
        return o.output();
    }

    /** The {@link TupleModule} form: every keyword from the record. */
    @Override
    public Output forward(Input input) {
        Arguments.nonNull("MultiheadAttention.forward", "input", input);
        return forward(input.query(), input.key(), input.value(), input.keyPaddingMask(), input.needWeights(), input.attnMask(),
                input.averageAttnWeights(), input.isCausal());
    }

    /** Attention with PyTorch's defaults: no masks, averaged weights returned. */
    public Output forward(Tensor query, Tensor key, Tensor value) {
        return forward(query, key, value, null, true, null, true);
    }

    /**
     * Attends from {@code query} to {@code key}/{@code value}. With {@code needWeights} the weights are
     * returned, {@code [N, L, S]} averaged over heads when {@code averageAttnWeights}, else
     * {@code [N, numHeads, L, S]} (without the batch dimension for unbatched input).
     */
    public Output forward(Tensor query, Tensor key, Tensor value, Tensor keyPaddingMask, boolean needWeights, Tensor attnMask,
                          boolean averageAttnWeights) {
        return forward(query, key, value, keyPaddingMask, needWeights, attnMask, averageAttnWeights, false);
    }

    /**
     * {@link #forward(Tensor, Tensor, Tensor, Tensor, boolean, Tensor, boolean)} with PyTorch 2's {@code is_causal} hint:
     * {@code attnMask} must be given and be the causal mask; without a key padding mask or weights to return, the
     * causal mask is then applied without reading {@code attnMask}.
     */
    public Output forward(Tensor query, Tensor key, Tensor value, Tensor keyPaddingMask, boolean needWeights, Tensor attnMask,
                          boolean averageAttnWeights, boolean isCausal) {
        Arguments.nonNull("MultiheadAttention", "query", query);
        Arguments.nonNull("MultiheadAttention", "key", key);
        Arguments.nonNull("MultiheadAttention", "value", value);
        if (isCausal && attnMask == null) {
            throw new IllegalArgumentException("MultiheadAttention: Need attn_mask if specifying the is_causal hint. You may use"
                    + " Transformer.generateSquareSubsequentMask to create this mask.");
        }
        boolean causalOnly = isCausal && keyPaddingMask == null && !needWeights;
        boolean batched = query.dim() == 3;
        if (!(batched || query.dim() == 2) || key.dim() != query.dim() || value.dim() != query.dim()) {
            throw new IllegalArgumentException("MultiheadAttention: expected query, key and value of 2 or 3 dimensions alike, got "
                    + Shapes.format(query.shape()) + ", " + Shapes.format(key.shape()) + ", " + Shapes.format(value.shape()));
        }
        if (query.size(-1) != embedDim || key.size(-1) != embedDim || value.size(-1) != embedDim) {
            throw new IllegalArgumentException("MultiheadAttention: was expecting embedding dimension of " + embedDim + ", but got "
                    + query.size(-1) + ", " + key.size(-1) + " and " + value.size(-1));
        }
        try (MemoryScope scope = new MemoryScope()) {
            Tensor q = toBatchFirst(query, batched);
            Tensor k = toBatchFirst(key, batched);
            Tensor v = toBatchFirst(value, batched);
            long n = q.size(0);
            long l = q.size(1);
            long s = k.size(1);
            if (k.size(0) != n || v.size(0) != n || v.size(1) != s) {
                throw new IllegalArgumentException("MultiheadAttention: key " + Shapes.format(key.shape()) + " and value "
                        + Shapes.format(value.shape()) + " shapes must match each other and the query's batch size");
            }
            Tensor w = parameter("in_proj_weight");
            Tensor b = parameter("in_proj_bias");
            Tensor qh = heads(project(q, w, b, 0), n, l);
            Tensor kh = heads(project(k, w, b, 1), n, s);
            Tensor vh = heads(project(v, w, b, 2), n, s);
            if (causalOnly) checkAttnMask(attnMask, n, l, s);
            Tensor mask = causalOnly ? null : mergeMasks(attnMask, keyPaddingMask, q.dtype(), n, l, s, batched);
            F.Attention att = F.attention(qh, kh, vh, mask, isTraining() ? dropout : 0, causalOnly, gen, needWeights);
            Tensor out = outProj.forward(att.output().transpose(1, 2).reshape(n, l, embedDim));
            out = batched ? (batchFirst ? out : out.transpose(0, 1)) : out.squeeze(0);
            Tensor weights = null;
            if (needWeights) {
                weights = averageAttnWeights ? att.weights().mean(1) : att.weights();
                if (!batched) weights = weights.squeeze(0);
                weights = scope.keep(weights);
            }
            return new Output(scope.keep(out), weights);
        }
    }

    private Tensor toBatchFirst(Tensor x, boolean batched) {
        if (!batched) return x.unsqueeze(0);
        return batchFirst ? x.alias() : x.transpose(0, 1);
    }

    /** Projection {@code which} (0 = query, 1 = key, 2 = value) through its rows of the packed in_proj weight. */
    private Tensor project(Tensor x, Tensor w, Tensor b, int which) {
        return F.linear(x, w.narrow(0, which * embedDim, embedDim), b == null ? null : b.narrow(0, which * embedDim, embedDim));
    }

    /** {@code [N, T, E]} to {@code [N, H, T, E / H]}. */
    private Tensor heads(Tensor x, long n, long t) {
        return x.view(n, t, numHeads, embedDim / numHeads).transpose(1, 2);
    }

    /** One additive float mask broadcastable to {@code [N, H, L, S]}, or null. */
    private Tensor mergeMasks(Tensor attnMask, Tensor keyPaddingMask, DType dtype, long n, long l, long s, boolean batched) {
        Tensor merged = null;
        if (attnMask != null) {
            checkAttnMask(attnMask, n, l, s);
            merged = additive(attnMask, dtype);
            if (attnMask.dim() == 3) merged = merged.view(n, numHeads, l, s);
        }
        if (keyPaddingMask != null) {
            long[] want = batched ? new long[] {n, s} : new long[] {s};
            if (!Arrays.equals(keyPaddingMask.shape(), want)) {
                throw new IllegalArgumentException("MultiheadAttention: expecting key_padding_mask shape of " + Shapes.format(want)
                        + ", but got " + Shapes.format(keyPaddingMask.shape()));
            }
            Tensor kpm = additive(keyPaddingMask, dtype).view(n, 1, 1, s);
            merged = merged == null ? kpm : merged.add(kpm);
        }
        return merged;
    }

    private void checkAttnMask(Tensor attnMask, long n, long l, long s) {
        long[] want2 = {l, s};
        long[] want3 = {n * numHeads, l, s};
        if (!Arrays.equals(attnMask.shape(), want2) && !Arrays.equals(attnMask.shape(), want3)) {
            throw new IllegalArgumentException("MultiheadAttention: attn_mask should have shape " + Shapes.format(want2) + " or "
                    + Shapes.format(want3) + ", but got " + Shapes.format(attnMask.shape()));
        }
    }

    private static Tensor additive(Tensor mask, DType dtype) {
        if (mask.dtype() == DType.BOOL) {
            return Torch.zeros(mask.shape(), dtype, mask.device()).maskedFill(mask, Double.NEGATIVE_INFINITY);
        }
        return mask.alias();
    }

    @Override
    protected String extraRepr() {
        return "";
    }
}
