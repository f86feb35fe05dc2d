package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.utils.ClipGrad;
import org.jtorch.nn.utils.ParameterVector;
import org.junit.jupiter.api.Test;

/** torch.nn.utils' gradient clipping and parameter vectors, against the formulas of PyTorch 1.13. */
class ClipGradTest {

    private static Tensor param(float[] grad) {
        Tensor p = Torch.zeros(grad.length).requiresGrad_(true);
        p.setGrad(Torch.tensor(grad));
        return p;
    }

    @Test
    void clipGradNormScalesByMaxNormOverTotalNorm() {
        // grads (3, 4) and (12): total 2-norm = sqrt(9 + 16 + 144) = 13; coefficient 6.5 / (13 + 1e-6).
        try (Tensor a = param(new float[] {3, 4}); Tensor b = param(new float[] {12}); Tensor none = Torch.zeros(2).requiresGrad_(true)) {
            try (Tensor total = ClipGrad.clipGradNorm_(List.of(a, b, none), 6.5, 2)) {
                assertEquals(13.0, total.item(), 1e-5);
            }
            double c = 6.5 / (13 + 1e-6);
            assertArrayEquals(new float[] {(float) (3 * c), (float) (4 * c)}, a.grad().toFloatArray(), 1e-6f);
            assertArrayEquals(new float[] {(float) (12 * c)}, b.grad().toFloatArray(), 1e-5f);
        }
    }

    @Test
    void clipGradNormLeavesSmallGradientsAlone() {
        try (Tensor a = param(new float[] {0.3f, -0.4f}); Tensor total = ClipGrad.clipGradNorm_(List.of(a), 1.0)) {
            assertEquals(0.5, total.item(), 1e-6);
            assertArrayEquals(new float[] {0.3f, -0.4f}, a.grad().toFloatArray(), 1e-7f);
        }
    }

    @Test
    void infNormIsTheLargestMagnitude() {
        try (Tensor a = param(new float[] {1, -8}); Tensor b = param(new float[] {2}); 
             Tensor total = ClipGrad.clipGradNorm_(List.of(a, b), 4, Double.POSITIVE_INFINITY)) {
            assertEquals(8.0, total.item(), 0);
            assertArrayEquals(new float[] {0.5f, -4f}, a.grad().toFloatArray(), 1e-5f);
        }
    }

    @Test
    void oneNormSumsMagnitudes() {
        try (Tensor a = param(new float[] {1, -2}); Tensor b = param(new float[] {3});
             Tensor total = ClipGrad.clipGradNorm_(List.of(a, b), 100, 1)) {
            assertEquals(6.0, total.item(), 1e-6);
        }
    }

    @Test
    void noGradientsGiveZero() {
        try (Tensor a = Torch.zeros(2).requiresGrad_(true); Tensor total = ClipGrad.clipGradNorm_(List.of(a), 1)) {
            assertEquals(0.0, total.item());
        }
    }

    @Test
    void clipGradValueClamps() {
        try (Tensor a = param(new float[] {-3, 0.5f, 2})) {
            ClipGrad.clipGradValue_(List.of(a), 1);
            assertArrayEquals(new float[] {-1, 0.5f, 1}, a.grad().toFloatArray());
        }
    }

    @Test
    void parametersToVectorAndBack() {
        try (Linear l = new Linear(3, 2)) {
            try (Tensor v = ParameterVector.parametersToVector(l.parameters())) {
                assertEquals(8, v.numel());
                double[] w = l.weight().toDoubleArray();
                assertArrayEquals(w, java.util.Arrays.copyOf(v.toDoubleArray(), 6));
            }
            try (Tensor v = Torch.arange(0.0, 8.0, 1.0)) {
                ParameterVector.vectorToParameters(v, l.parameters());
                assertArrayEquals(new double[] {0, 1, 2, 3, 4, 5}, l.weight().toDoubleArray());
                assertArrayEquals(new double[] {6, 7}, l.bias().toDoubleArray());
            }
        }
    }
}
