package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** Finite-difference checks (float64, PyTorch's gradcheck tolerances) of the nn composites' gradients. */
class NnGradcheckTest {
    private static final Generator GEN = new Generator(3);

    private static Tensor rand(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    private static void check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try {
            assertTrue(Gradcheck.check(fn, inputs));
        } finally {
            for (Tensor t : inputs) t.close();
        }
    }

    @Test
    void layerNorm() {
        check(x -> F.layerNorm(x[0], new long[] {4}, x[1], x[2], 1e-5), rand(2, 4), rand(4), rand(4));
    }

    @Test
    void rmsNorm() {
        check(x -> F.rmsNorm(x[0], new long[] {3}, x[1], null), rand(2, 3), rand(3));
    }

    @Test
    void linearAndBilinear() {
        check(x -> F.linear(x[0], x[1], x[2]), rand(2, 3), rand(4, 3), rand(4));
        check(x -> F.bilinear(x[0], x[1], x[2], x[3]), rand(2, 2), rand(2, 3), rand(2, 2, 3), rand(2));
    }

    @Test
    void activations() {
        check(x -> F.elu(x[0], 0.7), rand(5));
        check(x -> F.gelu(x[0], "tanh"), rand(5));
        check(x -> F.silu(x[0]), rand(5));
    }

    @Test
    void attention() {
        try (Tensor mask = Torch.tensor(new boolean[] {true, false, true, true, true, true}, 2, 3)) {
            check(x -> F.scaledDotProductAttention(x[0], x[1], x[2], mask, 0, false), rand(2, 2), rand(3, 2), rand(3, 2));
        }
    }

    @Test
    void regressionLosses() {
        check(x -> F.mseLoss(x[0], x[1]), rand(2, 3), rand(2, 3));
        check(x -> F.smoothL1Loss(x[0], x[1], F.Reduction.SUM, 0.5), rand(2, 3), rand(2, 3));
        check(x -> F.huberLoss(x[0], x[1], F.Reduction.MEAN, 0.7), rand(2, 3), rand(2, 3));
    }

    @Test
    void probabilisticLosses() {
        try (Tensor t = Torch.tensor(new double[] {0, 1, 0.3, 1, 0, 0.8}, 2, 3); Tensor pw = Torch.tensor(0.5, 2.0, 1.5)) {
            check(x -> F.binaryCrossEntropyWithLogits(x[0], t, null, pw, F.Reduction.MEAN), rand(2, 3));
            check(x -> {
                try (Tensor p = x[0].sigmoid()) {
                    return F.binaryCrossEntropy(p, t, null, F.Reduction.SUM);
                }
            }, rand(2, 3));
            try (Tensor q = Torch.tensor(new double[] {0.2, 0.3, 0.5, 0.1, 0.1, 0.8}, 2, 3)) {
                check(x -> F.klDiv(x[0], q, F.Reduction.BATCHMEAN, false), rand(2, 3));
            }
            try (Tensor probs = Torch.tensor(new double[] {0.2, 0.3, 0.5, 0.1, 0.1, 0.8}, 2, 3)) {
                check(x -> F.crossEntropy(x[0], probs, null, -100, F.Reduction.MEAN, 0.1), rand(2, 3));
            }
        }
    }

    /** Without padding: the padding row's gradient is zero by definition, which finite differences do not see. */
    @Test
    void embedding() {
        try (Tensor idx = Torch.tensor(new long[] {0, 2, 2, 1}, 2, 2)) {
            check(x -> F.embedding(idx, x[0]), rand(3, 2));
        }
    }

    @Test
    void classIndexCrossEntropy() {
        try (Tensor t = Torch.tensor(1L, -100L, 0L); Tensor w = Torch.tensor(0.5, 2.0, 1.0)) {
            check(x -> F.crossEntropy(x[0], t, w, -100, F.Reduction.MEAN, 0.2), rand(3, 3));
        }
    }
}
