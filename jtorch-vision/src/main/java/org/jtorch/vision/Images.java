package org.jtorch.vision;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;

/**
 * Conversions between raw pixels and tensors. Images are uint8 tensors in HWC layout (height, width,
 * channels), as {@code numpy.asarray(pil_image)}: what datasets return and what
 * {@link org.jtorch.vision.transforms.ToTensor} turns into CHW floats in [0, 1].
 */
public final class Images {
    private Images() {}

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
        return uint8(px, 0, h, w, 3);
    }

    /** Reads a PNG, JPEG, BMP or GIF file with {@code javax.imageio} as a uint8 HWC RGB tensor. */
    public static Tensor readRgb(Path file) throws IOException {
        if (!Files.isRegularFile(file)) throw new java.nio.file.NoSuchFileException(file.toString());
        BufferedImage image = ImageIO.read(file.toFile());
        if (image == null) throw new IOException(file + ": no javax.imageio reader understands this file");
        return rgb(image);
    }
}
