package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Pads the last two dimensions with a constant (negative pads crop), as {@code torch.nn.ConstantPad2d}. The padding is one int (every side) or 4 ints
 * {@code (left, right, top, bottom)}.
 */
public class ConstantPad2d extends PadModule {
    public ConstantPad2d(long padding, double value) {
        super(Padding.Mode.CONSTANT, expand(padding, 4), value, true);
    }

    public ConstantPad2d(long[] padding, double value) {
        Arguments.nonNull("ConstantPad2d", "padding", padding);
        super(Padding.Mode.CONSTANT, checked("ConstantPad2d", padding, 4), value, true);
    }
}
