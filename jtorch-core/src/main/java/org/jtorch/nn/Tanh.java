package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code tanh(x)}, as {@code torch.nn.Tanh}. */
public class Tanh extends Module {

    @Override
    public Tensor forward(Tensor input) {
        return input.tanh();
    }

}
