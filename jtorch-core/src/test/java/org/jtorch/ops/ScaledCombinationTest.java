package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code addcmul} and {@code addcdiv}, declared composites: PyTorch 1.13's values, broadcasting, gradients, errors. */
@ExtendWith(ScopePerTest.class)
class ScaledCombinationTest {
    private static Tensor self() {
        return Torch.tensor(new float[] {0.5f, -1.25f, 2f, 3f, 0.125f, -0.75f}, 2, 3).to(Fixtures.device());
    }

    private static Tensor row() {
        return Torch.tensor(new float[] {1.1f, -2.3f, 0.7f}).to(Fixtures.device());
    }

    private static Tensor column() {
        return Torch.tensor(new float[] {0.3f, -1.7f}, 2, 1).to(Fixtures.device());
    }

    private static float[] hex(String... values) {
        float[] f = new float[values.length];
        for (int i = 0; i < f.length; i++) f[i] = (float) Double.parseDouble(values[i]);
        return f;
    }

    /**
     * PyTorch 1.13: torch.addcmul(s, a, b, value=0.3) and torch.addcdiv(s, a, b, value=-2.5). Its CPU kernel contracts the
     * last multiply and add into one rounding (an FMA): jtorch rounds the product first, as the composition's parts do, so
     * the two agree within an ulp; jtorch's equals its parts bit for bit.
     */
    @Test
    void broadcastValuesAreThoseOfPyTorch() {
        float[] mul = Pointwise.addcmul(self(), row(), column(), 0.3).toFloatArray();
        float[] div = Pointwise.addcdiv(self(), row(), column(), -2.5).toFloatArray();
        assertUlps(hex("0x1.32b022p-1", "-0x1.74fdf4p+0", "0x1.081062p+1", "0x1.383126p+1", "0x1.4c49bap+0", "-0x1.1b645ap+0"), mul);
        assertUlps(hex("-0x1.155554p+3", "0x1.1eaaaap+4", "-0x1.eaaaa8p+1", "0x1.278788p+2", "-0x1.a0f0f0p+1", "0x1.1e1e20p-2"), div);
        assertArrayEquals(self().add(row().mul(0.3).mul(column())).toFloatArray(), mul);
        assertArrayEquals(self().add(row().mul(-2.5).div(column())).toFloatArray(), div);
    }

    private static void assertUlps(float[] expected, float[] actual) {
        for (int i = 0; i < expected.length; i++) {
            assertTrue(Math.abs(expected[i] - actual[i]) <= Math.ulp(expected[i]), i + ": " + expected[i] + " against " + actual[i]);
        }
    }

    @Test
    void integersMultiplyAndRefuseToDivide() {
        Tensor a = Torch.tensor(new long[] {1, 2}).to(Fixtures.device());
        Tensor b = Torch.tensor(new long[] {3, 4}).to(Fixtures.device());
        Tensor c = Torch.tensor(new long[] {5, 6}).to(Fixtures.device());
        // A Java double value is a float scalar: the result is the default float dtype, 31 and 50 (PyTorch's int64 for value=2).
        assertArrayEquals(new double[] {31, 50}, Pointwise.addcmul(a, b, c, 2).toDoubleArray());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Pointwise.addcdiv(a, b, c, 1));
        assertTrue(e.getMessage().startsWith("addcdiv: integer division"), e.getMessage());
    }

    @Test
    void gradientsReachEveryInput() {
        Tensor s = Torch.randn(new long[] {2, 3}, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(3)).requiresGrad_();
        Tensor a = Torch.randn(new long[] {3}, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(4)).requiresGrad_();
        Tensor b = Torch.randn(new long[] {2, 1}, DType.FLOAT64, Fixtures.device(), Torch.manualSeed(5)).add(3).requiresGrad_();
        assertTrue(Gradcheck.check(t -> Pointwise.addcmul(t[0], t[1], t[2], -0.7), s, a, b));
        assertTrue(Gradcheck.check(t -> Pointwise.addcdiv(t[0], t[1], t[2], 1.5), s, a, b));
    }
}
