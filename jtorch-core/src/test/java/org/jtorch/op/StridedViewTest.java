package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.Storage;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/** What a kernel sees of a tensor: the helpers kernels use instead of calling back into {@code Tensor}. */
class StridedViewTest {
    @Test
    void aTensorsViewHasItsGeometryStorageAndDevice() {
        try (Tensor base = Torch.arange(24).reshape(2, 3, 4); Tensor t = base.transpose(0, 2).narrow(0, 1, 2)) {
            StridedView v = Dispatcher.view(t);
            assertArrayEquals(t.shape(), v.shape());
            assertArrayEquals(t.strides(), v.strides());
            assertEquals(t.storageOffset(), v.offset());
            assertEquals(t.numel(), v.numel());
            assertEquals(3, v.dim());
            assertEquals(t.size(-1), v.size(-1));
            assertEquals(t.stride(-1), v.stride(-1));
            assertEquals(t.isContiguous(), v.isContiguous());
            assertSame(t.storage(), v.storage());
            assertEquals(Device.cpu(), v.device());
            assertEquals(null, Dispatcher.view(null), "an optional operand left out stays null");
        }
    }

    @Test
    void restridedAndPermuteAreNewViewsOfTheSameMemory() {
        try (Tensor t = Torch.arange(12).reshape(3, 4)) {
            StridedView v = Dispatcher.view(t);
            StridedView p = v.permute(1, 0);
            assertArrayEquals(new long[] {4, 3}, p.shape());
            assertArrayEquals(new long[] {1, 4}, p.strides());
            assertFalse(p.isContiguous());
            StridedView row = v.restrided(new long[] {4}, new long[] {1}, 8);
            assertEquals(8L * v.dtype().byteSize(), row.address() - v.address(), "element 8");
            assertSame(v.storage(), row.storage());
            assertArrayEquals(new long[] {3, 4}, v.shape(), "the original view is unchanged");
        }
    }

    @Test
    void scratchIsAContiguousViewOfAllOfItsStorage() {
        Storage s = Storage.allocateCpu(2 * 3 * 8);
        try {
            StridedView v = StridedView.contiguous(s, new long[] {2, 3}, DType.FLOAT64);
            assertTrue(v.isContiguous());
            assertArrayEquals(new long[] {3, 1}, v.strides());
            assertEquals(0, v.offset());
            assertEquals(s.segment().address(), v.address());
        } finally {
            s.release();
        }
    }
}
