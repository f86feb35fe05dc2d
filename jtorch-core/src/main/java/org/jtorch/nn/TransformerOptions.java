package org.jtorch.nn;

import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The keyword arguments of {@link TransformerEncoderLayer}, {@link TransformerDecoderLayer} and {@link Transformer}
 * beyond {@code (dModel, nhead)}, with PyTorch's defaults: a 2048-wide feed-forward block, dropout 0.1, relu,
 * layer-norm epsilon 1e-5, sequence-first {@code [T, N, E]} tensors, post-norm, biases, and (for {@link Transformer})
 * six encoder and six decoder layers. For example
 * {@code new TransformerEncoderLayer(64, 4, TransformerEncoderLayer.options().dimFeedforward(256).batchFirst(true))}.
 */
public final class TransformerOptions {
    long dimFeedforward = 2048;
    double dropout = 0.1;
    String activationName = "relu";
    UnaryOperator<Tensor> activation = F::relu;
    double layerNormEps = 1e-5;
    boolean batchFirst;
    boolean normFirst;
    boolean bias = true;
    int numEncoderLayers = 6;
    int numDecoderLayers = 6;
    DType dtype = Torch.defaultDtype();
    Device device = Device.cpu();
    Generator generator = Generator.defaultGenerator();

    TransformerOptions() {}

    /** The hidden width of the feed-forward block {@code linear2(dropout(activation(linear1(x))))}. */
    public TransformerOptions dimFeedforward(long dimFeedforward) {
        this.dimFeedforward = dimFeedforward;
        return this;
    }

    /** The dropout probability of the attention weights, the feed-forward block and each residual branch (training only). */
    public TransformerOptions dropout(double dropout) {
        this.dropout = dropout;
        return this;
    }

    /** The feed-forward activation by name: "relu" or "gelu" (exact, erf-based), as PyTorch accepts. */
    public TransformerOptions activation(String name) {
        Arguments.nonNull("TransformerOptions.activation", "name", name);
        this.activation = switch (name) {
            case "relu" -> F::relu;
            case "gelu" -> F::gelu;
            default -> throw new IllegalArgumentException("activation should be relu/gelu, not " + name);
        };
        this.activationName = name;
        return this;
    }

    /** Any elementwise function as the feed-forward activation (PyTorch's callable {@code activation}). */
    public TransformerOptions activation(UnaryOperator<Tensor> function) {
        Arguments.nonNull("TransformerOptions.activation", "function", function);
        this.activation = function;
        this.activationName = "custom";
        return this;
    }

    public TransformerOptions layerNormEps(double layerNormEps) {
        this.layerNormEps = layerNormEps;
        return this;
    }

    /** Inputs and outputs as {@code [N, T, E]} instead of {@code [T, N, E]}. */
    public TransformerOptions batchFirst(boolean batchFirst) {
        this.batchFirst = batchFirst;
        return this;
    }

    /** Pre-norm: {@code x + block(norm(x))} instead of post-norm {@code norm(x + block(x))}. */
    public TransformerOptions normFirst(boolean normFirst) {
        this.normFirst = normFirst;
        return this;
    }

    /** Whether the linear layers, the attention projections and the layer norms have biases (PyTorch 2.1's {@code bias}). */
    public TransformerOptions bias(boolean bias) {
        this.bias = bias;
        return this;
    }

    /** {@link Transformer} only. */
    public TransformerOptions numEncoderLayers(int numEncoderLayers) {
        this.numEncoderLayers = numEncoderLayers;
        return this;
    }

    /** {@link Transformer} only. */
    public TransformerOptions numDecoderLayers(int numDecoderLayers) {
        this.numDecoderLayers = numDecoderLayers;
        return this;
    }

    public TransformerOptions dtype(DType dtype) {
        this.dtype = dtype;
        return this;
    }

    public TransformerOptions device(Device device) {
        this.device = device;
        return this;
    }

    /** The generator the initial weights and the dropout masks are drawn from. */
    public TransformerOptions generator(Generator generator) {
        this.generator = generator;
        return this;
    }

    // The submodules a transformer layer is built from, with these options.

    MultiheadAttention attention(long dModel, long nhead) {
        return new MultiheadAttention(dModel, nhead, dropout, bias, batchFirst, dtype, device, generator);
    }

    Linear linear(long in, long out) {
        return new Linear(in, out, bias, dtype, device, generator);
    }

    Dropout dropoutLayer() {
        return new Dropout(dropout, generator);
    }

    LayerNorm layerNorm(long dModel) {
        return new LayerNorm(new long[] {dModel}, layerNormEps, true, bias, dtype, device);
    }

    TransformerOptions copy() {
        TransformerOptions o = new TransformerOptions();
        o.dimFeedforward = dimFeedforward;
        o.dropout = dropout;
        o.activationName = activationName;
        o.activation = activation;
        o.layerNormEps = layerNormEps;
        o.batchFirst = batchFirst;
        o.normFirst = normFirst;
        o.bias = bias;
        o.numEncoderLayers = numEncoderLayers;
        o.numDecoderLayers = numDecoderLayers;
        o.dtype = dtype;
        o.device = device;
        o.generator = generator;
        return o;
    }

    /** Checks the options and the model size for {@code module}, naming it in the error. */
    void check(String module, long dModel, long nhead) {
        Arguments.nonNull(module, "dtype", dtype);
        Arguments.nonNull(module, "device", device);
        Arguments.nonNull(module, "generator", generator);
        if (dModel <= 0 || nhead <= 0 || dModel % nhead != 0) {
            throw new IllegalArgumentException(module + ": d_model (" + dModel + ") must be positive and divisible by nhead (" + nhead + ")");
        }
        if (dimFeedforward <= 0) throw new IllegalArgumentException(module + ": dim_feedforward must be positive, got " + dimFeedforward);
        if (!(dropout >= 0 && dropout <= 1)) {
            throw new IllegalArgumentException(module + ": dropout probability has to be between 0 and 1, but got " + dropout);
        }
        if (numEncoderLayers < 0 || numDecoderLayers < 0) {
            throw new IllegalArgumentException(module + ": the numbers of layers must not be negative, got " + numEncoderLayers + " and "
                    + numDecoderLayers);
        }
    }
}
