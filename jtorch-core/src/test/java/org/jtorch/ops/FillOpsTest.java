package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** fill_ and zero_ as registry ops: exact int64 values, repeated elements, autograd's in-place rules (PyTorch 1.13's results). */
class FillOpsTest {
    @Test
    void int64FillsAreExactBeyondTwoToThe53() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor t = Torch.empty(new long[] {2}, DType.INT64, org.jtorch.types.Device.cpu());
            for (long v : new long[] {Long.MAX_VALUE, Long.MIN_VALUE, (1L << 53) + 1, -((1L << 53) + 1), -1, 0}) {
                t.fill_(v);
                assertArrayEquals(new long[] {v, v}, t.toLongArray(), "fill_(" + v + ")");
            }
            assertArrayEquals(new long[] {-3, -3}, t.fill_(-3.7).toLongArray(), "a double value truncates toward zero");
        }
    }

    @Test
    void aTensorRepeatingElementsIsFilledAsPyTorchDoes() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor a = Torch.zeros(3);
            Tensor b = a.expand(2, 3);
            b.fill_(1.5);
            assertArrayEquals(new float[] {1.5f, 1.5f, 1.5f}, a.toFloatArray());
            b.zero_();
            assertArrayEquals(new float[] {0, 0, 0}, a.toFloatArray());
        }
    }

    @Test
    void fillsOfOtherDtypesConvertTheValue() {
        try (MemoryScope s = new MemoryScope()) {
            assertArrayEquals(new float[] {1.5f, 1.5f}, Torch.empty(new long[] {2}, DType.BFLOAT16, org.jtorch.types.Device.cpu()).fill_(1.5).to(DType.FLOAT32).toFloatArray());
            assertArrayEquals(new double[] {0.1, 0.1}, Torch.empty(new long[] {2}, DType.FLOAT64, org.jtorch.types.Device.cpu()).fill_(0.1).toDoubleArray());
            assertArrayEquals(new long[] {1, 1}, Torch.empty(new long[] {2}, DType.BOOL, org.jtorch.types.Device.cpu()).fill_(2.0).to(DType.INT64).toLongArray());
        }
    }

    @Test
    void aLeafThatRequiresGradIsRefused() {
        try (MemoryScope s = new MemoryScope()) {
            Tensor x = Torch.zeros(2).requiresGrad_(true);
            var e = assertThrows(RuntimeException.class, () -> x.fill_(1.0));
            assertTrue(e.getMessage().contains("fill_") && e.getMessage().contains("leaf"), e.getMessage());
            var z = assertThrows(RuntimeException.class, x::zero_);
            assertTrue(z.getMessage().contains("zero_"), z.getMessage());
        }
    }
}
