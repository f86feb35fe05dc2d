package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The encoder-decoder transformer of "Attention Is All You Need", as {@code torch.nn.Transformer}: a
 * {@link TransformerEncoder} of {@code numEncoderLayers} layers and a final norm ({@code encoder}), and a
 * {@link TransformerDecoder} of {@code numDecoderLayers} layers and a final norm ({@code decoder}); state-dict names
 * {@code encoder.layers.0.self_attn.in_proj_weight}, ..., {@code encoder.norm.weight}, {@code decoder.layers.0.multihead_attn...},
 * {@code decoder.norm.bias}.
 *
 * <p>Initialisation, as PyTorch's {@code _reset_parameters}: after the layers are built, every parameter of more than
 * one dimension (the attention projections and the linear weights) is re-drawn from xavier-uniform, independently per
 * layer; biases keep their layer initialisation (zero in the attention, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) in the
 * linear layers) and the norms are ones and zeros.
 *
 * <p>{@link #forward(Input)} is the {@link TupleModule} form of the full call: PyTorch's {@code (src, tgt, src_mask, ...)}.
 */
public class Transformer extends Module implements TupleModule<Transformer.Input, Tensor> {
    /**
     * PyTorch's {@code (src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
     * memory_key_padding_mask, src_is_causal, tgt_is_causal, memory_is_causal)}; null masks are {@code None}.
     */
    public record Input(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask, Tensor memoryMask, Tensor srcKeyPaddingMask,
                        Tensor tgtKeyPaddingMask, Tensor memoryKeyPaddingMask, boolean srcIsCausal, boolean tgtIsCausal,
                        boolean memoryIsCausal) {
        public Input {
            Arguments.nonNull("Transformer.Input", "src", src);
            Arguments.nonNull("Transformer.Input", "tgt", tgt);
        }

        /** {@code (src, tgt)}. */
        public Input(Tensor src, Tensor tgt) {
            this(src, tgt, null, null, null, null, null, null, false, false, false);
        }

        /** {@code (src, tgt, src_mask, tgt_mask)}. */
        public Input(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask) {
            this(src, tgt, srcMask, tgtMask, null, null, null, null, false, false, false);
        }
    }

    private final long dModel;
    private final long nhead;
    private final boolean batchFirst;
    // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
    private AttentionEncoder encoder;
    private AttentionDecoder decoder;
    private final TransformerOptions options;

    /** PyTorch's defaults: {@code dModel} 512, 8 heads, 6 + 6 layers. */
    public Transformer() {
        this(512, 8, options());
    }

    public Transformer(long dModel, long nhead, TransformerOptions options) {
        this(dModel, nhead, (TransformerEncoder) null, (TransformerDecoder) null, options);
    }

    /**
     * With PyTorch's {@code custom_encoder} / {@code custom_decoder}: a given module (null: the usual stack) is registered
     * as {@code encoder} / {@code decoder} and owned from now on; its matrices are re-initialised with the rest.
     */
    public <E extends Module & AttentionEncoder, D extends Module & AttentionDecoder> Transformer(long dModel, long nhead,
            E customEncoder, D customDecoder, TransformerOptions options) {
        Arguments.nonNull("Transformer", "options", options);
        options.check("Transformer", dModel, nhead);
        this.dModel = dModel;
        this.nhead = nhead;
        this.options = options.copy();
        this.batchFirst = options.batchFirst;
        if (customEncoder != null) {
            encoder = registerModule("encoder", customEncoder);
        } else {
            try (TransformerEncoderLayer layer = new TransformerEncoderLayer(dModel, nhead, options)) {
                encoder = registerModule("encoder", new TransformerEncoder(layer, options.numEncoderLayers, options.layerNorm(dModel)));
            }
        }
        if (customDecoder != null) {
            decoder = registerModule("decoder", customDecoder);
        } else {
            try (TransformerDecoderLayer layer = new TransformerDecoderLayer(dModel, nhead, options)) {
                decoder = registerModule("decoder", new TransformerDecoder(layer, options.numDecoderLayers, options.layerNorm(dModel)));
            }
        }
        resetParameters();
    }

    public static TransformerOptions options() {
        return new TransformerOptions();
    }

    /** Xavier-uniform on every parameter of more than one dimension, from the options' generator. */
    public void resetParameters() {
        for (Tensor p : parameters()) {
            if (p.dim() > 1) Init.xavierUniform_(p, 1.0, options.generator);
        }
    }

    /** The encoder: a {@link TransformerEncoder} unless a custom one was given. */
    public AttentionEncoder encoder() {
        return encoder;
    }

    /** The decoder: a {@link TransformerDecoder} unless a custom one was given. */
    public AttentionDecoder decoder() {
        return decoder;
    }

    /**
     * A float {@code [size, size]} mask with {@code -inf} above the diagonal and {@code 0} elsewhere: position {@code i}
     * attends to positions {@code j <= i} (PyTorch's {@code generate_square_subsequent_mask}).
     */
    public static Tensor generateSquareSubsequentMask(long size) {
        return generateSquareSubsequentMask(size, Torch.defaultDtype(), Device.cpu());
    }

    public static Tensor generateSquareSubsequentMask(long size, DType dtype, Device device) {
        Arguments.nonNull("generateSquareSubsequentMask", "dtype", dtype);
        Arguments.nonNull("generateSquareSubsequentMask", "device", device);
        if (size < 0) throw new IllegalArgumentException("generateSquareSubsequentMask: size must not be negative, got " + size);
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("generateSquareSubsequentMask: the mask holds -inf, so its dtype must be floating, got " + dtype);
        }
        try (Tensor rows = Torch.arange(0, size, 1, DType.INT64, device).unsqueeze(1);
             Tensor cols = Torch.arange(0, size, 1, DType.INT64, device).unsqueeze(0);
             Tensor future = cols.gt(rows);
             Tensor zeros = Torch.zeros(new long[] {size, size}, dtype, device)) {
            return zeros.maskedFill(future, Double.NEGATIVE_INFINITY);
        }
    }

    /** A transformer needs the source and the target: {@link #forward(Tensor, Tensor)}. */
    @Override
    public Tensor forward(Tensor src) {
        throw new UnsupportedOperationException("Transformer: forward needs the source and the target: forward(src, tgt)");
    }

    public Tensor forward(Tensor src, Tensor tgt) {
        return forward(src, tgt, null, null, null, null, null, null, false, false, false);
    }

    /** The {@link TupleModule} form of the full call. */
    @Override
    public Tensor forward(Input input) {
        Arguments.nonNull("Transformer.forward", "input", input);
        return forward(input.src(), input.tgt(), input.srcMask(), input.tgtMask(), input.memoryMask(), input.srcKeyPaddingMask(),
                input.tgtKeyPaddingMask(), input.memoryKeyPaddingMask(), input.srcIsCausal(), input.tgtIsCausal(), input.memoryIsCausal());
    }

    public Tensor forward(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask) {
        return forward(src, tgt, srcMask, tgtMask, null, null, null, null, false, false, false);
    }

    public Tensor forward(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask, Tensor memoryMask, Tensor srcKeyPaddingMask,
                          Tensor tgtKeyPaddingMask, Tensor memoryKeyPaddingMask) {
        return forward(src, tgt, srcMask, tgtMask, memoryMask, srcKeyPaddingMask, tgtKeyPaddingMask, memoryKeyPaddingMask, false, false,
                false);
    }

    /**
     * Encodes {@code src} {@code [S, N, E]} and decodes {@code tgt} {@code [T, N, E]} against it ({@code [N, *, E]} with
     * {@code batchFirst}, no {@code N} unbatched). Masks: {@code srcMask} {@code [S, S]}, {@code tgtMask} {@code [T, T]},
     * {@code memoryMask} {@code [T, S]} (or with a leading {@code N * nhead}), key padding masks {@code [N, S]} / {@code [N, T]};
     * the {@code isCausal} flags hint that the corresponding mask is causal.
     */
    public Tensor forward(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask, Tensor memoryMask, Tensor srcKeyPaddingMask,
                          Tensor tgtKeyPaddingMask, Tensor memoryKeyPaddingMask, boolean srcIsCausal, boolean tgtIsCausal,
                          boolean memoryIsCausal) {
        Arguments.nonNull("Transformer", "src", src);
        Arguments.nonNull("Transformer", "tgt", tgt);
        if (src.dim() != tgt.dim() || (src.dim() != 2 && src.dim() != 3)) {
            throw new IllegalArgumentException("Transformer: src and tgt must both be batched (3-d) or unbatched (2-d), got "
                    + Shapes.format(src.shape()) + " and " + Shapes.format(tgt.shape()));
        }
        int batchDim = batchFirst ? 0 : 1;
        if (src.dim() == 3 && src.size(batchDim) != tgt.size(batchDim)) {
            throw new IllegalArgumentException("Transformer: the batch number of src and tgt must be equal, got "
                    + Shapes.format(src.shape()) + " and " + Shapes.format(tgt.shape()) + (batchFirst ? " (batch first)" : ""));
        }
        if (src.size(-1) != dModel || tgt.size(-1) != dModel) {
            throw new IllegalArgumentException("Transformer: the feature number of src and tgt must be equal to d_model (" + dModel
                    + "), got " + Shapes.format(src.shape()) + " and " + Shapes.format(tgt.shape()));
        }
        try (MemoryScope scope = new MemoryScope()) {
            Tensor memory = encoder.forward(src, srcMask, srcKeyPaddingMask, srcIsCausal);
            return scope.keep(decoder.forward(tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, tgtIsCausal,
                    memoryIsCausal));
        }
    }
}
