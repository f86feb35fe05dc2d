package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.Storage;
import org.jtorch.nn.F;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.Shapes;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code avg_pool3d} and {@code max_unpool3d} as declared front ends ({@link FrontEndOps#AVG_POOL3D},
 * {@link FrontEndOps#MAX_UNPOOL3D}): one traced op each, replayed from the trace's arguments as the eager call, float32
 * under CPU autocast (PyTorch 1.13's list), gradients of both orders against finite differences in float64, and the
 * operands' devices compared before anything runs. Values against PyTorch 1.13: SpatialConformanceTest's
 * {@code avg_pool3d} and {@code max_unpool3d} cases and AutocastConformanceTest's policy cases.
 */
@ExtendWith(ScopePerTest.class)
class AvgPool3dAndMaxUnpool3dOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(26);

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    @Test
    void bothAreDeclaredAndTracedAsOneOpEach() {
        for (String name : List.of("avg_pool3d", "max_unpool3d")) {
            OpDef op = OpRegistry.get(name);
            assertEquals(OpDef.Kind.FRONT_END, op.kind(), name);
            assertTrue(op.isDifferentiable(), name);
            assertEquals(CastPolicy.FP32, op.autocast(Device.Type.CPU), name);
            assertNull(op.autocast(Device.Type.CUDA), name);
        }
        Tensor x = randn(DType.FLOAT32, 2, 3, 4, 6, 4).requiresGrad_(true);
        assertEquals(List.of("avg_pool3d"), traced(() -> F.avgPool3d(x, 2, F.AvgPool.options().stride(1, 2, 1).padding(1))));
        ValuesIndices pooled = F.maxPool3dWithIndices(x, new int[] {2}, F.MaxPool.options());
        assertEquals(List.of("max_unpool3d"), traced(() -> F.maxUnpool3d(pooled.values(), pooled.indices(), new int[] {2}, null,
                new int[] {0}, null)));
    }

    /** The JIT replays a traced call through {@code FrontEnds.call} from the recorded arguments: the eager call's values. */
    @Test
    void aCallFromTheTracedArgumentsEqualsTheEagerCall() {
        Tensor x = randn(DType.FLOAT64, 2, 2, 5, 4, 6);
        // kernel, stride (absent: the kernel), padding as lists; ceil_mode, count_include_pad, divisor_override (0: None)
        double[] args = {3, 3, 2, 2, -1, 1, 1, 1, 0, 0};
        Tensor eager = F.avgPool3d(x, new int[] {3, 2, 2}, F.AvgPool.options().padding(1).ceilMode(true).countIncludePad(false));
        assertArrayEquals(eager.toDoubleArray(), Dispatcher.call(FrontEndOps.AVG_POOL3D, new Tensor[] {x}, args).toDoubleArray(), 0);
        double[] divided = {1, 2, 3, 1, 2, 1, 1, 0, 0, 1, 5};
        Tensor withDivisor = F.avgPool3d(x, 2, F.AvgPool.options().stride(1, 2, 1).divisorOverride(5L));
        assertArrayEquals(withDivisor.toDoubleArray(), Dispatcher.call(FrontEndOps.AVG_POOL3D, new Tensor[] {x}, divided).toDoubleArray(), 0);

        ValuesIndices pooled = F.maxPool3dWithIndices(x, new int[] {2}, F.MaxPool.options());
        Tensor unpooled = F.maxUnpool3d(pooled.values(), pooled.indices(), new int[] {2}, null, new int[] {0}, new long[] {5, 5, 7});
        Tensor replayed = Dispatcher.call(FrontEndOps.MAX_UNPOOL3D, new Tensor[] {pooled.values(), pooled.indices()}, 5, 5, 7, 2, 2, 2, 0, 0, 0);
        assertArrayEquals(unpooled.shape(), replayed.shape());
        assertArrayEquals(unpooled.toDoubleArray(), replayed.toDoubleArray(), 0);
    }

    @Test
    void cpuAutocastRunsBothInFloat32() {
        Tensor x = Torch.randn(new long[] {1, 2, 4, 4, 4}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        ValuesIndices pooled = F.maxPool3dWithIndices(x, new int[] {2}, F.MaxPool.options());
        Tensor avg, unpooled;
        try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
            avg = F.avgPool3d(x, 2);
            unpooled = F.maxUnpool3d(pooled.values(), pooled.indices(), new int[] {2}, null, new int[] {0}, null);
        }
        assertEquals(DType.FLOAT32, avg.dtype());
        assertArrayEquals(F.avgPool3d(x.to(DType.FLOAT32), 2).toFloatArray(), avg.toFloatArray(), 0f);
        assertEquals(DType.FLOAT32, unpooled.dtype());
        assertArrayEquals(F.maxUnpool3d(pooled.values(), pooled.indices(), new int[] {2}, null, new int[] {0}, null).to(DType.FLOAT32)
                .toFloatArray(), unpooled.toFloatArray(), 0f);
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        Tensor x = Torch.randn(new long[] {1, 2, 4, 3, 5}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
        for (F.AvgPool options : List.of(F.AvgPool.options(), F.AvgPool.options().stride(1, 2, 1).padding(1).countIncludePad(false),
                F.AvgPool.options().ceilMode(true).divisorOverride(3L))) {
            assertTrue(Gradcheck.check(a -> F.avgPool3d(a[0], 2, options), x), options.toString());
            assertTrue(Gradcheck.check(firstGradient(a -> F.avgPool3d(a[0], 2, options).pow(2.0)), x), options.toString());
        }
        Tensor indices;
        Tensor volume = Torch.randn(new long[] {1, 2, 4, 2, 4}, DType.FLOAT64, Device.cpu(), GEN);
        try (ValuesIndices pooled = F.maxPool3dWithIndices(volume, new int[] {2}, F.MaxPool.options())) {
            indices = pooled.indices().alias();
        }
        Tensor v = Torch.randn(indices.shape(), DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
        assertTrue(Gradcheck.check(a -> F.maxUnpool3d(a[0], indices, new int[] {2}, null, new int[] {0}, null), v));
        assertTrue(Gradcheck.check(firstGradient(a -> F.maxUnpool3d(a[0], indices, new int[] {2}, null, new int[] {0}, null).pow(2.0)), v));
    }

    /** Without a GPU the cuda:0 operand is host memory labelled cuda:0, which no kernel touches: the device layer refuses first. */
    @Test
    void operandsOnTwoDevicesAreRefusedNamingTheOpAndEachOperand() {
        Tensor values = Torch.zeros(new long[] {1, 2, 2, 2, 2}, DType.FLOAT32, Device.cpu());
        long[] shape = {1, 2, 2, 2, 2};
        Storage s = Storage.ofBlock(Device.cuda(0), 8 * 16, null, null, MemorySegment.ofArray(new long[16]));
        Tensor indices = Tensor.fromStorage(s, DType.INT64, shape, Shapes.contiguousStrides(shape), 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> F.maxUnpool3d(values, indices, new int[] {2}, null, new int[] {0}, null));
        assertEquals("max_unpool3d: expected all tensors to be on the same device, but found self on cpu (shape [1, 2, 2, 2, 2], "
                + "torch.float32) and indices on cuda:0 (shape [1, 2, 2, 2, 2], torch.int64)", e.getMessage());
    }
}
