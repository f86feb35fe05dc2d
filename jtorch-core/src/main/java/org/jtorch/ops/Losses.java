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
}
