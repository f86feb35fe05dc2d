package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.util.List;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.distributed.WorldOfOne;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.SyncBatchNorm;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.JoiningOps;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.PointwiseOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The dispatcher's device layer: a declared op whose tensor arguments are on different devices fails before anything is
 * allocated, with one message naming the op and each argument (name, device, shape, dtype); a CPU zero-dim tensor may join
 * another device's tensors in a pointwise op only, as in PyTorch. The mixed calls need a second device ({@code
 * -Djtorch.test.device=cuda:0}, the simulator's included); the message and the parameter names are checked on the CPU.
 */
class DeviceAgreementTest {
    private static final Device CPU = Device.cpu();

    @Test
    void namesEveryArgumentInSignatureOrder() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor a = Torch.zeros(new long[] {2, 3}, DType.FLOAT32, CPU);
            Tensor b = Torch.zeros(new long[] {3}, DType.INT64, CPU);
            String m = Dispatcher.devicesDisagree(LinalgOps.LINEAR_ACTIVATION, "_linear_activation", new Tensor[] {a, null, b}, false)
                    .getMessage();
            assertEquals("_linear_activation: expected all tensors to be on the same device, but found input on cpu (shape [2, 3], "
                    + "torch.float32) and bias on cpu (shape [3], torch.int64)", m);
            String three = Dispatcher.devicesDisagree(IndexingOps.WHERE, "where", new Tensor[] {b, a, a}, true).getMessage();
            assertTrue(three.contains("condition on cpu (shape [3], torch.int64), self on cpu (shape [2, 3], torch.float32) and other on cpu"),
                    three);
            assertTrue(three.endsWith("(only a CPU tensor of zero dimensions may join another device's)"), three);
        }
    }

    @Test
    void listEntriesAreNamedByTheirPlace() {
        assertEquals("tensors[0]", JoiningOps.CAT.tensorParamName(0));
        assertEquals("tensors[2]", JoiningOps.CAT.tensorParamName(2));
        assertEquals("self", IndexingOps.INDEX_TENSOR.tensorParamName(0));
        assertEquals("indices[1]", IndexingOps.INDEX_TENSOR.tensorParamName(2));
        assertEquals("mask", IndexingOps.MASKED_FILL.tensorParamName(1));
        assertEquals("other", PointwiseOps.ADD.tensorParamName(1));
    }

    // ------------------------------------------------------------------ on a second device

    private static Device device() {
        Device d = Fixtures.device();
        assumeFalse(d.isCpu(), "needs a second device (-Djtorch.test.device=cuda:0)");
        return d;
    }

    /**
     * {@code call} fails naming {@code op} and each of {@code parts} (argument names and descriptions), and neither device's
     * allocator served an allocation meanwhile (the layer runs before allocating).
     */
    private static void refused(Device device, Supplier<Tensor> call, String op, String... parts) {
        long cpuBefore = Torch.memoryStats(CPU).allocations();
        long deviceBefore = Torch.memoryStats(device).allocations();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::get);
        String m = e.getMessage();
        assertTrue(m.startsWith(op + ": expected all tensors to be on the same device, but found "), m);
        for (String p : parts) assertTrue(m.contains(p), "missing '" + p + "' in: " + m);
        assertEquals(cpuBefore, Torch.memoryStats(CPU).allocations(), "CPU allocations before the error: " + m);
        assertEquals(deviceBefore, Torch.memoryStats(device).allocations(), device + " allocations before the error: " + m);
    }

    @Test
    void structuredOpsRefuseAnyOperandElsewhereBeforeAllocating() {
        Device dev = device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {4, 3}, DType.FLOAT32, dev);
            Tensor w = Torch.ones(new long[] {3, 5}, DType.FLOAT32, CPU);
            refused(dev, () -> x.mm(w), "mm", "self on " + dev + " (shape [4, 3], torch.float32)", "mat2 on cpu (shape [3, 5], torch.float32)");
            // a CPU zero-dim tensor is refused outside the pointwise ops, as by PyTorch
            Tensor scalarW = Torch.ones(new long[0], DType.FLOAT32, CPU);
            refused(dev, () -> Torch.cat(List.of(x, x, scalarW.reshape(1, 1).expand(1, 3)), 0), "cat",
                    "tensors[0] on " + dev, "tensors[1] on " + dev, "tensors[2] on cpu (shape [1, 3], torch.float32)");
            Tensor index = Torch.zeros(new long[] {4, 3}, DType.INT64, CPU);
            refused(dev, () -> x.gather(1, index), "gather", "self on " + dev, "index on cpu (shape [4, 3], torch.int64)");
            Tensor bias = Torch.ones(new long[] {5}, DType.FLOAT32, CPU);
            Tensor wt = Torch.ones(new long[] {5, 3}, DType.FLOAT32, dev);
            refused(dev, () -> Dispatcher.callAll(LinalgOps.LINEAR_ACTIVATION, new Tensor[] {x, wt, bias}, 1, 0)[0],
                    "_linear_activation", "input on " + dev, "weight on " + dev + " (shape [5, 3], torch.float32)",
                    "bias on cpu (shape [5], torch.float32)");
            Tensor target = Torch.ones(new long[] {4, 3}, DType.FLOAT32, CPU);
            Tensor p = Torch.ones(new long[] {4, 3}, DType.FLOAT32, dev).mul(0.5);
            refused(dev, () -> F.binaryCrossEntropy(p, target), "binary_cross_entropy_elementwise", "target on cpu (shape [4, 3], torch.float32)");
        }
    }

    @Test
    void handWrittenFrontEndsNameTheirArgumentsAsTheDispatcherDoes() {
        Device dev = device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {1, 2, 5, 5}, DType.FLOAT32, dev);
            Tensor w = Torch.ones(new long[] {3, 2, 3, 3}, DType.FLOAT32, CPU);
            refused(dev, () -> F.conv2d(x, w), "conv2d", "input on " + dev + " (shape [1, 2, 5, 5], torch.float32)",
                    "weight on cpu (shape [3, 2, 3, 3], torch.float32)");
            Tensor stat = Torch.ones(new long[] {2}, DType.FLOAT32, CPU);
            refused(dev, () -> F.batchNorm(x, stat, stat), "batch_norm", "input on " + dev, "running_mean on cpu (shape [2], torch.float32)",
                    "running_var on cpu");
        }
    }

    /**
     * Every normalisation, an input on one device and an affine parameter or a running statistic on the other (both ways):
     * the dispatcher's message before anything is allocated, and the running statistics left as they were.
     */
    @Test
    void everyNormRefusesAnArgumentOnTheOtherDevice() {
        Device dev = device();
        for (Device[] way : new Device[][] {{CPU, dev}, {dev, CPU}}) {
            Device in = way[0];
            Device other = way[1];
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = Torch.ones(new long[] {2, 4, 3}, DType.FLOAT32, in);
                Tensor channels = Torch.ones(new long[] {4}, DType.FLOAT32, other);
                Tensor stat = Torch.zeros(new long[] {4}, DType.FLOAT32, in);
                String input = "input on " + in + " (shape [2, 4, 3], torch.float32)";
                String elsewhere = " on " + other + " (shape [4], torch.float32)";
                refused(dev, () -> F.batchNorm(x, stat, stat, channels, null, true, 0.1, 1e-5), "batch_norm", input, "weight" + elsewhere);
                refused(dev, () -> F.instanceNorm(x, stat, stat, null, channels, true, 0.1, 1e-5), "instance_norm", input,
                        "running_mean on " + in, "bias" + elsewhere);
                refused(dev, () -> F.instanceNorm(x, channels, null, null, null, true, 0.1, 1e-5), "instance_norm", input,
                        "running_mean" + elsewhere);
                refused(dev, () -> F.groupNorm(x, 2, channels, null, 1e-5), "group_norm", input, "weight" + elsewhere);
                refused(dev, () -> F.groupNorm(x, 2, null, channels, 1e-5), "group_norm", input, "bias" + elsewhere);
                Tensor row = Torch.ones(new long[] {3}, DType.FLOAT32, other);
                refused(dev, () -> F.layerNorm(x, new long[] {3}, row, null, 1e-5), "native_layer_norm", input,
                        "weight on " + other + " (shape [3], torch.float32)");
                refused(dev, () -> F.rmsNorm(x, new long[] {3}, row, null), "rms_norm", input,
                        "weight on " + other + " (shape [3], torch.float32)");
                refused(dev, () -> SyncBatchNorm.syncBatchNorm(x, stat, stat, channels, null, 0.1, 1e-5, new WorldOfOne()), "batch_norm",
                        input, "weight" + elsewhere);
                assertArrayEquals(new float[4], stat.to(CPU).toFloatArray(), "running statistics untouched");
            }
        }
    }

    @Test
    void matrixVectorSortingRecurrentAndMaskIndexingFrontEndsUseTheDispatchersLayer() {
        Device dev = device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor m = Torch.ones(new long[] {4, 3}, DType.FLOAT32, dev);
            Tensor v = Torch.ones(new long[] {3}, DType.FLOAT32, CPU);
            refused(dev, () -> m.mv(v), "mv", "self on " + dev + " (shape [4, 3], torch.float32)", "vec on cpu (shape [3], torch.float32)");
            Tensor u = Torch.ones(new long[] {3}, DType.FLOAT32, dev);
            refused(dev, () -> u.dot(v), "dot", "self on " + dev, "tensor on cpu (shape [3], torch.float32)");
            Tensor batch = Torch.ones(new long[] {2, 3, 4}, DType.FLOAT32, CPU);
            refused(dev, () -> m.matmul(batch), "matmul", "self on " + dev, "other on cpu (shape [2, 3, 4], torch.float32)");
            Tensor boundaries = Torch.arange(0, 5, 1, DType.FLOAT32, dev);
            refused(dev, () -> Sorting.searchsorted(boundaries, v, false, false, null), "searchsorted",
                    "sorted_sequence on " + dev + " (shape [5], torch.float32)", "self on cpu (shape [3], torch.float32)");
            Tensor sorter = Torch.zeros(new long[] {5}, DType.INT64, CPU);
            refused(dev, () -> Sorting.searchsorted(boundaries, u, false, false, sorter), "searchsorted",
                    "sorter on cpu (shape [5], torch.int64)");
            Tensor gates = Torch.ones(new long[] {2, 8}, DType.FLOAT32, dev);
            Tensor cx = Torch.ones(new long[] {2, 2}, DType.FLOAT32, CPU);
            refused(dev, () -> Recurrent.lstmCell(gates, gates, cx).hy(), "_thnn_fused_lstm_cell",
                    "input_gates on " + dev, "hidden_gates on " + dev, "cx on cpu (shape [2, 2], torch.float32)");
            Tensor gruGates = Torch.ones(new long[] {2, 6}, DType.FLOAT32, dev);
            refused(dev, () -> Recurrent.gruCell(gruGates, gruGates, cx), "_thnn_fused_gru_cell", "hx on cpu (shape [2, 2], torch.float32)");
            Tensor mask = Torch.ones(new long[] {4}, DType.BOOL, CPU);
            refused(dev, () -> m.index(mask), "index", "self on " + dev, "indices[0] on cpu (shape [4], torch.bool)");
            Tensor values = Torch.ones(new long[] {3}, DType.FLOAT32, dev);
            refused(dev, () -> m.indexPut_(new Tensor[] {mask}, values, false), "index_put_", "values on " + dev,
                    "indices[0] on cpu (shape [4], torch.bool)");
        }
    }

    @Test
    void inPlaceOpsRefuseOperandsElsewhereBeforeWriting() {
        Device dev = device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.zeros(new long[] {2, 3}, DType.FLOAT32, dev);
            long version = x.version();
            Tensor mask = Torch.ones(new long[] {2, 3}, DType.BOOL, CPU);
            refused(dev, () -> x.maskedFill_(mask, 7), "masked_fill_", "self on " + dev, "mask on cpu (shape [2, 3], torch.bool)");
            Tensor index = Torch.zeros(new long[] {1}, DType.INT64, dev);
            Tensor source = Torch.ones(new long[] {1, 3}, DType.FLOAT32, CPU);
            refused(dev, () -> x.indexAdd_(0, index, source), "index_add_", "source on cpu (shape [1, 3], torch.float32)");
            assertArrayEquals(new float[6], x.to(CPU).toFloatArray(), "nothing written");
            assertEquals(version, x.version(), "no version bump");
        }
    }

    @Test
    void pointwiseOpsTakeACpuScalarButNoOtherCpuTensor() {
        Device dev = device();
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {2, 3}, DType.FLOAT32, dev);
            Tensor two = Torch.ones(new long[0], DType.FLOAT32, CPU).mul(2);
            Tensor sum = x.add(two);
            assertEquals(dev, sum.device());
            assertArrayEquals(new float[] {3, 3, 3, 3, 3, 3}, sum.to(CPU).toFloatArray());
            assertEquals(dev, two.add(x).device());
            Tensor row = Torch.ones(new long[] {3}, DType.FLOAT64, CPU);
            refused(dev, () -> x.add(row), "add", "self on " + dev + " (shape [2, 3], torch.float32)", "other on cpu (shape [3], torch.float64)",
                    "only a CPU tensor of zero dimensions");
            refused(dev, () -> x.add_(row), "add_", "other on cpu (shape [3], torch.float64)");
            Tensor cond = Torch.ones(new long[] {2, 3}, DType.BOOL, dev);
            Tensor where = Torch.where(cond, x, two);
            assertArrayEquals(new float[] {1, 1, 1, 1, 1, 1}, where.to(CPU).toFloatArray());
            refused(dev, () -> Torch.where(cond, x, row), "where", "condition on " + dev, "other on cpu (shape [3], torch.float64)");
        }
    }
}
