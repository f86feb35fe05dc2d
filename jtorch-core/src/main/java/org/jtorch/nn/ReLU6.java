package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code min(max(x, 0), 6)}, as {@code torch.nn.ReLU6}. */
public class ReLU6 extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input.relu6();
    }
}
