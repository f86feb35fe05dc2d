package org.jtorch.nn.utils;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/** Gradient clipping, as {@code torch.nn.utils.clip_grad_norm_} and {@code clip_grad_value_} (PyTorch 1.13). */
public final class ClipGrad {
    private ClipGrad() {}

    /**
     * Scales the gradients of {@code parameters} in place so that their joint {@code normType}-norm
     * (the norm of the per-tensor norms; the largest absolute value for {@code +inf}) is at most
     * {@code maxNorm}: each is multiplied by {@code min(1, maxNorm / (total + 1e-6))}. Parameters
     * without a gradient are skipped. Returns the total norm before clipping (0-d, caller closes;
     * 0 when no parameter has a gradient).
     */
    public static Tensor clipGradNorm_(Iterable<Tensor> parameters, double maxNorm, double normType) {
        Arguments.nonNull("ClipGrad.clipGradNorm_", "parameters", parameters);
        List<Tensor> grads = new ArrayList<>();
        for (Tensor p : parameters) if (p.grad() != null) grads.add(p.grad());
        if (grads.isEmpty()) return Torch.scalar(0.0);
        try (Grad.Mode g = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            List<Tensor> norms = new ArrayList<>();
            boolean inf = normType == Double.POSITIVE_INFINITY;
            for (Tensor gr : grads) norms.add(inf ? gr.abs().max() : gr.norm(normType));
            Tensor stacked = Torch.stack(norms, 0);
            Tensor total = inf ? stacked.max() : stacked.norm(normType);
            Tensor coef = total.add(1e-6).reciprocal().mul(maxNorm).clampMax(1.0);
            for (Tensor gr : grads) gr.mul_(coef.to(gr.dtype()));
            return scope.keep(total);
        }
    }

    public static Tensor clipGradNorm_(Iterable<Tensor> parameters, double maxNorm) {
        return clipGradNorm_(parameters, maxNorm, 2.0);
    }

    /** Clamps every gradient of {@code parameters} into {@code [-clipValue, clipValue]} in place. */
    public static void clipGradValue_(Iterable<Tensor> parameters, double clipValue) {
        Arguments.nonNull("ClipGrad.clipGradValue_", "parameters", parameters);
        try (Grad.Mode g = Grad.noGrad()) {
            for (Tensor p : parameters) if (p.grad() != null) p.grad().clamp_(-clipValue, clipValue);
        }
    }
}
