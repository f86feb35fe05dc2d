package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * {@code y = x @ weight.T + bias}, as {@code torch.nn.Linear}: {@code weight} is {@code [out, in]}
 * and {@code bias} {@code [out]} (absent when {@code bias} is false). Initialised as PyTorch:
 * {@code kaiming_uniform_(a = sqrt(5))} for the weight, i.e. U(-1/sqrt(in), 1/sqrt(in)), and the same
 * bound for the bias.
 */
public class Linear extends Module {
    private final long inFeatures;
    private final long outFeatures;

    public Linear(long inFeatures, long outFeatures) {
        this(inFeatures, outFeatures, true);
    }

    public Linear(long inFeatures, long outFeatures, boolean bias) {
        this(inFeatures, outFeatures, bias, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public Linear(long inFeatures, long outFeatures, boolean bias, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("Linear", "dtype", dtype);
        Arguments.nonNull("Linear", "device", device);
        Arguments.nonNull("Linear", "gen", gen);
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        registerParameter("weight", Tensor.empty(new long[] {outFeatures, inFeatures}, dtype, device));
        registerParameter("bias", bias ? Tensor.empty(new long[] {outFeatures}, dtype, device) : null);
        resetParameters(gen);
    }

    public Tensor weight() {
        return parameter("weight");
    }

    /** The bias, or null. */
    public Tensor bias() {
        return parameter("bias");
    }

    public void resetParameters() {
        resetParameters(Generator.defaultGenerator());
    }

    public void resetParameters(Generator gen) {
        Init.kaimingUniform_(weight(), Math.sqrt(5), Init.FanMode.FAN_IN, "leaky_relu", gen);
        if (bias() != null) {
            double bound = inFeatures > 0 ? 1 / Math.sqrt(inFeatures) : 0;
            Init.uniform_(bias(), -bound, bound, gen);
        }
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.linear(input, weight(), bias());
    }

    @Override
    protected String extraRepr() {
        return "in_features=" + inFeatures + ", out_features=" + outFeatures + ", bias=" + (bias() != null ? "True" : "False");
    }
}
