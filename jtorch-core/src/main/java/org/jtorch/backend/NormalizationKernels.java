package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Normalisation kernels (batch, group, instance norm): statistics, forward and backward.
 *
 * <p>Batch-norm kernels see the input as a contiguous {@code [n, c, s]} block (batch, channels,
 * spatial size); the front end makes it so. Per-channel tensors ({@code mean}, {@code invstd},
 * {@code weight}, {@code bias}, the gradients of weight and bias) are 1-D of length {@code c}, may be
 * strided and of any floating dtype; {@code weight}, {@code bias} and the outputs a caller does not
 * need may be null (a null weight is 1, a null bias 0). Statistics are accumulated in double (or in
 * float32 blocks summed into doubles), whatever the input's dtype.
 */
public interface NormalizationKernels {
    /** Per-channel mean and biased variance of {@code x} viewed as {@code [n, c, s]}, written into {@code mean} and {@code var}. */
    void batchNormStats(StridedView x, long n, long c, long s, StridedView mean, StridedView var);

    /**
     * Per-channel moments of one float32 block seen as {@code [images, channels, pixels]} (any strides): for block
     * channel {@code k}, the mean of its {@code images * pixels} values into {@code mean[k]} and the sum of their squared
     * deviations from that mean into {@code m2[k]}. A convolution's epilogue gathers a batch norm's statistics this way,
     * block by block while each block is in cache, and combines the blocks' moments (Chan's formula). Returns false,
     * having done nothing, where the backend does not read its memory on the host (then the caller takes the
     * statistics of the whole tensor with {@link #batchNormStats}).
     */
    default boolean blockMoments(StridedView block, double[] mean, double[] m2) {
        return false;
    }

    /**
     * Batch norm's per-channel step between its statistics and its normalising pass, as one kernel: each running statistic
     * (null: none) moved towards the batch's, {@code running = running * (1 - momentum) + alpha * batch} with {@code alpha}
     * {@code meanAlpha} for {@code runningMean} from {@code mean} and {@code varAlpha} for {@code runningVar} from {@code var},
     * then {@code invstd = 1 / sqrt(var + eps)} computed in float64 and rounded once, with the bits of
     * {@link NormalizationOpKernels}' composition of the backend's {@code mul}, {@code add}, {@code copy} and {@code rsqrt}
     * kernels. Returns false, having done nothing, where this backend has no such kernel for these operands (then the
     * caller composes it).
     */
    default boolean batchNormUpdateStats(StridedView mean, StridedView var, StridedView runningMean, StridedView runningVar,
                                         double momentum, double meanAlpha, double varAlpha, double eps, StridedView invstd) {
        return false;
    }

    /** {@code out = (x - mean[ch]) * invstd[ch] * weight[ch] + bias[ch]}; {@code out} is contiguous like {@code x}. */
    void batchNormApply(StridedView x, long n, long c, long s, StridedView mean, StridedView invstd, StridedView weight,
                        StridedView bias, StridedView out);

    /**
     * The fused backward of batch norm (PyTorch's {@code native_batch_norm_backward}) from the saved
     * {@code mean} and {@code invstd}. With {@code train} the statistics are functions of the input:
     * {@code gradInput = (g - mean(g) - xhat * mean(g * xhat)) * invstd * weight}; otherwise they are
     * constants and {@code gradInput = g * invstd * weight}. {@code gradWeight = sum(g * xhat)},
     * {@code gradBias = sum(g)} per channel. {@code gradOut} is contiguous {@code [n, c, s]}.
     */
    void batchNormBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean,
                           StridedView invstd, StridedView weight,
                           boolean train, StridedView gradInput, StridedView gradWeight, StridedView gradBias);

    /**
     * The input gradient from per-channel coefficients computed elsewhere ({@code batch_norm_backward_elemt}, whose sums
     * come from every rank): {@code gradInput = (g - (x - mean) * k - meanG) * a}, with {@code (a, k, meanG)} the rows of
     * {@code coef}, a contiguous {@code [c, 3]} float64 block on the kernel's device. {@code gradOut}, {@code x} and
     * {@code gradInput} are contiguous {@code [n, c, s]} blocks; {@link #batchNormBackward}'s input pass in training.
     */
    void batchNormGradInput(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView coef,
                            StridedView gradInput);

    /**
     * The synchronised batch norm's merge ({@code batch_norm_gather_stats_with_counts}) as one kernel of the backend's:
     * from the all-gathered {@code [ranks, c]} {@code mean} and {@code invstd} and the {@code [ranks]} {@code counts},
     * the merged {@code meanOut} and {@code invstdOut} ({@code [c]}), and the running statistics (null: none) moved by
     * {@code momentum}, with the bits of {@link NormalizationOpKernels}' composition of float64 pointwise kernels (the
     * same steps in the same order, each rounded once). Operands may be strided and of any floating dtype. Returns false,
     * having done nothing, where the backend has no such kernel (the caller composes it).
     */
    default boolean syncBatchNormGather(StridedView mean, StridedView invstd, StridedView counts, StridedView runningMean,
                                        StridedView runningVar, double momentum, double eps, StridedView meanOut, StridedView invstdOut) {
        return false;
    }

    /**
     * {@code batch_norm_backward_elemt}'s coefficients as one kernel: the contiguous {@code [c, 3]} float64 {@code coef}
     * that {@link #batchNormGradInput} reads ({@code invstd * weight} (invstd without a weight), {@code sum_dy_xmu / n *
     * invstd^2}, {@code sum_dy / n}, with {@code n} the sum of {@code counts}), with the bits of the composition. Returns
     * false, having done nothing, where the backend has no such kernel.
     */
    default boolean syncBatchNormCoefficients(StridedView invstd, StridedView weight, StridedView sumDy, StridedView sumDyXmu,
                                              StridedView counts, StridedView coef) {
        return false;
    }

    /**
     * {@link #batchNormBackward} in training of {@code relu(batch_norm(x))}: {@code gradOut} is the ReLU's incoming
     * gradient, masked where the ReLU's input {@code (x - mean) * invstd * weight + bias} is not positive (recomputed
     * from {@code x}; {@code weight} and {@code bias} null for 1 and 0) as the kernel reads it, without writing the
     * masked gradient. The JIT's backward of a batch norm fused with its ReLU. Returns false, having done nothing,
     * where this backend has no such kernel for these operands (then the caller masks the gradient itself).
     */
    default boolean batchNormReluBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                                          StridedView weight, StridedView bias, StridedView gradInput, StridedView gradWeight,
                                          StridedView gradBias) {
        return false;
    }

    /**
     * {@link #batchNormReluBackward} of a residual block's join, {@code relu(batch_norm(x) + residual)}: the ReLU's
     * input is {@code (x - mean) * invstd * weight + bias + residual}, and the masked gradient, which is also the
     * residual's gradient, is written to {@code masked} (contiguous {@code [n, c, s]}) by the pass that gathers the
     * per-channel sums, so it is computed and read once rather than by a pass of its own before batch norm's two. Returns
     * false, having done nothing, where this backend has no such kernel for these operands.
     */
    default boolean batchNormAddReluBackward(StridedView gradOut, StridedView x, StridedView residual, long n, long c, long s,
                                             StridedView mean, StridedView invstd, StridedView weight, StridedView bias,
                                             StridedView masked, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        return false;
    }

    /**
     * Fused layer norm over the rows of {@code x}, a contiguous {@code [rows, cols]} block of float32 or float64 ({@code weight}
     * and {@code bias} {@code [cols]} or null, and the outputs, contiguous of that dtype): per row {@code mean} and
     * {@code rstd = 1 / sqrt(var + eps)} (the variance biased), and {@code out = (x - mean) * rstd * weight + bias}. Returns
     * false, writing nothing, where this backend has no fused kernel ({@link #fusesLayerNorm}).
     */
    /**
     * Whether this backend has the fused layer norm kernels ({@link #layerNorm}, {@link #layerNormBackward}): where not, the
     * declared layer norm runs its decomposition (batch norm of the rows, then the affine) through the dispatcher.
     */
    default boolean fusesLayerNorm() {
        return false;
    }

    /**
     * The dtype of the {@code [rows, cols]} blocks (input, weight, bias, output and their gradients) this backend's fused layer
     * norm kernels take for an input of dtype {@code input} whose statistics are of dtype {@code statistics}: the statistics'
     * dtype by default (the caller converts a float16 or bfloat16 block to float32 first, and the result back), or the
     * input's own where the kernels read and write 16-bit rows themselves, computing in float32 (CUDA's, as PyTorch's).
     */
    default org.jtorch.types.DType layerNormBlockType(org.jtorch.types.DType input, org.jtorch.types.DType statistics) {
        return statistics;
    }

    default boolean layerNorm(StridedView x, long rows, long cols, StridedView weight, StridedView bias, double eps, StridedView out,
                              StridedView mean, StridedView rstd) {
        return false;
    }

    /**
     * The fused backward of {@link #layerNorm} (operands as there; {@code mean} and {@code rstd} as it wrote them): with
     * {@code xhat = (x - mean) * rstd} and {@code gw = gradOut * weight}, {@code gradInput = rstd * (gw - mean(gw) - xhat *
     * mean(gw * xhat))} per row, {@code gradWeight = sum(gradOut * xhat)} and {@code gradBias = sum(gradOut)} per column;
     * an output may be null. Returns false, writing nothing, where this backend has no fused kernel.
     */
    default boolean layerNormBackward(StridedView gradOut, StridedView x, long rows, long cols, StridedView mean, StridedView rstd,
                                      StridedView weight, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        return false;
    }
}
