package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * A stack of {@code numLayers} decoder layers and an optional final norm, as {@code torch.nn.TransformerDecoder}; the
 * layers are copies of the given one, as in {@link TransformerEncoder}.
 */
public class TransformerDecoder extends Module implements AttentionDecoder {
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private ModuleList layers;
    private LayerNorm norm;

    public TransformerDecoder(TransformerDecoderLayer decoderLayer, int numLayers) {
        this(decoderLayer, numLayers, null);
    }

    /** {@code norm} (may be null) is applied to the last layer's output; the decoder owns it from now on. */
    public TransformerDecoder(TransformerDecoderLayer decoderLayer, int numLayers, LayerNorm norm) {
        Arguments.nonNull("TransformerDecoder", "decoderLayer", decoderLayer);
        if (numLayers < 0) throw new IllegalArgumentException("TransformerDecoder: num_layers must not be negative, got " + numLayers);
        layers = registerModule("layers", new ModuleList());
        for (int i = 0; i < numLayers; i++) layers.add(Module.deepCopy(decoderLayer)); // as PyTorch's copy.deepcopy
        this.norm = norm == null ? null : registerModule("norm", norm);
    }

    public ModuleList layers() {
        return layers;
    }

    public TransformerDecoderLayer layer(int i) {
        return (TransformerDecoderLayer) layers.get(i);
    }

    /** A decoder needs the memory too: {@link #forward(Tensor, Tensor)}. */
    @Override
    public Tensor forward(Tensor tgt) {
        throw new UnsupportedOperationException("TransformerDecoder: forward needs the target and the memory: forward(tgt, memory)");
    }

    /** {@code tgt} through every layer, each attending to the same {@code memory} with the same masks, then the norm. */
    @Override
    public Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
                          Tensor memoryKeyPaddingMask, boolean tgtIsCausal, boolean memoryIsCausal) {
        Arguments.nonNull("TransformerDecoder", "tgt", tgt);
        Arguments.nonNull("TransformerDecoder", "memory", memory);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = tgt;
            for (Module layer : layers) {
                x = ((TransformerDecoderLayer) layer).forward(x, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask,
                        tgtIsCausal, memoryIsCausal);
            }
            if (norm != null) x = norm.forward(x);
            return scope.keep(x == tgt ? tgt.alias() : x);
        }
    }
}
