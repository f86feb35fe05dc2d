package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code (*, C, H r, W r) -> (*, C r^2, H, W)}, as {@code torch.nn.PixelUnshuffle}. */
public class PixelUnshuffle extends Module {
    private final int downscaleFactor;

    public PixelUnshuffle(int downscaleFactor) {
        this.downscaleFactor = downscaleFactor;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.pixelUnshuffle(input, downscaleFactor);
    }

    @Override
    protected String extraRepr() {
        return "downscale_factor=" + downscaleFactor;
    }
}
