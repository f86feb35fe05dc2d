package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code x * sigmoid(x)}, as {@code torch.nn.SiLU}. */
public class SiLU extends Module {

    @Override
    public Tensor forward(Tensor input) {
        return input.silu();
    }

}
