package org.jtorch.nn;

/**
 * A multi-layer gated recurrent unit, as {@code torch.nn.GRU}: {@code r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)},
 * {@code z} likewise, {@code n = tanh(W_in x + b_in + r * (W_hn h + b_hn))}, {@code h' = (1 - z) * n + z * h}; gates in
 * the order {@code r, z, n} in the weights. Inputs, outputs ({@link RNN.Output}) and options as {@link RNN}.
 */
public class GRU extends RNN {
    public GRU(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, options());
    }

    public GRU(long inputSize, long hiddenSize, RNNOptions options) {
        super("GRU", Mode.GRU, inputSize, hiddenSize, options);
    }

    public static RNNOptions options() {
        return new RNNOptions();
    }
}
