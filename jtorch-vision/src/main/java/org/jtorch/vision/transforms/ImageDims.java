package org.jtorch.vision.transforms;

import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.vision.Images;

/** Shape checks shared by the transforms, which take images as tensors {@code [..., H, W]}. */
final class ImageDims {
    private ImageDims() {}

    /**
     * {@code op}, written for tensor images {@code [..., C, H, W]}, applied to {@code img}: directly, or for
     * an HWC image ({@link Images#isHwcImage}) through a CHW view, the result marked HWC again. For the
     * transforms whose PIL and tensor paths agree (crops, flips, padding).
     */
    static Tensor onImage(Tensor img, UnaryOperator<Tensor> op) {
        if (!Images.isHwcImage(img)) return op.apply(img);
        try (Tensor chw = img.permute(2, 0, 1); Tensor out = op.apply(chw)) {
            return Images.asHwcImage(out.permute(1, 2, 0));
        }
    }

    /** Refuses an HWC image where torchvision refuses a PIL image. */
    static void requireTensorImage(String op, Tensor img) {
        if (Images.isHwcImage(img)) {
            throw new IllegalArgumentException(op + ": expected a tensor image [..., C, H, W], got an HWC image " + java.util.Arrays.toString(img.shape())
                    + " (a dataset's image, torchvision's PIL image); apply ToTensor first, as torchvision requires");
        }
    }

    static void requireImage(String op, Tensor img, int minDims) {
        if (img.dim() < minDims) {
            throw new IllegalArgumentException(op + ": expected a tensor image of shape " + (minDims >= 3 ? "[..., C, H, W]" : "[..., H, W]")
                    + ", got " + img.dim() + " dimensions " + java.util.Arrays.toString(img.shape()));
        }
    }

    static long height(Tensor img) {
        return img.size(img.dim() - 2);
    }

    static long width(Tensor img) {
        return img.size(img.dim() - 1);
    }

    /** {@code img[..., top:top+h, left:left+w]} as a view (bounds must be inside the image). */
    static Tensor crop(Tensor img, long top, long left, long h, long w) {
        try (Tensor rows = img.narrow(img.dim() - 2, top, h)) {
            return rows.narrow(img.dim() - 1, left, w);
        }
    }

    /** One size for both sides when given one value, else {height, width}. */
    static int[] size2(String op, int... size) {
        if (size.length == 1) return new int[] {size[0], size[0]};
        if (size.length == 2) return size.clone();
        throw new IllegalArgumentException(op + ": size must be one or two values (height, width), got " + size.length);
    }
}
