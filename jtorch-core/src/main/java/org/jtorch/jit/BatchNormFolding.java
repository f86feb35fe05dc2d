package org.jtorch.jit;

import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;

/**
 * A convolution's weight and bias with the evaluation batch norm after it folded in: {@code w * s} and
 * {@code (b - mean) * s + beta} per output channel, {@code s = gamma / sqrt(var + eps)} (gamma and beta 1 and 0 without
 * affine parameters), as {@code torch.nn.utils.fuse_conv_bn_eval}.
 *
 * <p>The folded pair is kept between calls and folded again only when one of the six tensors is another tensor than
 * last time or has been written since: their version counters are the guard (an optimizer step, a copy into the running
 * statistics, a forward in training mode and every other in-place write bump them), so a compiled model in evaluation
 * neither folds at every call nor uses stale weights. Thread-safe; the pair belongs to this object, and each caller gets
 * its own handles on it.
 */
final class BatchNormFolding {
    private final double eps;
    /** The weight, bias, mean, variance, gamma and beta last folded (null where absent), and their versions then. */
    private Tensor[] sources;
    private int[] versions;
    private Tensor weight, bias;
    /** How often the pair has been folded: once per change of the sources (read by tests). */
    private int folds;

    BatchNormFolding(double eps) {
        this.eps = eps;
    }

    /** The folded weight and bias, new handles the caller closes. */
    synchronized Tensor[] folded(Tensor w, Tensor b, Tensor mean, Tensor var, Tensor gamma, Tensor beta) {
        Tensor[] now = {w, b, mean, var, gamma, beta};
        if (!current(now)) fold(now);
        return new Tensor[] {weight.alias(), bias.alias()};
    }

    synchronized int folds() {
        return folds;
    }

    private boolean current(Tensor[] now) {
        if (sources == null) return false;
        for (int k = 0; k < now.length; k++) {
            if (now[k] != sources[k] || now[k] != null && now[k].version() != versions[k]) return false;
        }
        return true;
    }

    private void fold(Tensor[] now) {
        Tensor w = now[0], b = now[1], mean = now[2], var = now[3], gamma = now[4], beta = now[5];
        Tensor folded, shift;
        try (var off = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            Tensor s = var.add(eps).rsqrt();
            if (gamma != null) s = s.mul(gamma);
            long[] channel = new long[w.dim()];
            java.util.Arrays.fill(channel, 1);
            channel[0] = w.size(0);
            folded = scope.keep(w.mul(s.reshape(channel)).contiguous());
            Tensor sh = (b != null ? b.sub(mean) : mean.neg()).mul(s);
            if (beta != null) sh = sh.add(beta);
            shift = scope.keep(sh.contiguous());
        }
        if (weight != null) {
            weight.close();
            bias.close();
        }
        // The pair outlives the caller's scope: this object closes it when it folds again.
        weight = folded.untrack();
        bias = shift.untrack();
        sources = now;
        versions = new int[now.length];
        for (int k = 0; k < now.length; k++) versions[k] = now[k] == null ? 0 : now[k].version();
        folds++;
    }
}
