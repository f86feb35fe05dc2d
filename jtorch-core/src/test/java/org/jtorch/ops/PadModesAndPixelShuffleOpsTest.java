package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
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
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code F.pad}'s non-constant modes ({@code reflection_pad1d} ... {@code replication_pad3d}, {@code _pad_circular}) and
 * {@code pixel_shuffle}/{@code pixel_unshuffle} as declared front ends ({@link FrontEndOps}): one traced op each named as
 * PyTorch's, replayed from the trace's arguments as the eager call, autocast by the declared policy, gradients of both
 * orders against finite differences in float64. Values against PyTorch 1.13: SpatialConformanceTest's {@code pad} and
 * {@code pixel_shuffle} cases and AutocastConformanceTest's policy cases.
 */
@ExtendWith(ScopePerTest.class)
class PadModesAndPixelShuffleOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(25);

    /** A mode, the pads (PyTorch's pairs, last dimension first), an input shape, and the op PyTorch runs. */
    private record PadCase(String mode, long[] pads, long[] shape, String op) {}

    private static final List<PadCase> PADS = List.of(
            new PadCase("reflect", new long[] {2, 1}, new long[] {2, 3, 5}, "reflection_pad1d"),
            new PadCase("reflect", new long[] {1, 2, 0, 1}, new long[] {1, 2, 4, 5}, "reflection_pad2d"),
            new PadCase("reflect", new long[] {1, 0, -1, 1, 0, 1}, new long[] {2, 3, 3, 4}, "reflection_pad3d"),
            new PadCase("replicate", new long[] {3, -1}, new long[] {3, 5}, "replication_pad1d"),
            new PadCase("replicate", new long[] {1, 1, 2, 0}, new long[] {2, 2, 4, 3}, "replication_pad2d"),
            new PadCase("replicate", new long[] {0, 1, 1, 0, 2, 1}, new long[] {1, 2, 3, 3, 2}, "replication_pad3d"),
            new PadCase("circular", new long[] {1, 2}, new long[] {2, 2, 4}, "_pad_circular"),
            new PadCase("circular", new long[] {-1, 2, 1, 0}, new long[] {1, 2, 4, 5}, "_pad_circular"),
            new PadCase("circular", new long[] {1, 0, 0, 1, 2, 1}, new long[] {1, 1, 3, 3, 4}, "_pad_circular"));

    private static Tensor input(long[] shape, DType dtype) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    @Test
    void eachModeAndRankIsOneDeclaredOpTracedUnderPyTorchsName() {
        for (PadCase c : PADS) {
            OpDef op = OpRegistry.get(c.op());
            assertEquals(OpDef.Kind.FRONT_END, op.kind(), c.op());
            assertTrue(op.isDifferentiable(), c.op());
            Tensor x = input(c.shape(), DType.FLOAT32).requiresGrad_(true);
            assertEquals(List.of(c.op()), traced(() -> F.pad(x, c.pads(), c.mode())), c.op());
        }
        Tensor x = input(new long[] {2, 8, 4, 4}, DType.FLOAT32);
        assertEquals(List.of("pixel_shuffle"), traced(() -> F.pixelShuffle(x, 2)));
        assertEquals(List.of("pixel_unshuffle"), traced(() -> F.pixelUnshuffle(x, 2)));
        assertEquals(List.of("constant_pad_nd"), traced(() -> F.pad(x, new long[] {1, 1}, "constant", 2.0)));
    }

    /** The JIT replays a traced call through {@code FrontEnds.call} from the recorded arguments: the same values as the eager call. */
    @Test
    void aCallFromTheTracedArgumentsEqualsTheEagerCall() {
        for (PadCase c : PADS) {
            Tensor x = input(c.shape(), DType.FLOAT32);
            double[] args = Arrays.stream(c.pads()).asDoubleStream().toArray();
            Tensor replayed = Dispatcher.call(OpRegistry.get(c.op()), new Tensor[] {x}, args);
            assertArrayEquals(F.pad(x, c.pads(), c.mode()).toFloatArray(), replayed.toFloatArray(), 0f, c.op());
            assertArrayEquals(F.pad(x, c.pads(), c.mode()).shape(), replayed.shape(), c.op());
        }
        Tensor x = input(new long[] {3, 9, 2, 3}, DType.FLOAT64);
        assertArrayEquals(F.pixelShuffle(x, 3).toDoubleArray(), Dispatcher.call(FrontEndOps.PIXEL_SHUFFLE, new Tensor[] {x}, 3).toDoubleArray(), 0);
        Tensor z = input(new long[] {2, 1, 4, 6}, DType.FLOAT64);
        assertArrayEquals(F.pixelUnshuffle(z, 2).toDoubleArray(), Dispatcher.call(FrontEndOps.PIXEL_UNSHUFFLE, new Tensor[] {z}, 2).toDoubleArray(),
                0);
    }

    @Test
    void aCallWithPadsOfAnotherRankIsRefusedNamingTheOp() {
        Tensor x = input(new long[] {1, 2, 4, 5}, DType.FLOAT32);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(FrontEndOps.REFLECTION_PAD2D, new Tensor[] {x}, 1, 1));
        assertEquals("reflection_pad2d: expected 4 padding values, got [1, 1] for input of shape [1, 2, 4, 5] (torch.float32, "
                + x.device() + ")", e.getMessage());
    }

    /** PyTorch 1.13's CPU autocast list: float32 for reflection 1-d/2-d and replication 1-d to 3-d, the others untouched. */
    @Test
    void cpuAutocastRunsThePyTorchListedPadsInFloat32() {
        for (PadCase c : PADS) {
            boolean listed = !c.op().equals("reflection_pad3d") && !c.op().equals("_pad_circular");
            assertEquals(listed ? CastPolicy.FP32 : null, OpRegistry.get(c.op()).autocast(Device.Type.CPU), c.op());
            assertNull(OpRegistry.get(c.op()).autocast(Device.Type.CUDA), c.op());
            Tensor x = Torch.randn(c.shape(), DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
            Tensor y;
            try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                y = F.pad(x, c.pads(), c.mode());
            }
            assertEquals(listed ? DType.FLOAT32 : DType.BFLOAT16, y.dtype(), c.op());
            assertArrayEquals(F.pad(x, c.pads(), c.mode()).to(DType.FLOAT32).toFloatArray(), y.to(DType.FLOAT32).toFloatArray(), 0f, c.op());
        }
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (PadCase c : PADS) {
            Function<Tensor[], Tensor> fn = a -> F.pad(a[0], c.pads(), c.mode());
            Tensor x = Torch.randn(c.shape(), DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(fn, x), c.op() + " " + Arrays.toString(c.pads()));
            assertTrue(Gradcheck.check(firstGradient(a -> fn.apply(a).pow(2.0)), x), c.op() + " " + Arrays.toString(c.pads()));
        }
        Tensor x = Torch.randn(new long[] {2, 8, 2, 3}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
        assertTrue(Gradcheck.check(a -> F.pixelShuffle(a[0], 2), x));
        assertTrue(Gradcheck.check(firstGradient(a -> F.pixelShuffle(a[0], 2).pow(2.0)), x));
        Tensor z = Torch.randn(new long[] {1, 2, 6, 3}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
        assertTrue(Gradcheck.check(a -> F.pixelUnshuffle(a[0], 3), z));
        assertTrue(Gradcheck.check(firstGradient(a -> F.pixelUnshuffle(a[0], 3).pow(2.0)), z));
    }

    @Test
    void badInputIsRefusedNamingTheOpAndShapeTracedOrNot() {
        Tensor x = input(new long[] {1, 6, 2, 2}, DType.FLOAT32);
        for (boolean trace : new boolean[] {false, true}) {
            Runnable shuffle = () -> F.pixelShuffle(x, 2);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> { if (trace) traced(shuffle); else shuffle.run(); });
            assertTrue(e.getMessage().startsWith("pixelShuffle: expects its input's 'channel' dimension to be divisible")
                    && e.getMessage().contains("[1, 6, 2, 2]"), e.getMessage());
            Runnable pad = () -> F.pad(x.select(3, 0), new long[] {2, 2}, "reflect");
            e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(pad); else pad.run(); });
            assertTrue(e.getMessage().startsWith("pad: reflect padding size should be less than") && e.getMessage().contains("[1, 6, 2]"),
                    e.getMessage());
        }
    }
}
