package org.jtorch.vision.transforms;

import org.jtorch.Tensor;

/**
 * {@code torchvision.transforms.CenterCrop}: the central {@code height x width} region of a tensor
 * image {@code [..., H, W]}, or of an HWC image as torchvision's of a PIL image (a view), offset {@code round((H - height) / 2)} with Python's
 * round-half-to-even; an image smaller than the crop is first padded with zeros as torchvision does.
 */
public final class CenterCrop implements Transform {
    private final int[] size;

    /** {@code size}: one value for a square, or {height, width}. */
    public CenterCrop(int... size) {
        this.size = ImageDims.size2("CenterCrop", size);
    }

    @Override
    public Tensor apply(Tensor img) {
        return ImageDims.onImage(img, this::crop);
    }

    private Tensor crop(Tensor img) {
        ImageDims.requireImage("CenterCrop", img, 2);
        long h = ImageDims.height(img);
        long w = ImageDims.width(img);
        int th = size[0];
        int tw = size[1];
        if (tw > w || th > h) {
            int[] ltrb = {
                tw > w ? (int) ((tw - w) / 2) : 0, th > h ? (int) ((th - h) / 2) : 0,
                tw > w ? (int) ((tw - w + 1) / 2) : 0, th > h ? (int) ((th - h + 1) / 2) : 0};
            try (Tensor padded = Pad.pad(img, ltrb, 0, Pad.Mode.CONSTANT)) {
                return crop(padded);
            }
        }
        long top = Math.round(Math.rint((h - th) / 2.0));
        long left = Math.round(Math.rint((w - tw) / 2.0));
        return ImageDims.crop(img, top, left, th, tw);
    }

    @Override
    public String toString() {
        return "CenterCrop(size=(" + size[0] + ", " + size[1] + "))";
    }
}
