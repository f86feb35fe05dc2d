package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code 1 / (1 + exp(-x))}, as {@code torch.nn.Sigmoid}. */
public class Sigmoid extends Module {

    @Override
    public Tensor forward(Tensor input) {
        return input.sigmoid();
    }

}
