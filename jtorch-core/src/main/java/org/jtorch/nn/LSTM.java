package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.nn.utils.PackedSequence;
import org.jtorch.types.Arguments;

/**
 * A multi-layer long short-term memory, as {@code torch.nn.LSTM}: gates {@code i, f, o = sigmoid(...)}, {@code g =
 * tanh(...)} of {@code x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh}, {@code c_t = f c_{t-1} + i g}, {@code h_t = o tanh(c_t)},
 * and with {@code projSize > 0} {@code h_t = (o tanh(c_t)) W_hr^T}. Parameters, initialisation and options:
 * {@link RNNBase}, {@link RNNOptions}.
 *
 * <p>PyTorch's {@code lstm(input, (h_0, c_0)) -> (output, (h_n, c_n))} is {@link #forward(Tensor, State)}, returning an
 * {@link Output}; a training loop that carries the state across batches (truncated backpropagation through time)
 * writes
 * <pre>{@code
 * LSTM.State state = null;                               // zeros
 * for (...) {
 *     LSTM.Output out = lstm.forward(x, state);
 *     ... loss from out.output() ...
 *     state = out.state().detach();                     // keep the values, cut the graph
 * }
 * }</pre>
 * {@link #forward(Tensor)} (the single-tensor {@link Module} form, for {@link Sequential}) returns only {@code output};
 * {@link #forward(Input)} is the same call as a {@link TupleModule}, for typed chains, DDP and a JIT.
 */
public class LSTM extends RNNBase implements TupleModule<LSTM.Input, LSTM.Output> {
    /** PyTorch's {@code (input, (h_0, c_0))}: the sequence and the state to start from (null: zeros). */
    public record Input(Tensor input, State state) {
        public Input {
            Arguments.nonNull("LSTM.Input", "input", input);
        }

        /** The sequence from zero states. */
        public Input(Tensor input) {
            this(input, null);
        }
    }

    /**
     * An LSTM state {@code (h, c)}: {@code h} {@code [L*D, N, H_out]} and {@code c} {@code [L*D, N, H]} (unbatched: no
     * {@code N}); closing closes both.
     */
    public record State(Tensor h, Tensor c) implements AutoCloseable {
        public State {
            Arguments.nonNull("LSTM.State", "h", h);
            Arguments.nonNull("LSTM.State", "c", c);
        }

        /** The same values, outside any graph (new tensors sharing storage; the caller closes them). */
        public State detach() {
            return new State(h.detach(), c.detach());
        }

        @Override
        public void close() {
            h.close();
            c.close();
        }
    }

    /** {@code (output, (h_n, c_n))}; closing closes all three. */
    public record Output(Tensor output, Tensor hN, Tensor cN) implements AutoCloseable {
        public Output {
            Arguments.nonNull("LSTM.Output", "output", output);
            Arguments.nonNull("LSTM.Output", "hN", hN);
            Arguments.nonNull("LSTM.Output", "cN", cN);
        }

        /** {@code (h_n, c_n)}, the state to continue from (the same tensors: closing either closes both). */
        public State state() {
            return new State(hN, cN);
        }

        @Override
        public void close() {
            output.close();
            hN.close();
            cN.close();
        }
    }

    /** {@code (output, (h_n, c_n))} of a packed input: the output is packed like the input. */
    public record PackedOutput(PackedSequence output, Tensor hN, Tensor cN) implements AutoCloseable {
        public PackedOutput {
            Arguments.nonNull("LSTM.PackedOutput", "output", output);
            Arguments.nonNull("LSTM.PackedOutput", "hN", hN);
            Arguments.nonNull("LSTM.PackedOutput", "cN", cN);
        }

        public State state() {
            return new State(hN, cN);
        }

        @Override
        public void close() {
            output.close();
            hN.close();
            cN.close();
        }
    }

    public LSTM(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, options());
    }

    public LSTM(long inputSize, long hiddenSize, RNNOptions options) {
        super("LSTM", Mode.LSTM, inputSize, hiddenSize, options);
    }

    public static RNNOptions options() {
        return new RNNOptions();
    }

    /** The output sequence from zero initial states. */
    @Override
    public Tensor forward(Tensor input) {
        try (Output out = forward(input, (State) null)) {
            return out.output().alias();
        }
    }

    /** {@code (output, (h_n, c_n))} from {@code state} (null: zeros). */
    public Output forward(Tensor input, State state) {
        Result r = runPadded(input, state == null ? null : state.h(), state == null ? null : state.c());
        return new Output(r.output(), r.hN(), r.cN());
    }

    /** The {@link TupleModule} form of {@link #forward(Tensor, State)}. */
    @Override
    public Output forward(Input input) {
        Arguments.nonNull("LSTM.forward", "input", input);
        return forward(input.input(), input.state());
    }

    /** A packed input: the output is packed the same way; {@code state} is in the caller's batch order (null: zeros). */
    public PackedOutput forward(PackedSequence input, State state) {
        Result r = runPacked(input, state == null ? null : state.h(), state == null ? null : state.c());
        return new PackedOutput(input.withData(r.output()), r.hN(), r.cN());
    }
}
