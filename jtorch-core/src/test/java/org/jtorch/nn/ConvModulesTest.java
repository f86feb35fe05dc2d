package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/** Conv1d/Conv2d/ConvTranspose2d/Unfold/Fold: parameters, PyTorch's initialisation, repr and argument checks. */
class ConvModulesTest {

    @Test
    void conv2dParametersHavePyTorchShapesAndKeys() {
        try (Conv2d c = new Conv2d(6, 8, 3, Conv2d.options().groups(2))) {
            assertArrayEquals(new long[] {8, 3, 3, 3}, c.weight().shape());
            assertArrayEquals(new long[] {8}, c.bias().shape());
            assertEquals(List.of("weight", "bias"), List.copyOf(c.stateDict().keySet()));
        }
        try (ConvTranspose2d t = new ConvTranspose2d(6, 8, 3, ConvTranspose2d.options().groups(2).bias(false))) {
            assertArrayEquals(new long[] {6, 4, 3, 3}, t.weight().shape());
            assertNull(t.bias());
            assertEquals(List.of("weight"), List.copyOf(t.stateDict().keySet()));
        }
    }

    @Test
    void initialisationIsKaimingUniformWithBiasBoundOneOverSqrtFanIn() {
        // kaiming_uniform_(a = sqrt(5)) gives bound sqrt(6 / ((1 + 5) * fan_in)) = 1 / sqrt(fan_in) for the weight too.
        try (Conv2d c = new Conv2d(16, 32, 3, Conv2d.options().generator(Torch.manualSeed(1)))) {
            double bound = 1 / Math.sqrt(16 * 9);
            checkUniform(c.weight().toDoubleArray(), bound);
            checkUniform(c.bias().toDoubleArray(), bound);
        }
        // Transposed: fan_in is weight.size(1) * k * k = (out / groups) * k * k, as PyTorch.
        try (ConvTranspose2d t = new ConvTranspose2d(8, 12, 2, ConvTranspose2d.options().generator(Torch.manualSeed(2)))) {
            double bound = 1 / Math.sqrt(12 * 4);
            checkUniform(t.weight().toDoubleArray(), bound);
            checkUniform(t.bias().toDoubleArray(), bound);
        }
    }

    private static void checkUniform(double[] v, double bound) {
        double max = 0;
        for (double x : v) {
            assertTrue(Math.abs(x) <= bound, x + " outside +-" + bound);
            max = Math.max(max, Math.abs(x));
        }
        assertTrue(max > 0.8 * bound, "values should fill the range: max " + max + " of " + bound);
    }

    @Test
    void reprMatchesPyTorchs() {
        try (Conv2d c = new Conv2d(3, 16, 3, Conv2d.options().stride(2).padding(1).bias(false))) {
            assertEquals("Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)", c.toString());
        }
        try (Conv1d c = new Conv1d(4, 4, 5, Conv1d.options().padding("same").dilation(2).groups(4))) {
            assertEquals("Conv1d(4, 4, kernel_size=(5,), stride=(1,), padding=same, dilation=(2,), groups=4)", c.toString());
        }
        try (ConvTranspose2d c = new ConvTranspose2d(4, 2, 3, ConvTranspose2d.options().stride(2).outputPadding(1))) {
            assertEquals("ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))", c.toString());
        }
        assertEquals("Unfold(kernel_size=3, dilation=1, padding=0, stride=1)", new Unfold(3).toString());
        assertEquals("Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)",
                new Fold(new int[] {4, 5}, new int[] {2}).toString());
    }

    @Test
    void unknownPaddingModesAndNonZeroModesOnTransposedConvolutionsAreRejected() {
        // reflect/replicate/circular themselves are checked against PyTorch in ConvolutionConformanceTest.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Conv2d(3, 4, 3, Conv2d.options().paddingMode("mirror")));
        assertTrue(e.getMessage().contains("Conv2d") && e.getMessage().contains("mirror"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new ConvTranspose2d(3, 4, 3, ConvTranspose2d.options().paddingMode("circular")));
    }

    @Test
    void channelsMustBeDivisibleByGroups() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Conv2d(3, 4, 3, Conv2d.options().groups(2)));
        assertTrue(e.getMessage().contains("in_channels (3)"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Conv2d(4, 3, 3, Conv2d.options().groups(2)));
    }

    @Test
    void errorsNameTheOpAndTheShapes() {
        try (Tensor x = Torch.zeros(new long[] {1, 3, 5, 5}, DType.FLOAT32, Device.cpu());
             Tensor w = Torch.zeros(new long[] {4, 2, 3, 3}, DType.FLOAT32, Device.cpu())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.conv2d(x, w));
            assertEquals("conv2d: given groups=1, weight of shape [4, 2, 3, 3] expects input of shape [1, 3, 5, 5] to have 2 channels,"
                    + " but got 3 channels", e.getMessage());
        }
    }

    @Test
    void forwardAndBackwardThroughAModuleStack() {
        // Conv -> relu -> conv on a batch: every parameter gets a gradient of the right shape.
        try (Conv2d a = new Conv2d(3, 8, 3, Conv2d.options().padding(1)); Conv2d b = new Conv2d(8, 4, 3, Conv2d.options().stride(2));
             Tensor x = Torch.randn(new long[] {2, 3, 9, 9}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(3))) {
            try (Tensor h = a.forward(x); Tensor r = h.relu(); Tensor y = b.forward(r); Tensor s = y.sum()) {
                assertArrayEquals(new long[] {2, 4, 4, 4}, y.shape());
                s.backward();
            }
            for (Tensor p : List.of(a.weight(), a.bias(), b.weight(), b.bias())) assertArrayEquals(p.shape(), p.grad().shape());
        }
    }
}
