package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.nn.F;
import org.jtorch.op.JoiningOps;
import org.jtorch.op.KernelRegistry;
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
 * {@code constant_pad_nd} ({@code F.pad}'s constant mode) as a declared structured op ({@link JoiningOps#CONSTANT_PAD_ND}):
 * the kernel on the test device, one traced op, the node name, gradients of both orders against PyTorch 1.13 and finite
 * differences in float64, the kernel against the fill-and-copy definition on random pads (crops included), and errors.
 */
@ExtendWith(ScopePerTest.class)
class ConstantPadOpTest {
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(43);
    private static final java.util.Random SIZES = new java.util.Random(43);

    @Test
    void theOpIsStructuredTracedAsOneOpAndNamedAsPyTorch() {
        Backends.of(DEVICE);
        OpDef op = JoiningOps.CONSTANT_PAD_ND;
        assertEquals(OpDef.Kind.STRUCTURED, op.kind());
        assertEquals(op, OpRegistry.get("constant_pad_nd"));
        assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()));
        Tensor x = Torch.randn(2, 3).to(DEVICE).requiresGrad_(true);
        assertEquals(List.of("constant_pad_nd"), traced(() -> F.pad(x, 1, 2, -1, 0)));
        Tensor y = F.pad(x, 1, 2);
        assertEquals("ConstantPadNdBackward0", y.gradFn().name());
        Tensor[] g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {Torch.onesLike(y).requiresGrad_(true)}, true, true,
                false);
        assertEquals("ConstantPadNdBackward0", g[0].gradFn().name());
    }

    /** PyTorch 1.13: F.pad of a 2x3 float64 by (2, -1, -1, 1) with value 1.5; the gradients of sum(y^3) and of their squares' sum. */
    @Test
    void gradientsOfBothOrdersMatchPyTorch() {
        Tensor x = Torch.arange(0.0, 6.0, 1.0).to(DType.FLOAT64).reshape(2, 3).mul(0.5).sub(1.0).to(DEVICE).requiresGrad_(true);
        Tensor y = F.pad(x, new long[] {2, -1, -1, 1}, "constant", 1.5);
        assertArrayEquals(new long[] {2, 4}, y.shape());
        assertArrayEquals(new double[] {1.5, 1.5, 0.5, 1.0, 1.5, 1.5, 1.5, 1.5}, y.toDoubleArray(), 0);
        Tensor dx = Autograd.grad(new Tensor[] {y.mul(y).mul(y).sum()}, new Tensor[] {x}, null, true, true, false)[0];
        assertArrayEquals(new double[] {0, 0, 0, 0.75, 3.0, 0}, dx.toDoubleArray(), 0);
        assertArrayEquals(new double[] {0, 0, 0, 4.5, 36.0, 0}, Autograd.grad(dx.mul(dx).sum(), x).toDoubleArray(), 0);
    }

    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (long[] pads : new long[][] {{1, 2}, {0, -1, 2, 1}, {-1, 1, 1, 0, 2, -1}}) {
            Function<Tensor[], Tensor> fn = a -> F.pad(a[0], pads, "constant", 0.5);
            Function<Tensor[], Tensor> squared = a -> {
                Tensor y = fn.apply(a);
                return y.mul(y);
            };
            Tensor x = Torch.randn(new long[] {2, 3, 4}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(fn, x), java.util.Arrays.toString(pads));
            assertTrue(Gradcheck.check(firstGradient(squared), x), java.util.Arrays.toString(pads));
        }
    }

    /** The kernel (one fill, one strided copy) against its definition: a full tensor with the kept part written by index. */
    @Test
    void theKernelIsTheFillAndCopyOnRandomPads() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT64, DType.INT64}) {
            for (int trial = 0; trial < 8; trial++) {
                long[] shape = {1 + SIZES.nextLong(4), 1 + SIZES.nextLong(6), 1 + SIZES.nextLong(7)};
                int k = 1 + SIZES.nextInt(3);
                long[] pads = new long[2 * k];
                for (int i = 0; i < pads.length; i++) pads[i] = SIZES.nextLong(5) - 1;
                Tensor x = Torch.randn(shape, DType.FLOAT32, Device.cpu(), GEN).mul(5).to(dtype);
                if (trial % 2 == 1) x = x.transpose(0, 2).contiguous().transpose(0, 2); // strided
                String what = dtype + " " + java.util.Arrays.toString(shape) + " pads " + java.util.Arrays.toString(pads);
                Tensor padded = F.pad(x.to(DEVICE), pads, "constant", 3.0).to(Device.cpu());
                long[] out = shape.clone();
                for (int i = 0; i < k; i++) out[2 - i] += pads[2 * i] + pads[2 * i + 1];
                assertArrayEquals(out, padded.shape(), what);
                double[] expected = new double[(int) org.jtorch.op.Shapes.numel(out)];
                java.util.Arrays.fill(expected, 3.0);
                double[] in = x.to(DType.FLOAT64).contiguous().toDoubleArray();
                for (int a = 0; a < shape[0]; a++) {
                    for (int b = 0; b < shape[1]; b++) {
                        for (int c = 0; c < shape[2]; c++) {
                            long[] at = {a, b, c};
                            boolean kept = true;
                            for (int i = 0; i < k; i++) {
                                at[2 - i] += pads[2 * i];
                                kept &= at[2 - i] >= 0 && at[2 - i] < out[2 - i];
                            }
                            if (kept) expected[(int) ((at[0] * out[1] + at[1]) * out[2] + at[2])] = in[(int) ((a * shape[1] + b) * shape[2] + c)];
                        }
                    }
                }
                assertArrayEquals(expected, padded.to(DType.FLOAT64).toDoubleArray(), 0, what);
            }
        }
    }

    @Test
    void anOutputSizeBelowZeroIsAnErrorNamingTheOpAndTheShape() {
        Tensor x = Torch.randn(2, 3).to(DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.pad(x, -2, -2));
        assertEquals("constant_pad_nd: the input size 3, plus negative padding -2 and -2 resulted in a negative output size, which is "
                + "invalid. Check dimension 1 of your input of shape [2, 3]", e.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> F.pad(x, 1, 1, 1)).getMessage().startsWith("pad: "));
        // A size beyond int64 (the fuzzer's ConstantPad1d(padding=2^63-1)) is refused before anything is written.
        IllegalArgumentException huge = assertThrows(IllegalArgumentException.class, () -> F.pad(x, Long.MAX_VALUE, Long.MAX_VALUE));
        assertTrue(huge.getMessage().startsWith("constant_pad_nd: the input size 3 plus padding"), huge.getMessage());
        IllegalArgumentException many = assertThrows(IllegalArgumentException.class, () -> F.pad(x, 1L << 40, 1L << 40, 1L << 40, 0));
        assertTrue(many.getMessage().startsWith("constant_pad_nd: shape"), many.getMessage());
    }
}
