package org.jtorch.nn;

import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.InstanceNorm1d}: {@link InstanceNorm} over inputs {@code [N, C, L]} (or {@code [C, L]}). */
public class InstanceNorm1d extends InstanceNorm {
    public InstanceNorm1d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, false, false);
    }

    public InstanceNorm1d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public InstanceNorm1d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats,
                          DType dtype, Device device) {
        Arguments.nonNull("InstanceNorm1d", "dtype", dtype);
        Arguments.nonNull("InstanceNorm1d", "device", device);
        super(1, numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }
}
