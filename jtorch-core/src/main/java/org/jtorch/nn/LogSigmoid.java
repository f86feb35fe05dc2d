package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code log(sigmoid(x))}, as {@code torch.nn.LogSigmoid}. */
public class LogSigmoid extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input.logSigmoid();
    }
}
