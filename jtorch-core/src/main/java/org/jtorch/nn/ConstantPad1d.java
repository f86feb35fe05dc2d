package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Pads the last dimension with a constant (negative pads crop), as {@code torch.nn.ConstantPad1d}. The padding is one int (every side) or 2 ints
 * {@code (left, right)}.
 */
public class ConstantPad1d extends PadModule {
    public ConstantPad1d(long padding, double value) {
        super(Padding.Mode.CONSTANT, expand(padding, 2), value, true);
    }

    public ConstantPad1d(long[] padding, double value) {
        Arguments.nonNull("ConstantPad1d", "padding", padding);
        super(Padding.Mode.CONSTANT, checked("ConstantPad1d", padding, 2), value, true);
    }
}
