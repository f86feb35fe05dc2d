package org.jtorch.vision.transforms;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * {@code torchvision.transforms.RandomHorizontalFlip}: with probability {@code p} reverses the last
 * (width) dimension of a tensor image {@code [..., H, W]} (the width of an HWC image), else returns it unchanged (an alias). One
 * uniform draw per call from the generator ({@link Generator#defaultGenerator()} unless given), as
 * torchvision's {@code torch.rand(1) < p}.
 */
public final class RandomHorizontalFlip implements Transform {
    private final double p;
    private final Generator gen;

    public RandomHorizontalFlip() {
        this(0.5);
    }

    public RandomHorizontalFlip(double p) {
        this(p, Generator.defaultGenerator());
    }

    public RandomHorizontalFlip(double p, Generator gen) {
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException("RandomHorizontalFlip: p must be in [0, 1], got " + p);
        this.p = p;
        this.gen = gen;
    }

    @Override
    public Tensor apply(Tensor img) {
        ImageDims.requireImage("RandomHorizontalFlip", img, 2);
        double u;
        try (Tensor r = Torch.rand(new long[] {1}, DType.FLOAT32, Device.cpu(), gen)) {
            u = r.item();
        }
        return ImageDims.onImage(img, x -> u < p ? hflip(x) : x.alias());
    }

    /** The image mirrored left to right (a new tensor). */
    public static Tensor hflip(Tensor img) {
        long w = ImageDims.width(img);
        long[] rev = new long[(int) w];
        for (int i = 0; i < w; i++) rev[i] = w - 1 - i;
        try (Tensor idx = Torch.tensor(rev)) {
            return img.indexSelect(img.dim() - 1, idx);
        }
    }

    @Override
    public String toString() {
        return "RandomHorizontalFlip(p=" + p + ")";
    }
}
