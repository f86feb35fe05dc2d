package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * What {@link TransformerDecoderLayer} and {@link TransformerDecoder} share: decoding a target sequence against the
 * encoder's output ({@code memory}) under masks (any may be null). The shorter forms default the rest as PyTorch does;
 * {@link #forward(Input)} is the {@link TupleModule} form, PyTorch's {@code (tgt, memory, tgt_mask, ...)}.
 */
public interface AttentionDecoder extends TupleModule<AttentionDecoder.Input, Tensor> {
    /**
     * PyTorch's {@code (tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
     * memory_is_causal)}; null masks are {@code None}.
     */
    record Input(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask, Tensor memoryKeyPaddingMask,
                 boolean tgtIsCausal, boolean memoryIsCausal) {
        public Input {
            if (tgt == null) throw new NullPointerException("AttentionDecoder.Input: tgt must not be null");
            if (memory == null) throw new NullPointerException("AttentionDecoder.Input: memory must not be null");
        }

        /** {@code (tgt, memory)}. */
        public Input(Tensor tgt, Tensor memory) {
            this(tgt, memory, null, null, null, null, false, false);
        }

        /** {@code (tgt, memory, tgt_mask, memory_mask)}. */
        public Input(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask) {
            this(tgt, memory, tgtMask, memoryMask, null, null, false, false);
        }
    }

    @Override
    default Tensor forward(Input input) {
        if (input == null) throw new NullPointerException("AttentionDecoder.forward: input must not be null");
        return forward(input.tgt(), input.memory(), input.tgtMask(), input.memoryMask(), input.tgtKeyPaddingMask(),
                input.memoryKeyPaddingMask(), input.tgtIsCausal(), input.memoryIsCausal());
    }

    /**
     * {@code tgt} {@code [T, N, E]} attending to itself and to {@code memory} {@code [S, N, E]} ({@code [N, *, E]} batch
     * first, no {@code N} unbatched); {@code tgtMask} {@code [T, T]}, {@code memoryMask} {@code [T, S]} (or with a leading
     * {@code N * nhead}), key padding masks {@code [N, T]} and {@code [N, S]}; the {@code isCausal} flags hint that the
     * corresponding mask is causal.
     */
    Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
                   Tensor memoryKeyPaddingMask, boolean tgtIsCausal, boolean memoryIsCausal);

    default Tensor forward(Tensor tgt, Tensor memory) {
        return forward(tgt, memory, null, null, null, null, false, false);
    }

    default Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask) {
        return forward(tgt, memory, tgtMask, memoryMask, null, null, false, false);
    }

    default Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
                           Tensor memoryKeyPaddingMask) {
        return forward(tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, false, false);
    }
}
