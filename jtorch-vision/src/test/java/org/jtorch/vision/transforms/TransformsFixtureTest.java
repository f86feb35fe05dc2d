package org.jtorch.vision.transforms;

import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.gson.JsonElement;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The deterministic transforms against torchvision 0.14 on tensors (fixtures from
 * {@code tools/fixtures/gen_vision_transforms.py}): ToTensor, Normalize, Pad, CenterCrop and
 * bilinear Resize without antialiasing.
 */
class TransformsFixtureTest {

    @TestFactory
    Stream<DynamicTest> matchesTorchvision() {
        return Fixtures.load("vision_transforms").stream()
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        try (Tensor x = c.input(0)) {
            if (c.expectsError()) {
                assertThrows(IllegalArgumentException.class, () -> transform(c).apply(x).close(), c.toString());
                return;
            }
            try (Tensor y = transform(c).apply(x)) {
                // uint8 results are exact; resize in float32 may differ from PyTorch by an ulp or so
                Fixtures.assertMatches(c.expectedTensor(), y, 1e-5, 1e-6, c.toString());
            }
        }
    }

    private static Transform transform(Case c) {
        return switch (c.op()) {
            case "to_tensor" -> new ToTensor();
            case "normalize" -> new Normalize(doubles(c, "mean"), doubles(c, "std"));
            case "pad" -> new Pad(ints(c, "padding"), c.doubleArg("fill", 0), Pad.Mode.valueOf(c.stringArg("mode", "constant").toUpperCase()));
            case "center_crop" -> new CenterCrop(ints(c, "size"));
            case "resize" -> new Resize(ints(c, "size"));
            default -> throw new IllegalArgumentException("unknown op " + c.op());
        };
    }

    private static int[] ints(Case c, String key) {
        long[] v = c.longsArg(key);
        int[] r = new int[v.length];
        for (int i = 0; i < v.length; i++) r[i] = Math.toIntExact(v[i]);
        return r;
    }

    private static double[] doubles(Case c, String key) {
        List<JsonElement> list = c.args().getAsJsonArray(key).asList();
        return list.stream().mapToDouble(JsonElement::getAsDouble).toArray();
    }
}
