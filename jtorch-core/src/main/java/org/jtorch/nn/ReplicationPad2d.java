package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Edge-replicating padding of the last two dimensions of {@code (N, C, H, W)} or {@code (C, H, W)}, as {@code torch.nn.ReplicationPad2d}. The padding is one int (every side) or 4 ints
 * {@code (left, right, top, bottom)}.
 */
public class ReplicationPad2d extends PadModule {
    public ReplicationPad2d(long padding) {
        super(Padding.Mode.REPLICATE, expand(padding, 4), 0, false);
    }

    public ReplicationPad2d(long[] padding) {
        Arguments.nonNull("ReplicationPad2d", "padding", padding);
        super(Padding.Mode.REPLICATE, checked("ReplicationPad2d", padding, 4), 0, false);
    }
}
