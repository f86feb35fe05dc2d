package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;

/**
 * What {@link Conv1d}, {@link Conv2d}, {@link Conv3d}, {@link ConvTranspose2d} and {@link ConvTranspose3d} share, as PyTorch's {@code _ConvNd}:
 * the parameters ({@code weight} {@code [out, in / groups, *k]}, or {@code [in, out / groups, *k]} when
 * transposed; {@code bias} {@code [out]}), their initialisation ({@code kaiming_uniform_(a = sqrt(5))}
 * and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias) and the repr.
 */
abstract class ConvNd extends Module {
    protected final long inChannels;
    protected final long outChannels;
    protected final int[] kernelSize;
    protected final int[] stride;
    protected final int[] padding;
    protected final String paddingString;
    protected final int[] dilation;
    protected final int[] outputPadding;
    protected final int groups;
    protected final String paddingMode;
    private final boolean transposed;

    ConvNd(String name, int dims, long inChannels, long outChannels, int[] kernelSize, ConvOptions o, boolean transposed) {
        if (inChannels <= 0 || outChannels <= 0) {
            throw new IllegalArgumentException(name + ": in_channels and out_channels must be positive, got " + inChannels + " and " + outChannels);
        }
        if (o.groups <= 0) throw new IllegalArgumentException(name + ": groups must be a positive integer, got " + o.groups);
        if (inChannels % o.groups != 0) throw new IllegalArgumentException(name + ": in_channels (" + inChannels + ") must be divisible by groups (" + o.groups + ")");
        if (outChannels % o.groups != 0) throw new IllegalArgumentException(name + ": out_channels (" + outChannels + ") must be divisible by groups (" + o.groups + ")");
        if (!o.paddingMode.equals("zeros")) {
            if (transposed) throw new IllegalArgumentException(name + ": only \"zeros\" padding mode is supported, got \"" + o.paddingMode + "\"");
            if (!Arrays.asList("reflect", "replicate", "circular").contains(o.paddingMode)) {
                throw new IllegalArgumentException(name + ": padding_mode must be one of zeros, reflect, replicate or circular, got \"" + o.paddingMode + "\"");
            }
        }
        if (o.paddingString != null) {
            if (transposed) throw new IllegalArgumentException(name + ": padding must be numbers, got \"" + o.paddingString + "\"");
            if (!o.paddingString.equals("same") && !o.paddingString.equals("valid")) {
                throw new IllegalArgumentException(name + ": invalid padding string '" + o.paddingString + "', should be one of 'valid' or 'same'");
            }
        }
        this.inChannels = inChannels;
        this.outChannels = outChannels;
        this.kernelSize = expand(name, "kernel_size", kernelSize, dims);
        this.stride = expand(name, "stride", o.stride, dims);
        this.padding = o.paddingString != null ? new int[dims] : expand(name, "padding", o.padding, dims);
        this.paddingString = o.paddingString;
        this.dilation = expand(name, "dilation", o.dilation, dims);
        this.outputPadding = expand(name, "output_padding", o.outputPadding, dims);
        this.groups = o.groups;
        this.paddingMode = o.paddingMode;
        this.transposed = transposed;
        if ("same".equals(o.paddingString)) {
            for (int s : this.stride) {
                if (s != 1) throw new IllegalArgumentException(name + ": padding='same' is not supported for strided convolutions");
            }
        }
        long[] shape = new long[dims + 2];
        shape[0] = transposed ? inChannels : outChannels;
        shape[1] = (transposed ? outChannels : inChannels) / groups;
        for (int i = 0; i < dims; i++) shape[i + 2] = this.kernelSize[i];
        registerParameter("weight", Tensor.empty(shape, o.dtype, o.device));
        registerParameter("bias", o.bias ? Tensor.empty(new long[] {outChannels}, o.dtype, o.device) : null);
        resetParameters(o.generator);
    }

    public Tensor weight() {
        return parameter("weight");
    }

    /** The bias, or null. */
    public Tensor bias() {
        return parameter("bias");
    }

    public void resetParameters() {
        resetParameters(org.jtorch.types.Generator.defaultGenerator());
    }

    /** PyTorch's {@code reset_parameters}: fan_in is {@code weight.size(1) * prod(kernel_size)} (for transposed ones too). */
    public void resetParameters(org.jtorch.types.Generator gen) {
        Init.kaimingUniform_(weight(), Math.sqrt(5), Init.FanMode.FAN_IN, "leaky_relu", gen);
        if (bias() != null) {
            long fanIn = Init.calculateFanInAndFanOut(weight())[0];
            double bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
            Init.uniform_(bias(), -bound, bound, gen);
        }
    }

    /**
     * For padding modes other than "zeros", as PyTorch's {@code _conv_forward}: the input padded by
     * {@code F.pad(input, reversed padding repeated twice, mode)} (for "same", the total {@code d * (k - 1)}
     * split with the extra element at the end), to be convolved without padding. Null for "zeros".
     */
    protected Tensor paddedInput(Tensor input) {
        if (paddingMode.equals("zeros")) return null;
        int dims = kernelSize.length;
        long[] pads = new long[2 * dims];
        for (int i = 0; i < dims; i++) {
            int d = dims - 1 - i;
            long before = padding[d], after = padding[d];
            if ("same".equals(paddingString)) {
                long total = (long) dilation[d] * (kernelSize[d] - 1);
                before = total / 2;
                after = total - before;
            }
            pads[2 * i] = before;
            pads[2 * i + 1] = after;
        }
        return F.pad(input, pads, paddingMode);
    }

    @Override
    protected String extraRepr() {
        StringBuilder s = new StringBuilder();
        s.append(inChannels).append(", ").append(outChannels).append(", kernel_size=").append(tuple(kernelSize))
                .append(", stride=").append(tuple(stride));
        if (paddingString != null) s.append(", padding=").append(paddingString);
        else if (Arrays.stream(padding).anyMatch(p -> p != 0)) s.append(", padding=").append(tuple(padding));
        if (Arrays.stream(dilation).anyMatch(d -> d != 1)) s.append(", dilation=").append(tuple(dilation));
        if (transposed && Arrays.stream(outputPadding).anyMatch(p -> p != 0)) s.append(", output_padding=").append(tuple(outputPadding));
        if (groups != 1) s.append(", groups=").append(groups);
        if (bias() == null) s.append(", bias=False");
        if (!paddingMode.equals("zeros")) s.append(", padding_mode=").append(paddingMode);
        return s.toString();
    }

    /** Python's tuple repr: {@code (3,)} or {@code (3, 3)}. */
    static String tuple(int[] v) {
        StringBuilder s = new StringBuilder("(");
        for (int i = 0; i < v.length; i++) s.append(i > 0 ? ", " : "").append(v[i]);
        return s.append(v.length == 1 ? ",)" : ")").toString();
    }

    static int[] expand(String name, String what, int[] v, int dims) {
        if (v.length != 1 && v.length != dims) {
            throw new IllegalArgumentException(name + ": " + what + " needs 1 or " + dims + " values, got " + Arrays.toString(v));
        }
        if (v.length == dims) return v.clone();
        int[] r = new int[dims];
        Arrays.fill(r, v[0]);
        return r;
    }
}
