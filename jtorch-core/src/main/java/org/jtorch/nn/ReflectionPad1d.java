package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Reflection padding of the last dimension of {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.ReflectionPad1d}. The padding is one int (every side) or 2 ints
 * {@code (left, right)}.
 */
public class ReflectionPad1d extends PadModule {
    public ReflectionPad1d(long padding) {
        super(Padding.Mode.REFLECT, expand(padding, 2), 0, false);
    }

    public ReflectionPad1d(long[] padding) {
        Arguments.nonNull("ReflectionPad1d", "padding", padding);
        super(Padding.Mode.REFLECT, checked("ReflectionPad1d", padding, 2), 0, false);
    }
}
