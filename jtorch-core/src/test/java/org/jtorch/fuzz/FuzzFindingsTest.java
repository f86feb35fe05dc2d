package org.jtorch.fuzz;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.AvgPool1d;
import org.jtorch.nn.F;
import org.jtorch.nn.MaxPool1d;
import org.jtorch.nn.Unfold;
import org.jtorch.optim.Adadelta;
import org.jtorch.optim.Adagrad;
import org.jtorch.optim.Adam;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.RMSprop;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The defects {@link ApiFuzzTest}'s fuzzer found, one test each: calls that returned a result where PyTorch 1.13
 * raises, or raised an error without the op's name. Expected behaviour from PyTorch 1.13 (the message quoted).
 */
class FuzzFindingsTest {
    private static void raisesNaming(String op, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().startsWith(op + ": "), e.getMessage());
    }

    /** "max_pool1d() stride must be greater than zero, but got 0"; jtorch read 0 and -1 as "the kernel size". */
    @Test
    void onedPoolingRejectsZeroAndNegativeStrides() {
        Tensor x = Torch.randn(2, 3, 6);
        for (int stride : new int[] {0, -1}) {
            raisesNaming("maxPool1d", () -> F.maxPool1d(x, 2, stride, 0, 1, false));
            raisesNaming("maxPool1d", () -> F.maxPool1dWithIndices(x, 2, stride, 0, 1, false));
            raisesNaming("avgPool1d", () -> F.avgPool1d(x, 2, stride, 0, false, true));
            raisesNaming("maxPool1d", () -> new MaxPool1d(2, stride).forward(x));
            raisesNaming("avgPool1d", () -> new AvgPool1d(2, stride).forward(x));
        }
        // PyTorch's None: the stride is the kernel size
        assertArrayEquals(new long[] {2, 3, 3}, F.maxPool1d(x, 2, null, 0, 1, false).shape());
        assertArrayEquals(new long[] {2, 3, 3}, F.avgPool1d(x, 2, null, 0, false, true).shape());
    }

    /** "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {1, -1}". */
    /** PyTorch has no integer kernels for these losses ("smooth_l1_cpu" not implemented for 'Long'); integer targets of a float input promote. */
    @Test
    void squaredAndSmoothLossesRefuseIntegerInputAndTarget() {
        Tensor a = Torch.tensor(new long[] {1, 2, 3});
        Tensor b = Torch.tensor(new long[] {2, 2, 2});
        raisesNaming("smoothL1Loss", () -> F.smoothL1Loss(a, b));
        raisesNaming("huberLoss", () -> F.huberLoss(a, b));
        raisesNaming("mseLoss", () -> F.mseLoss(a, b, F.Reduction.NONE));
        assertArrayEquals(new long[0], F.smoothL1Loss(a.to(DType.FLOAT32), b).shape());
    }

    @Test
    void adaptivePoolingRejectsNegativeOutputSizes() {
        Tensor x = Torch.randn(1, 2, 4, 4);
        raisesNaming("adaptiveAvgPool1d", () -> F.adaptiveAvgPool1d(x.flatten(2, 3), -1));
        raisesNaming("adaptiveMaxPool1d", () -> F.adaptiveMaxPool1d(x.flatten(2, 3), -3));
        raisesNaming("adaptiveAvgPool2d", () -> F.adaptiveAvgPool2d(x, 2, -2));
        raisesNaming("adaptiveMaxPool2d", () -> F.adaptiveMaxPool2d(x, Long.MIN_VALUE));
        raisesNaming("adaptiveAvgPool2d", () -> F.adaptiveAvgPool2d(x, -1, 1)); // None is null, not -1
        assertArrayEquals(new long[] {1, 2, 4, 1}, F.adaptiveAvgPool2d(x, null, 1L).shape());
    }

    /** "numel: integer multiplication overflow" (torch.zeros(1).expand(2**62, 4)); broadcastTo made a view of it. */
    /**
     * Seed 3, call 2659 of the fuzzer after the op registry merged: unfold of an input with an empty spatial dim read
     * its (empty) storage at an offset in im2col; PyTorch 1.13 refuses such an input.
     */
    @Test
    void unfoldRefusesAnEmptyDimensionOtherThanTheBatch() {
        raisesNaming("unfold", () -> new Unfold(new int[] {2}, new int[] {1}, new int[] {1, 1}, new int[] {1, 1})
                .forward(Torch.zeros(new long[] {2, 3, 0}, DType.BFLOAT16, Device.cpu())));
        raisesNaming("unfold", () -> F.unfold(Torch.zeros(1, 0, 4, 4), new int[] {2, 2}, new int[] {1, 1}, new int[] {0, 0}, new int[] {1, 1}));
        assertArrayEquals(new long[] {0, 12, 9}, F.unfold(Torch.zeros(0, 3, 4, 4), new int[] {2, 2}, new int[] {1, 1}, new int[] {0, 0},
                new int[] {1, 1}).shape(), "an empty batch is fine");
    }

    /**
     * Found after the eleventh session's merges: a 0-d source with a dimension beyond it ("index_add_(): Indexing dim 1 is
     * out of bounds of the source tensor with dim 0"), a 0-d count_nonzero given dim 0 twice (as -1 and 0: "dim 0 appears
     * multiple times in the list of dims"), log_normal_'s std check without the op's name, and random_ on a leaf that
     * requires grad, which PyTorch refuses as any in-place op there.
     */
    @Test
    void indexedCopiesCountsAndRandomFillsCheckTheirArguments() {
        Tensor x = Torch.zeros(4, 2);
        Tensor scalar = Torch.full(new long[0], 3.0);
        raisesNaming("index_copy", () -> x.indexCopy_(1, Torch.tensor(new long[] {1}), scalar));
        raisesNaming("index_add", () -> x.indexAdd_(1, Torch.tensor(new long[] {1}), scalar));
        raisesNaming("count_nonzero", () -> Torch.countNonzero(scalar, new int[] {-1, 0}));
        assertTrue(Torch.countNonzero(scalar, new int[] {-1}).item() == 1, "a 0-d tensor counts over its one place");
        raisesNaming("log_normal_", () -> Torch.zeros(3).logNormal_(1.0, -0.0));
        Tensor leaf = Torch.zeros(2, 2).requiresGrad_();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> leaf.random_(3));
        assertTrue(e.getMessage().startsWith("random_: a leaf tensor that requires grad"), e.getMessage());
    }

    @Test
    void broadcastToRejectsAnElementCountThatOverflows() {
        Tensor x = Torch.zeros(1);
        raisesNaming("broadcastTo", () -> x.broadcastTo(new long[] {1L << 62, 4}));
        raisesNaming("broadcastTo", () -> x.broadcastTo(new long[] {Long.MAX_VALUE, 3, 1}));
    }

    /** torch.optim's "if not 0.0 <= lr: raise ValueError('Invalid learning rate: nan')"; SGD's "lr < 0.0" lets NaN pass. */
    @Test
    void optimizersOtherThanSgdRejectNanOptions() {
        List<Tensor> params = List.of(Torch.zeros(2).requiresGrad_(true));
        for (Runnable build : List.<Runnable>of(() -> new Adam(params, Adam.options().lr(Double.NaN)),
                () -> new AdamW(params, AdamW.options().eps(Double.NaN)), () -> new RMSprop(params, RMSprop.options().alpha(Double.NaN)),
                () -> new Adagrad(params, Adagrad.options().lrDecay(Double.NaN)),
                () -> new Adadelta(params, Adadelta.options().weightDecay(Double.NaN)))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build::run);
            assertTrue(e.getMessage().contains("Invalid") && e.getMessage().contains("NaN"), e.getMessage());
        }
        new SGD(params, SGD.options().lr(Double.NaN)).close();
    }

    /** "assigned grad has data of a different type" (PyTorch raises for a float64 grad on a float32 tensor). */
    @Test
    void setGradRejectsAGradientOfAnotherDtype() {
        Tensor p = Torch.zeros(2).requiresGrad_(true);
        raisesNaming("setGrad", () -> p.setGrad(Torch.zeros(new long[] {2}, DType.FLOAT64, Device.cpu())));
        raisesNaming("setGrad", () -> p.setGrad(Torch.zeros(new long[] {2}, DType.INT64, Device.cpu())));
    }

    /**
     * A missing device's error named the device but not the op that asked for it. cuda:63 is missing in every run: with
     * no CUDA backend (the CPU run), and beside the simulated cuda:0 (the simulator pass, which runs every test).
     */
    @Test
    void anUnavailableDeviceErrorNamesTheOp() {
        Device missing = Device.cuda(63);
        for (String op : List.of("zeros", "empty", "eye", "memoryStats")) {
            Executable call = switch (op) {
                case "zeros" -> () -> Torch.zeros(new long[] {2}, DType.FLOAT32, missing);
                case "empty" -> () -> Torch.empty(new long[] {2}, DType.FLOAT32, missing);
                case "eye" -> () -> Torch.eye(2, 2, DType.FLOAT32, missing);
                default -> () -> Torch.memoryStats(missing);
            };
            RuntimeException e = assertThrows(RuntimeException.class, call);
            assertTrue(e.getMessage().startsWith(op + ": ") && e.getMessage().contains("cuda:63"), e.getMessage());
        }
    }

    /**
     * MixedDeviceFuzzTest, seed 3 call 2149: binary cross entropy of a cuda:0 input against a CPU target reached the
     * fused loss kernel, which allocated its scratch for a CPU operand on the CUDA backend (ArrayIndexOutOfBoundsException
     * from device index -1). PyTorch 1.13: "Expected all tensors to be on the same device". Needs a second device.
     */
    @Test
    void binaryCrossEntropyOfOperandsOnTwoDevicesNamesBoth() {
        Device device = org.jtorch.testing.Fixtures.device();
        org.junit.jupiter.api.Assumptions.assumeFalse(device.isCpu(), "needs a second device (-Djtorch.test.device=cuda:0)");
        try (Tensor p = Torch.full(new long[] {3}, 0.5).to(device); Tensor t = Torch.ones(3); Tensor w = Torch.ones(3)) {
            for (Executable call : List.<Executable>of(() -> F.binaryCrossEntropy(p, t), () -> F.binaryCrossEntropy(p, t.to(device), w, F.Reduction.MEAN))) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
                assertTrue(e.getMessage().contains("same device") && e.getMessage().contains(device.toString())
                        && e.getMessage().contains("cpu"), e.getMessage());
            }
        }
    }

    /** "a leaf Variable that requires grad is being used in an in-place operation" (fill_ and zero_ as any in-place op). */
    @Test
    void fillAndZeroRefuseALeafThatRequiresGrad() {
        Tensor p = Torch.ones(3).requiresGrad_(true);
        IllegalStateException fill = assertThrows(IllegalStateException.class, () -> p.fill_(2.0));
        assertTrue(fill.getMessage().startsWith("fill_: "), fill.getMessage());
        IllegalStateException zero = assertThrows(IllegalStateException.class, p::zero_);
        assertTrue(zero.getMessage().startsWith("zero_: "), zero.getMessage());
        try (var g = org.jtorch.autograd.Grad.noGrad()) {
            p.zero_(); // initialisation under no-grad stays allowed
        }
    }

    /** PyTorch 1.13: a = ones(3, requires_grad=True); b = a * 2; b.fill_(5); b.sum().backward() gives a.grad = [0, 0, 0]. */
    @Test
    void fillOfAGraphTensorCutsTheGradientOfItsEarlierValues() {
        Tensor a = Torch.ones(3).requiresGrad_(true);
        Tensor b = a.mul(2.0);
        b.fill_(5.0);
        b.sum().backward();
        assertArrayEquals(new float[] {0, 0, 0}, a.grad().toFloatArray());
    }

    /** Null dims mean every dim (PyTorch's dim=None); the gradients of prod and amax read them as an array. */
    @Test
    void reductionsOverNullDimsDifferentiate() {
        Tensor x = Torch.tensor(new float[] {1, 2, 3, 4}, 2, 2).requiresGrad_(true);
        Torch.prod(x, (int[]) null).backward();
        assertArrayEquals(new float[] {24, 12, 8, 6}, x.grad().toFloatArray()); // d(x1 x2 x3 x4)/dxi
        Tensor y = Torch.tensor(new float[] {1, 4, 3, 4}, 2, 2).requiresGrad_(true);
        y.amax((int[]) null).backward();
        assertArrayEquals(new float[] {0, 0.5f, 0, 0.5f}, y.grad().toFloatArray()); // ties share the gradient evenly
    }

    /** torch.zeros(0).chunk(n) returns n empty chunks; a count no Java list can hold threw "Requested array size exceeds VM limit". */
    @Test
    void chunkOfAnEmptyDimIntoMoreChunksThanAListHoldsIsAClearError() {
        raisesNaming("chunk", () -> Torch.zeros(0).chunk(Integer.MAX_VALUE, -1));
        org.junit.jupiter.api.Assertions.assertEquals(5, Torch.zeros(0).chunk(5, 0).size());
    }

    /**
     * max_pool1d(x of shape (2, 1), kernel 2, stride 2, padding 1, dilation 2): the one window lies wholly in the
     * padding, so its output is -inf (PyTorch 1.13 too) and depends on no input: the gradient is zero. The backward
     * scattered to the window's out-of-plane index, into the next plane or outside the buffer.
     */
    @Test
    void maxPoolingWindowsInThePaddingGetNoGradient() {
        Tensor x = Torch.tensor(new float[] {3, 5}, 2, 1).requiresGrad_(true);
        Tensor y = F.maxPool1d(x, 2, 2, 1, 2, false);
        assertArrayEquals(new float[] {Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY}, y.toFloatArray());
        y.sum().backward();
        assertArrayEquals(new float[] {0, 0}, x.grad().toFloatArray());
        Tensor x64 = Torch.tensor(new double[] {3, 5}, 2, 1).requiresGrad_(true);
        F.maxPool1d(x64, 2, 2, 1, 2, false).sum().backward();
        assertArrayEquals(new double[] {0, 0}, x64.grad().toDoubleArray());
    }

    /**
     * Seed 1, call 1042 once the fuzzer counted refusals: PyTorch 1.13's CPU max_pool1d without grad returns an empty
     * output where the window does not fit ({@code max_pool1d(randn(2, 3, 2), 3, 3)} has shape [2, 3, 0]); jtorch
     * raised "output size too small". With grad, or with indices, PyTorch raises too ("Output size is too small").
     */
    @Test
    void maxPool1dWithoutGradGivesAnEmptyOutputWhereTheWindowDoesNotFit() {
        assertArrayEquals(new long[] {2, 3, 0}, F.maxPool1d(Torch.randn(2, 3, 2), 3, 3, 0, 1, false).shape());
        assertArrayEquals(new long[] {1, 0}, F.maxPool1d(Torch.randn(1, 1), 4, 2, 1, 1, false).shape());
        assertArrayEquals(new long[] {2, 2, 0}, new MaxPool1d(4, 3, 0, 2, true).forward(Torch.randn(2, 2, 1).expand(2, 2, 4)).shape());
        raisesNaming("maxPool1d", () -> F.maxPool1d(Torch.randn(1, 1, 2).requiresGrad_(true), 3, 2, 0, 1, false));
        raisesNaming("maxPool1d", () -> F.maxPool1dWithIndices(Torch.randn(1, 1, 2), 3, 2, 0, 1, false));
        raisesNaming("maxPool1d", () -> F.maxPool1d(Torch.randn(1, 1, 1), 2, 1, 0, 2, false)); // an output size of -1
    }

    /** The second device of the simulator pass ({@code -Djtorch.test.device=cuda:0}); the CPU-only run skips these cases. */
    private static Device accelerator() {
        Device d = org.jtorch.testing.Fixtures.device();
        org.junit.jupiter.api.Assumptions.assumeFalse(d.isCpu(), "needs a second device (-Djtorch.test.device=cuda:0)");
        return d;
    }

    /**
     * Mixed-device seed 1, call 1428: a 0-dim CPU tensor written to in place from a CUDA tensor returned. PyTorch 1.13's
     * TensorIterator takes a 0-dim CPU tensor beside CUDA tensors as an input only ("Expected all tensors to be on the
     * same device, but found at least two devices, cuda:0 and cpu!"); as an input it stays allowed.
     */
    @Test
    void aZeroDimCpuTensorIsNotWrittenFromAnotherDevice() {
        Device cuda = accelerator();
        Tensor scalar = Torch.tensor(1f).reshape();
        Tensor other = Torch.full(new long[0], 2.0, DType.FLOAT32, cuda);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> scalar.add_(other, 0.5));
        assertTrue(e.getMessage().startsWith("add_: ") && e.getMessage().contains("cpu") && e.getMessage().contains(cuda.toString()),
                e.getMessage());
        assertArrayEquals(new float[] {1}, scalar.toFloatArray(), "left unchanged");
        Tensor v = Torch.ones(new long[] {3}, DType.FLOAT32, cuda);
        v.add_(Torch.tensor(2f).reshape());
        assertArrayEquals(new float[] {3, 3, 3}, v.toFloatArray());
        try (Tensor r = scalar.add(v)) {
            assertTrue(r.device().equals(cuda), "the result is on the other's device: " + r.device());
            assertArrayEquals(new float[] {4, 4, 4}, r.toFloatArray());
        }
    }

    /**
     * Mixed-device seed 1: {@code cpu.typeAs(cuda)} stayed on the CPU; PyTorch's type_as is {@code self.type(other.type())}
     * and a type such as {@code torch.cuda.FloatTensor} names the device, so the result is on other's device.
     */
    @Test
    void typeAsMovesToTheOtherTensorsDevice() {
        Device cuda = accelerator();
        Tensor x = Torch.tensor(new float[] {1, 2});
        try (Tensor r = x.typeAs(Torch.zeros(new long[] {3}, DType.FLOAT64, cuda))) {
            assertTrue(r.device().equals(cuda) && r.dtype() == DType.FLOAT64, r.device() + " " + r.dtype());
            assertArrayEquals(new double[] {1, 2}, r.toDoubleArray());
        }
        try (Tensor r = x.typeAs(Torch.zeros(new long[] {1}, DType.FLOAT64, Device.cpu()))) {
            assertTrue(r.device().isCpu() && r.dtype() == DType.FLOAT64);
        }
    }

    /** An adaptive pool to an empty output of 2^62 x 0 cells looped over the 2^62 rows: a hang. Now it returns at once. */
    @Test
    @org.junit.jupiter.api.Timeout(value = 10, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
    void poolingToAnEmptyOutputReturnsAtOnce() {
        Tensor x = Torch.randn(3, 4, 4).requiresGrad_(true);
        Tensor y = F.adaptiveAvgPool2d(x, 1L << 62, 0);
        assertArrayEquals(new long[] {3, 1L << 62, 0}, y.shape());
        assertArrayEquals(new long[] {3, 1L << 62, 0}, F.adaptiveMaxPool2d(x, 1L << 62, 0).shape());
        y.sum().backward();
        assertArrayEquals(new float[48], x.grad().toFloatArray());
    }

    /**
     * Mixed-device seed 3304 (simulated cuda:0): {@code diag(bool[2], diagonal=Long.MAX_VALUE)}: the matrix's side 2 + 2^63 - 1
     * overflowed to a negative size, and the device's memset failed without naming the op. Now an error naming diag.
     */
    @Test
    void diagWithADiagonalBeyondInt64NamesTheOp() {
        try (Tensor x = Torch.ones(new long[] {2}, DType.BOOL, Device.cpu())) {
            for (long diagonal : new long[] {Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE - 1}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Torch.diag(x, diagonal).close());
                assertTrue(e.getMessage().startsWith("diag: "), e.getMessage());
            }
        }
    }
}
