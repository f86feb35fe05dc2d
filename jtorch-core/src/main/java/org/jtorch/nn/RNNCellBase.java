package org.jtorch.nn;

import java.util.function.BinaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The single-step cells {@link RNNCell}, {@link LSTMCell} and {@link GRUCell}, as PyTorch 1.13's {@code RNNCellBase}:
 * parameters {@code weight_ih} {@code [G*H, in]}, {@code weight_hh} {@code [G*H, H]}, {@code bias_ih} and
 * {@code bias_hh} {@code [G*H]} (absent without bias), all initialised U(-1/sqrt(H), 1/sqrt(H)). Inputs are
 * {@code [N, in]} or unbatched {@code [in]}, states {@code [N, H]} or {@code [H]}.
 */
public abstract class RNNCellBase extends Module {
    private final String name;
    final long inputSize;
    final long hiddenSize;
    final boolean bias;

    RNNCellBase(String name, long inputSize, long hiddenSize, boolean bias, int gates, DType dtype, Device device, Generator gen) {
        Arguments.nonNull(name, "dtype", dtype);
        Arguments.nonNull(name, "device", device);
        Arguments.nonNull(name, "gen", gen);
        if (inputSize <= 0) throw new IllegalArgumentException(name + ": input_size must be greater than zero, got " + inputSize);
        if (hiddenSize <= 0) throw new IllegalArgumentException(name + ": hidden_size must be greater than zero, got " + hiddenSize);
        this.name = name;
        this.inputSize = inputSize;
        this.hiddenSize = hiddenSize;
        this.bias = bias;
        registerParameter("weight_ih", Tensor.empty(new long[] {gates * hiddenSize, inputSize}, dtype, device));
        registerParameter("weight_hh", Tensor.empty(new long[] {gates * hiddenSize, hiddenSize}, dtype, device));
        registerParameter("bias_ih", bias ? Tensor.empty(new long[] {gates * hiddenSize}, dtype, device) : null);
        registerParameter("bias_hh", bias ? Tensor.empty(new long[] {gates * hiddenSize}, dtype, device) : null);
        resetParameters(gen);
    }

    /** PyTorch's initialisation: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)). */
    public void resetParameters(Generator g) {
        Arguments.nonNull("resetParameters", "g", g);
        double stdv = 1 / Math.sqrt(hiddenSize);
        for (Tensor p : parameters()) Init.uniform_(p, -stdv, stdv, g);
    }

    public long inputSize() {
        return inputSize;
    }

    public long hiddenSize() {
        return hiddenSize;
    }

    /** {@code input @ weight_ih^T + bias_ih}. */
    Tensor inputGates(Tensor input) {
        return F.linear(input, parameter("weight_ih"), parameter("bias_ih"));
    }

    /** {@code h @ weight_hh^T + bias_hh}. */
    Tensor hiddenGates(Tensor h) {
        return F.linear(h, parameter("weight_hh"), parameter("bias_hh"));
    }

    /** Checks the input ({@code [N, in]} or {@code [in]}) and returns it as a batch ({@code [N, in]}). */
    Tensor batchedInput(Tensor input) {
        Arguments.nonNull(name, "input", input);
        input.checkOpen(name);
        if (input.dim() != 1 && input.dim() != 2) {
            throw new IllegalArgumentException(name + ": Expected input to be 1D or 2D, got " + input.dim() + "D instead");
        }
        if (input.size(input.dim() - 1) != inputSize) {
            throw new IllegalArgumentException(name + ": input has inconsistent input_size: got " + input.size(input.dim() - 1)
                    + " expected " + inputSize);
        }
        return input.dim() == 1 ? input.unsqueeze(0) : input.alias();
    }

    /** Checks a state against a batched input of {@code batch} rows (null: zeros) and returns it batched. */
    Tensor batchedState(String what, Tensor state, Tensor input, long batch) {
        if (state == null) return Torch.zeros(new long[] {batch, hiddenSize}, input.dtype(), input.device());
        state.checkOpen(name);
        boolean unbatched = input.dim() == 1;
        long[] expected = unbatched ? new long[] {hiddenSize} : new long[] {batch, hiddenSize};
        if (!java.util.Arrays.equals(state.shape(), expected)) {
            throw new IllegalArgumentException(name + ": expected " + what + " of shape " + Shapes.format(expected) + " for an input of shape "
                    + Shapes.format(input.shape()) + ", got " + Shapes.format(state.shape()));
        }
        return unbatched ? state.unsqueeze(0) : state.alias();
    }

    /** A step of a cell whose state is one tensor ({@code hx}, null: zeros): batches input and state, runs {@code step}, unbatches. */
    Tensor hiddenStep(Tensor input, Tensor hx, BinaryOperator<Tensor> step) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = batchedInput(input);
            Tensor hy = step.apply(x, batchedState("hx", hx, input, x.size(0)));
            return scope.keep(input.dim() == 1 ? hy.squeeze(0) : hy);
        }
    }

    @Override
    protected String extraRepr() {
        return inputSize + ", " + hiddenSize + (bias ? "" : ", bias=False");
    }
}
