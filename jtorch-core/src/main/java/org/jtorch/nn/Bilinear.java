package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * {@code y[o] = x1 @ weight[o] @ x2 + bias[o]}, as {@code torch.nn.Bilinear}: {@code weight} is
 * {@code [out, in1, in2]}. Initialised as PyTorch: weight and bias U(-1/sqrt(in1), 1/sqrt(in1)).
 * Takes two inputs, so {@link #forward(Tensor, Tensor)} is the entry point.
 */
public class Bilinear extends Module {
    private final long in1;
    private final long in2;
    private final long out;

    public Bilinear(long in1Features, long in2Features, long outFeatures) {
        this(in1Features, in2Features, outFeatures, true, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public Bilinear(long in1Features, long in2Features, long outFeatures, boolean bias, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("Bilinear", "dtype", dtype);
        Arguments.nonNull("Bilinear", "device", device);
        Arguments.nonNull("Bilinear", "gen", gen);
        this.in1 = in1Features;
        this.in2 = in2Features;
        this.out = outFeatures;
        registerParameter("weight", Tensor.empty(new long[] {outFeatures, in1Features, in2Features}, dtype, device));
        registerParameter("bias", bias ? Tensor.empty(new long[] {outFeatures}, dtype, device) : null);
        resetParameters(gen);
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Tensor bias() {
        return parameter("bias");
    }

    public void resetParameters(Generator gen) {
        double bound = 1 / Math.sqrt(in1);
        Init.uniform_(weight(), -bound, bound, gen);
        if (bias() != null) Init.uniform_(bias(), -bound, bound, gen);
    }

    public Tensor forward(Tensor input1, Tensor input2) {
        return F.bilinear(input1, input2, weight(), bias());
    }

    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException("Bilinear: takes two inputs; call forward(input1, input2)");
    }

    @Override
    protected String extraRepr() {
        return "in1_features=" + in1 + ", in2_features=" + in2 + ", out_features=" + out + ", bias=" + (bias() != null ? "True" : "False");
    }
}
