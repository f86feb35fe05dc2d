package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.kernelCalls;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.ReductionOps;
import org.jtorch.op.StridedView;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * log_softmax's gradient as one op ({@link ReductionOps#LOG_SOFTMAX_BACKWARD_DATA}, PyTorch's
 * {@code _log_softmax_backward_data}): values against PyTorch 1.13 ({@code tools/fixtures/gen_log_softmax_backward.py}: rows
 * around the vector lengths, the word LM's vocabulary, other dimensions, strided inputs, -inf logits, float32 and float64),
 * the CPU kernel against its composite form on random shapes and strides, gradients of both orders by finite differences
 * in float64, and its argument errors.
 */
@ExtendWith(ScopePerTest.class)
class LogSoftmaxBackwardTest {
    private static final java.util.List<Fixtures.Case> CASES = Fixtures.load("log_softmax_backward");
    private static final Generator GEN = new Generator(17);

    @TestFactory
    Stream<DynamicTest> logSoftmaxAndItsGradientMatchPyTorch() {
        return CASES.stream().filter(c -> c.op().equals("log_softmax"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> checkLogSoftmax(c)));
    }

    private static void checkLogSoftmax(Fixtures.Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = c.input(0).detach().requiresGrad_(true);
            Tensor g = c.input(1);
            int dim = (int) c.longArg("dim", -1);
            double tol = x.dtype() == DType.FLOAT64 ? 1e-12 : 2e-6;
            Tensor y = F.logSoftmax(x, dim);
            Fixtures.assertMatches(c.expectedTensor(0), y, tol, tol, c.name() + " output");
            y.backward(g);
            Fixtures.assertMatches(c.expectedTensor(1), x.grad(), tol, tol, c.name() + " gradient");
            // the op called directly, on PyTorch's output
            Tensor pytorchOutput = Fixtures.decode(c.expectedTensor(0), Fixtures.device());
            Tensor direct = Dispatcher.call(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, new Tensor[] {g, pytorchOutput},
                    x.dim() == 0 ? 0 : Math.floorMod(dim, x.dim()));
            Fixtures.assertMatches(c.expectedTensor(1), direct, tol, tol, c.name() + " _log_softmax_backward_data");
        }
    }

    @Test
    void theWordModelsLossBackwardRunsOneKernelForLogSoftmax() {
        assertTrue(KernelRegistry.hasStructured(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, Device.Type.CPU));
        Tensor x = Torch.randn(new long[] {7, 1560}, DType.FLOAT32, Device.cpu(), GEN).requiresGrad_(true);
        Tensor t = Torch.randint(0, 1560, 7);
        Runnable step = () -> F.nllLoss(F.logSoftmax(x, 1), t).backward();
        assertEquals(1, kernelCalls("log_softmax_backward_data", step));
        assertEquals(0, kernelCalls("exp", step));
        assertEquals(0, kernelCalls("sum", step));
    }

    /** Random shapes, dims and layouts: the op (kernel where its form holds, composite elsewhere) against the composite. */
    @Test
    void theKernelMatchesTheCompositeOnRandomShapesAndLayouts() {
        Random r = new Random(5);
        int kernelCalls = 0;
        for (int trial = 0; trial < 120; trial++) {
            DType dt = trial % 3 == 0 ? DType.FLOAT64 : DType.FLOAT32;
            int rank = 1 + r.nextInt(3);
            long[] shape = new long[rank];
            for (int d = 0; d < rank; d++) shape[d] = 1 + r.nextInt(d == rank - 1 ? (trial % 4 == 0 ? 300 : 40) : 5);
            int dim = r.nextInt(rank);
            Tensor g = layout(r, shape, dt), y = layout(r, shape, dt);
            // log-softmax outputs: never positive; now and then -inf (an exp of 0)
            y = y.abs().neg();
            if (trial % 7 == 0) y = y.maskedFill(y.lt(-2.5), Double.NEGATIVE_INFINITY);
            StridedView[] views = {Dispatcher.view(g), Dispatcher.view(y)};
            if (ReductionOps.softmaxBackwardForm(views, new double[] {dim})) kernelCalls++;
            Tensor expected = Reductions.logSoftmaxBackwardComposite(g.to(DType.FLOAT64), y.to(DType.FLOAT64), dim);
            Tensor actual = Dispatcher.call(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, new Tensor[] {g, y}, dim);
            assertEquals(dt, actual.dtype());
            assertCloseRelative(expected, actual, dt == DType.FLOAT64 ? 1e-12 : 3e-6,
                    "trial " + trial + " shape " + java.util.Arrays.toString(shape) + " dim " + dim + " " + dt);
        }
        assertTrue(kernelCalls > 40, "the kernel's form held in " + kernelCalls + " of 120 trials");
    }

    /** Row-major, transposed (its last two dimensions) or every other element of a wider tensor. */
    private static Tensor layout(Random r, long[] shape, DType dt) {
        int rank = shape.length;
        switch (r.nextInt(3)) {
            case 1 -> {
                if (rank < 2) break;
                long[] swapped = shape.clone();
                swapped[rank - 1] = shape[rank - 2];
                swapped[rank - 2] = shape[rank - 1];
                return Torch.randn(swapped, dt, Device.cpu(), GEN).transpose(rank - 2, rank - 1);
            }
            case 2 -> {
                long[] wide = shape.clone();
                wide[rank - 1] *= 2;
                return Torch.randn(wide, dt, Device.cpu(), GEN).slice(rank - 1, 0, wide[rank - 1], 2);
            }
            default -> { }
        }
        return Torch.randn(shape, dt, Device.cpu(), GEN);
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferencesInFloat64() {
        for (int dim : new int[] {0, 1, -1}) {
            Function<Tensor[], Tensor> lsm = a -> F.logSoftmax(a[0], dim);
            Tensor x = Torch.randn(new long[] {3, 5}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(lsm, x));
            assertTrue(Gradcheck.check(firstGradient(lsm), x));
        }
        Function<Tensor[], Tensor> threeD = a -> F.logSoftmax(a[0], 2);
        assertTrue(Gradcheck.check(firstGradient(threeD), Torch.randn(new long[] {2, 3, 4}, DType.FLOAT64, Device.cpu(), GEN)
                .requiresGrad_(true)));
    }

    @Test
    void mismatchedArgumentsNameTheOpAndTheShapes() {
        Tensor g = Torch.randn(2, 3), y = Torch.randn(2, 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, new Tensor[] {g, y}, 1));
        assertTrue(e.getMessage().contains("_log_softmax_backward_data") && e.getMessage().contains("[2, 3]")
                && e.getMessage().contains("[2, 4]"), e.getMessage());
        IllegalArgumentException d = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, new Tensor[] {g, Torch.randn(2, 3)}, 2));
        assertTrue(d.getMessage().contains("dim 2"), d.getMessage());
        IllegalArgumentException t = assertThrows(IllegalArgumentException.class,
                () -> Dispatcher.call(ReductionOps.LOG_SOFTMAX_BACKWARD_DATA, new Tensor[] {g, Torch.randn(2, 3).to(DType.FLOAT64)}, 1));
        assertTrue(t.getMessage().contains("float32") || t.getMessage().contains("FLOAT32"), t.getMessage());
    }

    @TestFactory
    Stream<DynamicTest> embeddingGradientsMatchPyTorch() {
        return CASES.stream().filter(c -> c.op().equals("embedding"))
                .map(c -> DynamicTest.dynamicTest(c.name(), () -> checkEmbedding(c)));
    }

    private static void checkEmbedding(Fixtures.Case c) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor w = c.input(0).detach().requiresGrad_(true);
            Tensor idx = c.input(1), g = c.input(2);
            Long pad = c.boolArg("has_padding", false) ? c.longArg("padding_idx", 0) : null;
            F.Embedding options = F.Embedding.options().paddingIdx(pad).scaleGradByFreq(c.boolArg("scale_grad_by_freq", false));
            F.embedding(idx, w, options).backward(g);
            double tol = w.dtype() == DType.FLOAT64 ? 1e-12 : 2e-6;
            JsonObject expected = c.expectedTensor();
            Fixtures.assertMatches(expected, w.grad(), tol, tol, c.name() + " weight gradient");
        }
    }
}
