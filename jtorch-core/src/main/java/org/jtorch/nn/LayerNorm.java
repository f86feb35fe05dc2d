package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Normalises over the trailing {@code normalizedShape} dimensions to zero mean and unit (biased)
 * variance, then scales by {@code weight} (ones) and shifts by {@code bias} (zeros) when
 * {@code elementwiseAffine}, as {@code torch.nn.LayerNorm} (eps default 1e-5).
 */
public class LayerNorm extends Module {
    private final long[] normalizedShape;
    private final double eps;

    public LayerNorm(long... normalizedShape) {
        this(normalizedShape, 1e-5, true);
    }

    public LayerNorm(long[] normalizedShape, double eps, boolean elementwiseAffine) {
        this(normalizedShape, eps, elementwiseAffine, Torch.defaultDtype(), Device.cpu());
    }

    public LayerNorm(long[] normalizedShape, double eps, boolean elementwiseAffine, DType dtype, Device device) {
        this(normalizedShape, eps, elementwiseAffine, true, dtype, device);
    }

    /** {@code bias} false leaves out the additive parameter (PyTorch 2.1's {@code bias=False}); only with {@code elementwiseAffine}. */
    public LayerNorm(long[] normalizedShape, double eps, boolean elementwiseAffine, boolean bias, DType dtype, Device device) {
        Arguments.nonNull("LayerNorm", "normalizedShape", normalizedShape);
        Arguments.nonNull("LayerNorm", "dtype", dtype);
        Arguments.nonNull("LayerNorm", "device", device);
        this.normalizedShape = normalizedShape.clone();
        this.eps = eps;
        registerParameter("weight", elementwiseAffine ? Tensor.empty(normalizedShape, dtype, device) : null);
        registerParameter("bias", elementwiseAffine && bias ? Tensor.empty(normalizedShape, dtype, device) : null);
        resetParameters();
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Tensor bias() {
        return parameter("bias");
    }

    public void resetParameters() {
        if (weight() != null) Init.ones_(weight());
        if (bias() != null) Init.zeros_(bias());
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.layerNorm(input, normalizedShape, weight(), bias(), eps);
    }

    @Override
    protected String extraRepr() {
        return Arrays.toString(normalizedShape).replace('[', '(').replace("]", normalizedShape.length == 1 ? ",)" : ")")
                + ", eps=" + eps + ", elementwise_affine=" + (weight() != null ? "True" : "False");
    }
}
