package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * {@code F.dropout(..., inplace=True)} and {@code nn.Dropout(p, inplace=True)}, against PyTorch 1.13's behaviour: the
 * input itself is masked with the mask out-of-place dropout would draw from the same generator state, gradients flow
 * through the rebased history, a leaf that requires grad is refused (PyTorch: "a leaf Variable that requires grad is
 * being used in an in-place operation"), and evaluation leaves the input as it is.
 */
class DropoutInplaceTest {

    private static Tensor input() {
        return Torch.randn(new long[] {4, 50}, DType.FLOAT64, Device.cpu(), new Generator(5));
    }

    @Test
    void masksTheInputItselfWithTheMaskOutOfPlaceDropoutDraws() {
        try (Tensor x = input(); Tensor expected = F.dropout(x, 0.3, true, new Generator(9));
             Tensor y = F.dropout(x, F.Dropout.options().p(0.3).inplace(true).generator(new Generator(9)))) {
            assertArrayEquals(expected.toDoubleArray(), x.toDoubleArray(), "x was masked in place");
            assertArrayEquals(expected.toDoubleArray(), y.toDoubleArray(), "the result is x");
            y.fill_(7.0);
            assertEquals(7.0, x.toDoubleArray()[0], "the result shares x's storage");
        }
    }

    @Test
    void gradientsFlowThroughTheInPlaceMask() {
        try (Tensor leaf = input().requiresGrad_(true); Tensor leaf2 = input().requiresGrad_(true)) {
            try (Tensor y = leaf.mul(2.0); Tensor out = F.dropout_(y, 0.4, true, new Generator(3)); Tensor s = out.sum()) {
                s.backward();
            }
            try (Tensor y = leaf2.mul(2.0); Tensor out = F.dropout(y, 0.4, true, new Generator(3)); Tensor s = out.sum()) {
                s.backward();
            }
            assertArrayEquals(leaf2.grad().toDoubleArray(), leaf.grad().toDoubleArray());
            // d/dx sum(dropout(2x)) = 2 * mask / (1 - p): 0 or 2 / 0.6.
            for (double g : leaf.grad().toDoubleArray()) assertTrue(g == 0 || Math.abs(g - 2 / 0.6) < 1e-12, "gradient " + g);
        }
    }

    @Test
    void probabilityOneZeroesTheInputAndItsGradient() {
        try (Tensor leaf = input().requiresGrad_(true); Tensor y = leaf.mul(2.0); Tensor out = F.dropout_(y, 1.0, true, new Generator(1));
             Tensor s = out.sum()) {
            s.backward();
            // Signed zeros, as PyTorch's x * 0.
            for (double v : y.toDoubleArray()) assertTrue(v == 0, "value " + v);
            for (double g : leaf.grad().toDoubleArray()) assertTrue(g == 0, "gradient " + g);
        }
    }

    @Test
    void aLeafThatRequiresGradIsRefused() {
        try (Tensor leaf = input().requiresGrad_(true)) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> F.dropout_(leaf, 0.5, true, new Generator(1)));
            assertTrue(e.getMessage().contains("leaf") && e.getMessage().contains("in-place"), e.getMessage());
        }
    }

    @Test
    void evaluationLeavesTheInputAndTheModulePrintsAsPyTorchs() {
        try (Tensor x = input(); Tensor before = x.clone(); Dropout d = new Dropout(0.3, true)) {
            d.eval();
            try (Tensor y = d.forward(x)) {
                assertArrayEquals(before.toDoubleArray(), x.toDoubleArray());
            }
            // repr(nn.Dropout(0.3, inplace=True)) in PyTorch 1.13.
            assertEquals("Dropout(p=0.3, inplace=True)", d.toString());
            d.train();
            try (Tensor y = d.forward(x)) {
                assertTrue(java.util.Arrays.stream(x.toDoubleArray()).anyMatch(v -> v == 0), "training masked x itself");
            }
        }
    }
}
