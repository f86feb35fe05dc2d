package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.PoolingOps;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Max pooling and adaptive max pooling as multi-output structured ops ({@link PoolingOps}: values and indices from one
 * kernel call), their backward pair, what the dispatcher's layers do with a second output, and the meta functions'
 * errors. Values and indices against PyTorch 1.13 are in {@link SpatialConformanceTest}; gradients here are checked
 * against finite differences in float64.
 */
@ExtendWith(ScopePerTest.class)
class MaxPoolingOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(17);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void theMaxPoolsAreStructuredWithTwoOutputsAndKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {PoolingOps.MAX_POOL2D_WITH_INDICES, PoolingOps.ADAPTIVE_MAX_POOL2D}) {
            assertEquals(2, op.outputCount(), op.name());
            assertEquals(List.of("output", "indices"), op.outputNames());
            assertTrue(op.signature().toString().endsWith("-> (Tensor output, Tensor indices)"), op.signature().toString());
        }
        for (OpDef op : new OpDef[] {PoolingOps.MAX_POOL2D_WITH_INDICES, PoolingOps.ADAPTIVE_MAX_POOL2D,
                PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, PoolingOps.MAX_POOL_DOUBLE_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
            assertTrue(op.isDifferentiable(), op.name());
        }
    }

    @Test
    void callAllReturnsValuesAndIndicesAndCallReturnsTheValues() {
        Torch.manualSeed(3);
        Tensor x = Torch.randn(2, 3, 6, 5).to(DEVICE);
        double[] geometry = {2, 6, 5, 3, 2, 2, 3, 2, 2, 0, 0, 1, 1};
        Tensor[] both = Dispatcher.callAll(PoolingOps.MAX_POOL2D_WITH_INDICES, new Tensor[] {x}, geometry);
        assertEquals(2, both.length);
        assertArrayEquals(new long[] {2, 3, 3, 2}, both[0].shape());
        assertEquals(DType.INT64, both[1].dtype());
        // without autograd, call skips the indices (the kernel gets no view for them): the same values
        assertTrue(PoolingOps.MAX_POOL2D_WITH_INDICES.skipsUnreadOutputs());
        Tensor values = Dispatcher.call(PoolingOps.MAX_POOL2D_WITH_INDICES, new Tensor[] {x}, geometry);
        assertArrayEquals(both[0].toFloatArray(), values.toFloatArray());
        // each value is the input's element at its index in the plane (h * W + w)
        Tensor gathered = x.reshape(6, 30).gather(1, both[1].reshape(6, 6)).reshape(2, 3, 3, 2);
        assertArrayEquals(both[0].toFloatArray(), gathered.toFloatArray());
    }

    @Test
    void autogradRecordsOneNodeNamedAsPyTorchsOnTheValues() {
        Tensor x = randn64(1, 2, 5, 5);
        ValuesIndices r = F.maxPool2dWithIndices(x, new int[] {2}, null, new int[] {0}, new int[] {1}, false);
        assertEquals("MaxPool2DWithIndicesBackward0", r.values().gradFn().name());
        assertEquals(null, r.indices().gradFn());
        ValuesIndices a = F.adaptiveMaxPool2dWithIndices(x, 2, 3);
        assertEquals("AdaptiveMaxPool2DBackward0", a.values().gradFn().name());
    }

    @Test
    void theTraceRecordsTheValuesAndSeesTheIndicesAsMadeByAnOpItCannotReplay() {
        Tensor x = Torch.randn(1, 2, 4, 4).to(DEVICE);
        List<String> names = new ArrayList<>();
        List<Tensor> outputs = new ArrayList<>();
        List<Tensor> created = new ArrayList<>();
        TraceHook<Tensor> hook = new TraceHook<>() {
            @Override
            public void record(OpDef op, List<Tensor> in, double[] s, ReduceArgs r, Tensor out) {
                names.add(op.name());
                outputs.add(out);
            }

            @Override
            public void created(Tensor t) {
                created.add(t);
            }
        };
        ValuesIndices r;
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            r = F.adaptiveMaxPool2dWithIndices(x, 2, 2);
        }
        assertEquals(List.of("adaptive_max_pool2d"), names);
        assertTrue(outputs.get(0) == r.values());
        assertTrue(created.stream().anyMatch(t -> t == r.indices()));
    }

    @Test
    void maxPoolOfBfloat16PoolsInFloat32AndRoundsOnce() {
        Torch.manualSeed(4);
        Tensor x = Torch.randn(2, 3, 7, 5).to(DEVICE).to(DType.BFLOAT16);
        ValuesIndices y = F.maxPool2dWithIndices(x, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
        ValuesIndices ref = F.maxPool2dWithIndices(x.to(DType.FLOAT32), new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
        assertEquals(DType.BFLOAT16, y.values().dtype());
        assertArrayEquals(ref.values().to(DType.BFLOAT16).toFloatArray(), y.values().toFloatArray());
        assertArrayEquals(ref.indices().toLongArray(), y.indices().toLongArray());
    }

    @Test
    void maxPoolOfATransposedInputReadsItsElements() {
        Torch.manualSeed(5);
        Tensor x = Torch.randn(2, 3, 6, 4).to(DEVICE).transpose(2, 3);
        ValuesIndices a = F.maxPool2dWithIndices(x, new int[] {2}, null, new int[] {0}, new int[] {1}, false);
        ValuesIndices b = F.maxPool2dWithIndices(x.contiguous(), new int[] {2}, null, new int[] {0}, new int[] {1}, false);
        assertArrayEquals(b.values().toFloatArray(), a.values().toFloatArray());
        assertArrayEquals(b.indices().toLongArray(), a.indices().toLongArray());
    }

    @Test
    void theBackwardPairScattersAndGathersAtTheIndices() {
        Tensor grad = Torch.tensor(new float[] {1, 2, 3, 4}, 1, 1, 2, 2).to(DEVICE);
        Tensor indices = Torch.tensor(new long[] {0, 0, 8, 5}, 1, 1, 2, 2).to(DEVICE);
        Tensor gi = Dispatcher.call(PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, new Tensor[] {grad, indices}, 2, 3, 3, 2, 2);
        // zeros with grad added at each index: both 1 and 2 land on element 0
        assertArrayEquals(new float[] {3, 0, 0, 0, 0, 4, 0, 0, 3}, gi.toFloatArray());
        Tensor back = Dispatcher.call(PoolingOps.MAX_POOL_DOUBLE_BACKWARD, new Tensor[] {gi, indices}, 2, 3, 3, 2, 2);
        assertArrayEquals(new float[] {3, 3, 3, 4}, back.toFloatArray());
    }

    @Test
    void indicesThatDoNotFitNameTheOpTheirDtypeAndShape() {
        Tensor grad = Torch.randn(1, 1, 2, 2).to(DEVICE);
        Tensor wrongType = Torch.zeros(new long[] {1, 1, 2, 2}, DType.INT32, DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(
                PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, new Tensor[] {grad, wrongType}, 2, 3, 3, 2, 2));
        assertEquals("max_pool2d_with_indices_backward: expected int64 indices of shape [1, 1, 2, 2], got torch.int32 of shape [1, 1, 2, 2]",
                e.getMessage());
        Tensor x = Torch.randn(2, 3, 6, 6).to(DEVICE);
        e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(PoolingOps.MAX_POOL2D_WITH_INDICES, new Tensor[] {x}, 2, 5, 6, 2, 2, 2, 2, 2, 2, 0, 0, 1, 1));
        assertTrue(e.getMessage().startsWith("max_pool2d_with_indices: expected self of shape [*, 5, 6]"), e.getMessage());
    }

    @Test
    void maxPool2dsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> pool = a -> F.maxPool2d(a[0].mul(a[0]), new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
        assertTrue(Gradcheck.check(pool, randn64(1, 2, 5, 6)));
        assertTrue(Gradcheck.check(firstGradient(pool), randn64(1, 2, 5, 6)));
    }

    @Test
    void dilatedCeilModeMaxPool1dsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> pool = a -> F.maxPool1d(a[0].mul(a[0]), 3, 2, 1, 2, true);
        assertTrue(Gradcheck.check(pool, randn64(2, 3, 9)));
        assertTrue(Gradcheck.check(firstGradient(pool), randn64(2, 3, 9)));
    }

    @Test
    void adaptiveMaxPoolsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> pool = a -> F.adaptiveMaxPool2d(a[0].mul(a[0]), 3, 2);
        assertTrue(Gradcheck.check(pool, randn64(2, 7, 5)));
        assertTrue(Gradcheck.check(firstGradient(pool), randn64(2, 7, 5)));
    }
}
