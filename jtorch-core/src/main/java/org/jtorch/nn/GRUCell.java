package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.ops.Recurrent;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/** One GRU step, as {@code torch.nn.GRUCell} (the formulas of {@link GRU}; the fused {@link Recurrent#gruCell}). */
public class GRUCell extends RNNCellBase implements TupleModule<RNN.Input, Tensor> {
    public GRUCell(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, true);
    }

    public GRUCell(long inputSize, long hiddenSize, boolean bias) {
        this(inputSize, hiddenSize, bias, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public GRUCell(long inputSize, long hiddenSize, boolean bias, DType dtype, Device device, Generator gen) {
        super("GRUCell", inputSize, hiddenSize, bias, 3, dtype, device, gen);
    }

    /** The next hidden state from zeros. */
    @Override
    public Tensor forward(Tensor input) {
        return forward(input, null);
    }

    /** The {@link TupleModule} form: PyTorch's {@code (input, hx) -> h'} ({@code h0} is {@code hx}; null: zeros). */
    @Override
    public Tensor forward(RNN.Input input) {
        org.jtorch.types.Arguments.nonNull("GRUCell.forward", "input", input);
        return forward(input.input(), input.h0());
    }

    /** The next hidden state from {@code hx} ({@code [N, H]} or {@code [H]}; null: zeros). */
    public Tensor forward(Tensor input, Tensor hx) {
        return hiddenStep(input, hx, (x, h) -> Recurrent.gruCell(inputGates(x), hiddenGates(h), h));
    }
}
