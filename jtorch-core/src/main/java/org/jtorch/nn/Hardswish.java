package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code x * relu6(x + 3) / 6}, as {@code torch.nn.Hardswish}. */
public class Hardswish extends Module {

    @Override
    public Tensor forward(Tensor input) {
        return F.hardswish(input);
    }

}
