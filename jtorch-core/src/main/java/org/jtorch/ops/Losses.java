package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.IndexErrorContext;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.LossOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;

/**
 * The class-index losses written with ops: cross entropy as {@code log_softmax} then {@code nll_loss}
 * ({@link LossOps#CROSS_ENTROPY_COMPOSITE}, the fused cross entropy's decomposition) and {@code nll_loss} itself. The
 * reduction is PyTorch's {@code at::Reduction} value ({@link LossOps#NONE}, {@link LossOps#MEAN}, {@link LossOps#SUM});
 * {@code op} names the caller in error messages.
 */
public final class Losses {
    private Losses() {}

    /**
     * Cross entropy of logits {@code input} ({@code [N, C, d...]} or {@code [C]}) at class indices {@code target}: the
     * nll_loss of their log_softmax over the class dimension, mixed with the label smoothing term
     * ({@code (1 - ls) nll + ls / C smooth}) as PyTorch 1.13.
     */
    public static Tensor crossEntropy(Tensor input, Tensor target, Tensor weight, int reduction, long ignoreIndex,
                                      double labelSmoothing) {
        String op = "crossEntropy";
        int classDim = input.dim() == 1 ? 0 : 1;
        long classes = input.size(classDim);
        return MemoryScope.run(() -> {
            Tensor logp = input.logSoftmax(classDim);
            Tensor nll = nllLoss(op, logp, target, weight, ignoreIndex, reduction);
            if (labelSmoothing == 0) return nll;
            Tensor ignored = target.eq((double) ignoreIndex);
            Tensor smooth = weight != null ? logp.mul(weight.view(classWeightShape(input.dim(), classDim, classes))) : logp;
            smooth = smooth.sum(classDim).neg().maskedFill(ignored, 0);
            Tensor reduced = switch (reduction) {
                case LossOps.NONE -> smooth;
                case LossOps.SUM -> smooth.sum();
                default -> {
                    if (weight == null) yield smooth.sum().div(ignored.logicalNot().sum().to(smooth.dtype()));
                    // Normalised by the summed weights of the non-ignored targets, as nll_loss's mean.
                    Tensor kept = target.maskedSelect(ignored.logicalNot()).reshape(-1);
                    yield smooth.sum().div(weight.indexSelect(0, kept).sum());
                }
            };
            return nll.mul(1 - labelSmoothing).add(reduced.mul(labelSmoothing / classes));
        });
    }

    /** The shape that broadcasts a {@code [C]} class weight along dimension {@code classDim} of a rank-{@code rank} tensor. */
    public static long[] classWeightShape(int rank, int classDim, long classes) {
        long[] s = new long[rank];
        Arrays.fill(s, 1);
        s[classDim] = classes;
        return s;
    }

    /**
     * Negative log likelihood of log-probabilities {@code input} ({@code [N, C, d...]} or {@code [C]}) at class indices
     * {@code target} ({@code [N, d...]} or 0-d): {@code -weight[t] * input[n, t]}, zero where {@code target == ignoreIndex};
     * the mean divides by the summed weights of the non-ignored targets (NaN when all are ignored), as PyTorch. Checks the
     * arguments, then calls the declared {@link LossOps#NLL_LOSS} (a fused kernel, or its decomposition
     * {@link #nllLossComposite}); an index error is reworded under {@code op}, its cause kept.
     */
    public static Tensor nllLoss(String op, Tensor input, Tensor target, Tensor weight, long ignoreIndex, int reduction) {
        if (input.dim() == 0) throw new IllegalArgumentException(op + ": input must have at least 1 dimension (classes)");
        if (target.dtype() != DType.INT64 && target.dtype() != DType.INT32) {
            throw new IllegalArgumentException(op + ": expected a target of class indices (int64), got " + target.dtype());
        }
        boolean unbatched = input.dim() == 1;
        long[] expectTarget = unbatched ? new long[0] : removeDim(input.shape(), 1);
        if (!Arrays.equals(target.shape(), expectTarget)) {
            if (!unbatched && target.dim() > 0 && target.size(0) != input.size(0)) {
                throw new IllegalArgumentException(op + ": Expected input batch_size (" + input.size(0) + ") to match target batch_size ("
                        + target.size(0) + ").");
            }
            throw new IllegalArgumentException(op + ": expected target of shape " + Shapes.format(expectTarget) + " for input of shape "
                    + Shapes.format(input.shape()) + ", got " + Shapes.format(target.shape()));
        }
        checkClassWeight(op, weight, input.size(unbatched ? 0 : 1));
        String named = op + ": ";
        try {
            // a backend that reports a bad index later (CUDA's deferred checks) names the loss then too
            return IndexErrorContext.run(named, () -> Dispatcher.call(LossOps.NLL_LOSS, new Tensor[] {input, target, weight}, reduction,
                    ignoreIndex));
        } catch (IndexOutOfBoundsException e) {
            if (e.getMessage() != null && e.getMessage().startsWith(named)) throw e;
            IndexOutOfBoundsException r = new IndexOutOfBoundsException(named + e.getMessage());
            r.initCause(e);
            throw r;
        }
    }

    /**
     * {@link LossOps#NLL_LOSS} written with ops ({@link LossOps#NLL_LOSS_COMPOSITE}), for arguments its caller checked. On
     * the CPU the targets are checked on the host, and the common case (no weight, nothing ignored) gathers the targets'
     * log-probabilities; other cases mask the ignored targets and gather the weights.
     */
    static Tensor nllLossComposite(Tensor input, Tensor target, Tensor weight, int reduction, long ignoreIndex) {
        boolean unbatched = input.dim() == 1;
        long classes = input.size(unbatched ? 0 : 1);
        if (!target.device().isCpu()) return nllLossOnDevice(input, target, weight, ignoreIndex, reduction, classes);
        boolean anyIgnored = false;
        for (long t : target.toLongArray()) {
            if (t == ignoreIndex) {
                anyIgnored = true;
            } else if (t < 0 || t >= classes) {
                throw new IndexOutOfBoundsException("Target " + t + " is out of bounds (" + classes + " classes).");
            }
        }
        if (weight == null && !anyIgnored && target.dtype() == DType.INT64) {
            // The common case needs no masks or weights: pick the targets' log-probabilities.
            return MemoryScope.run(() -> {
                Tensor x = unbatched ? input.unsqueeze(0) : input;
                Tensor t = unbatched ? target.unsqueeze(0) : target;
                Tensor picked = x.gather(1, t.unsqueeze(1)).squeeze(1);
                return switch (reduction) {
                    case LossOps.NONE -> unbatched ? picked.squeeze(0).neg() : picked.neg();
                    case LossOps.SUM -> picked.sum().neg();
                    default -> picked.numel() == 0 ? picked.sum().mul(Double.NaN) : picked.sum().mul(-1.0 / picked.numel());
                };
            });
        }
        return maskedNllLoss(input, target, weight, ignoreIndex, reduction);
    }

    /**
     * On an accelerator the targets are not read on the host (that would copy them and wait for the device on
     * every call): ignored targets are masked on the device, and one out of range is caught by gather's own
     * index check, reported as a target out of bounds (the caller adds the loss's name): here when the check throws at
     * once, or at the device's next synchronisation (CUDA's deferred index checks) through the {@link IndexErrorContext}.
     */
    private static Tensor nllLossOnDevice(Tensor input, Tensor target, Tensor weight, long ignoreIndex, int reduction, long classes) {
        String outOfBounds = "a target is out of bounds (" + classes + " classes): ";
        try {
            return IndexErrorContext.run(outOfBounds, () -> maskedNllLoss(input, target, weight, ignoreIndex, reduction));
        } catch (IndexOutOfBoundsException e) {
            IndexOutOfBoundsException r = new IndexOutOfBoundsException(outOfBounds + e.getMessage());
            r.initCause(e);
            throw r;
        }
    }

    /**
     * The gradient of {@link LossOps#NLL_LOSS} with respect to {@code x} ({@code [N, C, d...]}) as differentiable ops, as the
     * fused backward computes it: {@code -w_t grad_out} at each kept target (over the summed kept weights for the mean),
     * zero elsewhere ({@link LossOps#NLL_LOSS_BACKWARD_COMPOSITE}, for gradients of gradients).
     */
    static Tensor nllLossBackwardComposite(Tensor gradOut, Tensor x, Tensor target, Tensor weight, int reduction, long ignoreIndex) {
        long classes = x.size(1);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor kept = target.ne((double) ignoreIndex);
            Tensor safe = target.maskedFill(kept.logicalNot(), 0);
            Tensor keptF = kept.to(x.dtype());
            Tensor wt = weight == null ? keptF : weight.indexSelect(0, safe.reshape(-1)).view(safe.shape()).mul(keptF);
            Tensor scaled = switch (reduction) {
                case LossOps.NONE -> wt.mul(gradOut);
                case LossOps.SUM -> wt.mul(gradOut.reshape());
                default -> wt.mul(gradOut.reshape().div(wt.sum()));
            };
            long[] classShape = classWeightShape(x.dim(), 1, classes);
            Tensor onehot = Torch.arange(0, classes, 1, DType.INT64, x.device()).view(classShape).eq(safe.unsqueeze(1)).to(x.dtype());
            return scope.keep(onehot.mul(scaled.neg().unsqueeze(1)));
        }
    }

    /** The loss with ignored targets masked and per-class weights gathered: right for every target. */
    private static Tensor maskedNllLoss(Tensor input, Tensor target, Tensor weight, long ignoreIndex, int reduction) {
        boolean unbatched = input.dim() == 1;
        return MemoryScope.run(() -> {
            Tensor x = unbatched ? input.unsqueeze(0) : input;
            Tensor t = (unbatched ? target.unsqueeze(0) : target).to(DType.INT64);
            Tensor ignored = t.eq((double) ignoreIndex);
            Tensor safe = t.maskedFill(ignored, 0);
            Tensor picked = x.gather(1, safe.unsqueeze(1)).squeeze(1).maskedFill(ignored, 0);
            Tensor w = weight == null ? ignored.logicalNot().to(x.dtype())
                    : weight.indexSelect(0, safe.reshape(-1)).view(safe.shape()).maskedFill(ignored, 0);
            Tensor loss = picked.mul(w).neg();
            return switch (reduction) {
                case LossOps.NONE -> unbatched ? loss.squeeze(0) : loss;
                case LossOps.SUM -> loss.sum();
                default -> loss.sum().div(w.sum());
            };
        });
    }

    private static long[] removeDim(long[] s, int d) {
        long[] r = new long[s.length - 1];
        for (int i = 0, j = 0; i < s.length; i++) if (i != d) r[j++] = s[i];
        return r;
    }

    /** Checks that a class weight (may be null) has one element per class. */
    public static void checkClassWeight(String op, Tensor weight, long classes) {
        if (weight != null && (weight.dim() != 1 || weight.size(0) != classes)) {
            throw new IllegalArgumentException(op + ": weight tensor should be defined either for all " + classes
                    + " classes or no classes but got weight tensor of shape: " + Shapes.format(weight.shape()));
        }
    }

    // ------------------------------------------------------------------ F's losses: their checks, then the declared op

    /**
     * {@code F.cross_entropy} ({@link LossOps#CROSS_ENTROPY_LOSS}): class indices over {@link LossOps#CROSS_ENTROPY_FUSED},
     * class probabilities (a floating target of the input's shape) as log_softmax and a weighted sum. Autocast applies the
     * op's policy; the trace sees the ops inside.
     */
    public static Tensor crossEntropyLoss(Tensor input, Tensor target, Tensor weight, int reduction, long ignoreIndex, double labelSmoothing) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(LossOps.CROSS_ENTROPY_LOSS, new Tensor[] {input, target, weight}, null,
                    t -> crossEntropyLossOf(t[0], t[1], t[2], reduction, ignoreIndex, labelSmoothing));
        }
        return crossEntropyLossOf(input, target, weight, reduction, ignoreIndex, labelSmoothing);
    }

    private static Tensor crossEntropyLossOf(Tensor input, Tensor target, Tensor weight, int reduction, long ignoreIndex, double labelSmoothing) {
        if (!(labelSmoothing >= 0 && labelSmoothing <= 1)) {
            throw new IllegalArgumentException("crossEntropy: label_smoothing must be between 0.0 and 1.0. Got: " + labelSmoothing + " ("
                    + operands(input, target) + ")");
        }
        if (input.dim() == 0) throw new IllegalArgumentException("crossEntropy: input must have at least 1 dimension (classes), got " + operands(input, target));
        int classDim = input.dim() == 1 ? 0 : 1;
        long classes = input.size(classDim);
        checkClassWeight("crossEntropy", weight, classes);
        if (target.dtype().isFloatingPoint()) {
            if (!Arrays.equals(input.shape(), target.shape())) {
                throw new IllegalArgumentException("crossEntropy: expected class-probability target of the input's shape "
                        + Shapes.format(input.shape()) + ", got " + Shapes.format(target.shape()) + " (" + operands(input, target) + ")");
            }
            return MemoryScope.run(() -> {
                Tensor logp = input.logSoftmax(classDim);
                Tensor t = labelSmoothing > 0 ? target.mul(1 - labelSmoothing).add(labelSmoothing / classes) : target;
                Tensor prod = logp.mul(t);
                if (weight != null) prod = prod.mul(weight.view(classWeightShape(input.dim(), classDim, classes)));
                return switch (reduction) {
                    case LossOps.NONE -> prod.sum(classDim).neg();
                    case LossOps.SUM -> prod.sum().neg();
                    default -> input.numel() == 0 ? prod.sum().mul(Double.NaN) : prod.sum().neg().div((double) (input.numel() / classes));
                };
            });
        }
        try {
            return Dispatcher.call(LossOps.CROSS_ENTROPY_FUSED, new Tensor[] {input, target, weight}, reduction, ignoreIndex, labelSmoothing);
        } catch (IndexOutOfBoundsException e) {
            // the decomposition names the loss itself; the fused kernel reports the target only
            if (e.getMessage() != null && e.getMessage().startsWith("crossEntropy")) throw e;
            IndexOutOfBoundsException named = new IndexOutOfBoundsException("crossEntropy: " + e.getMessage());
            named.initCause(e);
            throw named;
        }
    }

    /** {@code F.mse_loss}: floating operands, then {@link LossOps#MSE_LOSS_FUSED} (its kernel or its composition, as the dispatcher chooses). */
    public static Tensor mseLoss(Tensor input, Tensor target, int reduction) {
        checkFloating("mseLoss", input, target);
        return Dispatcher.call(LossOps.MSE_LOSS_FUSED, new Tensor[] {input, target}, reduction);
    }

    /** {@code F.l1_loss}: {@link LossOps#L1_LOSS}. */
    public static Tensor l1Loss(Tensor input, Tensor target, int reduction) {
        return Dispatcher.call(LossOps.L1_LOSS, new Tensor[] {input, target}, reduction);
    }

    /** {@code F.smooth_l1_loss}: {@link LossOps#SMOOTH_L1_LOSS}, the L1 loss at {@code beta = 0}, as PyTorch's. */
    public static Tensor smoothL1Loss(Tensor input, Tensor target, int reduction, double beta) {
        checkFloating("smoothL1Loss", input, target);
        if (beta < 0) {
            throw new IllegalArgumentException("smoothL1Loss: smooth_l1_loss does not support negative values for beta, got " + beta + " ("
                    + operands(input, target) + ")");
        }
        if (beta == 0) return l1Loss(input, target, reduction);
        return Dispatcher.call(LossOps.SMOOTH_L1_LOSS, new Tensor[] {input, target}, reduction, beta);
    }

    /** {@code F.huber_loss}: {@link LossOps#HUBER_LOSS} for a positive {@code delta}. */
    public static Tensor huberLoss(Tensor input, Tensor target, int reduction, double delta) {
        checkFloating("huberLoss", input, target);
        if (!(delta > 0)) {
            throw new IllegalArgumentException("huberLoss: huber_loss does not support non-positive values for delta, got " + delta + " ("
                    + operands(input, target) + ")");
        }
        return Dispatcher.call(LossOps.HUBER_LOSS, new Tensor[] {input, target}, reduction, delta);
    }

    /** {@code F.binary_cross_entropy}: operands of one shape and a weight without gradient, then {@link LossOps#BINARY_CROSS_ENTROPY}. */
    public static Tensor binaryCrossEntropy(Tensor input, Tensor target, Tensor weight, int reduction) {
        if (!Arrays.equals(input.shape(), target.shape())) {
            throw new IllegalArgumentException("binaryCrossEntropy: Using a target size (" + Shapes.format(target.shape())
                    + ") that is different to the input size (" + Shapes.format(input.shape()) + ") is deprecated. Please ensure they have the same size."
                    + " (" + operands(input, target) + ")");
        }
        if (weight != null && org.jtorch.autograd.Autograd.needsGrad(weight)) {
            throw new IllegalArgumentException("binaryCrossEntropy: the function is not differentiable with respect to argument"
                    + " 'weight'. This input cannot have requires_grad True (weight of shape " + Shapes.format(weight.shape()) + ").");
        }
        return Dispatcher.call(LossOps.BINARY_CROSS_ENTROPY, new Tensor[] {input, target, weight}, reduction);
    }

    /** {@code F.binary_cross_entropy_with_logits}: operands of one shape, then {@link LossOps#BINARY_CROSS_ENTROPY_WITH_LOGITS}. */
    public static Tensor binaryCrossEntropyWithLogits(Tensor input, Tensor target, Tensor weight, Tensor posWeight, int reduction) {
        if (!Arrays.equals(input.shape(), target.shape())) {
            throw new IllegalArgumentException("binaryCrossEntropyWithLogits: Target size (" + Shapes.format(target.shape())
                    + ") must be the same as input size (" + Shapes.format(input.shape()) + ") (" + operands(input, target) + ")");
        }
        return Dispatcher.call(LossOps.BINARY_CROSS_ENTROPY_WITH_LOGITS, new Tensor[] {input, target, weight, posWeight}, reduction);
    }

    /**
     * {@code F.kl_div}: {@link LossOps#KL_DIV}; with {@code batchmean}, its sum divided by the batch size (dimension 0; a 0-d
     * input's sum as it is), as PyTorch's functional (aten has no batchmean reduction).
     */
    public static Tensor klDiv(Tensor input, Tensor target, int reduction, boolean batchmean, boolean logTarget) {
        double log = logTarget ? 1 : 0;
        if (!batchmean) return Dispatcher.call(LossOps.KL_DIV, new Tensor[] {input, target}, reduction, log);
        Tensor sum = Dispatcher.call(LossOps.KL_DIV, new Tensor[] {input, target}, LossOps.SUM, log);
        if (input.dim() == 0) return sum;
        try (sum) {
            return sum.div((double) input.size(0));
        }
    }

    /** PyTorch's squared and smooth losses have no integer kernels ("mse_cpu" not implemented for 'Long'). */
    private static void checkFloating(String op, Tensor input, Tensor target) {
        if (!input.dtype().isFloatingPoint() && !target.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected floating-point input or target, got " + operands(input, target)
                    + " (PyTorch has no integer kernel for this loss)");
        }
    }

    /** The operands as error messages name them: shape, dtype and device of each. */
    private static String operands(Tensor input, Tensor target) {
        return "input of shape " + Shapes.format(input.shape()) + " (" + input.dtype() + ", " + input.device() + ") and target of shape "
                + Shapes.format(target.shape()) + " (" + target.dtype() + ", " + target.device() + ")";
    }
}
