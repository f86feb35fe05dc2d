package org.jtorch.vision.transforms;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.vision.Images;

/**
 * {@code torchvision.transforms.Resize} with bilinear interpolation. One size resizes the shorter side
 * to it, the longer to {@code int(size * long / short)}; two sizes are {height, width}. An image already
 * of the output size is returned unchanged (an alias).
 *
 * <p>Tensor images {@code [..., H, W]} are resized as torchvision 0.14 resizes tensors:
 * {@code interpolate(mode="bilinear", align_corners=False)} without antialiasing. Float32 and float64
 * images are interpolated in their own precision; other dtypes in float32, then rounded (half to even)
 * back.
 *
 * <p>HWC images ({@link Images#isHwcImage}: a dataset's images, before {@link ToTensor}) are resized as
 * torchvision resizes PIL images, with Pillow's bilinear filter (antialiased when shrinking: its support
 * grows with the scale), horizontally then vertically, in Pillow's 22-bit fixed point for uint8 images
 * of 1 or 3 channels (Pillow's "L" and "RGB"), in double precision for float32 images of 1 channel ("F").
 * Other HWC images (RGBA, which Pillow resizes with premultiplied alpha; float images of several
 * channels, which are no PIL image) are refused with a message saying to apply {@link ToTensor} first.
 */
public final class Resize implements Transform {
    private final int[] size;

    /** {@code size}: one value for the shorter side, or {height, width}. */
    public Resize(int... size) {
        if (size.length != 1 && size.length != 2) {
            throw new IllegalArgumentException("Resize: size must be an int or a 1 or 2 element sequence, not a " + size.length + " element sequence");
        }
        for (int s : size) if (s <= 0) throw new IllegalArgumentException("Resize: size must be positive, got " + s);
        this.size = size.clone();
    }

    /** The output {height, width} for an input of {@code h x w}. */
    public long[] outputSize(long h, long w) {
        if (size.length == 2) return new long[] {size[0], size[1]};
        long shortSide = Math.min(h, w);
        long longSide = Math.max(h, w);
        long newShort = size[0];
        long newLong = (long) ((double) newShort * longSide / shortSide);
        return w <= h ? new long[] {newLong, newShort} : new long[] {newShort, newLong};
    }

    @Override
    public Tensor apply(Tensor img) {
        if (Images.isHwcImage(img)) return resizeHwc(img);
        ImageDims.requireImage("Resize", img, 2);
        long h = ImageDims.height(img);
        long w = ImageDims.width(img);
        long[] out = outputSize(h, w);
        if (out[0] == h && out[1] == w) return img.alias();
        if (h == 0 || w == 0) throw new IllegalArgumentException("Resize: cannot resize an empty image " + h + "x" + w);
        return bilinear(img, (int) out[0], (int) out[1]);
    }

    /** An HWC image resized as Pillow's {@code Image.resize(size, BILINEAR)}; the result is an HWC image. */
    private Tensor resizeHwc(Tensor img) {
        long h = img.size(0);
        long w = img.size(1);
        long c = img.size(2);
        boolean bytes = img.dtype() == DType.UINT8 && (c == 1 || c == 3);
        boolean floats = img.dtype() == DType.FLOAT32 && c == 1;
        if (!bytes && !floats) {
            throw new IllegalArgumentException("Resize: cannot resize an HWC image of shape " + java.util.Arrays.toString(img.shape()) + " and dtype "
                    + img.dtype() + " as torchvision resizes PIL images (Pillow's modes L, RGB and F: uint8 with 1 or 3 channels, float32 with 1);"
                    + " apply ToTensor first to resize it as a tensor");
        }
        long[] out = outputSize(h, w);
        if (out[0] == h && out[1] == w) return Images.asHwcImage(img.alias());
        if (h == 0 || w == 0) throw new IllegalArgumentException("Resize: cannot resize an empty image " + h + "x" + w);
        double[] src;
        try (Tensor contiguous = img.contiguous()) {
            src = contiguous.toDoubleArray();
        }
        int oh = (int) out[0];
        int ow = (int) out[1];
        PillowFilter horizontal = new PillowFilter((int) w, ow);
        PillowFilter vertical = new PillowFilter((int) h, oh);
        double[] rows = new double[(int) (h * ow * c)];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < ow; x++) {
                for (int k = 0; k < c; k++) rows[(int) ((y * ow + x) * c + k)] = horizontal.apply(src, (int) (y * w * c + k), (int) c, x, bytes);
            }
        }
        double[] dst = new double[(int) (oh * ow * c)];
        for (int y = 0; y < oh; y++) {
            for (int x = 0; x < ow; x++) {
                for (int k = 0; k < c; k++) dst[(int) ((y * ow + x) * c + k)] = vertical.apply(rows, (int) (x * c + k), (int) (ow * c), y, bytes);
            }
        }
        return Images.asHwcImage(Torch.tensor(dst, img.dtype(), oh, ow, c));
    }

    /**
     * Pillow's bilinear resampling along one axis ({@code precompute_coeffs} in its Resample.c, Pillow 9):
     * output pixel {@code o} is a normalised triangle-filter average of the input pixels within
     * {@code support = max(in / out, 1)} of its centre {@code (o + 0.5) * in / out}.
     */
    private static final class PillowFilter {
        /** Pillow's fixed-point precision for 8-bit images. */
        private static final int PRECISION_BITS = 32 - 8 - 2;

        private final int[] first;
        private final int[] count;
        private final double[][] weights;
        private final int[][] fixed;

        PillowFilter(int in, int out) {
            double scale = (double) in / out;
            double filterScale = Math.max(scale, 1.0);
            double support = filterScale; // the bilinear filter's support is 1
            first = new int[out];
            count = new int[out];
            weights = new double[out][];
            fixed = new int[out][];
            for (int o = 0; o < out; o++) {
                double centre = (o + 0.5) * scale;
                int min = Math.max((int) (centre - support + 0.5), 0);
                int max = Math.min((int) (centre + support + 0.5), in) - min;
                double[] k = new double[Math.max(max, 0)];
                double sum = 0;
                for (int i = 0; i < k.length; i++) {
                    double d = Math.abs((i + min - centre + 0.5) / filterScale);
                    k[i] = d < 1 ? 1 - d : 0;
                    sum += k[i];
                }
                int[] q = new int[k.length];
                for (int i = 0; i < k.length; i++) {
                    if (sum != 0) k[i] /= sum;
                    q[i] = (int) (k[i] < 0 ? -0.5 + k[i] * (1 << PRECISION_BITS) : 0.5 + k[i] * (1 << PRECISION_BITS));
                }
                first[o] = min;
                count[o] = k.length;
                weights[o] = k;
                fixed[o] = q;
            }
        }

        /** Output {@code o} from the inputs {@code src[base + i * stride]}: in fixed point, rounded and clipped to a byte, or in doubles stored as float. */
        double apply(double[] src, int base, int stride, int o, boolean bytes) {
            int at = base + first[o] * stride;
            if (bytes) {
                int sum = 1 << (PRECISION_BITS - 1);
                for (int i = 0; i < count[o]; i++) sum += (int) src[at + i * stride] * fixed[o][i];
                return sum <= 0 ? 0 : sum >= (1 << PRECISION_BITS << 8) ? 255 : sum >> PRECISION_BITS;
            }
            double sum = 0;
            for (int i = 0; i < count[o]; i++) sum += src[at + i * stride] * weights[o][i];
            return (float) sum;
        }
    }

    /** Bilinear resampling of the last two dimensions to {@code oh x ow} (align_corners=False, no antialias). */
    public static Tensor bilinear(Tensor img, int oh, int ow) {
        boolean f64 = img.dtype() == DType.FLOAT64;
        boolean f32 = !f64;   // everything else computes in float32, as torchvision casts to float32
        int h = (int) ImageDims.height(img);
        int w = (int) ImageDims.width(img);
        long planes = img.numel() / ((long) h * w);
        double[] src;
        try (Tensor c = img.contiguous()) {
            src = c.toDoubleArray();
        }
        int[] y0 = new int[oh];
        int[] y1 = new int[oh];
        double[] ly0 = new double[oh];
        double[] ly1 = new double[oh];
        int[] x0 = new int[ow];
        int[] x1 = new int[ow];
        double[] lx0 = new double[ow];
        double[] lx1 = new double[ow];
        weights(h, oh, f32, y0, y1, ly0, ly1);
        weights(w, ow, f32, x0, x1, lx0, lx1);
        double[] dst = new double[(int) (planes * oh * ow)];
        for (long p = 0; p < planes; p++) {
            int s = (int) (p * h * w);
            int d = (int) (p * oh * ow);
            for (int i = 0; i < oh; i++) {
                int r0 = s + y0[i] * w;
                int r1 = s + y1[i] * w;
                for (int j = 0; j < ow; j++) {
                    // As PyTorch's CPU kernel: rows first, then the weighted sum over the two rows.
                    double top = add(mul(src[r0 + x0[j]], lx0[j], f32), mul(src[r0 + x1[j]], lx1[j], f32), f32);
                    double bottom = add(mul(src[r1 + x0[j]], lx0[j], f32), mul(src[r1 + x1[j]], lx1[j], f32), f32);
                    dst[d + i * ow + j] = add(mul(top, ly0[i], f32), mul(bottom, ly1[i], f32), f32);
                }
            }
        }
        long[] shape = img.shape().clone();
        shape[shape.length - 2] = oh;
        shape[shape.length - 1] = ow;
        if (img.dtype().isFloatingPoint()) return Torch.tensor(dst, img.dtype(), shape);
        for (int i = 0; i < dst.length; i++) dst[i] = Math.rint(dst[i]);
        return Torch.tensor(dst, img.dtype(), shape);
    }

    /** PyTorch's {@code area_pixel_compute_source_index} and linear weights, in float32 when {@code f32}. */
    private static void weights(int in, int out, boolean f32, int[] i0, int[] i1, double[] l0, double[] l1) {
        double scale = f32 ? (float) in / out : (double) in / out;
        for (int o = 0; o < out; o++) {
            double src = f32 ? (float) ((float) scale * (float) (o + 0.5f)) - 0.5f : scale * (o + 0.5) - 0.5;
            if (f32) src = (float) src;
            if (src < 0) src = 0;
            int lo = (int) src;
            double lambda = f32 ? (float) (src - lo) : src - lo;
            lambda = Math.min(Math.max(lambda, 0), 1);
            i0[o] = lo;
            i1[o] = lo + (lo < in - 1 ? 1 : 0);
            l1[o] = lambda;
            l0[o] = f32 ? (float) (1 - lambda) : 1 - lambda;
        }
    }

    private static double mul(double a, double b, boolean f32) {
        return f32 ? (float) (a * b) : a * b;
    }

    private static double add(double a, double b, boolean f32) {
        return f32 ? (float) (a + b) : a + b;
    }

    @Override
    public String toString() {
        return "Resize(size=" + java.util.Arrays.toString(size) + ", interpolation=bilinear, antialias=False)";
    }
}
