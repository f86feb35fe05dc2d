package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Fused scaled-dot-product attention, as ATen's {@code _scaled_dot_product_flash_attention} and its backward:
 * {@code out = softmax(scale * q @ k^T + mask) @ v} computed a block of queries against a block of keys at a time
 * with an online softmax, so that the {@code L x S} score matrix is never held whole; the forward also writes each
 * query row's log-sum-exp of the masked, scaled scores, from which the backward recomputes the weights.
 *
 * <p>Operands: {@code q [batch..., L, E]}, {@code k [batch..., S, E]}, {@code v [batch..., S, Ev]}, all float32 with
 * the same batch dimensions and unit stride along their last dimension (other strides free: the heads of a
 * transposed projection need no copy). {@code mask} is null or a float32 view expanded to {@code [batch..., L, S]}
 * (stride 0 where broadcast) that is added to the scaled scores; {@code causal} keeps the keys {@code j <= i};
 * {@code dropoutScale} is null or a float32 {@code [batch..., L, S]} view by which the softmax weights are multiplied
 * (dropout's mask, {@code 0} or {@code 1 / (1 - p)}: drawn by the caller, so it is the composition's).
 * {@code out [batch..., L, Ev]} and the gradients (shaped as their inputs) have unit stride along their last dimension
 * and do not overlap; {@code logsumexp [batch..., L]} is contiguous; all are written whole. A row whose keys are all masked gets NaN outputs, as the softmax of the composition.
 */
public interface AttentionKernels {
    void forward(StridedView q, StridedView k, StridedView v, StridedView mask, boolean causal, double scale,
                 StridedView dropoutScale, StridedView out, StridedView logsumexp);

    /** The gradients of {@link #forward}'s output {@code out} (given {@code gradOut}) for q, k and v. */
    void backward(StridedView gradOut, StridedView q, StridedView k, StridedView v, StridedView mask, boolean causal, double scale,
                  StridedView dropoutScale, StridedView out, StridedView logsumexp, StridedView gradQ, StridedView gradK, StridedView gradV);
}
