package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * What {@link TransformerEncoderLayer} and {@link TransformerEncoder} share: encoding a source sequence under an
 * attention mask and a key padding mask (either may be null). The shorter forms default the rest as PyTorch does.
 */
public interface AttentionEncoder extends TupleModule<AttentionEncoder.Input, Tensor> {
    /**
     * PyTorch's {@code (src, mask, src_key_padding_mask, is_causal)}, for the {@link TupleModule} form; null masks are
     * {@code None}.
     */
    record Input(Tensor src, Tensor mask, Tensor srcKeyPaddingMask, boolean isCausal) {
        public Input {
            if (src == null) throw new NullPointerException("AttentionEncoder.Input: src must not be null");
        }

        /** {@code (src, mask)}. */
        public Input(Tensor src, Tensor mask) {
            this(src, mask, null, false);
        }
    }

    @Override
    default Tensor forward(Input input) {
        if (input == null) throw new NullPointerException("AttentionEncoder.forward: input must not be null");
        return forward(input.src(), input.mask(), input.srcKeyPaddingMask(), input.isCausal());
    }

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
