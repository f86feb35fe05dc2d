package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * One Elman RNN step, as {@code torch.nn.RNNCell}: {@code h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)} (or relu).
 * Parameters: {@link RNNCellBase}.
 */
public class RNNCell extends RNNCellBase implements TupleModule<RNN.Input, Tensor> {
    private final boolean relu;

    public RNNCell(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, true, "tanh");
    }

    public RNNCell(long inputSize, long hiddenSize, boolean bias, String nonlinearity) {
        this(inputSize, hiddenSize, bias, nonlinearity, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public RNNCell(long inputSize, long hiddenSize, boolean bias, String nonlinearity, DType dtype, Device device, Generator gen) {
        super("RNNCell", inputSize, hiddenSize, bias, 1, dtype, device, gen);
        Arguments.nonNull("RNNCell", "nonlinearity", nonlinearity);
        this.relu = switch (nonlinearity) {
            case "tanh" -> false;
            case "relu" -> true;
            case null, default -> throw new IllegalArgumentException("RNNCell: Unknown nonlinearity: " + nonlinearity);
        };
    }

    /** The next hidden state from zeros. */
    @Override
    public Tensor forward(Tensor input) {
        return forward(input, null);
    }

    /** The {@link TupleModule} form: PyTorch's {@code (input, hx) -> h'} ({@code h0} is {@code hx}; null: zeros). */
    @Override
    public Tensor forward(RNN.Input input) {
        org.jtorch.types.Arguments.nonNull("RNNCell.forward", "input", input);
        return forward(input.input(), input.h0());
    }

    /** The next hidden state from {@code hx} ({@code [N, H]} or {@code [H]}; null: zeros). */
    public Tensor forward(Tensor input, Tensor hx) {
        return hiddenStep(input, hx, (x, h) -> {
            Tensor pre = inputGates(x).add(hiddenGates(h));
            return relu ? pre.relu() : pre.tanh();
        });
    }

    @Override
    protected String extraRepr() {
        return super.extraRepr() + (relu ? ", nonlinearity=relu" : "");
    }
}
