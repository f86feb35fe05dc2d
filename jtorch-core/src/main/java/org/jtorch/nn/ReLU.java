package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code max(x, 0)}, as {@code torch.nn.ReLU}. */
public class ReLU extends Module {

    @Override
    public Tensor forward(Tensor input) {
        return input.relu();
    }

}
