package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/** {@code torch.nn.BatchNorm2d}: {@link BatchNorm} over inputs {@code [N, C, H, W]}. */
public class BatchNorm2d extends BatchNorm {
    public BatchNorm2d(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, true, true);
    }

    /** {@code momentum} null: cumulative moving average of the running statistics. */
    public BatchNorm2d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, Torch.defaultDtype(), Device.cpu());
    }

    public BatchNorm2d(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, DType dtype,
                       Device device) {
        Arguments.nonNull("BatchNorm2d", "dtype", dtype);
        Arguments.nonNull("BatchNorm2d", "device", device);
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }

    @Override
    protected void checkInputDim(Tensor input) {
        if (input.dim() != 4) {
            throw new IllegalArgumentException("BatchNorm2d: expected 4D input (got " + input.dim() + "D input)");
        }
    }
}
