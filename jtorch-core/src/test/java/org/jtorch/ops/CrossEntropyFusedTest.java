package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.assertCloseRelative;
import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.kernelCalls;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LossOps;
import org.jtorch.op.OpDef;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Cross entropy of class indices as the declared fused op ({@link LossOps#CROSS_ENTROPY_FUSED}) on the CPU: its values and
 * gradients against the composition it replaces (log_softmax then nll_loss, which a {@code [N, C, 1]} input still takes)
 * on random shapes, weights, ignored targets and label smoothing, gradients of both orders against finite differences in
 * float64, and its errors. Values against PyTorch 1.13 are in {@code nn.NnConformanceTest} and the loss conformance tests.
 */
@ExtendWith(ScopePerTest.class)
class CrossEntropyFusedTest {
    private static final Generator GEN = new Generator(57);
    private static final F.Reduction[] REDUCTIONS = {F.Reduction.NONE, F.Reduction.MEAN, F.Reduction.SUM};

    private static Tensor randn(DType dtype, long... shape) {
        return Torch.randn(shape, dtype, Device.cpu(), GEN).mul(3.0).requiresGrad_(true);
    }

    /** Targets in {@code [0, classes)}, about a quarter of them {@code ignore}. */
    private static Tensor targets(Random r, int n, int classes, long ignore) {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) t[i] = r.nextInt(4) == 0 ? ignore : r.nextInt(classes);
        return Torch.tensor(t, new long[] {n});
    }

    /** The composition (log_softmax, nll_loss) that a {@code [N, C, 1]} input takes, for the same call. */
    private static Tensor composed(Tensor x, Tensor t, Tensor w, long ignore, F.Reduction reduction, double smoothing) {
        Tensor y = F.crossEntropy(x.unsqueeze(2), t.unsqueeze(1), w, ignore, reduction, smoothing);
        return reduction == F.Reduction.NONE ? y.squeeze(1) : y;
    }

    @Test
    void crossEntropyIsStructuredWithACpuKernel() {
        OpDef op = LossOps.CROSS_ENTROPY_FUSED;
        assertEquals(OpDef.Kind.STRUCTURED, op.kind());
        assertEquals(3, op.outputCount());
        assertTrue(KernelRegistry.hasStructured(op, Device.Type.CPU));
        assertTrue(KernelRegistry.hasStructured(LossOps.CROSS_ENTROPY_FUSED_BACKWARD, Device.Type.CPU));
        Tensor x = randn(DType.FLOAT32, 4, 7);
        Tensor t = Torch.tensor(new long[] {1, 2, 3, 4}, new long[] {4});
        Runnable step = () -> F.crossEntropy(x, t).backward();
        assertEquals(1, kernelCalls("cross_entropy_fused", step));
        assertEquals(1, kernelCalls("cross_entropy_fused_backward", step));
    }

    @Test
    void gradientsOfBothOrdersMatchFiniteDifferencesInFloat64() {
        Tensor t = Torch.tensor(new long[] {2, 0, 4, 1, 3}, new long[] {5});
        Tensor w = Torch.rand(new long[] {6}, DType.FLOAT64, Device.cpu(), GEN).add(0.5);
        for (F.Reduction reduction : REDUCTIONS) {
            for (double smoothing : new double[] {0, 0.2}) {
                for (Tensor weight : new Tensor[] {null, w}) {
                    Function<Tensor[], Tensor> ce = a -> F.crossEntropy(a[0], t, weight, 4, reduction, smoothing);
                    assertTrue(Gradcheck.check(ce, randn(DType.FLOAT64, 5, 6)));
                    assertTrue(Gradcheck.check(firstGradient(ce), randn(DType.FLOAT64, 5, 6)));
                }
            }
        }
        Function<Tensor[], Tensor> unbatched = a -> F.crossEntropy(a[0], Torch.scalar(3L), null, -100, F.Reduction.NONE, 0.1);
        assertTrue(Gradcheck.check(unbatched, randn(DType.FLOAT64, 5)));
        assertTrue(Gradcheck.check(firstGradient(unbatched), randn(DType.FLOAT64, 5)));
    }

    @Test
    void stridedLogitsAndUnbatchedCallsMatchTheComposition() {
        Tensor x = randn(DType.FLOAT32, 9, 5);
        Tensor t = Torch.tensor(new long[] {0, 1, 2, 3, 4}, new long[] {5});
        Tensor xt = x.transpose(0, 1);
        assertCloseRelative(composed(xt, t, null, -100, F.Reduction.MEAN, 0), F.crossEntropy(xt, t), 2e-5, "transposed");
        Tensor row = x.select(0, 2);
        Tensor one = Torch.scalar(3L);
        Tensor expected = F.crossEntropy(row.unsqueeze(0), one.unsqueeze(0), F.Reduction.NONE).squeeze(0);
        Tensor actual = F.crossEntropy(row, one, F.Reduction.NONE);
        assertEquals(0, actual.dim());
        assertCloseRelative(expected, actual, 2e-5, "unbatched");
    }

    @Test
    void aTargetOutOfRangeNamesTheLossAndTheClassCount() {
        Tensor x = randn(DType.FLOAT32, 3, 4);
        Tensor t = Torch.tensor(new long[] {0, 4, 1}, new long[] {3});
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> F.crossEntropy(x, t));
        assertTrue(e.getMessage().contains("crossEntropy") && e.getMessage().contains("Target 4") && e.getMessage().contains("4 classes"),
                e.getMessage());
        assertTrue(e.getCause() instanceof IndexOutOfBoundsException, "the kernel's error is the cause");
        // a form the kernel does not take runs the decomposition, whose nll_loss checks the batch sizes
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(LossOps.CROSS_ENTROPY_FUSED,
                new Tensor[] {x.detach(), Torch.tensor(new long[] {0, 1}, new long[] {2}), null}, LossOps.MEAN, -100, 0));
        assertTrue(bad.getMessage().contains("batch_size (3)") && bad.getMessage().contains("batch_size (2)"), bad.getMessage());
    }
}
