package org.jtorch.nn;

import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The keyword arguments of {@link RNN}, {@link LSTM} and {@link GRU} beyond the positional {@code (inputSize,
 * hiddenSize)}, with PyTorch's defaults: one layer, biases, time-major {@code [T, N, *]} tensors, no dropout,
 * one direction, no projection, tanh. For example
 * {@code new LSTM(10, 20, LSTM.options().numLayers(2).dropout(0.5).batchFirst(true))}.
 */
public final class RNNOptions {
    int numLayers = 1;
    boolean bias = true;
    boolean batchFirst;
    double dropout;
    boolean bidirectional;
    long projSize;
    String nonlinearity = "tanh";
    DType dtype = Torch.defaultDtype();
    Device device = Device.cpu();
    Generator generator = Generator.defaultGenerator();

    RNNOptions() {}

    /** Stacked layers: layer {@code l > 0} reads layer {@code l - 1}'s output. */
    public RNNOptions numLayers(int numLayers) {
        this.numLayers = numLayers;
        return this;
    }

    /** Whether the layers have {@code bias_ih} and {@code bias_hh}. */
    public RNNOptions bias(boolean bias) {
        this.bias = bias;
        return this;
    }

    /** Inputs and outputs as {@code [N, T, *]} instead of {@code [T, N, *]} (hidden states stay {@code [L*D, N, H]}). */
    public RNNOptions batchFirst(boolean batchFirst) {
        this.batchFirst = batchFirst;
        return this;
    }

    /** The probability of dropout on the outputs of every layer but the last, in training mode. */
    public RNNOptions dropout(double dropout) {
        this.dropout = dropout;
        return this;
    }

    public RNNOptions bidirectional(boolean bidirectional) {
        this.bidirectional = bidirectional;
        return this;
    }

    /** LSTM only: projects the hidden state to {@code projSize} features with {@code weight_hr} (0: none). */
    public RNNOptions projSize(long projSize) {
        this.projSize = projSize;
        return this;
    }

    /** RNN only: "tanh" or "relu". */
    public RNNOptions nonlinearity(String nonlinearity) {
        this.nonlinearity = nonlinearity;
        return this;
    }

    public RNNOptions dtype(DType dtype) {
        this.dtype = dtype;
        return this;
    }

    public RNNOptions device(Device device) {
        this.device = device;
        return this;
    }

    /** The generator the initial weights and the dropout masks are drawn from. */
    public RNNOptions generator(Generator generator) {
        this.generator = generator;
        return this;
    }
}
