package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.nn.utils.PackedSequence;
import org.jtorch.types.Arguments;

/**
 * A multi-layer Elman RNN, as {@code torch.nn.RNN}: {@code h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)}
 * (or relu, with {@code options().nonlinearity("relu")}). Parameters, initialisation and options: {@link RNNBase},
 * {@link RNNOptions}.
 *
 * <p>{@link #forward(Tensor, Tensor)} returns PyTorch's {@code (output, h_n)} as an {@link Output}: {@code output}
 * {@code [T, N, D*H]} (the last layer's state at every step, both directions concatenated) and {@code h_n}
 * {@code [L*D, N, H]} (every layer's final state). {@link #forward(Tensor)} (the single-tensor {@link Module} form, for
 * {@link Sequential}) returns only {@code output}.
 */
public class RNN extends RNNBase implements TupleModule<RNN.Input, RNN.Output> {
    /** PyTorch's {@code (input, h_0)}: the sequence and the initial state (null: zeros). */
    public record Input(Tensor input, Tensor h0) {
        public Input {
            Arguments.nonNull("RNN.Input", "input", input);
        }
    }

    /** {@code (output, h_n)}; closing closes both. */
    public record Output(Tensor output, Tensor hN) implements AutoCloseable {
        public Output {
            Arguments.nonNull("RNN.Output", "output", output);
            Arguments.nonNull("RNN.Output", "hN", hN);
        }

        @Override
        public void close() {
            output.close();
            hN.close();
        }
    }

    /** {@code (output, h_n)} of a packed input: the output is packed like the input; closing closes both. */
    public record PackedOutput(PackedSequence output, Tensor hN) implements AutoCloseable {
        public PackedOutput {
            Arguments.nonNull("RNN.PackedOutput", "output", output);
            Arguments.nonNull("RNN.PackedOutput", "hN", hN);
        }

        @Override
        public void close() {
            output.close();
            hN.close();
        }
    }

    public RNN(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, options());
    }

    public RNN(long inputSize, long hiddenSize, RNNOptions options) {
        super("RNN", modeOf(options), inputSize, hiddenSize, options);
    }

    /** Constructor for {@link GRU}. */
    RNN(String name, Mode mode, long inputSize, long hiddenSize, RNNOptions options) {
        super(name, mode, inputSize, hiddenSize, options);
    }

    private static Mode modeOf(RNNOptions options) {
        Arguments.nonNull("RNN", "options", options);
        return switch (options.nonlinearity) {
            case "tanh" -> Mode.RNN_TANH;
            case "relu" -> Mode.RNN_RELU;
            case null, default -> throw new IllegalArgumentException("RNN: Unknown nonlinearity '" + options.nonlinearity
                    + "'. Select from 'tanh' or 'relu'.");
        };
    }

    public static RNNOptions options() {
        return new RNNOptions();
    }

    /** The output sequence from zero initial states. */
    @Override
    public Tensor forward(Tensor input) {
        try (Output out = forward(input, (Tensor) null)) {
            return out.output().alias();
        }
    }

    /** {@code (output, h_n)} from initial state {@code h0} ({@code [L*D, N, H]}, unbatched {@code [L*D, H]}; null: zeros). */
    public Output forward(Tensor input, Tensor h0) {
        Result r = runPadded(input, h0, null);
        return new Output(r.output(), r.hN());
    }

    /** The {@link TupleModule} form of {@link #forward(Tensor, Tensor)}. */
    @Override
    public Output forward(Input input) {
        Arguments.nonNull("RNN.forward", "input", input);
        return forward(input.input(), input.h0());
    }

    /** A packed input: the output is packed the same way; {@code h0} is in the caller's batch order (null: zeros). */
    public PackedOutput forward(PackedSequence input, Tensor h0) {
        Result r = runPacked(input, h0, null);
        return new PackedOutput(input.withData(r.output()), r.hN());
    }

    @Override
    protected String extraRepr() {
        String base = super.extraRepr();
        return mode == Mode.RNN_RELU ? base + ", nonlinearity=relu" : base;
    }
}
