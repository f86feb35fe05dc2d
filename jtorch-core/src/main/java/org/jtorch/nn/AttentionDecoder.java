package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * What {@link TransformerDecoderLayer} and {@link TransformerDecoder} share: decoding a target sequence against the
 * encoder's output ({@code memory}) under masks (any may be null). The shorter forms default the rest as PyTorch does.
 */
public interface AttentionDecoder {
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
