package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * A stack of {@code numLayers} encoder layers and an optional final norm, as {@code torch.nn.TransformerEncoder}. The
 * layers are copies of the given one (PyTorch deep-copies it), so they start with equal parameters; the given layer is
 * not part of the stack and stays the caller's. State-dict names: {@code layers.0.self_attn.in_proj_weight}, ...,
 * {@code norm.weight}.
 */
public class TransformerEncoder extends Module implements AttentionEncoder {
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private ModuleList layers;
    private LayerNorm norm;

    public TransformerEncoder(TransformerEncoderLayer encoderLayer, int numLayers) {
        this(encoderLayer, numLayers, null);
    }

    /** {@code norm} (may be null) is applied to the last layer's output; the encoder owns it from now on. */
    public TransformerEncoder(TransformerEncoderLayer encoderLayer, int numLayers, LayerNorm norm) {
        Arguments.nonNull("TransformerEncoder", "encoderLayer", encoderLayer);
        if (numLayers < 0) throw new IllegalArgumentException("TransformerEncoder: num_layers must not be negative, got " + numLayers);
        layers = registerModule("layers", new ModuleList());
        for (int i = 0; i < numLayers; i++) layers.add(Module.deepCopy(encoderLayer)); // as PyTorch's copy.deepcopy
        this.norm = norm == null ? null : registerModule("norm", norm);
    }

    public ModuleList layers() {
        return layers;
    }

    public TransformerEncoderLayer layer(int i) {
        return (TransformerEncoderLayer) layers.get(i);
    }

    @Override
    public Tensor forward(Tensor src) {
        return forward(src, null, null, false);
    }

    /** {@code src} through every layer with the same masks, then the norm. */
    @Override
    public Tensor forward(Tensor src, Tensor mask, Tensor srcKeyPaddingMask, boolean isCausal) {
        Arguments.nonNull("TransformerEncoder", "src", src);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = src;
            for (Module layer : layers) x = ((TransformerEncoderLayer) layer).forward(x, mask, srcKeyPaddingMask, isCausal);
            if (norm != null) x = norm.forward(x);
            return scope.keep(x == src ? src.alias() : x);
        }
    }
}
