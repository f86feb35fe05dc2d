package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * One decoder layer, as {@code torch.nn.TransformerDecoderLayer}: masked self-attention over the target, attention from
 * the target to the encoder's output ({@code memory}), then the feed-forward block, each with a residual connection and
 * a layer norm (post-norm, or pre-norm with {@code normFirst}).
 *
 * <p>Submodules carry PyTorch's names: {@code self_attn}, {@code multihead_attn}, {@code linear1}, {@code dropout},
 * {@code linear2}, {@code norm1}, {@code norm2}, {@code norm3}, {@code dropout1}, {@code dropout2}, {@code dropout3};
 * initialisation and mask conventions as {@link TransformerEncoderLayer}.
 */
public class TransformerDecoderLayer extends Module implements AttentionDecoder {
    private final long dModel;
    private final long nhead;
    private final TransformerOptions options;
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private MultiheadAttention selfAttn;
    private MultiheadAttention multiheadAttn;
    private Linear linear1;
    private Dropout dropout;
    private Linear linear2;
    private LayerNorm norm1;
    private LayerNorm norm2;
    private LayerNorm norm3;
    private Dropout dropout1;
    private Dropout dropout2;
    private Dropout dropout3;

    public TransformerDecoderLayer(long dModel, long nhead) {
        this(dModel, nhead, options());
    }

    public TransformerDecoderLayer(long dModel, long nhead, TransformerOptions options) {
        Arguments.nonNull("TransformerDecoderLayer", "options", options);
        options.check("TransformerDecoderLayer", dModel, nhead);
        this.dModel = dModel;
        this.nhead = nhead;
        this.options = options.copy();
        TransformerOptions o = this.options;
        selfAttn = registerModule("self_attn", o.attention(dModel, nhead));
        multiheadAttn = registerModule("multihead_attn", o.attention(dModel, nhead));
        linear1 = registerModule("linear1", o.linear(dModel, o.dimFeedforward));
        dropout = registerModule("dropout", o.dropoutLayer());
        linear2 = registerModule("linear2", o.linear(o.dimFeedforward, dModel));
        norm1 = registerModule("norm1", o.layerNorm(dModel));
        norm2 = registerModule("norm2", o.layerNorm(dModel));
        norm3 = registerModule("norm3", o.layerNorm(dModel));
        dropout1 = registerModule("dropout1", o.dropoutLayer());
        dropout2 = registerModule("dropout2", o.dropoutLayer());
        dropout3 = registerModule("dropout3", o.dropoutLayer());
    }

    public static TransformerOptions options() {
        return new TransformerOptions();
    }

    public MultiheadAttention selfAttn() {
        return selfAttn;
    }

    public MultiheadAttention multiheadAttn() {
        return multiheadAttn;
    }

    /** A decoder layer needs the memory too: {@link #forward(Tensor, Tensor)}. */
    @Override
    public Tensor forward(Tensor tgt) {
        throw new UnsupportedOperationException("TransformerDecoderLayer: forward needs the target and the memory: forward(tgt, memory)");
    }

    @Override
    public Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
                          Tensor memoryKeyPaddingMask, boolean tgtIsCausal, boolean memoryIsCausal) {
        Arguments.nonNull("TransformerDecoderLayer", "tgt", tgt);
        Arguments.nonNull("TransformerDecoderLayer", "memory", memory);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = tgt;
            if (options.normFirst) {
                x = x.add(selfAttention(norm1.forward(x), tgtMask, tgtKeyPaddingMask, tgtIsCausal));
                x = x.add(memoryAttention(norm2.forward(x), memory, memoryMask, memoryKeyPaddingMask, memoryIsCausal));
                x = x.add(feedForwardBlock(norm3.forward(x)));
            } else {
                x = norm1.forward(x.add(selfAttention(x, tgtMask, tgtKeyPaddingMask, tgtIsCausal)));
                x = norm2.forward(x.add(memoryAttention(x, memory, memoryMask, memoryKeyPaddingMask, memoryIsCausal)));
                x = norm3.forward(x.add(feedForwardBlock(x)));
            }
            return scope.keep(x);
        }
    }

    private Tensor selfAttention(Tensor x, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
        return TransformerEncoderLayer.attend(selfAttn, dropout1, x, x, mask, keyPaddingMask, isCausal);
    }

    private Tensor memoryAttention(Tensor x, Tensor memory, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
        return TransformerEncoderLayer.attend(multiheadAttn, dropout2, x, memory, mask, keyPaddingMask, isCausal);
    }

    private Tensor feedForwardBlock(Tensor x) {
        return TransformerEncoderLayer.feedForward(options, linear1, dropout, linear2, dropout3, x);
    }
}
