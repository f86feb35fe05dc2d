package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.AttentionOps;
import org.jtorch.types.DType;

/**
 * Scaled dot-product attention written with ops: the weights {@code softmax(q @ k^T * scale + masks)}, the composition
 * {@link AttentionOps#ATTENTION_MATH} that the dispatcher runs where no fused kernel takes a call, and the fused op's
 * backward as differentiable ops ({@link AttentionOps#FLASH_ATTENTION_BACKWARD_COMPOSITE}).
 */
public final class Attention {
    private Attention() {}

    /**
     * {@code softmax(q @ k^T * scale + masks)}: the attention weights before dropout. A bool {@code attnMask} keeps the
     * positions where it is true, a floating one is added; {@code isCausal} keeps {@code j <= i}.
     */
    public static Tensor weights(Tensor q, Tensor k, Tensor attnMask, boolean isCausal, double scale) {
        long l = q.size(-2);
        long s = k.size(-2);
        Tensor scores = q.matmul(k.transpose(-2, -1)).mul(scale);
        // Masks are applied as additive -inf/0 tensors, so the scores' gradient flows through one add.
        if (isCausal) {
            Tensor keep = Torch.arange(0, l, 1, DType.INT64, scores.device()).unsqueeze(1)
                    .ge(Torch.arange(0, s, 1, DType.INT64, scores.device()).unsqueeze(0));
            scores = scores.add(additiveMask(keep, scores));
        }
        if (attnMask != null) {
            scores = scores.add(attnMask.dtype() == DType.BOOL ? additiveMask(attnMask, scores) : attnMask);
        }
        return scores.softmax(-1);
    }

    /** 0 where {@code keep} is true, -inf elsewhere, in {@code like}'s dtype and device. */
    public static Tensor additiveMask(Tensor keep, Tensor like) {
        try (Tensor zeros = Torch.zeros(keep.shape(), like.dtype(), like.device()); Tensor drop = keep.logicalNot()) {
            return zeros.maskedFill(drop, Double.NEGATIVE_INFINITY);
        }
    }

    /** {@link AttentionOps#ATTENTION_MATH}: the weights, times {@code dropoutMask} where given, then {@code @ v}. */
    static Tensor math(Tensor q, Tensor k, Tensor v, Tensor attnMask, Tensor dropoutMask, boolean isCausal, double scale) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor weights = weights(q, k, attnMask, isCausal, scale);
            if (dropoutMask != null) weights = weights.mul(dropoutMask);
            return scope.keep(weights.matmul(v));
        }
    }

    /**
     * Gradient {@code output} (0: q, 1: k, 2: v) of the attention as ops, differentiable again: with {@code P} the weights
     * recomputed by the composition and {@code D} the dropout mask (1 without), {@code dV = (P D)^T dO},
     * {@code G = (dO V^T) D}, {@code dS = P (G - rowsum(G P))}, {@code dQ = dS K scale}, {@code dK = dS^T Q scale}.
     */
    static Tensor backwardComposite(Tensor gradOut, Tensor q, Tensor k, Tensor v, Tensor attnMask, Tensor dropoutMask,
                                    boolean isCausal, double scale, int output) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor p = weights(q, k, attnMask, isCausal, scale);
            if (output == 2) return scope.keep((dropoutMask == null ? p : p.mul(dropoutMask)).transpose(-2, -1).matmul(gradOut));
            Tensor gp = gradOut.matmul(v.transpose(-2, -1));
            if (dropoutMask != null) gp = gp.mul(dropoutMask);
            Tensor gs = p.mul(gp.sub(gp.mul(p).sum(new int[] {-1}, true))).mul(scale);
            return scope.keep(output == 0 ? gs.matmul(k) : gs.transpose(-2, -1).matmul(q));
        }
    }
}
