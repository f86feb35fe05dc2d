package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.BatchNorm1d}: {@link BatchNorm} over inputs {@code [N, C]} or {@code [N, C, L]}. */
public class BatchNorm1d extends BatchNorm {
    public BatchNorm1d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, true, true);
    }

    /** {@code momentum} null: cumulative moving average of the running statistics. */
    public BatchNorm1d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public BatchNorm1d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, DType dtype,
                       Device device) {
        Arguments.nonNull("BatchNorm1d", "dtype", dtype);
        Arguments.nonNull("BatchNorm1d", "device", device);
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }

    @Override
    protected void checkInputDim(Tensor input) {
        if (input.dim() != 2 && input.dim() != 3) {
            throw new IllegalArgumentException("BatchNorm1d: expected 2D or 3D input (got " + input.dim() + "D input)");
        }
    }
}
