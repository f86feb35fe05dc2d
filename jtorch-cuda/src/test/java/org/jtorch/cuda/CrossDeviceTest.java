package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.Storage;
import org.jtorch.nn.F;
import org.jtorch.op.Shapes;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

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
            assertEquals("add: expected all tensors to be on the same device, but found self on cpu (shape [2, 3], torch.float32) and other on cuda:0 (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> c.add(g)).getMessage());
            assertEquals("mul: expected all tensors to be on the same device, but found self on cuda:0 (shape [2, 3], torch.float32) and other on cpu (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> g.mul(c)).getMessage());
            assertEquals("add_: expected all tensors to be on the same device, but found self on cpu (shape [2, 3], torch.float32) and other on cuda:0 (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> c.add_(g)).getMessage());
        }
    }

    @Test
    void twoCudaDevicesAreDifferentDevices() {
        try (Tensor g0 = labelledCuda(0); Tensor g1 = labelledCuda(1)) {
            assertEquals("maximum: expected all tensors to be on the same device, but found self on cuda:0 (shape [2, 3], torch.float32) and other on cuda:1 (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> g0.maximum(g1)).getMessage());
        }
    }

    /** A zero-filled {@code shape} tensor of {@code dtype} labelled cuda:0 over host memory. */
    private static Tensor labelledCuda(DType dtype, long... shape) {
        long bytes = Shapes.numel(shape) * dtype.byteSize();
        Storage s = Storage.ofBlock(Device.cuda(0), bytes, null, null, MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]));
        return Tensor.fromStorage(s, dtype, shape, Shapes.contiguousStrides(shape), 0);
    }

    private static Tensor host(DType dtype, long... shape) {
        return Torch.zeros(shape, dtype, Device.cpu());
    }

    /** The front ends that reach their kernels by hand name each argument by its signature's name, as the dispatcher's layer. */
    @Test
    void handWrittenFrontEndsNameEachArgument() {
        DType f = DType.FLOAT32;
        assertEquals("searchsorted: expected all tensors to be on the same device, but found sorted_sequence on cuda:0 (shape [5], "
                + "torch.float32), self on cuda:0 (shape [3], torch.float32) and sorter on cpu (shape [5], torch.int64)",
                assertThrows(IllegalArgumentException.class, () -> Torch.searchsorted(labelledCuda(f, 5), labelledCuda(f, 3), false, false,
                        host(DType.INT64, 5))).getMessage());
        assertEquals("mv: expected all tensors to be on the same device, but found self on cpu (shape [2, 3], torch.float32) and vec "
                + "on cuda:0 (shape [3], torch.float32)",
                assertThrows(IllegalArgumentException.class, () -> host(f, 2, 3).mv(labelledCuda(f, 3))).getMessage());
        assertEquals("_thnn_fused_lstm_cell: expected all tensors to be on the same device, but found input_gates on cuda:0 (shape "
                + "[2, 8], torch.float32), hidden_gates on cpu (shape [2, 8], torch.float32) and cx on cuda:0 (shape [2, 2], torch.float32)",
                assertThrows(IllegalArgumentException.class, () -> org.jtorch.ops.Recurrent.lstmCell(labelledCuda(f, 2, 8), host(f, 2, 8),
                        labelledCuda(f, 2, 2))).getMessage());
        assertEquals("instance_norm: expected all tensors to be on the same device, but found input on cpu (shape [2, 4, 3], "
                + "torch.float32), running_mean on cpu (shape [4], torch.float32) and weight on cuda:0 (shape [4], torch.float32)",
                assertThrows(IllegalArgumentException.class, () -> F.instanceNorm(host(f, 2, 4, 3), host(f, 4), null, labelledCuda(f, 4),
                        null, true, 0.1, 1e-5)).getMessage());
        assertEquals("group_norm: expected all tensors to be on the same device, but found input on cuda:0 (shape [2, 4, 3], "
                + "torch.float32), weight on cuda:0 (shape [4], torch.float32) and bias on cpu (shape [4], torch.float32)",
                assertThrows(IllegalArgumentException.class, () -> F.groupNorm(labelledCuda(f, 2, 4, 3), 2, labelledCuda(f, 4), host(f, 4),
                        1e-5)).getMessage());
        assertEquals("rms_norm: expected all tensors to be on the same device, but found input on cpu (shape [2, 3], torch.float32) "
                + "and weight on cuda:0 (shape [3], torch.float32)",
                assertThrows(IllegalArgumentException.class, () -> F.rmsNorm(host(f, 2, 3), new long[] {3}, labelledCuda(f, 3), null))
                        .getMessage());
        assertEquals("index: expected all tensors to be on the same device, but found self on cuda:0 (shape [4, 3], torch.float32), "
                + "indices[0] on cuda:0 (shape [4], torch.bool) and indices[1] on cpu (shape [3], torch.bool)",
                assertThrows(IllegalArgumentException.class, () -> labelledCuda(f, 4, 3).index(labelledCuda(DType.BOOL, 4),
                        host(DType.BOOL, 3))).getMessage());
    }

    /**
     * The front ends of the other op families compare devices before any backend runs (with real device
     * memory, a host kernel handed a device pointer would crash the JVM). Each call mixes a cuda:0 and a
     * cpu operand; the message names the op (or the primitive it is composed of) and both devices.
     */
    @TestFactory
    List<DynamicTest> opFamiliesNameBothDevices() {
        DType f = DType.FLOAT32;
        DType l = DType.INT64;
        Map<String, Supplier<Tensor>> calls = new LinkedHashMap<>();
        calls.put("mm", () -> Torch.mm(host(f, 2, 3), labelledCuda(f, 3, 4)));
        calls.put("bmm", () -> Torch.bmm(labelledCuda(f, 1, 2, 3), host(f, 1, 3, 4)));
        calls.put("addmm", () -> Torch.addmm(host(f, 4), labelledCuda(f, 2, 3), labelledCuda(f, 3, 4), 1, 1));
        calls.put("linear", () -> F.linear(labelledCuda(f, 2, 3), labelledCuda(f, 4, 3), host(f, 4)));
        calls.put("conv2d", () -> F.conv2d(labelledCuda(f, 1, 2, 5, 5), host(f, 3, 2, 3, 3)));
        calls.put("index_select", () -> labelledCuda(f, 4, 3).indexSelect(0, host(l, 2)));
        calls.put("gather", () -> labelledCuda(f, 4, 3).gather(0, host(l, 2, 3)));
        calls.put("masked_fill", () -> labelledCuda(f, 4, 3).maskedFill(host(DType.BOOL, 4, 3), 1.0));
        calls.put("masked_select", () -> labelledCuda(f, 4, 3).maskedSelect(host(DType.BOOL, 4, 3)));
        calls.put("index", () -> labelledCuda(f, 4, 3).index(host(l, 2)));
        calls.put("index_put_", () -> labelledCuda(f, 4, 3).indexPut_(new Tensor[] {host(l, 2)}, labelledCuda(f, 2, 3), false));
        calls.put("cat", () -> Torch.cat(labelledCuda(f, 2, 3), host(f, 2, 3)));
        calls.put("nll_loss (nllLoss)", () -> F.nllLoss(labelledCuda(f, 2, 3), host(l, 2)));
        calls.put("embedding", () -> F.embedding(host(l, 2), labelledCuda(f, 4, 3)));
        calls.put("batch_norm (batchNorm)", () -> F.batchNorm(labelledCuda(f, 2, 3, 4), host(f, 3), host(f, 3)));
        calls.put("group_norm (groupNorm)", () -> F.groupNorm(labelledCuda(f, 2, 4, 3), 2, host(f, 4), null, 1e-5));
        calls.put("group_norm (a CUDA bias)", () -> F.groupNorm(host(f, 2, 4, 3), 2, null, labelledCuda(f, 4), 1e-5));
        calls.put("instance_norm (instanceNorm)", () -> F.instanceNorm(labelledCuda(f, 2, 4, 3), null, null, host(f, 4), null, true,
                0.1, 1e-5));
        calls.put("instance_norm (CUDA running statistics)", () -> F.instanceNorm(host(f, 2, 4, 3), labelledCuda(f, 4),
                labelledCuda(f, 4), null, null, true, 0.1, 1e-5));
        calls.put("native_layer_norm (layerNorm)", () -> F.layerNorm(host(f, 2, 4, 3), new long[] {3}, labelledCuda(f, 3), null, 1e-5));
        calls.put("rms_norm (rmsNorm)", () -> F.rmsNorm(labelledCuda(f, 2, 4, 3), new long[] {3}, host(f, 3), null));
        calls.put("bmm (einsum)", () -> Torch.einsum("ij,jk->ik", labelledCuda(f, 2, 3), host(f, 3, 4)));
        calls.put("mv", () -> labelledCuda(f, 2, 3).mv(host(f, 3)));
        calls.put("dot", () -> Torch.dot(host(f, 3), labelledCuda(f, 3)));
        calls.put("matmul", () -> Torch.matmul(labelledCuda(f, 2, 3, 4), host(f, 4, 5)));
        calls.put("matmul (vector)", () -> Torch.matmul(labelledCuda(f, 3), host(f, 3)));
        calls.put("searchsorted", () -> Torch.searchsorted(labelledCuda(f, 5), host(f, 3)));
        calls.put("_thnn_fused_lstm_cell (lstmCell)", () -> org.jtorch.ops.Recurrent.lstmCell(labelledCuda(f, 2, 8),
                labelledCuda(f, 2, 8), host(f, 2, 2)).hy());
        calls.put("_thnn_fused_gru_cell (gruCell)", () -> org.jtorch.ops.Recurrent.gruCell(host(f, 2, 6), labelledCuda(f, 2, 6),
                labelledCuda(f, 2, 2)));
        calls.put("index (a mask)", () -> labelledCuda(f, 4, 3).index(host(DType.BOOL, 4)));
        calls.put("index_put_ (a mask)", () -> labelledCuda(f, 4, 3).indexPut_(new Tensor[] {host(DType.BOOL, 4)},
                labelledCuda(f, 3), false));
        List<DynamicTest> tests = new ArrayList<>();
        for (Map.Entry<String, Supplier<Tensor>> e : calls.entrySet()) {
            tests.add(DynamicTest.dynamicTest(e.getKey(), () -> {
                String op = e.getKey().split(" ")[0];
                String m = assertThrows(IllegalArgumentException.class, () -> e.getValue().get().close()).getMessage();
                assertTrue(m.startsWith(op + ": ") && m.contains("cpu") && m.contains("cuda:0"), m);
            }));
        }
        return tests;
    }

    @Test
    void whereNamesBothDevices() {
        try (Tensor cond = Torch.ones(new long[] {2, 3}).gt(0.0); Tensor c = Torch.ones(new long[] {2, 3}); Tensor g = labelledCuda()) {
            assertEquals("where: expected all tensors to be on the same device, but found condition on cpu (shape [2, 3], torch.bool), self on cuda:0 (shape [2, 3], torch.float32) and other on cpu (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> Torch.where(cond, g, c)).getMessage());
            assertEquals("where: expected all tensors to be on the same device, but found condition on cpu (shape [2, 3], torch.bool), self on cpu (shape [2, 3], torch.float32) and other on cuda:0 (shape [2, 3], torch.float32) (only a CPU tensor of zero dimensions may join another device's)",
                    assertThrows(IllegalArgumentException.class, () -> Torch.where(cond, c, g)).getMessage());
        }
    }

    @Test
    void copiesInvolvingAnUnavailableCudaDeviceFailWithTheReason() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here: the conformance suite covers real copies");
        // Core's Backends.of refuses the device before the backend is reached.
        String expected = "device cuda:0 is not available: " + Cuda.unavailableReason();
        try (Tensor c = Torch.ones(new long[] {2, 3}); Tensor g = labelledCuda()) {
            // Copies name the op (copy_ and _to_copy are declared ops; the accelerator's backend runs them).
            assertEquals("copy_: " + expected, assertThrows(IllegalStateException.class, () -> g.copy_(c)).getMessage(), "host to device");
            assertEquals("copy_: " + expected, assertThrows(IllegalStateException.class, () -> c.copy_(g)).getMessage(), "device to host");
            assertEquals("_to_copy: " + expected, assertThrows(IllegalStateException.class, g::cpu).getMessage(), "to(cpu)");
            assertEquals("_to_copy: " + expected, assertThrows(IllegalStateException.class, g::toFloatArray).getMessage(), "host read");
            assertEquals("fill_: " + expected, assertThrows(IllegalStateException.class, () -> g.fill_(1.0)).getMessage(), "fill_");
            assertEquals("_to_copy: " + expected, assertThrows(IllegalStateException.class, () -> c.to(Device.cuda())).getMessage(), "to(cuda)");
            assertEquals("_to_copy: " + expected, assertThrows(IllegalStateException.class, c::cuda).getMessage(), "cuda()");
            assertEquals("_to_copy: device cuda:1 is not available: " + Cuda.unavailableReason(),
                    assertThrows(IllegalStateException.class, () -> c.cuda(1)).getMessage(), "cuda(1)");
            // Reached directly, the CUDA backend itself refuses with the runtime's reason.
            assertEquals("CUDA is not available: " + Cuda.unavailableReason(),
                    assertThrows(IllegalStateException.class, () -> CudaBackend.get().copy(Dispatcher.view(c),
                            Dispatcher.view(g))).getMessage(),
                    "backend copy");
        }
    }

    @Test
    void opsWithoutACudaKernelSayThatRatherThanComputeOnTheHost() {
        try (Tensor g = labelledCuda(); Tensor out = labelledCuda()) {
            // bitwise_not has no floating definition (the front end refuses it first); reached directly, the kernel names it.
            CudaBackend.get();  // registers its kernels
            org.jtorch.op.PointwiseKernel k = org.jtorch.op.KernelRegistry.pointwise(org.jtorch.op.PointwiseOps.BITWISE_NOT, Device.Type.CUDA);
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> k.run(0, DType.FLOAT32, org.jtorch.ops.Dispatcher.view(out), org.jtorch.ops.Dispatcher.view(g), null, 0, 0));
            assertEquals("bitwise_not: no CUDA kernel computes this op in torch.float32 (shape " + java.util.Arrays.toString(out.shape())
                    + ", device cuda)", e.getMessage());
        }
    }
}
