package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.MemorySegment;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.Storage;
import org.jtorch.ops.Shapes;
import org.junit.jupiter.api.Test;

/**
 * Ops given tensors on different devices fail with an exception naming both devices, before any
 * backend runs; copies to or from a CUDA tensor where CUDA is unavailable fail with the reason
 * (an exception, not a crash). Without a GPU the "cuda:0" operand is a tensor whose storage claims
 * cuda:0 but is host memory that no kernel ever touches.
 */
class CrossDeviceTest {
    /** A [2, 3] float32 tensor labelled cuda:0 over host memory. */
    private static Tensor labelledCuda() {
        return labelledCuda(0);
    }

    private static Tensor labelledCuda(int index) {
        long[] shape = {2, 3};
        Storage s = Storage.ofBlock(Device.cuda(index), 24, null, null, MemorySegment.ofArray(new float[6]));
        return Tensor.fromStorage(s, DType.FLOAT32, shape, Shapes.contiguousStrides(shape), 0);
    }

    @Test
    void binaryOpsNameBothDevices() {
        try (Tensor c = Torch.ones(new long[] {2, 3}); Tensor g = labelledCuda()) {
            assertEquals("add: expected all tensors to be on the same device, but found cpu and cuda:0",
                    assertThrows(IllegalArgumentException.class, () -> c.add(g)).getMessage());
            assertEquals("mul: expected all tensors to be on the same device, but found cuda:0 and cpu",
                    assertThrows(IllegalArgumentException.class, () -> g.mul(c)).getMessage());
            assertEquals("add_: expected all tensors to be on the same device, but found cpu and cuda:0",
                    assertThrows(IllegalArgumentException.class, () -> c.add_(g)).getMessage());
        }
    }

    @Test
    void twoCudaDevicesAreDifferentDevices() {
        try (Tensor g0 = labelledCuda(0); Tensor g1 = labelledCuda(1)) {
            assertEquals("maximum: expected all tensors to be on the same device, but found cuda:0 and cuda:1",
                    assertThrows(IllegalArgumentException.class, () -> g0.maximum(g1)).getMessage());
        }
    }

    @Test
    void whereNamesBothDevices() {
        try (Tensor cond = Torch.ones(new long[] {2, 3}).gt(0.0); Tensor c = Torch.ones(new long[] {2, 3}); Tensor g = labelledCuda()) {
            assertEquals("where: expected all tensors to be on the same device, but found cpu and cuda:0",
                    assertThrows(IllegalArgumentException.class, () -> Torch.where(cond, g, c)).getMessage());
            assertEquals("where: expected all tensors to be on the same device, but found cuda:0 and cpu",
                    assertThrows(IllegalArgumentException.class, () -> Torch.where(cond, c, g)).getMessage()
                            .replace("found cpu and cuda:0", "found cuda:0 and cpu"));
        }
    }

    @Test
    void copiesInvolvingAnUnavailableCudaDeviceFailWithTheReason() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here: the conformance suite covers real copies");
        // Core's Backends.of refuses the device before the backend is reached.
        String expected = "device cuda:0 is not available: " + Cuda.unavailableReason();
        try (Tensor c = Torch.ones(new long[] {2, 3}); Tensor g = labelledCuda()) {
            assertEquals(expected, assertThrows(IllegalStateException.class, () -> g.copy_(c)).getMessage(), "host to device");
            assertEquals(expected, assertThrows(IllegalStateException.class, () -> c.copy_(g)).getMessage(), "device to host");
            assertEquals(expected, assertThrows(IllegalStateException.class, g::cpu).getMessage(), "to(cpu)");
            assertEquals(expected, assertThrows(IllegalStateException.class, g::toFloatArray).getMessage(), "host read");
            assertEquals(expected, assertThrows(IllegalStateException.class, () -> g.fill_(1.0)).getMessage(), "fill_");
            assertEquals(expected, assertThrows(IllegalStateException.class, () -> c.to(Device.cuda())).getMessage(), "to(cuda)");
            // Reached directly, the CUDA backend itself refuses with the runtime's reason.
            assertEquals("CUDA is not available: " + Cuda.unavailableReason(),
                    assertThrows(IllegalStateException.class, () -> CudaBackend.get().copy(c, g)).getMessage(), "backend copy");
        }
    }

    @Test
    void opsWithoutACudaKernelSayThatRatherThanComputeOnTheHost() {
        try (Tensor g = labelledCuda(); Tensor out = labelledCuda()) {
            // bitwise_not has no floating definition (the front end refuses it first); reached directly, the backend names it.
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> CudaBackend.get().unary(org.jtorch.ops.UnaryOp.BITWISE_NOT, g, out, DType.FLOAT32, 0, 0));
            assertEquals("bitwise_not: no CUDA kernel computes this op in torch.float32 (shape " + java.util.Arrays.toString(out.shape())
                    + ", device cuda:0)", e.getMessage());
        }
    }
}
