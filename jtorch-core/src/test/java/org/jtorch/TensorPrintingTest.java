package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.Stream;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** {@code Tensor.toString()} equals PyTorch 1.13's {@code repr()} exactly ({@code tools/fixtures/gen_printing.py}). */
class TensorPrintingTest {
    @TestFactory
    Stream<DynamicTest> toStringEqualsPyTorchRepr() {
        return Fixtures.load("printing").stream().map(c -> DynamicTest.dynamicTest("repr/" + c.name(), () -> {
            try (Tensor t = c.input(0)) {
                assertEquals(c.expected().getAsJsonObject().get("repr").getAsString(), t.toString(), c.toString());
            }
        }));
    }
}
