package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.BatchNorm3d}: {@link BatchNorm} over inputs {@code [N, C, D, H, W]}. */
public class BatchNorm3d extends BatchNorm {
    public BatchNorm3d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, true, true);
    }

    /** {@code momentum} null: cumulative moving average of the running statistics. */
    public BatchNorm3d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public BatchNorm3d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, DType dtype,
                       Device device) {
        Arguments.nonNull("BatchNorm3d", "dtype", dtype);
        Arguments.nonNull("BatchNorm3d", "device", device);
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }

    @Override
    protected void checkInputDim(Tensor input) {
        if (input.dim() != 5) {
            throw new IllegalArgumentException("BatchNorm3d: expected 5D input (got " + input.dim() + "D input)");
        }
    }
}
