package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Zero padding of the last two dimensions, as {@code torch.nn.ZeroPad2d}. The padding is one int (every side)
 * or 4 ints {@code (left, right, top, bottom)}; negative values crop.
 */
public class ZeroPad2d extends PadModule {
    public ZeroPad2d(long padding) {
        super(Padding.Mode.CONSTANT, expand(padding, 4), 0, false);
    }

    public ZeroPad2d(long[] padding) {
        Arguments.nonNull("ZeroPad2d", "padding", padding);
        super(Padding.Mode.CONSTANT, checked("ZeroPad2d", padding, 4), 0, false);
    }
}
