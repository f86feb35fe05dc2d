package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertAutocastLeavesTheInputsDtype;
import static org.jtorch.ops.OpTestSupport.assertDeclaredTracedAndReplayed;
import static org.jtorch.ops.OpTestSupport.assertGradientsOfBothOrders;
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
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.ops.OpTestSupport.FrontEndCase;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The 1-d pools ({@code max_pool1d}, {@code avg_pool1d}, {@code adaptive_avg_pool1d}, and with two outputs {@code
 * max_pool1d_with_indices} and {@code adaptive_max_pool1d}) as declared front ends ({@link
 * FrontEndOps}): one traced op each named as PyTorch's, replayed from the trace's arguments as the eager call, no autocast
 * policy (PyTorch 1.13 lists none), gradients of both orders against finite differences in float64. Values against
 * PyTorch 1.13: SpatialConformanceTest's {@code max_pool1d}, {@code avg_pool1d} and {@code adaptive_avg_pool1d} cases.
 */
@ExtendWith(ScopePerTest.class)
class Pool1dOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(261);

    private static final List<FrontEndCase> POOLS = List.of(
            new FrontEndCase("max_pool1d", new long[] {2, 3, 11}, x -> F.maxPool1d(x, 3, F.MaxPool.options()),
                    new double[] {1, 3, -1, 1, 0, 1, 1, 0}),
            new FrontEndCase("max_pool1d", new long[] {3, 10}, x -> F.maxPool1d(x, 3, F.MaxPool.options().stride(2).padding(1).dilation(2).ceilMode(true)),
                    new double[] {1, 3, 1, 2, 1, 1, 1, 2, 1}),
            new FrontEndCase("avg_pool1d", new long[] {2, 3, 11}, x -> F.avgPool1d(x, 4, F.AvgPool.options()),
                    new double[] {1, 4, -1, 1, 0, 0, 1}),
            new FrontEndCase("avg_pool1d", new long[] {2, 2, 9}, x -> F.avgPool1d(x, 3, F.AvgPool.options().stride(2).padding(1).ceilMode(true)
                    .countIncludePad(false)), new double[] {1, 3, 1, 2, 1, 1, 1, 0}),
            new FrontEndCase("adaptive_avg_pool1d", new long[] {2, 3, 11}, x -> F.adaptiveAvgPool1d(x, 4), new double[] {4}),
            new FrontEndCase("adaptive_avg_pool1d", new long[] {3, 7}, x -> F.adaptiveAvgPool1d(x, 9), new double[] {9}));

    private static Tensor input(long[] shape, DType dtype) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    @Test
    void eachPoolIsOneDeclaredOpTracedUnderPyTorchsNameAndReplayedFromItsArguments() {
        for (FrontEndCase c : POOLS) assertDeclaredTracedAndReplayed(c, input(c.shape(), DType.FLOAT32).requiresGrad_(true));
    }

    @Test
    void autocastLeavesThemInTheInputsDtype() {
        for (FrontEndCase c : POOLS) assertAutocastLeavesTheInputsDtype(c, GEN);
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (FrontEndCase c : POOLS) assertGradientsOfBothOrders(c, GEN);
    }

    @Test
    void badCallsAreRefusedNamingTheOpTracedOrNot() {
        Tensor x = input(new long[] {2, 3, 8}, DType.FLOAT32);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(FrontEndOps.AVG_POOL1D, new Tensor[] {x}, 2, 2, 2, -1, 1, 0, 0, 1));
        assertEquals("avg_pool1d: kernel_size must be one int, got [2, 2]", e.getMessage());
        for (boolean trace : new boolean[] {false, true}) {
            Runnable pool = () -> F.maxPool1d(x, 3, F.MaxPool.options().padding(2));
            e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(pool); else pool.run(); });
            assertTrue(e.getMessage().startsWith("maxPool1d: ") && e.getMessage().contains("pad"), e.getMessage());
            Runnable adaptive = () -> F.adaptiveAvgPool1d(x.select(2, 0).select(1, 0), 2);
            e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(adaptive); else adaptive.run(); });
            assertTrue(e.getMessage().startsWith("adaptiveAvgPool1d: ") && e.getMessage().contains("[2]"), e.getMessage());
        }
    }

    /** {@code max_pool1d_with_indices} and {@code adaptive_max_pool1d}: two outputs, one traced op each, replayed and differentiated. */
    @Test
    void theMaxPoolsWithIndicesAreOneTracedOpWithBothOutputs() {
        record WithIndices(String op, Function<Tensor, ValuesIndices> call, double[] args) {}
        List<WithIndices> cases = List.of(
                new WithIndices("max_pool1d_with_indices", x -> F.maxPool1dWithIndices(x, 3, F.MaxPool.options().stride(2).padding(1).ceilMode(true)),
                        new double[] {1, 3, 1, 2, 1, 1, 1, 1, 1}),
                new WithIndices("max_pool1d_with_indices", x -> F.maxPool1dWithIndices(x, 2, F.MaxPool.options().dilation(2)),
                        new double[] {1, 2, -1, 1, 0, 1, 2, 0}),
                new WithIndices("adaptive_max_pool1d", x -> Pooling.adaptiveMaxPool1d(x, 4), new double[] {4}));
        for (WithIndices c : cases) {
            OpDef op = OpRegistry.get(c.op());
            assertEquals(OpDef.Kind.FRONT_END, op.kind(), c.op());
            assertNull(op.autocast(Device.Type.CPU), c.op());
            // length 12: ceil_mode adds an output to the first case
            Tensor x = input(new long[] {2, 3, 12}, DType.FLOAT32).requiresGrad_(true);
            assertEquals(List.of(c.op()), traced(() -> c.call().apply(x)), c.op());
            ValuesIndices eager = c.call().apply(x);
            Tensor[] replayed = Dispatcher.callAll(op, new Tensor[] {x}, c.args());
            assertArrayEquals(eager.values().toFloatArray(), replayed[0].toFloatArray(), 0f, c.op());
            assertArrayEquals(eager.indices().toLongArray(), replayed[1].toLongArray(), c.op());
            Function<Tensor[], Tensor> fn = a -> Dispatcher.callAll(op, new Tensor[] {a[0]}, c.args())[0];
            Tensor x64 = Torch.randn(new long[] {2, 3, 12}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(fn, x64), c.op());
            assertTrue(Gradcheck.check(firstGradient(a -> fn.apply(a).pow(2.0)), x64), c.op());
        }
    }
}
