package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The state shared by batch and instance norm, as PyTorch's {@code _NormBase}: {@code weight} (ones)
 * and {@code bias} (zeros) when {@code affine}; buffers {@code running_mean} (zeros), {@code
 * running_var} (ones) and {@code num_batches_tracked} (int64 scalar 0) when {@code trackRunningStats}
 * (registered as absent otherwise, so they are not in the state dict). {@code momentum} null means a
 * cumulative moving average (factor {@code 1 / num_batches_tracked}).
 */
public abstract class NormBase extends Module {
    protected final long numFeatures;
    protected final double eps;
    protected final Double momentum;
    protected final boolean affine;
    protected final boolean trackRunningStats;

    protected NormBase(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, DType dtype,
                       Device device) {
        this.numFeatures = numFeatures;
        this.eps = eps;
        this.momentum = momentum;
        this.affine = affine;
        this.trackRunningStats = trackRunningStats;
        long[] shape = {numFeatures};
        registerParameter("weight", affine ? Tensor.empty(shape, dtype, device) : null);
        registerParameter("bias", affine ? Tensor.empty(shape, dtype, device) : null);
        registerBuffer("running_mean", trackRunningStats ? Torch.zeros(shape, dtype, device) : null);
        registerBuffer("running_var", trackRunningStats ? Torch.ones(shape, dtype, device) : null);
        registerBuffer("num_batches_tracked", trackRunningStats ? Torch.zeros(new long[0], DType.INT64, device) : null);
        resetParameters();
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Tensor bias() {
        return parameter("bias");
    }

    public Tensor runningMean() {
        return buffer("running_mean");
    }

    public Tensor runningVar() {
        return buffer("running_var");
    }

    public Tensor numBatchesTracked() {
        return buffer("num_batches_tracked");
    }

    public long numFeatures() {
        return numFeatures;
    }

    /** Running mean to 0, running variance to 1, batch count to 0 (when tracking). */
    public void resetRunningStats() {
        if (!trackRunningStats) return;
        try (Grad.Mode g = Grad.noGrad()) {
            runningMean().zero_();
            runningVar().fill_(1.0);
            numBatchesTracked().zero_();
        }
    }

    /** {@link #resetRunningStats()}, then weight to 1 and bias to 0 (when affine). */
    public void resetParameters() {
        resetRunningStats();
        if (affine) {
            Init.ones_(weight());
            Init.zeros_(bias());
        }
    }

    /** Throws, with PyTorch's message, when the input's rank does not suit this layer. */
    protected abstract void checkInputDim(Tensor input);

    @Override
    protected String extraRepr() {
        return numFeatures + ", eps=" + eps + ", momentum=" + (momentum == null ? "None" : momentum) + ", affine="
                + (affine ? "True" : "False") + ", track_running_stats=" + (trackRunningStats ? "True" : "False");
    }
}
