package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The public pooling backward ops take the forward input's shape as an argument; a shape the forward would
 * have refused (an empty or negative spatial size) or one that does not match the gradient is an error
 * naming the op (issue 19: it divided by zero, or failed inside reshape).
 */
class PoolingBackwardInputTest {

    private static void assertRefused(String op, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().startsWith(op + ":"), e.getMessage());
    }

    @Test
    void inputShapesTheForwardRefusesAreRefused() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor grad = Torch.randn(1, 1, 2, 2);
            Tensor indices = Torch.zeros(new long[] {1, 1, 2, 2}, DType.INT64, Device.cpu());
            assertRefused("adaptiveAvgPool2dBackward", () -> Pooling.adaptiveAvgPool2dBackward(grad, new long[] {1, 1, 0, 4}));
            assertRefused("adaptiveAvgPool2dBackward", () -> Pooling.adaptiveAvgPool2dBackward(grad, new long[] {1, 1, -4, 4}));
            assertRefused("maxPool2dBackward", () -> Pooling.maxPool2dBackward(grad, indices, new long[] {1, 1, 0, 4}));
            assertRefused("maxPool2dBackward", () -> Pooling.maxPool2dBackward(grad, indices, new long[] {2, 1, 4, 4}));
        }
    }
}
