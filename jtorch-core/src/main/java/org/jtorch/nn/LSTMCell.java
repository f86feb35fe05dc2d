package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.ops.Recurrent;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * One LSTM step, as {@code torch.nn.LSTMCell} (the formulas of {@link LSTM}; the fused {@link Recurrent#lstmCell}):
 * {@link #forward(Tensor, LSTM.State)} maps {@code (input, (h, c))} to the next {@code (h', c')}.
 */
public class LSTMCell extends RNNCellBase implements TupleModule<LSTM.Input, LSTM.State> {
    public LSTMCell(long inputSize, long hiddenSize) {
        this(inputSize, hiddenSize, true);
    }

    public LSTMCell(long inputSize, long hiddenSize, boolean bias) {
        this(inputSize, hiddenSize, bias, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public LSTMCell(long inputSize, long hiddenSize, boolean bias, DType dtype, Device device, Generator gen) {
        super("LSTMCell", inputSize, hiddenSize, bias, 4, dtype, device, gen);
    }

    /** The next hidden state {@code h'} from zero states (the cell state is dropped; see {@link #forward(Tensor, LSTM.State)}). */
    @Override
    public Tensor forward(Tensor input) {
        try (LSTM.State next = forward(input, null)) {
            return next.h().alias();
        }
    }

    /** The {@link TupleModule} form: PyTorch's {@code (input, (h, c)) -> (h', c')}. */
    @Override
    public LSTM.State forward(LSTM.Input input) {
        Arguments.nonNull("LSTMCell.forward", "input", input);
        return forward(input.input(), input.state());
    }

    /** The next {@code (h', c')} from {@code state} ({@code [N, H]} or {@code [H]} each; null: zeros). */
    public LSTM.State forward(Tensor input, LSTM.State state) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = batchedInput(input);
            Tensor h = batchedState("hx", state == null ? null : state.h(), input, x.size(0));
            Tensor c = batchedState("cx", state == null ? null : state.c(), input, x.size(0));
            Recurrent.LstmStep step = Recurrent.lstmCell(inputGates(x), hiddenGates(h), c);
            boolean unbatched = input.dim() == 1;
            return new LSTM.State(scope.keep(unbatched ? step.hy().squeeze(0) : step.hy()),
                    scope.keep(unbatched ? step.cy().squeeze(0) : step.cy()));
        }
    }
}
