package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Instance normalisation, as PyTorch's {@code _InstanceNorm}: every (sample, channel) plane is
 * normalised with its own statistics. Defaults differ from batch norm: {@code affine} and {@code
 * trackRunningStats} are false. With running statistics, evaluation uses them; an input without the
 * batch dimension is treated as a batch of one.
 *
 * <p>Constructors: {@code (numFeatures)} with PyTorch's defaults (eps 1e-5, momentum 0.1, no affine,
 * no running statistics) or {@code (numFeatures, eps, momentum, affine, trackRunningStats[, dtype,
 * device])}.
 */
public abstract class InstanceNorm extends NormBase {
    private final int spatialDims;

    protected InstanceNorm(int spatialDims, long numFeatures, double eps, double momentum, boolean affine,
                           boolean trackRunningStats, DType dtype, Device device) {
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
        this.spatialDims = spatialDims;
    }

    @Override
    protected void checkInputDim(Tensor input) {
        int unbatched = spatialDims + 1;
        if (input.dim() != unbatched && input.dim() != unbatched + 1) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ": expected " + unbatched + "D or " + (unbatched + 1)
                    + "D input (got " + input.dim() + "D input)");
        }
    }

    @Override
    public Tensor forward(Tensor input) {
        checkInputDim(input);
        int featureDim = input.dim() - (spatialDims + 1);
        if (affine && input.size(featureDim) != numFeatures) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ": expected input's size at dim=" + featureDim
                    + " to match num_features (" + numFeatures + "), but got: " + input.size(featureDim) + ".");
        }
        if (input.dim() == spatialDims + 1) {
            try (Tensor batched = input.unsqueeze(0); Tensor out = apply(batched)) {
                return out.squeeze(0);
            }
        }
        return apply(input);
    }

    private Tensor apply(Tensor input) {
        return F.instanceNorm(input, runningMean(), runningVar(), weight(), bias(), isTraining() || !trackRunningStats,
                momentum, eps);
    }
}
