package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * GELU's gradient as one op ({@code gelu_backward}, both forms), as PyTorch's: one kernel per backward, first and
 * second derivatives by gradcheck in float64 (PyTorch's values are the registry_pointwise fixtures'), and the generated
 * float32 loop against the reference path (a strided input) on random shapes.
 */
class GeluBackwardTest {

    @Test
    void geluBackwardIsOneOp() {
        for (String approximate : List.of("none", "tanh")) {
            Tensor x = Torch.randn(4, 5).requiresGrad_(true);
            Tensor y = F.gelu(x, approximate).sum();
            List<String> ops = OpTestSupport.traced(y::backward);
            String kernel = approximate.equals("none") ? "gelu_backward" : "gelu_tanh_backward";
            assertEquals(1, ops.stream().filter(kernel::equals).count(), approximate + ": " + ops);
            assertTrue(ops.stream().noneMatch(n -> n.equals("erf") || n.equals("exp") || n.equals("tanh")), approximate + ": " + ops);
        }
    }

    /** Inputs over both tails and around GELU's minimum (-0.75), where the derivative changes sign. */
    private static Tensor inputs() {
        return Torch.tensor(new double[] {-7, -3.5, -2, -0.9, -0.75, -0.3, 0, 0.2, 0.8, 1.7, 3, 6.5}).requiresGrad_(true);
    }

    @Test
    void gradcheckFirstAndSecondOrderInFloat64() {
        for (String approximate : List.of("none", "tanh")) {
            Function<Tensor[], Tensor> gelu = t -> F.gelu(t[0], approximate);
            assertTrue(Gradcheck.check(gelu, inputs()), approximate + ": first order");
            assertTrue(Gradcheck.check(OpTestSupport.firstGradient(gelu), inputs()), approximate + ": second order");
        }
    }

    @Test
    void gradcheckOfTheBackwardOpItselfInBothInputs() {
        Torch.manualSeed(20);
        for (var op : List.of(org.jtorch.op.PointwiseOps.GELU_BACKWARD, org.jtorch.op.PointwiseOps.GELU_TANH_BACKWARD)) {
            Tensor g = Torch.randn(12).to(DType.FLOAT64).requiresGrad_(true);
            Function<Tensor[], Tensor> fn = t -> Dispatcher.call(op, t, new double[] {1});
            assertTrue(Gradcheck.check(fn, g, inputs()), op.name() + ": first order");
            Tensor g2 = Torch.randn(12).to(DType.FLOAT64).requiresGrad_(true);
            assertTrue(Gradcheck.check(OpTestSupport.firstGradient(fn), g2, inputs()), op.name() + ": second order");
        }
    }

    @Test
    void generatedFloat32LoopMatchesTheReferencePathOnRandomShapes() {
        Torch.manualSeed(21);
        java.util.Random random = new java.util.Random(21);
        for (int trial = 0; trial < 20; trial++) {
            int rows = 1 + random.nextInt(9);
            int cols = 1 + random.nextInt(70);
            Tensor x = Torch.randn(cols, rows).mul(3.0);
            Tensor g = Torch.randn(rows, cols);
            for (var op : List.of(org.jtorch.op.PointwiseOps.GELU_BACKWARD, org.jtorch.op.PointwiseOps.GELU_TANH_BACKWARD)) {
                Tensor strided = Dispatcher.call(op, new Tensor[] {g, x.t()}, new double[] {1});
                Tensor contiguous = Dispatcher.call(op, new Tensor[] {g, x.t().contiguous()}, new double[] {1});
                OpTestSupport.assertCloseRelative(strided, contiguous, 1e-6, op.name() + " [" + rows + ", " + cols + "]");
            }
        }
    }
}
