package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code x * tanh(softplus(x))}, as {@code torch.nn.Mish}. */
public class Mish extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input.mish();
    }
}
