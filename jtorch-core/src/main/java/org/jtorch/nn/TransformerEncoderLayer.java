package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * One encoder layer of "Attention Is All You Need", as {@code torch.nn.TransformerEncoderLayer}: self-attention, then
 * the feed-forward block {@code linear2(dropout(activation(linear1(x))))}, each with a residual connection and a layer
 * norm, after the residual sum (post-norm, the default) or on the branch's input ({@code normFirst}).
 *
 * <p>Submodules carry PyTorch's names, so state dicts move both ways: {@code self_attn} ({@link MultiheadAttention}:
 * {@code in_proj_weight}, {@code in_proj_bias}, {@code out_proj}), {@code linear1}, {@code dropout}, {@code linear2},
 * {@code norm1}, {@code norm2}, {@code dropout1}, {@code dropout2}. Initialised as PyTorch's layer: the attention as
 * {@link MultiheadAttention} (xavier-uniform input projection, zero biases), the linear layers as {@link Linear}, the
 * norms to ones and zeros ({@link Transformer} then re-initialises every matrix, see there).
 *
 * <p>Masks ({@code srcMask} {@code [T, T]} or {@code [N * nhead, T, T]}, {@code srcKeyPaddingMask} {@code [N, T]}) follow
 * {@link MultiheadAttention}: true, or {@code -inf} when floating, keeps a position from being attended to. PyTorch's
 * inference fast path (nested tensors that zero padded positions) is not reproduced: padded positions get values.
 */
public class TransformerEncoderLayer extends Module implements AttentionEncoder {
    private final long dModel;
    private final long nhead;
    private final TransformerOptions options;
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private MultiheadAttention selfAttn;
    private Linear linear1;
    private Dropout dropout;
    private Linear linear2;
    private LayerNorm norm1;
    private LayerNorm norm2;
    private Dropout dropout1;
    private Dropout dropout2;

    public TransformerEncoderLayer(long dModel, long nhead) {
        this(dModel, nhead, options());
    }

    public TransformerEncoderLayer(long dModel, long nhead, TransformerOptions options) {
        Arguments.nonNull("TransformerEncoderLayer", "options", options);
        options.check("TransformerEncoderLayer", dModel, nhead);
        this.dModel = dModel;
        this.nhead = nhead;
        this.options = options.copy();
        TransformerOptions o = this.options;
        selfAttn = registerModule("self_attn", o.attention(dModel, nhead));
        linear1 = registerModule("linear1", o.linear(dModel, o.dimFeedforward));
        dropout = registerModule("dropout", o.dropoutLayer());
        linear2 = registerModule("linear2", o.linear(o.dimFeedforward, dModel));
        norm1 = registerModule("norm1", o.layerNorm(dModel));
        norm2 = registerModule("norm2", o.layerNorm(dModel));
        dropout1 = registerModule("dropout1", o.dropoutLayer());
        dropout2 = registerModule("dropout2", o.dropoutLayer());
    }

    public static TransformerOptions options() {
        return new TransformerOptions();
    }

    public MultiheadAttention selfAttn() {
        return selfAttn;
    }

    public boolean batchFirst() {
        return options.batchFirst;
    }

    /** The layer without masks. */
    @Override
    public Tensor forward(Tensor src) {
        return forward(src, null, null, false);
    }

    @Override
    public Tensor forward(Tensor src, Tensor srcMask, Tensor srcKeyPaddingMask, boolean isCausal) {
        Arguments.nonNull("TransformerEncoderLayer", "src", src);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = src;
            if (options.normFirst) {
                x = x.add(selfAttentionBlock(norm1.forward(x), srcMask, srcKeyPaddingMask, isCausal));
                x = x.add(feedForwardBlock(norm2.forward(x)));
            } else {
                x = norm1.forward(x.add(selfAttentionBlock(x, srcMask, srcKeyPaddingMask, isCausal)));
                x = norm2.forward(x.add(feedForwardBlock(x)));
            }
            return scope.keep(x);
        }
    }

    private Tensor selfAttentionBlock(Tensor x, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
        return attend(selfAttn, dropout1, x, x, mask, keyPaddingMask, isCausal);
    }

    private Tensor feedForwardBlock(Tensor x) {
        return feedForward(options, linear1, dropout, linear2, dropout2, x);
    }

    /** The attention branch of a layer: {@code query} attends to {@code keyValue}, then the branch's dropout. */
    static Tensor attend(MultiheadAttention attention, Dropout drop, Tensor query, Tensor keyValue, Tensor mask, Tensor keyPaddingMask,
                         boolean isCausal) {
        return drop.forward(attention.forward(query, keyValue, keyValue, keyPaddingMask, false, mask, true, isCausal).output());
    }

    /** The feed-forward branch {@code out(linear2(dropout(activation(linear1(x)))))}. */
    static Tensor feedForward(TransformerOptions o, Linear linear1, Dropout dropout, Linear linear2, Dropout out, Tensor x) {
        return out.forward(linear2.forward(dropout.forward(o.activation.apply(linear1.forward(x)))));
    }
}
