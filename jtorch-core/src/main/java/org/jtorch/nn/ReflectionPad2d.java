package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Reflection padding of the last two dimensions of {@code (N, C, H, W)} or {@code (C, H, W)}, as {@code torch.nn.ReflectionPad2d}. The padding is one int (every side) or 4 ints
 * {@code (left, right, top, bottom)}.
 */
public class ReflectionPad2d extends PadModule {
    public ReflectionPad2d(long padding) {
        super(Padding.Mode.REFLECT, expand(padding, 4), 0, false);
    }

    public ReflectionPad2d(long[] padding) {
        Arguments.nonNull("ReflectionPad2d", "padding", padding);
        super(Padding.Mode.REFLECT, checked("ReflectionPad2d", padding, 4), 0, false);
    }
}
