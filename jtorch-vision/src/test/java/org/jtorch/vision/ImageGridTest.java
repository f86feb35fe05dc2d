package org.jtorch.vision;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Images#makeGrid} and {@link Images#saveImage} against {@code tools/fixtures/gen_vision_grid.py}:
 * torchvision is not packaged for Debian, so the reference is that script's statement-by-statement
 * reimplementation of torchvision 0.14's make_grid and save_image in PyTorch 1.13 ops. PNG files are
 * read back with javax.imageio and compared pixel for pixel.
 */
class ImageGridTest {
    @TempDir
    Path dir;

    private static Images.GridOptions options(Case c) {
        Images.GridOptions o = Images.GridOptions.defaults()
                .nrow((int) c.longArg("nrow", 8)).padding((int) c.longArg("padding", 2))
                .normalize(c.boolArg("normalize", false)).scaleEach(c.boolArg("scale_each", false))
                .padValue(c.doubleArg("pad_value", 0));
        if (c.args().get("value_range").isJsonArray()) {
            JsonArray r = c.args().getAsJsonArray("value_range");
            o = o.valueRange(r.get(0).getAsDouble(), r.get(1).getAsDouble());
        }
        return o;
    }

    @TestFactory
    Stream<DynamicTest> makeGridMatchesTorchvision() {
        return Fixtures.load("vision_grid").stream().filter(c -> c.op().equals("make_grid"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    try (Tensor x = c.input(0); Tensor before = x.clone(); Tensor grid = Images.makeGrid(x, options(c))) {
                        Fixtures.assertMatches(c.expectedTensor(), grid, 1e-6, 1e-7, c.toString());
                        assertArrayEquals(before.toDoubleArray(), x.toDoubleArray(), "the input is not changed");
                    }
                }));
    }

    @TestFactory
    Stream<DynamicTest> saveImageWritesTorchvisionsPixels() {
        return Fixtures.load("vision_grid").stream().filter(c -> c.op().equals("save_image"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    Path png = dir.resolve(c.name() + ".png");
                    try (Tensor x = c.input(0)) {
                        Images.saveImage(x, png, options(c));
                    }
                    BufferedImage img = ImageIO.read(png.toFile());
                    long[] shape = Fixtures.decode(c.expectedTensor()).shape();
                    int channels = (int) shape[2];
                    assertEquals(shape[0], img.getHeight());
                    assertEquals(shape[1], img.getWidth());
                    assertEquals(channels == 4, img.getColorModel().hasAlpha());
                    long[] actual = new long[img.getHeight() * img.getWidth() * channels];
                    for (int y = 0; y < img.getHeight(); y++) {
                        for (int x = 0; x < img.getWidth(); x++) {
                            int argb = img.getRGB(x, y);
                            int o = (y * img.getWidth() + x) * channels;
                            actual[o] = argb >>> 16 & 0xff;
                            actual[o + 1] = argb >>> 8 & 0xff;
                            actual[o + 2] = argb & 0xff;
                            if (channels == 4) actual[o + 3] = argb >>> 24;
                        }
                    }
                    try (Tensor e = Fixtures.decode(c.expectedTensor())) {
                        assertArrayEquals(e.toLongArray(), actual, c.toString());
                    }
                }));
    }

    @Test
    void positionalFormTakesTorchvisionsKeywordsInOrder() {
        try (Tensor x = Torch.rand(3, 3, 2, 2);
             Tensor a = Images.makeGrid(x, 2, 1, true, new double[] {0, 0.5}, false, 0.25);
             Tensor b = Images.makeGrid(x, Images.GridOptions.defaults().nrow(2).padding(1).normalize(true).valueRange(0, 0.5).padValue(0.25))) {
            assertArrayEquals(new long[] {3, 7, 7}, a.shape());
            assertArrayEquals(b.toDoubleArray(), a.toDoubleArray());
        }
    }

    @Test
    void badInputIsNamed() {
        try (Tensor five = Torch.rand(1, 1, 3, 2, 2); Tensor two = Torch.rand(2, 2, 3, 3)) {
            var e = assertThrows(IllegalArgumentException.class, () -> Images.makeGrid(five));
            assertTrue(e.getMessage().contains("[1, 1, 3, 2, 2]"), e.getMessage());
            var s = assertThrows(IllegalArgumentException.class, () -> Images.saveImage(two, dir.resolve("g.png")));
            assertTrue(s.getMessage().contains("RGB"), s.getMessage());
            var f = assertThrows(IllegalArgumentException.class, () -> Images.saveImage(five, dir.resolve("g.tiff")));
            assertTrue(f.getMessage().contains(".png"), f.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Images.GridOptions.defaults().nrow(0));
    }

    @Test
    void jpegIsWrittenAndReadableButRgbaNeedsPng() throws IOException {
        Path jpg = dir.resolve("grid.jpg");
        try (Tensor x = Torch.rand(2, 3, 8, 8); Tensor rgba = Torch.rand(4, 4, 4)) {
            Images.saveImage(x, jpg);
            BufferedImage img = ImageIO.read(jpg.toFile());
            assertEquals(12, img.getHeight());
            assertEquals(22, img.getWidth());
            assertThrows(IllegalArgumentException.class, () -> Images.saveImage(rgba, dir.resolve("a.jpg")));
        }
    }
}
