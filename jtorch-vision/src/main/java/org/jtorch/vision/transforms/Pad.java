package org.jtorch.vision.transforms;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;

/**
 * {@code torchvision.transforms.Pad} for tensor images {@code [..., H, W]} of any dtype. Padding is
 * one value (all sides), two (left/right, top/bottom) or four (left, top, right, bottom). Modes:
 * {@code CONSTANT} (the fill value), {@code EDGE} (repeat the border pixel), {@code REFLECT}
 * (mirror without repeating the border: [1, 2, 3] padded by 2 is [3, 2, 1, 2, 3, 2, 1]; padding
 * must be smaller than the side) and {@code SYMMETRIC} (mirror repeating the border:
 * [2, 1, 1, 2, 3, 3, 2]). Negative padding is rejected.
 */
public final class Pad implements Transform {
    public enum Mode { CONSTANT, EDGE, REFLECT, SYMMETRIC }

    private final int[] ltrb;
    private final double fill;
    private final Mode mode;

    public Pad(int... padding) {
        this(padding, 0, Mode.CONSTANT);
    }

    public Pad(int[] padding, double fill, Mode mode) {
        this.ltrb = parse(padding);
        this.fill = fill;
        this.mode = mode;
    }

    static int[] parse(int[] p) {
        int[] r = switch (p.length) {
            case 1 -> new int[] {p[0], p[0], p[0], p[0]};
            case 2 -> new int[] {p[0], p[1], p[0], p[1]};
            case 4 -> p.clone();
            default -> throw new IllegalArgumentException("Pad: padding must be an int or a 1, 2, or 4 element sequence, not a " + p.length + " element sequence");
        };
        for (int v : r) if (v < 0) throw new IllegalArgumentException("Pad: negative padding " + Arrays.toString(p) + " is not supported");
        return r;
    }

    @Override
    public Tensor apply(Tensor img) {
        return ImageDims.onImage(img, x -> pad(x, ltrb, fill, mode));
    }

    /** Pads {@code img} by {left, top, right, bottom}. */
    public static Tensor pad(Tensor img, int[] ltrb, double fill, Mode mode) {
        ImageDims.requireImage("Pad", img, 2);
        int hd = img.dim() - 2;
        int wd = img.dim() - 1;
        long h = img.size(hd);
        long w = img.size(wd);
        if (mode == Mode.CONSTANT) {
            long[] shape = img.shape().clone();
            shape[hd] = h + ltrb[1] + ltrb[3];
            shape[wd] = w + ltrb[0] + ltrb[2];
            Tensor out = Torch.full(shape, fill, img.dtype(), img.device());
            try (Tensor inner = ImageDims.crop(out, ltrb[1], ltrb[0], h, w)) {
                inner.copy_(img);
            }
            return out;
        }
        if (mode == Mode.REFLECT && (ltrb[1] >= h || ltrb[3] >= h || ltrb[0] >= w || ltrb[2] >= w)) {
            throw new IllegalArgumentException("Pad: reflect padding " + Arrays.toString(ltrb) + " (left, top, right, bottom) must be"
                    + " smaller than the image size " + h + "x" + w);
        }
        if ((h == 0 && ltrb[1] + ltrb[3] > 0) || (w == 0 && ltrb[0] + ltrb[2] > 0)) {
            throw new IllegalArgumentException("Pad: cannot " + mode.name().toLowerCase() + "-pad an empty image " + h + "x" + w);
        }
        try (Tensor rowIdx = Torch.tensor(sourceIndices(h, ltrb[1], ltrb[3], mode));
             Tensor colIdx = Torch.tensor(sourceIndices(w, ltrb[0], ltrb[2], mode));
             Tensor rows = img.indexSelect(hd, rowIdx)) {
            return rows.indexSelect(wd, colIdx);
        }
    }

    /** For each output position along one side, the input position it copies. */
    static long[] sourceIndices(long n, int before, int after, Mode mode) {
        long[] idx = new long[(int) (n + before + after)];
        for (int o = 0; o < idx.length; o++) {
            long i = o - before;
            idx[o] = switch (mode) {
                case EDGE -> Math.min(Math.max(i, 0), n - 1);
                case REFLECT -> reflect(i, n);
                case SYMMETRIC -> symmetric(i, n);
                case CONSTANT -> throw new IllegalStateException();
            };
        }
        return idx;
    }

    private static long reflect(long i, long n) {
        if (n == 1) return 0;
        long period = 2 * (n - 1);
        long m = Math.floorMod(i, period);
        return m < n ? m : period - m;
    }

    private static long symmetric(long i, long n) {
        long period = 2 * n;
        long m = Math.floorMod(i, period);
        return m < n ? m : period - 1 - m;
    }

    @Override
    public String toString() {
        return "Pad(padding=" + Arrays.toString(ltrb) + ", fill=" + fill + ", padding_mode=" + mode.name().toLowerCase() + ")";
    }
}
