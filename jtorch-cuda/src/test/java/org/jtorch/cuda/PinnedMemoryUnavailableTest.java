package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.util.List;
import java.util.ServiceLoader;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.MemoryPinner;
import org.jtorch.data.Sample;
import org.jtorch.data.TensorDataset;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Pinned memory where CUDA is unavailable (this machine): the CUDA pinner is registered through
 * {@link ServiceLoader} but says it is unavailable and why; {@code Tensor.pinMemory()} and
 * {@link PinnedMemory} fail with that reason; a DataLoader asked to pin and to transfer to the CPU works
 * without pinning.
 */
class PinnedMemoryUnavailableTest {
    @BeforeEach
    void onlyWithoutCuda() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here: PinnedDataLoaderDeviceTest covers it");
    }

    @Test
    void theCudaPinnerIsRegisteredAndSaysWhyItIsUnavailable() {
        List<MemoryPinner> pinners = ServiceLoader.load(MemoryPinner.class).stream().map(ServiceLoader.Provider::get).toList();
        MemoryPinner cuda = pinners.stream().filter(p -> p instanceof CudaMemoryPinner).findFirst().orElseThrow();
        assertFalse(cuda.isAvailable());
        assertTrue(cuda.unavailableReason().contains(Cuda.unavailableReason()), cuda.unavailableReason());
        assertTrue(MemoryPinner.find().isEmpty());
    }

    @Test
    void pinMemoryThrowsWithTheReason() {
        try (Tensor t = Torch.tensor(new float[] {1, 2, 3})) {
            assertFalse(t.isPinned());
            IllegalStateException e = assertThrows(IllegalStateException.class, t::pinMemory);
            assertTrue(e.getMessage().startsWith("pinMemory: ") && e.getMessage().contains(Cuda.unavailableReason()), e.getMessage());
            assertThrows(IllegalStateException.class, () -> PinnedMemory.allocate(16));
            assertThrows(IllegalStateException.class, PinnedMemory::allocator);
        }
    }

    @Test
    void aNonBlockingCopyToTheCpuIsAnAlias() {
        try (Tensor t = Torch.tensor(new float[] {1, 2, 3}); Tensor same = t.to(Device.cpu(), true)) {
            assertSame(t.storage(), same.storage());
        }
    }

    @Test
    void aPinningLoaderTransferringToTheCpuWorksWithoutPinning() {
        try (Tensor x = Torch.arange(12).reshape(6, 2); Tensor y = Torch.arange(6);
             var loader = DataLoader.builder(new TensorDataset(x, y).asSamples()).batchSize(4).numWorkers(1).pinMemory(true)
                     .transferTo(Device.cpu()).build()) {
            assertFalse(loader.pinsMemory());
            long seen = 0;
            for (Sample b : loader) {
                assertFalse(b.input().isPinned());
                seen += b.target().numel();
            }
            assertEquals(6, seen);
        }
    }
}
