package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * What {@link TransformerEncoderLayer} and {@link TransformerEncoder} share: encoding a source sequence under an
 * attention mask and a key padding mask (either may be null). The shorter forms default the rest as PyTorch does.
 */
public interface AttentionEncoder {
    /**
     * {@code src} {@code [S, N, E]} ({@code [N, S, E]} batch first, {@code [S, E]} unbatched) encoded; {@code mask}
     * {@code [S, S]} or {@code [N * nhead, S, S]}, {@code srcKeyPaddingMask} {@code [N, S]}; true (bool) or {@code -inf}
     * (floating) keeps a position from being attended to. {@code isCausal} is PyTorch 2's hint that {@code mask} is the
     * causal mask (it must then be given).
     */
    Tensor forward(Tensor src, Tensor mask, Tensor srcKeyPaddingMask, boolean isCausal);

    default Tensor forward(Tensor src, Tensor mask, Tensor srcKeyPaddingMask) {
        return forward(src, mask, srcKeyPaddingMask, false);
    }
}
