package org.jtorch.nn;

import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.InstanceNorm2d}: {@link InstanceNorm} over inputs {@code [N, C, H, W]} (or {@code [C, H, W]}). */
public class InstanceNorm2d extends InstanceNorm {
    public InstanceNorm2d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, false, false);
    }

    public InstanceNorm2d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public InstanceNorm2d(long numFeatures, double eps, double momentum, boolean affine, boolean trackRunningStats,
                          DType dtype, Device device) {
        Arguments.nonNull("InstanceNorm2d", "dtype", dtype);
        Arguments.nonNull("InstanceNorm2d", "device", device);
        super(2, numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }
}
