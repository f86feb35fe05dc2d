package org.jtorch.vision.transforms;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** What the torchvision fixtures do not cover: AWT images, output sizes, and the errors' messages. */
class TransformBasicsTest {

    @Test
    void toTensorOfAnAwtImageIsRgbChwInTheUnitInterval() {
        BufferedImage img = new BufferedImage(2, 1, BufferedImage.TYPE_INT_RGB);
        img.setRGB(0, 0, 0xff0000);
        img.setRGB(1, 0, 0x0080ff);
        try (Tensor t = ToTensor.of(img)) {
            assertArrayEquals(new long[] {3, 1, 2}, t.shape());
            assertEquals(DType.FLOAT32, t.dtype());
            assertArrayEquals(new float[] {1, 0, 0, 128 / 255f, 0, 1}, t.toFloatArray(), 1e-7f);
        }
    }

    @Test
    void resizeOfTheShorterSideKeepsTheAspectRatioRoundingDown() {
        // torchvision 0.14 _compute_resized_output_size: int(size * long / short)
        assertArrayEquals(new long[] {32, 42}, new Resize(32).outputSize(24, 32));
        assertArrayEquals(new long[] {45, 32}, new Resize(32).outputSize(30, 21));
        assertArrayEquals(new long[] {5, 7}, new Resize(5, 7).outputSize(100, 3));
    }

    @Test
    void errorsNameTheTransformAndTheProblem() {
        try (Tensor img = Torch.rand(3, 4, 4); Tensor u8 = img.to(DType.UINT8); Tensor flat = Torch.rand(5)) {
            var channels = assertThrows(IllegalArgumentException.class,
                    () -> new Normalize(new double[] {0.5, 0.5}, new double[] {1, 1}).apply(img));
            assertTrue(channels.getMessage().contains("Normalize") && channels.getMessage().contains("3 channels"), channels.getMessage());
            var dtype = assertThrows(IllegalArgumentException.class, () -> new Normalize(new double[] {0}, new double[] {1}).apply(u8));
            assertTrue(dtype.getMessage().contains("float"), dtype.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new Normalize(new double[] {0}, new double[] {0}));
            var dims = assertThrows(IllegalArgumentException.class, () -> new CenterCrop(2).apply(flat));
            assertTrue(dims.getMessage().contains("CenterCrop"), dims.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new Resize(1, 2, 3));
            assertThrows(IllegalArgumentException.class, () -> new Resize(0));
            assertThrows(IllegalArgumentException.class, () -> new Pad(1, 2, 3));
            assertThrows(IllegalArgumentException.class, () -> new Pad(-1));
            var tt = assertThrows(IllegalArgumentException.class, () -> new ToTensor().apply(flat));
            assertTrue(tt.getMessage().contains("ToTensor"), tt.getMessage());
        }
    }

    @Test
    void centerCropIsAViewOfTheInput() {
        try (Tensor img = Torch.rand(1, 6, 6); Tensor c = new CenterCrop(2).apply(img)) {
            assertEquals(img.storage(), c.storage());
            assertEquals(2 * 6 + 2, c.storageOffset());
        }
    }
}
