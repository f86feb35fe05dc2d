package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@code x / sqrt(mean(x^2) + eps) * weight} over the trailing {@code normalizedShape} dimensions, as
 * PyTorch 2.4's {@code torch.nn.RMSNorm}: a null {@code eps} uses the input dtype's machine epsilon;
 * {@code weight} starts at ones (absent without {@code elementwiseAffine}).
 */
public class RMSNorm extends Module {
    private final long[] normalizedShape;
    private final Double eps;

    public RMSNorm(long... normalizedShape) {
        this(normalizedShape, null, true);
    }

    public RMSNorm(long[] normalizedShape, Double eps, boolean elementwiseAffine) {
        this(normalizedShape, eps, elementwiseAffine, Torch.defaultDtype(), Device.cpu());
    }

    public RMSNorm(long[] normalizedShape, Double eps, boolean elementwiseAffine, DType dtype, Device device) {
        Arguments.nonNull("RMSNorm", "normalizedShape", normalizedShape);
        Arguments.nonNull("RMSNorm", "dtype", dtype);
        Arguments.nonNull("RMSNorm", "device", device);
        this.normalizedShape = normalizedShape.clone();
        this.eps = eps;
        registerParameter("weight", elementwiseAffine ? Tensor.empty(normalizedShape, dtype, device) : null);
        resetParameters();
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public void resetParameters() {
        if (weight() != null) Init.ones_(weight());
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.rmsNorm(input, normalizedShape, weight(), eps);
    }

    @Override
    protected String extraRepr() {
        return Arrays.toString(normalizedShape).replace('[', '(').replace("]", normalizedShape.length == 1 ? ",)" : ")")
                + ", eps=" + eps + ", elementwise_affine=" + (weight() != null ? "True" : "False");
    }
}
