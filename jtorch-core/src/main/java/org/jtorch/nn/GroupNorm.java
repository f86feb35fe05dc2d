package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@code torch.nn.GroupNorm}: normalises each of {@code numGroups} channel groups per sample (input
 * {@code [N, C, *]}), then applies a per-channel {@code weight} (ones) and {@code bias} (zeros) when
 * {@code affine}. Defaults: eps 1e-5, affine.
 */
public class GroupNorm extends Module {
    private final long numGroups;
    private final long numChannels;
    private final double eps;
    private final boolean affine;

    public GroupNorm(long numGroups, long numChannels) {
        this(numGroups, numChannels, 1e-5, true);
    }

    public GroupNorm(long numGroups, long numChannels, double eps, boolean affine) {
        this(numGroups, numChannels, eps, affine, Torch.defaultDtype(), Device.cpu());
    }

    public GroupNorm(long numGroups, long numChannels, double eps, boolean affine, DType dtype, Device device) {
        Arguments.nonNull("GroupNorm", "dtype", dtype);
        Arguments.nonNull("GroupNorm", "device", device);
        if (numGroups <= 0 || numChannels % numGroups != 0) {
            throw new IllegalArgumentException("GroupNorm: num_channels must be divisible by num_groups (got num_channels="
                    + numChannels + ", num_groups=" + numGroups + ")");
        }
        this.numGroups = numGroups;
        this.numChannels = numChannels;
        this.eps = eps;
        this.affine = affine;
        registerParameter("weight", affine ? Tensor.empty(new long[] {numChannels}, dtype, device) : null);
        registerParameter("bias", affine ? Tensor.empty(new long[] {numChannels}, dtype, device) : null);
        resetParameters();
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Tensor bias() {
        return parameter("bias");
    }

    public void resetParameters() {
        if (affine) {
            Init.ones_(weight());
            Init.zeros_(bias());
        }
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.groupNorm(input, numGroups, weight(), bias(), eps);
    }

    @Override
    protected String extraRepr() {
        return numGroups + ", " + numChannels + ", eps=" + eps + ", affine=" + (affine ? "True" : "False");
    }
}
