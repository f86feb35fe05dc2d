package org.jtorch.vision.transforms;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * {@code torchvision.transforms.RandomCrop}: optionally pads a tensor image {@code [..., H, W]}
 * ({@code padding} as {@link Pad}; with {@code padIfNeeded}, also up to the crop size), then returns a
 * {@code height x width} region at a uniformly random offset: {@code top ~ randint(0, H - height + 1)},
 * then {@code left ~ randint(0, W - width + 1)}, drawn from the generator
 * ({@link Generator#defaultGenerator()} unless given). The common CIFAR augmentation is
 * {@code new RandomCrop(32, 4)}.
 */
public final class RandomCrop implements Transform {
    private final int[] size;
    private final int[] padding;
    private final boolean padIfNeeded;
    private final double fill;
    private final Pad.Mode mode;
    private final Generator gen;

    /** A square crop of side {@code size}, without padding. */
    public RandomCrop(int size) {
        this(new int[] {size}, null, false, 0, Pad.Mode.CONSTANT, Generator.defaultGenerator());
    }

    /** A square crop of side {@code size} after zero-padding every side by {@code padding}. */
    public RandomCrop(int size, int padding) {
        this(new int[] {size}, new int[] {padding}, false, 0, Pad.Mode.CONSTANT, Generator.defaultGenerator());
    }

    /**
     * @param size one value (square) or {height, width}
     * @param padding null, or 1, 2 or 4 values as {@link Pad}
     */
    public RandomCrop(int[] size, int[] padding, boolean padIfNeeded, double fill, Pad.Mode mode, Generator gen) {
        this.size = ImageDims.size2("RandomCrop", size);
        this.padding = padding == null ? null : Pad.parse(padding);
        this.padIfNeeded = padIfNeeded;
        this.fill = fill;
        this.mode = mode;
        this.gen = gen;
    }

    /** The same crop drawing from {@code generator}. */
    public RandomCrop withGenerator(Generator generator) {
        return new RandomCrop(size, padding, padIfNeeded, fill, mode, generator);
    }

    @Override
    public Tensor apply(Tensor img) {
        return ImageDims.onImage(img, this::crop);
    }

    private Tensor crop(Tensor img) {
        ImageDims.requireImage("RandomCrop", img, 2);
        Tensor x = padding == null ? img.alias() : Pad.pad(img, padding, fill, mode);
        try {
            int th = size[0];
            int tw = size[1];
            if (padIfNeeded && ImageDims.width(x) < tw) {
                Tensor y = Pad.pad(x, new int[] {(int) (tw - ImageDims.width(x)), 0, (int) (tw - ImageDims.width(x)), 0}, fill, mode);
                x.close();
                x = y;
            }
            if (padIfNeeded && ImageDims.height(x) < th) {
                Tensor y = Pad.pad(x, new int[] {0, (int) (th - ImageDims.height(x)), 0, (int) (th - ImageDims.height(x))}, fill, mode);
                x.close();
                x = y;
            }
            long h = ImageDims.height(x);
            long w = ImageDims.width(x);
            if (h < th || w < tw) {
                throw new IllegalArgumentException("RandomCrop: required crop size (" + th + ", " + tw + ") is larger than the input image size (" + h + ", " + w + ")");
            }
            if (h == th && w == tw) return x.alias();
            long top = randint(h - th + 1);
            long left = randint(w - tw + 1);
            return ImageDims.crop(x, top, left, th, tw);
        } finally {
            x.close();
        }
    }

    private long randint(long high) {
        try (Tensor r = Torch.randint(0, high, new long[] {1}, DType.INT64, Device.cpu(), gen)) {
            return r.itemLong();
        }
    }

    @Override
    public String toString() {
        return "RandomCrop(size=(" + size[0] + ", " + size[1] + "), padding=" + Arrays.toString(padding) + ")";
    }
}
