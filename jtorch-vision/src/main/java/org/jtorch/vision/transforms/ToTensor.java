package org.jtorch.vision.transforms;

import java.awt.image.BufferedImage;
import org.jtorch.Tensor;
import org.jtorch.types.DType;
import org.jtorch.vision.Images;

/**
 * {@code torchvision.transforms.ToTensor}: an image in HWC layout (a tensor {@code [H, W, C]} or
 * {@code [H, W]}, as the numpy array of a PIL image) becomes CHW {@code [C, H, W]}; uint8 values are
 * divided by 255 into float32 in [0, 1], other dtypes keep their values (as torchvision does for
 * non-uint8 arrays). {@link #of(BufferedImage)} converts an AWT image (as RGB).
 */
public final class ToTensor implements Transform {
    @Override
    public Tensor apply(Tensor pic) {
        if (pic.dim() != 2 && pic.dim() != 3) {
            throw new IllegalArgumentException("ToTensor: pic should be 2 or 3 dimensional (HW or HWC), got " + pic.dim() + " dimensions");
        }
        try (Tensor hwc = pic.dim() == 2 ? pic.unsqueeze(2) : pic.alias();
             Tensor chw = hwc.permute(2, 0, 1)) {
            if (pic.dtype() != DType.UINT8) return chw.contiguous();
            try (Tensor f = chw.to(DType.FLOAT32)) {
                return f.div(255.0);
            }
        }
    }

    /** An AWT image as float32 {@code [3, H, W]} in [0, 1] (RGB, as {@code ToTensor()(img.convert("RGB"))}). */
    public static Tensor of(BufferedImage image) {
        try (Tensor hwc = Images.rgb(image)) {
            return new ToTensor().apply(hwc);
        }
    }

    @Override
    public String toString() {
        return "ToTensor()";
    }
}
