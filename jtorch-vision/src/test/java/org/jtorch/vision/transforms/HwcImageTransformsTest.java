package org.jtorch.vision.transforms;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.Sample;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;
import org.jtorch.vision.Images;
import org.jtorch.vision.datasets.Digits;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Transforms in torchvision's order, before {@link ToTensor}, on HWC images (a dataset's images, marked
 * by {@link Images#asHwcImage}): they act as torchvision 0.14 does on PIL images. References from
 * {@code tools/fixtures/gen_vision_pil.py}, which follows torchvision's PIL code paths with Pillow 9.4
 * (torchvision itself is not packaged for Debian).
 */
class HwcImageTransformsTest {

    @TestFactory
    Stream<DynamicTest> resizeAsPillow() {
        return Fixtures.load("vision_pil").stream().filter(c -> c.op().equals("resize"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    try (Tensor x = Images.asHwcImage(c.input(0)); Tensor y = new Resize(ints(c.longsArg("size"))).apply(x)) {
                        assertTrue(Images.isHwcImage(y), "the result is an HWC image");
                        // uint8: Pillow's integer arithmetic exactly; float ("F"): float32 rounding of double sums
                        Fixtures.assertMatches(c.expectedTensor(), y, 1e-6, 1e-7, c.toString());
                    }
                }));
    }

    @TestFactory
    Stream<DynamicTest> pipelinesInTorchvisionsOrder() {
        return Fixtures.load("vision_pil").stream().filter(c -> c.op().equals("pipeline"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> {
                    List<Transform> steps = new ArrayList<>();
                    for (JsonElement e : c.args().getAsJsonArray("steps")) steps.add(step(e.getAsJsonObject()));
                    try (Tensor x = Images.asHwcImage(c.input(0)); Tensor y = new Compose(steps).apply(x)) {
                        Fixtures.assertMatches(c.expectedTensor(), y, 1e-6, 1e-6, c.toString());
                    }
                }));
    }

    private static Transform step(JsonObject s) {
        return switch (s.get("op").getAsString()) {
            case "resize" -> new Resize(ints(s, "size"));
            case "center_crop" -> new CenterCrop(ints(s, "size"));
            case "hflip" -> new RandomHorizontalFlip(1.0);
            case "pad" -> new Pad(ints(s, "padding"), s.get("fill").getAsDouble(), Pad.Mode.valueOf(s.get("mode").getAsString().toUpperCase()));
            case "to_tensor" -> new ToTensor();
            case "normalize" -> new Normalize(doubles(s, "mean"), doubles(s, "std"));
            default -> throw new IllegalArgumentException(s.toString());
        };
    }

    private static int[] ints(long[] v) {
        int[] r = new int[v.length];
        for (int i = 0; i < v.length; i++) r[i] = Math.toIntExact(v[i]);
        return r;
    }

    private static int[] ints(JsonObject s, String key) {
        return s.getAsJsonArray(key).asList().stream().mapToInt(JsonElement::getAsInt).toArray();
    }

    private static double[] doubles(JsonObject s, String key) {
        return s.getAsJsonArray(key).asList().stream().mapToDouble(JsonElement::getAsDouble).toArray();
    }

    @Test
    void datasetImagesReachTheirTransformAsHwcImages() {
        // Digits' 8x8 images: Resize before ToTensor resizes height and width, not width and channels.
        Digits digits = new Digits(new Compose(new Resize(16), new ToTensor()), null);
        Sample s = digits.get(0);
        try (Tensor img = s.input(); Tensor t = s.target()) {
            assertArrayEquals(new long[] {1, 16, 16}, img.shape());
        }
    }

    @Test
    void cifarAugmentationGivesTheSameInEitherOrder() {
        // Padding with zeros, cropping and flipping commute with ToTensor's scaling: same draws, same result.
        try (Tensor hwc = Torch.randint(0, 256, new long[] {32, 32, 3}).to(DType.UINT8)) {
            for (long seed = 0; seed < 5; seed++) {
                Generator a = new Generator(seed);
                Generator b = new Generator(seed);
                Transform torchvisionOrder = new Compose(new RandomCrop(new int[] {32}, new int[] {4}, false, 0, Pad.Mode.CONSTANT, a),
                        new RandomHorizontalFlip(0.5, a), new ToTensor());
                Transform tensorFirst = new Compose(new ToTensor(), new RandomCrop(new int[] {32}, new int[] {4}, false, 0, Pad.Mode.CONSTANT, b),
                        new RandomHorizontalFlip(0.5, b));
                try (Tensor marked = Images.asHwcImage(hwc.alias()); Tensor x = torchvisionOrder.apply(marked); Tensor y = tensorFirst.apply(hwc)) {
                    assertArrayEquals(new long[] {3, 32, 32}, x.shape());
                    assertArrayEquals(y.toFloatArray(), x.toFloatArray(), 0f, "seed " + seed);
                }
            }
        }
    }

    @Test
    void normalizeBeforeToTensorFailsAtOnce() {
        try (Tensor hwc = Images.asHwcImage(Torch.rand(4, 4, 3))) {
            var e = assertThrows(IllegalArgumentException.class,
                    () -> new Normalize(new double[] {0.5}, new double[] {0.5}).apply(hwc));
            assertTrue(e.getMessage().contains("ToTensor first") && e.getMessage().contains("[4, 4, 3]"), e.getMessage());
        }
    }

    @Test
    void resizeRefusesHwcImagesPillowHasNoModeFor() {
        try (Tensor rgba = Images.asHwcImage(Torch.zeros(4, 4, 4).to(DType.UINT8)); Tensor f3 = Images.asHwcImage(Torch.rand(4, 4, 3))) {
            for (Tensor t : new Tensor[] {rgba, f3}) {
                var e = assertThrows(IllegalArgumentException.class, () -> new Resize(2).apply(t));
                assertTrue(e.getMessage().contains("apply ToTensor first"), e.getMessage());
            }
        }
    }

    @Test
    void viewsOfAnHwcImageAreTensorImagesAgain() {
        // The mark belongs to the tensor object: what ToTensor returns, or a user's view, is a tensor image.
        try (Tensor hwc = Images.asHwcImage(Torch.zeros(4, 6, 3).to(DType.UINT8)); Tensor chw = new ToTensor().apply(hwc);
             Tensor alias = hwc.alias()) {
            assertFalse(Images.isHwcImage(chw));
            assertFalse(Images.isHwcImage(alias));
            try (Tensor r = new Resize(2).apply(chw)) {
                assertArrayEquals(new long[] {3, 2, 3}, r.shape());
            }
        }
    }

    @Test
    void tensorImagesKeepTorchvisionsTensorSemantics() {
        try (Tensor chw = Torch.rand(3, 8, 6); Tensor r = new Resize(4).apply(chw); Tensor c = new CenterCrop(2).apply(chw)) {
            assertArrayEquals(new long[] {3, 5, 4}, r.shape());
            assertArrayEquals(new long[] {3, 2, 2}, c.shape());
            assertFalse(Images.isHwcImage(r));
        }
    }
}
