package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code (*, C r^2, H, W) -> (*, C, H r, W r)}, as {@code torch.nn.PixelShuffle}. */
public class PixelShuffle extends Module {
    private final int upscaleFactor;

    public PixelShuffle(int upscaleFactor) {
        this.upscaleFactor = upscaleFactor;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.pixelShuffle(input, upscaleFactor);
    }

    @Override
    protected String extraRepr() {
        return "upscale_factor=" + upscaleFactor;
    }
}
