package org.jtorch.nn;

import org.jtorch.ops.Padding;
import org.jtorch.types.Arguments;

/**
 * Edge-replicating padding of the last dimension of {@code (N, C, L)} or {@code (C, L)}, as {@code torch.nn.ReplicationPad1d}. The padding is one int (every side) or 2 ints
 * {@code (left, right)}.
 */
public class ReplicationPad1d extends PadModule {
    public ReplicationPad1d(long padding) {
        super(Padding.Mode.REPLICATE, expand(padding, 2), 0, false);
    }

    public ReplicationPad1d(long[] padding) {
        Arguments.nonNull("ReplicationPad1d", "padding", padding);
        super(Padding.Mode.REPLICATE, checked("ReplicationPad1d", padding, 2), 0, false);
    }
}
