package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertAutocastLeavesTheInputsDtype;
import static org.jtorch.ops.OpTestSupport.assertDeclaredTracedAndReplayed;
import static org.jtorch.ops.OpTestSupport.assertGradientsOfBothOrders;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.Shapes;
import org.jtorch.ops.OpTestSupport.FrontEndCase;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code F.interpolate}'s modes as declared front ends ({@link FrontEndOps}: {@code upsample_nearest1d} ... {@code
 * _upsample_bicubic2d_aa}): called by their own signatures (output size, align_corners, scales) against PyTorch 1.13's
 * {@code torch.ops.aten} calls ({@code tools/fixtures/gen_upsample.py}: outputs and the input gradient of {@code sum(output
 * * w)}), traced as one op each under PyTorch's name, replayed from the traced arguments as the eager call, gradients of
 * both orders against finite differences in float64. {@code F.interpolate}'s own values: SpatialConformanceTest.
 */
@ExtendWith(ScopePerTest.class)
class UpsampleOpsTest {
    private static final List<Case> CASES = Fixtures.load("upsample");
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(26);

    private static final List<FrontEndCase> MODES = List.of(
            new FrontEndCase("upsample_nearest1d", new long[] {2, 3, 5}, x -> F.interpolate(x, new long[] {12}, "nearest", null), new double[] {12, 0}),
            new FrontEndCase("upsample_nearest2d", new long[] {1, 2, 4, 5}, x -> F.interpolate(x, new double[] {1.7, 0.6}, "nearest", null),
                    new double[] {6, 3, 1.7, 0.6}),
            new FrontEndCase("upsample_nearest3d", new long[] {1, 2, 3, 4, 3}, x -> F.interpolate(x, new double[] {1.5, 0.5, 2}, "nearest", null),
                    new double[] {4, 2, 6, 1.5, 0.5, 2}),
            new FrontEndCase("_upsample_nearest_exact1d", new long[] {2, 3, 5}, x -> F.interpolate(x, new double[] {1.9}, "nearest-exact", null),
                    new double[] {9, 1.9}),
            new FrontEndCase("_upsample_nearest_exact2d", new long[] {1, 2, 4, 5}, x -> F.interpolate(x, new long[] {7, 3}, "nearest-exact", null),
                    new double[] {7, 3, 0, 0}),
            new FrontEndCase("_upsample_nearest_exact3d", new long[] {1, 1, 3, 4, 3},
                    x -> F.interpolate(x, new double[] {1.5, 1.4, 0.7}, "nearest-exact", null), new double[] {4, 5, 2, 1.5, 1.4, 0.7}),
            new FrontEndCase("upsample_linear1d", new long[] {2, 3, 5}, x -> F.interpolate(x, new double[] {2}, "linear", true), new double[] {10, 1, 2}),
            new FrontEndCase("upsample_bilinear2d", new long[] {1, 2, 4, 5},
                    x -> F.interpolate(x, null, new double[] {2.5, 1.5}, "bilinear", false, true), new double[] {10, 7, 0, 0, 0}),
            new FrontEndCase("upsample_bicubic2d", new long[] {1, 2, 4, 5}, x -> F.interpolate(x, new double[] {2.5, 1.5}, "bicubic", false),
                    new double[] {10, 7, 0, 2.5, 1.5}),
            new FrontEndCase("upsample_trilinear3d", new long[] {1, 2, 3, 4, 3}, x -> F.interpolate(x, new long[] {4, 3, 5}, "trilinear", true),
                    new double[] {4, 3, 5, 1, 0, 0, 0}),
            new FrontEndCase("_upsample_bilinear2d_aa", new long[] {1, 2, 11, 13},
                    x -> F.interpolate(x, F.Interpolate.options().size(4, 5).mode("bilinear").antialias(true)), new double[] {4, 5, 0, 0, 0}),
            new FrontEndCase("_upsample_bicubic2d_aa", new long[] {1, 2, 11, 13},
                    x -> F.interpolate(x, F.Interpolate.options().scaleFactor(0.5, 0.35).mode("bicubic").alignCorners(true).antialias(true)),
                    new double[] {5, 4, 1, 0.5, 0.35}));

    private static Tensor input(long[] shape, DType dtype) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).to(DEVICE);
    }

    /** The case's arguments as the op's scalars: the output size, align_corners when present, the scales (None as 0). */
    private static double[] args(Case c) {
        long[] size = c.longsArg("output_size");
        JsonArray scales = c.args().getAsJsonArray("scales");
        boolean interpolating = c.args().has("align_corners");
        double[] a = new double[size.length + (interpolating ? 1 : 0) + scales.size()];
        for (int i = 0; i < size.length; i++) a[i] = size[i];
        if (interpolating) a[size.length] = c.boolArg("align_corners", false) ? 1 : 0;
        for (int i = 0; i < scales.size(); i++) a[a.length - scales.size() + i] = scales.get(i).isJsonNull() ? 0 : scales.get(i).getAsDouble();
        return a;
    }

    @TestFactory
    Stream<DynamicTest> eachOpByItsSignatureMatchesPyTorch() {
        return CASES.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> {
            OpDef op = OpRegistry.get(c.op());
            Tensor x = c.inputTensors().get(0);
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> Dispatcher.call(op, new Tensor[] {x}, args(c)), c.toString());
                assertTrue(e.getMessage().contains(c.op()) && e.getMessage().contains(Shapes.format(x.shape())), e.getMessage());
                return;
            }
            boolean grad = c.boolArg("grad", false);
            if (grad) x.requiresGrad_(true);
            Tensor y = Dispatcher.call(op, new Tensor[] {x}, args(c));
            SpatialConformanceTest.assertClose(c.expectedTensor(0), y, c + " output");
            if (grad) {
                y.backward(SpatialConformanceTest.upstream(y));
                assertNotNull(x.grad(), c + ": no gradient");
                SpatialConformanceTest.assertClose(c.expectedTensor(1), x.grad(), c + " gradient");
            }
        }));
    }

    @Test
    void eachModeIsOneDeclaredOpTracedUnderPyTorchsNameAndReplayedFromItsArguments() {
        for (FrontEndCase c : MODES) assertDeclaredTracedAndReplayed(c, input(c.shape(), DType.FLOAT32).requiresGrad_(true));
    }

    /** PyTorch 1.13's autocast lists have no upsample op: under CPU autocast they run in the input's dtype. */
    @Test
    void autocastLeavesThemInTheInputsDtype() {
        for (FrontEndCase c : MODES) assertAutocastLeavesTheInputsDtype(c, GEN);
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (FrontEndCase c : MODES) assertGradientsOfBothOrders(c, GEN);
    }

    @Test
    void aCallOfAnotherRankOrDtypeIsRefusedNamingTheOpShapeDtypeAndDevice() {
        Tensor x = input(new long[] {1, 2, 4, 5}, DType.FLOAT32);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(FrontEndOps.UPSAMPLE_LINEAR1D, new Tensor[] {x}, 4, 0, 0));
        assertEquals("upsample_linear1d: expected a 3-D input and 3 arguments (output_size, align_corners, 1 scales), got input of shape "
                + "[1, 2, 4, 5] (torch.float32, " + x.device() + ") and [4.0, 0.0, 0.0]", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(FrontEndOps.UPSAMPLE_NEAREST2D, new Tensor[] {x}, 4, 4, 0));
        assertTrue(e.getMessage().startsWith("upsample_nearest2d: expected a 4-D input and 4 arguments"), e.getMessage());
        Tensor ints = Torch.arange(0.0, 20.0, 1.0, DType.INT64, DEVICE).reshape(1, 1, 4, 5);
        e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(FrontEndOps.UPSAMPLE_BICUBIC2D, new Tensor[] {ints}, 4, 4, 0, 0, 0));
        assertEquals("upsample_bicubic2d: needs a floating-point input, got torch.int64 (shape [1, 1, 4, 5], " + ints.device() + ")",
                e.getMessage());
        for (boolean trace : new boolean[] {false, true}) {
            Runnable zero = () -> Dispatcher.call(FrontEndOps.UPSAMPLE_NEAREST2D, new Tensor[] {x}, 0, 4, 0, 0);
            e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(zero); else zero.run(); });
            assertEquals("interpolate (upsample_nearest2d): input and output sizes should be greater than 0, but got input [4, 5] and output "
                    + "[0, 4] for input of shape [1, 2, 4, 5] (torch.float32, " + x.device() + ")", e.getMessage());
        }
    }
}
