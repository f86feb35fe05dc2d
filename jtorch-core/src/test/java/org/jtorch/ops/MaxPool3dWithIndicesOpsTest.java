package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.CastPolicy;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code max_pool3d_with_indices} and {@code adaptive_max_pool3d} as declared front ends with two outputs ({@link
 * FrontEndOps}, {@code Dispatcher.frontEndAll}): one traced op each with both outputs, replayed from the trace's arguments
 * as the eager call, {@code adaptive_max_pool3d} float32 under CPU autocast as PyTorch 1.13's list, gradients of both
 * orders in float64. Values and indices against PyTorch 1.13: SpatialConformanceTest's {@code max_pool3d} and {@code
 * adaptive_max_pool3d} cases.
 */
@ExtendWith(ScopePerTest.class)
class MaxPool3dWithIndicesOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(262);

    /** An F call, the op PyTorch runs for it, and that op's arguments as the trace records them. */
    private record PoolCase(String op, long[] shape, Function<Tensor, ValuesIndices> call, double[] args) {}

    private static final List<PoolCase> POOLS = List.of(
            new PoolCase("max_pool3d_with_indices", new long[] {2, 2, 5, 6, 5}, x -> F.maxPool3dWithIndices(x, new int[] {2}, F.MaxPool.options()),
                    new double[] {1, 2, -1, 1, 0, 1, 1, 0}),
            new PoolCase("max_pool3d_with_indices", new long[] {2, 4, 5, 6},
                    x -> F.maxPool3dWithIndices(x, new int[] {3, 2, 3}, F.MaxPool.options().stride(2).padding(1, 0, 1).ceilMode(true)),
                    new double[] {3, 3, 2, 3, 1, 2, 3, 1, 0, 1, 1, 1, 1}),
            new PoolCase("adaptive_max_pool3d", new long[] {2, 2, 5, 6, 7}, x -> F.adaptiveMaxPool3dWithIndices(x, 3, 4, 2), new double[] {3, 4, 2}),
            new PoolCase("adaptive_max_pool3d", new long[] {2, 3, 4, 5}, x -> F.adaptiveMaxPool3dWithIndices(x, null, 2L, 7L),
                    new double[] {3, 2, 7}));

    private static Tensor input(long[] shape, DType dtype) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    @Test
    void eachIsOneDeclaredOpTracedWithBothOutputsAndReplayedFromItsArguments() {
        for (PoolCase c : POOLS) {
            OpDef op = OpRegistry.get(c.op());
            assertEquals(OpDef.Kind.FRONT_END, op.kind(), c.op());
            assertTrue(op.isDifferentiable(), c.op());
            Tensor x = input(c.shape(), DType.FLOAT32).requiresGrad_(true);
            assertEquals(List.of(c.op()), traced(() -> c.call().apply(x)), c.op());
            ValuesIndices eager = c.call().apply(x);
            Tensor[] replayed = Dispatcher.callAll(op, new Tensor[] {x}, c.args());
            assertEquals(2, replayed.length, c.op());
            assertArrayEquals(eager.values().shape(), replayed[0].shape(), c.op());
            assertArrayEquals(eager.values().toFloatArray(), replayed[0].toFloatArray(), 0f, c.op());
            assertArrayEquals(eager.indices().toLongArray(), replayed[1].toLongArray(), c.op());
            assertArrayEquals(eager.values().toFloatArray(), Dispatcher.call(op, new Tensor[] {x}, c.args()).toFloatArray(), 0f, c.op());
        }
    }

    /** PyTorch 1.13's CPU list has adaptive_max_pool3d (float32), not max_pool3d_with_indices; neither on CUDA. */
    @Test
    void cpuAutocastRunsAdaptiveMaxPool3dInFloat32() {
        for (PoolCase c : POOLS) {
            boolean listed = c.op().equals("adaptive_max_pool3d");
            OpDef op = OpRegistry.get(c.op());
            assertEquals(listed ? CastPolicy.FP32 : null, op.autocast(Device.Type.CPU), c.op());
            assertNull(op.autocast(Device.Type.CUDA), c.op());
            Tensor x = Torch.randn(c.shape(), DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
            ValuesIndices y;
            try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                y = c.call().apply(x);
            }
            assertEquals(listed ? DType.FLOAT32 : DType.BFLOAT16, y.values().dtype(), c.op());
            ValuesIndices plain = c.call().apply(listed ? x.to(DType.FLOAT32) : x);
            assertArrayEquals(plain.values().to(DType.FLOAT32).toFloatArray(), y.values().to(DType.FLOAT32).toFloatArray(), 0f, c.op());
            assertArrayEquals(plain.indices().toLongArray(), y.indices().toLongArray(), c.op());
        }
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (PoolCase c : POOLS) {
            OpDef op = OpRegistry.get(c.op());
            Function<Tensor[], Tensor> fn = a -> Dispatcher.callAll(op, new Tensor[] {a[0]}, c.args())[0];
            Tensor x = Torch.randn(c.shape(), DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(fn, x), c.op());
            assertTrue(Gradcheck.check(firstGradient(a -> fn.apply(a).pow(2.0)), x), c.op());
        }
    }

    @Test
    void aReplayedOutputSizeOfAnotherLengthIsRefusedNamingTheOp() {
        Tensor x = input(new long[] {1, 2, 4, 4, 4}, DType.FLOAT32);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.callAll(FrontEndOps.ADAPTIVE_MAX_POOL3D, new Tensor[] {x}, 2, 2));
        assertEquals("adaptive_max_pool3d: output_size must be 3 sizes, got [2, 2]", e.getMessage());
    }
}
