package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.backend.Backends;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * On a machine where CUDA cannot run (no libcuda, or no device), the backend says so with a reason
 * naming what was looked for, and every use of {@code cuda} fails with that reason (DESIGN.md section 2).
 * Skipped where CUDA is available: there the GPU check covers the other side.
 */
class CudaUnavailableTest {
    @BeforeEach
    void onlyWithoutCuda() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available on this machine; these tests cover machines without it");
    }

    @Test
    void serviceLoaderFindsTheCudaBackend() {
        assertSame(CudaBackend.get(), Backends.all().get(Device.Type.CUDA));
    }

    @Test
    void theBackendIsUnavailableWithAReasonNamingTheDriverOrItsError() {
        CudaBackend b = CudaBackend.get();
        assertFalse(b.isAvailable());
        String reason = b.unavailableReason();
        assertTrue(reason.startsWith("CUDA driver not found: no libcuda.so* in ") || reason.contains("cuInit failed")
                || reason.contains("no device"), reason);
        assertEquals(0, Cuda.deviceCount());
    }

    @Test
    void allocatingACudaTensorFailsWithTheReason() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Tensor.empty(new long[] {2, 3}, DType.FLOAT32, Device.cuda()));
        assertEquals("empty: device cuda:0 is not available: " + Cuda.unavailableReason(), e.getMessage());
    }

    @Test
    void streamsEventsAndSynchronizeFailWithTheReason() {
        String expected = "CUDA is not available: " + Cuda.unavailableReason();
        assertEquals(expected, assertThrows(IllegalStateException.class, () -> Stream.create(Device.cuda())).getMessage());
        assertEquals(expected, assertThrows(IllegalStateException.class, () -> Event.create(Device.cuda(), true)).getMessage());
        assertEquals(expected, assertThrows(IllegalStateException.class, Cuda::synchronize).getMessage());
        assertEquals(expected, assertThrows(IllegalStateException.class, () -> Cuda.allocator(Device.cuda())).getMessage());
    }

    @Test
    void jtorchInfoListsEveryLibraryFoundOrWhereItWasLookedFor() {
        List<String> lines = Backends.describeAll();
        assertTrue(lines.contains("cuda: unavailable (" + Cuda.unavailableReason() + ")"), lines.toString());
        for (CudaLibraries.Kind k : CudaLibraries.Kind.values()) {
            assertTrue(lines.stream().anyMatch(l -> l.trim().startsWith(k.displayName())), k + " missing from " + lines);
        }
    }

    @Test
    void theDefaultStreamNeedsNoDriverAndWithStreamRestoresThePreviousOne() {
        Stream dflt = Cuda.currentStream(Device.cuda(1));
        assertTrue(dflt.isDefault());
        Stream other = Stream.defaultStream(Device.cuda(1));
        try (var scope = Cuda.withStream(other)) {
            assertSame(other, Cuda.currentStream(Device.cuda(1)));
        }
        assertTrue(Cuda.currentStream(Device.cuda(1)).isDefault());
        assertThrows(IllegalArgumentException.class, () -> Stream.defaultStream(Device.cpu()));
    }
}
