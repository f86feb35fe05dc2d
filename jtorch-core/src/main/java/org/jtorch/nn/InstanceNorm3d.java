package org.jtorch.nn;

import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.InstanceNorm3d}: {@link InstanceNorm} over inputs {@code [N, C, D, H, W]} (or {@code [C, D, H, W]}). */
public class InstanceNorm3d extends InstanceNorm {
    public InstanceNorm3d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, false, false);
    }

    public InstanceNorm3d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public InstanceNorm3d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats,
                          DType dtype, Device device) {
        Arguments.nonNull("InstanceNorm3d", "dtype", dtype);
        Arguments.nonNull("InstanceNorm3d", "device", device);
        super(3, numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }
}
