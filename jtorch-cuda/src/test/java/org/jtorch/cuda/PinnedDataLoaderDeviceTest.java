package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.data.TensorDataset;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Pinned memory feeding a device: {@code Tensor.pinMemory()}, asynchronous {@code to(device, true)} from
 * pinned memory, and a pinning {@link DataLoader} with {@code transferTo(device)} (copies on a side stream,
 * the current stream waiting on an event). The loader case runs on every device of {@link DeviceCases}: on
 * the CPU it checks the test's own bookkeeping (no pinning there); the cuda:0 cases are skipped with
 * CUDA's unavailability reason where there is no GPU.
 *
 * <p>Reference: the dataset's rows, summed per batch in double on the host (values are small integers, so
 * float32 sums on any device are exact).
 */
class PinnedDataLoaderDeviceTest {
    private static final int ROWS = 1000, COLS = 257, BATCH = 96;

    private interface Body {
        void run(Device d);
    }

    private static void add(List<DynamicTest> tests, List<Device> devices, String name, Body body) {
        for (Device d : devices) {
            tests.add(DynamicTest.dynamicTest(d + "/" + name, () -> {
                DeviceCases.assumeAvailable(d);
                body.run(d);
            }));
        }
    }

    private static float[] rows() {
        float[] v = new float[ROWS * COLS];
        for (int i = 0; i < v.length; i++) v[i] = (i * 7) % 101 - 50;
        return v;
    }

    @TestFactory
    List<DynamicTest> pinnedMemory() {
        List<DynamicTest> tests = new ArrayList<>();
        add(tests, List.of(DeviceCases.CUDA), "pinMemory copies into pinned memory and keeps pinned tensors", d -> {
            float[] v = rows();
            try (Tensor t = Torch.tensor(v).reshape(ROWS, COLS); Tensor p = t.pinMemory(); Tensor again = p.pinMemory()) {
                assertTrue(p.isPinned());
                assertTrue(p.device().isCpu());
                assertArrayEquals(v, p.toFloatArray());
                assertSame(p.storage(), again.storage());
            }
        });
        add(tests, List.of(DeviceCases.CUDA), "non-blocking copies from pinned memory arrive, and the block is reused after them", d -> {
            float[] v = rows();
            long hitsBefore;
            long address;
            try (Tensor t = Torch.tensor(v); Tensor p = t.pinMemory(); Tensor g = p.to(d, true)) {
                address = p.storage().address();
                p.close(); // the copy may still be reading: the block must wait for its event
                try (Tensor doubled = g.mul(2); Tensor back = doubled.cpu()) {
                    float[] got = back.toFloatArray();
                    for (int i = 0; i < v.length; i++) assertEquals(2 * v[i], got[i], "element " + i);
                }
                Cuda.synchronize(d);
                hitsBefore = PinnedMemory.allocator().stats().cacheHits();
                try (Tensor t2 = Torch.tensor(v); Tensor q = t2.pinMemory()) {
                    assertEquals(address, q.storage().address(), "the completed copy's block is reused for the same size");
                }
                assertEquals(hitsBefore + 1, PinnedMemory.allocator().stats().cacheHits());
            }
        });
        add(tests, DeviceCases.DEVICES, "a pinning loader with 2 workers feeds the device, 3 epochs", d -> {
            float[] v = rows();
            try (Tensor x = Torch.tensor(v).reshape(ROWS, COLS); Tensor y = Torch.arange(ROWS);
                 var loader = DataLoader.builder(new TensorDataset(x, y).asSamples()).batchSize(BATCH).numWorkers(2)
                         .pinMemory(true).transferTo(d).build()) {
                assertEquals(Cuda.isAvailable(), loader.pinsMemory(), "pinned whenever an accelerator is present, as PyTorch");
                long hitsBefore = d.isCuda() ? PinnedMemory.allocator().stats().cacheHits() : 0;
                for (int epoch = 0; epoch < 3; epoch++) {
                    int row = 0;
                    for (Sample b : loader) {
                        assertEquals(d, b.input().device());
                        assertEquals(d, b.target().device());
                        int n = (int) b.input().size(0);
                        double expected = 0;
                        for (int i = row * COLS; i < (row + n) * COLS; i++) expected += v[i];
                        // Work on the current stream right after next(): it must see the side stream's copies.
                        try (Tensor s = b.input().sum(); Tensor firstTarget = b.target().select(0, 0)) {
                            assertEquals(expected, s.item(), "epoch " + epoch + " rows " + row + "..");
                            assertEquals(row, (long) firstTarget.item());
                        }
                        row += n;
                    }
                    assertEquals(ROWS, row);
                }
                if (d.isCuda()) {
                    assertNotEquals(hitsBefore, PinnedMemory.allocator().stats().cacheHits(), "pinned blocks are reused across batches");
                }
            }
            if (d.isCuda()) {
                Cuda.synchronize(d);
                assertEquals(0, PinnedMemory.allocator().stats().activeBlocks(), "every pinned batch was released");
            }
        });
        add(tests, List.of(DeviceCases.CUDA), "a kept batch stays valid after the loader moves on", d -> {
            try (Tensor x = Torch.ones(new long[] {8, 4}, DType.FLOAT32, Device.cpu()); Tensor y = Torch.arange(8);
                 var loader = DataLoader.builder(new TensorDataset(x, y).asSamples()).batchSize(4).pinMemory(true).transferTo(d).build();
                 var it = loader.iterator()) {
                it.next();
                Sample kept = it.keep();
                it.next();
                try (kept; Tensor s = kept.input().sum()) {
                    assertEquals(16.0, s.item());
                }
            }
        });
        return tests;
    }
}
