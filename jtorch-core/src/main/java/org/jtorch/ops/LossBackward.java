package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.LossOps;
import org.jtorch.types.DType;

/** The fused losses' backwards written as differentiable tensor ops, for gradients of gradients. */
final class LossBackward {
    private LossBackward() {}

    /**
     * The gradient of {@link LossOps#CROSS_ENTROPY_FUSED} with respect to its logits {@code x} ({@code [N, C]}), as the fused
     * backward kernel computes it: with {@code p = softmax(x)}, {@code w_t} the kept targets' weights (1 without weights, 0
     * where ignored), {@code (1 - ls) w_t (p - onehot(t)) + ls / C kept (W p - weight)}, times {@code gradOut} (divided by
     * the summed {@code w_t} for the mean).
     */
    static Tensor crossEntropy(Tensor gradOut, Tensor x, Tensor target, Tensor weight, int reduction, long ignoreIndex,
                               double smoothing) {
        long classes = x.size(1);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor kept = target.ne((double) ignoreIndex);
            Tensor safe = target.maskedFill(kept.logicalNot(), 0);
            Tensor keptF = kept.to(x.dtype());
            Tensor wt = weight == null ? keptF : weight.indexSelect(0, safe).mul(keptF);
            Tensor p = x.softmax(1);
            Tensor onehot = Torch.arange(0, classes, 1, DType.INT64, x.device()).unsqueeze(0).eq(safe.unsqueeze(1)).to(x.dtype());
            Tensor g = p.sub(onehot).mul(wt.unsqueeze(1)).mul(1 - smoothing);
            if (smoothing > 0) {
                Tensor spread = weight == null ? p.mul((double) classes).sub(1.0)
                        : p.mul(weight.sum().reshape(1, 1)).sub(weight.unsqueeze(0));
                g = g.add(spread.mul(keptF.unsqueeze(1)).mul(smoothing / classes));
            }
            Tensor scale = switch (reduction) {
                case LossOps.NONE -> gradOut.unsqueeze(1);
                case LossOps.SUM -> gradOut;
                default -> gradOut.div(wt.sum());
            };
            return scope.keep(g.mul(scale));
        }
    }

    /** PyTorch's floor of {@code x (1 - x)} in binary cross entropy's gradient: its constant is the float 1e-12, in every dtype. */
    private static final double BCE_EPSILON = 1e-12f;

    /**
     * {@link LossOps#BINARY_CROSS_ENTROPY_BACKWARD}: {@code gradOut * weight * (x - t) / max(x (1 - x), 1e-12)}, finite where
     * {@code x} is exactly 0 or 1; {@code gradOut} over the element count for the mean.
     */
    static Tensor binaryCrossEntropy(Tensor gradOut, Tensor x, Tensor t, Tensor weight, int reduction) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor g = binaryCrossEntropyScale(gradOut, x, weight, reduction);
            return scope.keep(g.mul(x.sub(t)).div(x.mul(x.neg().add(1.0)).clampMin(BCE_EPSILON)));
        }
    }

    /** {@link LossOps#BINARY_CROSS_ENTROPY_TARGET_BACKWARD}: {@code gradOut * weight * (log(1 - x) - log(x))}, over the count for the mean. */
    static Tensor binaryCrossEntropyTarget(Tensor gradOut, Tensor x, Tensor t, Tensor weight, int reduction) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor g = binaryCrossEntropyScale(gradOut, x, weight, reduction);
            return scope.keep(g.mul(x.neg().log1p().sub(x.log())));
        }
    }

    /** {@code gradOut} (over the element count for the mean) times the weight where one is given. */
    private static Tensor binaryCrossEntropyScale(Tensor gradOut, Tensor x, Tensor weight, int reduction) {
        Tensor g = reduction == LossOps.MEAN ? gradOut.div((double) x.numel()) : gradOut;
        return weight == null ? g : g.mul(weight);
    }

    /** The gradient of {@link LossOps#MSE_LOSS_FUSED} with respect to {@code x}: {@code 2 gradOut (x - t)}, over the count for the mean. */
    static Tensor mse(Tensor gradOut, Tensor x, Tensor t, int reduction) {
        double scale = reduction == LossOps.MEAN ? 2.0 / x.numel() : 2.0;
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(x.sub(t).mul(gradOut).mul(scale));
        }
    }
}
