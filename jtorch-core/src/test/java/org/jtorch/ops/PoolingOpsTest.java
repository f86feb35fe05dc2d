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
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Average and adaptive average pooling as declared structured pairs ({@link PoolingOps}): kernels per device, what the
 * trace records, gradients of the second order through the pair, and the meta function's errors. References are the
 * windows' means computed here; values against PyTorch 1.13 are in {@link SpatialConformanceTest}.
 */
@ExtendWith(ScopePerTest.class)
class PoolingOpsTest {
    private static final Device DEVICE = Fixtures.device();
    @Test
    void thePoolingPairsAreStructuredWithKernelsOnTheTestDevice() {
        Backends.of(DEVICE);
        for (OpDef op : new OpDef[] {PoolingOps.AVG_POOL2D, PoolingOps.AVG_POOL2D_BACKWARD, PoolingOps.ADAPTIVE_AVG_POOL2D,
                PoolingOps.ADAPTIVE_AVG_POOL2D_BACKWARD}) {
            assertEquals(OpDef.Kind.STRUCTURED, op.kind(), op.name());
            assertEquals(op, OpRegistry.get(op.name()));
            assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), op.name() + " on " + DEVICE);
            assertTrue(op.isDifferentiable(), op.name());
        }
    }

    @Test
    void theTraceRecordsAvgPoolAsOneOpWithItsGeometry() {
        Tensor x = Torch.randn(2, 3, 6, 6).to(DEVICE);
        List<String> names = new ArrayList<>();
        List<double[]> scalars = new ArrayList<>();
        TraceHook<Tensor> hook = (OpDef op, List<Tensor> in, double[] s, ReduceArgs r, Tensor out) -> {
            names.add(op.name());
            scalars.add(s);
        };
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            F.avgPool2d(x, 2);
        }
        assertEquals(List.of("avg_pool2d"), names);
        // spatial dims, in 6x6, out 3x3, kernel 2x2, stride 2x2, no padding, count_include_pad, no divisor
        assertArrayEquals(new double[] {2, 6, 6, 3, 3, 2, 2, 2, 2, 0, 0, 1, 0}, scalars.get(0));
    }

    @Test
    void adaptiveAvgPoolOfBfloat16AveragesInFloat32AndRoundsOnce() {
        Torch.manualSeed(4);
        Tensor x = Torch.randn(2, 3, 7, 5).to(DEVICE).to(DType.BFLOAT16);
        Tensor y = F.adaptiveAvgPool2d(x, 3, 2);
        assertEquals(DType.BFLOAT16, y.dtype());
        assertArrayEquals(F.adaptiveAvgPool2d(x.to(DType.FLOAT32), 3, 2).to(DType.BFLOAT16).toFloatArray(), y.toFloatArray());
    }

    @Test
    void avgPoolOfATransposedInputReadsItsElements() {
        Torch.manualSeed(5);
        Tensor base = Torch.randn(2, 3, 4, 4).to(DEVICE);
        Tensor x = base.transpose(2, 3); // not contiguous: the kernel gets a copy
        Tensor y = F.avgPool2d(x, 2);
        float[] v = x.contiguous().toFloatArray();
        float[] r = y.toFloatArray();
        for (int p = 0; p < 6; p++) {
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 2; j++) {
                    int o = p * 16 + 2 * i * 4 + 2 * j;
                    double mean = (v[o] + v[o + 1] + v[o + 4] + v[o + 5]) / 4.0;
                    assertEquals(mean, r[p * 4 + i * 2 + j], 1e-6);
                }
            }
        }
    }

    @Test
    void aGeometryThatDoesNotFitTheInputNamesTheOpAndShapes() {
        Tensor x = Torch.randn(2, 3, 6, 6).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(PoolingOps.ADAPTIVE_AVG_POOL2D, new Tensor[] {x}, 2, 5, 6, 2, 2));
        assertTrue(e.getMessage().startsWith("adaptive_avg_pool2d: expected self of shape [*, 5, 6]"), e.getMessage());
    }

    private static final Generator GEN = new Generator(13);

    private static Tensor randn64(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    @Test
    void avgPoolsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> pool = a -> Pooling.avgPool2d(a[0].mul(a[0]), new int[] {3}, new int[] {2}, new int[] {1}, true, false, 0);
        assertTrue(Gradcheck.check(pool, randn64(1, 2, 5, 6)));
        assertTrue(Gradcheck.check(firstGradient(pool), randn64(1, 2, 5, 6)));
    }

    @Test
    void adaptiveAvgPoolsGradientsOfBothOrdersMatchFiniteDifferences() {
        Function<Tensor[], Tensor> pool = a -> F.adaptiveAvgPool2d(a[0].mul(a[0]), 3, 4);
        assertTrue(Gradcheck.check(pool, randn64(2, 7, 5)));
        assertTrue(Gradcheck.check(firstGradient(pool), randn64(2, 7, 5)));
    }
}
