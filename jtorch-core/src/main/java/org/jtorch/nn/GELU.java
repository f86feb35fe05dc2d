package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** GELU, exact ({@code "none"}, the default) or with the tanh approximation ({@code "tanh"}), as {@code torch.nn.GELU}. */
public class GELU extends Module {
    private final String approximate;

    public GELU() {
        this("none");
    }

    public GELU(String approximate) {
        Arguments.nonNull("GELU", "approximate", approximate);
        if (!approximate.equals("none") && !approximate.equals("tanh")) {
            throw new IllegalArgumentException("GELU: approximate must be 'none' or 'tanh', got '" + approximate + "'");
        }
        this.approximate = approximate;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.gelu(approximate);
    }

    @Override
    protected String extraRepr() {
        return "approximate='" + approximate + "'";
    }
}
