package org.jtorch.vision;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.WeakHashMap;
import javax.imageio.ImageIO;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Conversions between raw pixels and tensors. Images are uint8 tensors in HWC layout (height, width,
 * channels), as {@code numpy.asarray(pil_image)}: what datasets return and what
 * {@link org.jtorch.vision.transforms.ToTensor} turns into CHW floats in [0, 1]. Also
 * {@code torchvision.utils}' {@link #makeGrid} and {@link #saveImage} for batches of CHW float images.
 */
public final class Images {
    /** The tensors marked as HWC images (by identity: Tensor keeps Object's equals); weak, so marks die with their tensors. */
    private static final Map<Tensor, Boolean> HWC_IMAGES = Collections.synchronizedMap(new WeakHashMap<>());

    private Images() {}

    /**
     * Marks {@code image}, a tensor {@code [H, W, C]}, as an HWC image: jtorch's counterpart of a PIL image
     * in torchvision. The transforms then act on it as torchvision does on a PIL image (a
     * {@link org.jtorch.vision.transforms.Resize} resizes its height and width, with Pillow's
     * resampling; {@link org.jtorch.vision.transforms.Normalize} refuses it until
     * {@link org.jtorch.vision.transforms.ToTensor} has made it CHW), while any unmarked tensor is a
     * tensor image {@code [..., C, H, W]}, as in torchvision. Datasets mark the images they hand to their
     * transforms, and {@link #rgb}/{@link #readRgb} mark theirs. Returns {@code image}.
     */
    public static Tensor asHwcImage(Tensor image) {
        if (image.dim() != 3) {
            throw new IllegalArgumentException("Images.asHwcImage: an HWC image has 3 dimensions [H, W, C], got shape "
                    + java.util.Arrays.toString(image.shape()));
        }
        HWC_IMAGES.put(image, Boolean.TRUE);
        return image;
    }

    /** Whether {@code t} was marked as an HWC image ({@link #asHwcImage}). Views and copies are not marked. */
    public static boolean isHwcImage(Tensor t) {
        return HWC_IMAGES.containsKey(t);
    }

    /** A new uint8 tensor of {@code shape} holding {@code bytes[offset ..]} row-major; the caller owns it. */
    public static Tensor uint8(byte[] bytes, int offset, long... shape) {
        Tensor t = Tensor.empty(shape, DType.UINT8, Device.cpu());
        long n = t.numel();
        if (offset < 0 || offset + n > bytes.length) {
            t.close();
            throw new IndexOutOfBoundsException("Images.uint8: " + n + " bytes from offset " + offset + " exceed the array length " + bytes.length);
        }
        MemorySegment.copy(bytes, offset, t.storage().segment(), ValueLayout.JAVA_BYTE, t.storageOffset(), (int) n);
        return t;
    }

    /**
     * The image as a uint8 HWC tensor with 3 channels (RGB), as torchvision's default loader
     * ({@code PIL.Image.open(path).convert("RGB")}); grey and palette images are expanded, alpha dropped.
     * The result is marked as an HWC image ({@link #asHwcImage}).
     */
    public static Tensor rgb(BufferedImage image) {
        int h = image.getHeight();
        int w = image.getWidth();
        byte[] px = new byte[h * w * 3];
        int[] row = new int[w];
        for (int y = 0; y < h; y++) {
            image.getRGB(0, y, w, 1, row, 0, w);
            for (int x = 0; x < w; x++) {
                int argb = row[x];
                int o = (y * w + x) * 3;
                px[o] = (byte) (argb >>> 16);
                px[o + 1] = (byte) (argb >>> 8);
                px[o + 2] = (byte) argb;
            }
        }
        return asHwcImage(uint8(px, 0, h, w, 3));
    }

    /** Reads a PNG, JPEG, BMP or GIF file with {@code javax.imageio} as a uint8 HWC RGB tensor, marked as an HWC image. */
    public static Tensor readRgb(Path file) throws IOException {
        if (!Files.isRegularFile(file)) throw new java.nio.file.NoSuchFileException(file.toString());
        BufferedImage image = ImageIO.read(file.toFile());
        if (image == null) throw new IOException(file + ": no javax.imageio reader understands this file");
        return rgb(image);
    }

    // ------------------------------------------------------------------ torchvision.utils

    /**
     * The keyword options of {@code make_grid} and {@code save_image}, immutable; each method returns a
     * copy with one option changed. Defaults as torchvision's: {@code nrow=8, padding=2,
     * normalize=false, valueRange=null, scaleEach=false, padValue=0}.
     */
    public record GridOptions(int nrow, int padding, boolean normalize, double[] valueRange, boolean scaleEach, double padValue) {
        public GridOptions {
            if (nrow <= 0) throw new IllegalArgumentException("makeGrid: nrow must be positive, got " + nrow);
            if (padding < 0) throw new IllegalArgumentException("makeGrid: padding must not be negative, got " + padding);
            if (valueRange != null && valueRange.length != 2) {
                throw new IllegalArgumentException("makeGrid: valueRange must be (low, high), got " + valueRange.length + " values");
            }
            valueRange = valueRange == null ? null : valueRange.clone();
        }

        public static GridOptions defaults() {
            return new GridOptions(8, 2, false, null, false, 0);
        }

        /** Images per row. */
        public GridOptions nrow(int v) {
            return new GridOptions(v, padding, normalize, valueRange, scaleEach, padValue);
        }

        public GridOptions padding(int v) {
            return new GridOptions(nrow, v, normalize, valueRange, scaleEach, padValue);
        }

        /** Shift the images to [0, 1] by their min and max (or {@link #valueRange}). */
        public GridOptions normalize(boolean v) {
            return new GridOptions(nrow, padding, v, valueRange, scaleEach, padValue);
        }

        /** The (low, high) that normalisation maps to [0, 1], clamping outside it; null for the data's min and max. */
        public GridOptions valueRange(double low, double high) {
            return new GridOptions(nrow, padding, normalize, new double[] {low, high}, scaleEach, padValue);
        }

        /** Normalise each image by its own min and max rather than the batch's. */
        public GridOptions scaleEach(boolean v) {
            return new GridOptions(nrow, padding, normalize, valueRange, v, padValue);
        }

        public GridOptions padValue(double v) {
            return new GridOptions(nrow, padding, normalize, valueRange, scaleEach, v);
        }

        @Override
        public double[] valueRange() {
            return valueRange == null ? null : valueRange.clone();
        }
    }

    /** {@link #makeGrid(Tensor, GridOptions)} with torchvision's defaults. */
    public static Tensor makeGrid(Tensor tensor) {
        return makeGrid(tensor, GridOptions.defaults());
    }

    /** {@code torchvision.utils.make_grid} with every keyword given, in its order. */
    public static Tensor makeGrid(Tensor tensor, int nrow, int padding, boolean normalize, double[] valueRange, boolean scaleEach,
                                  double padValue) {
        return makeGrid(tensor, new GridOptions(nrow, padding, normalize, valueRange, scaleEach, padValue));
    }

    /** {@link #makeGrid(Tensor, GridOptions)} of the images stacked. */
    public static Tensor makeGrid(List<Tensor> images, GridOptions options) {
        try (Tensor batch = Torch.stack(images, 0)) {
            return makeGrid(batch, options);
        }
    }

    /**
     * {@code torchvision.utils.make_grid} (0.14): the images of a batch {@code [B, C, H, W]} laid out
     * {@code nrow} to a row, {@code padding} pixels of {@code padValue} around each, as one image
     * {@code [C, rows * (H + padding) + padding, min(nrow, B) * (W + padding) + padding]}. One image
     * ({@code [C, H, W]} or {@code [H, W]}) is taken as a batch of one; grey images (one channel) become
     * three; a batch of one image returns that image (normalised if asked). With {@code normalize}, values
     * are clamped to the value range (or the batch's, or with {@code scaleEach} each image's, min and
     * max) and mapped to [0, 1] in the tensor's dtype. The input is not changed; the caller owns the result.
     */
    public static Tensor makeGrid(Tensor tensor, GridOptions options) {
        if (tensor.dim() < 2 || tensor.dim() > 4) {
            throw new IllegalArgumentException("makeGrid: expected images [B, C, H, W], [C, H, W] or [H, W], got shape " + java.util.Arrays.toString(tensor.shape()));
        }
        try (Tensor batch = asRgbBatch(tensor)) {
            try (Tensor scaled = options.normalize() ? normalized(batch, options) : batch.alias()) {
                if (scaled.size(0) == 1) return scaled.squeeze(0);
                return layOut(scaled, options);
            }
        }
    }

    /** {@code [B, C, H, W]} with grey images tripled, as make_grid's first steps. */
    private static Tensor asRgbBatch(Tensor tensor) {
        try (Tensor chw = tensor.dim() == 2 ? tensor.unsqueeze(0) : tensor.alias();
             Tensor rgb = chw.dim() == 3 && chw.size(0) == 1 ? Torch.cat(chw, chw, chw) : chw.alias();
             Tensor batch = rgb.dim() == 3 ? rgb.unsqueeze(0) : rgb.alias()) {
            return batch.size(1) == 1 ? Torch.cat(new Tensor[] {batch, batch, batch}, 1) : batch.alias();
        }
    }

    private static Tensor normalized(Tensor batch, GridOptions o) {
        if (!o.scaleEach()) return toUnitRange(batch, o.valueRange());
        Tensor[] each = new Tensor[(int) batch.size(0)];
        try {
            for (int i = 0; i < each.length; i++) {
                try (Tensor img = batch.select(0, i)) {
                    each[i] = toUnitRange(img, o.valueRange());
                }
            }
            return Torch.stack(each, 0);
        } finally {
            for (Tensor t : each) if (t != null) t.close();
        }
    }

    /** make_grid's {@code norm_ip}: clamp to [low, high], subtract low, divide by max(high - low, 1e-5). */
    private static Tensor toUnitRange(Tensor img, double[] range) {
        double low;
        double high;
        if (range != null) {
            low = range[0];
            high = range[1];
        } else {
            try (Tensor min = img.min(); Tensor max = img.max()) {
                low = min.item();
                high = max.item();
            }
        }
        try (Tensor clamped = img.clamp(low, high); Tensor shifted = clamped.sub(low)) {
            return shifted.div(Math.max(high - low, 1e-5));
        }
    }

    private static Tensor layOut(Tensor batch, GridOptions o) {
        long n = batch.size(0);
        long columns = Math.min(o.nrow(), n);
        long rows = (n + columns - 1) / columns;
        long cellH = batch.size(2) + o.padding();
        long cellW = batch.size(3) + o.padding();
        Tensor grid = batch.dtype().isFloatingPoint()
                ? Torch.full(new long[] {batch.size(1), cellH * rows + o.padding(), cellW * columns + o.padding()}, o.padValue(), batch.dtype(), batch.device())
                : Torch.full(new long[] {batch.size(1), cellH * rows + o.padding(), cellW * columns + o.padding()}, (long) o.padValue(), batch.dtype(), batch.device());
        for (long k = 0; k < n; k++) {
            long y = k / columns;
            long x = k % columns;
            try (Tensor band = grid.narrow(1, y * cellH + o.padding(), cellH - o.padding());
                 Tensor cell = band.narrow(2, x * cellW + o.padding(), cellW - o.padding());
                 Tensor img = batch.select(0, k)) {
                cell.copy_(img);
            }
        }
        return grid;
    }

    /** {@link #saveImage(Tensor, Path, GridOptions)} with make_grid's defaults. */
    public static void saveImage(Tensor tensor, Path file) throws IOException {
        saveImage(tensor, file, GridOptions.defaults());
    }

    /**
     * {@code torchvision.utils.save_image}: {@link #makeGrid} of the images, values in [0, 1] scaled to
     * bytes as torchvision ({@code x * 255 + 0.5} clamped to [0, 255], truncated), written with
     * {@code javax.imageio} in the format of the file's extension: PNG (lossless: the pixels torchvision
     * writes), JPEG or BMP (RGB only; JPEG's encoder is not Pillow's, so its bytes differ). A grid of 3
     * channels is RGB, of 4 RGBA.
     */
    public static void saveImage(Tensor tensor, Path file, GridOptions options) throws IOException {
        String name = file.getFileName() == null ? "" : file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String format = dot < 0 ? "" : name.substring(dot + 1).toLowerCase(Locale.ROOT);
        format = switch (format) {
            case "png" -> "png";
            case "jpg", "jpeg" -> "jpeg";
            case "bmp" -> "bmp";
            default -> throw new IllegalArgumentException("saveImage: cannot tell the image format of " + file
                    + " from its extension (use .png, .jpg, .jpeg or .bmp)");
        };
        BufferedImage image;
        try (Tensor grid = makeGrid(tensor, options)) {
            image = toBufferedImage(grid, format);
        }
        if (!ImageIO.write(image, format, file.toFile())) throw new IOException("saveImage: no javax.imageio writer for " + format);
    }

    /** save_image's pixels: a CHW grid of 3 or 4 channels as an RGB or ARGB image. */
    private static BufferedImage toBufferedImage(Tensor grid, String format) {
        long c = grid.dim() == 3 ? grid.size(0) : -1;
        if (c != 3 && c != 4) {
            throw new IllegalArgumentException("saveImage: the grid must be RGB or RGBA [3 or 4, H, W], got shape " + java.util.Arrays.toString(grid.shape()));
        }
        if (c == 4 && !format.equals("png")) throw new IllegalArgumentException("saveImage: " + format + " cannot hold an alpha channel; save RGBA images as .png");
        int h = (int) grid.size(1);
        int w = (int) grid.size(2);
        long[] px;
        try (Tensor scaled = grid.mul(255); Tensor rounded = scaled.add(0.5); Tensor clamped = rounded.clamp(0, 255);
             Tensor hwc = clamped.permute(1, 2, 0); Tensor cpu = hwc.to(Device.cpu()); Tensor bytes = cpu.to(DType.UINT8)) {
            px = bytes.toLongArray();
        }
        BufferedImage image = new BufferedImage(w, h, c == 4 ? BufferedImage.TYPE_INT_ARGB : BufferedImage.TYPE_INT_RGB);
        int[] row = new int[w];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                int o = (int) ((y * (long) w + x) * c);
                int alpha = c == 4 ? (int) px[o + 3] : 0xff;
                row[x] = alpha << 24 | (int) px[o] << 16 | (int) px[o + 1] << 8 | (int) px[o + 2];
            }
            image.setRGB(0, y, w, 1, row, 0, w);
        }
        return image;
    }
}
