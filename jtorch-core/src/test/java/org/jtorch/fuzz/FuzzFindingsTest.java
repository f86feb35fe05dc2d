package org.jtorch.fuzz;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.AvgPool1d;
import org.jtorch.nn.F;
import org.jtorch.nn.MaxPool1d;
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
    @Test
    void adaptivePoolingRejectsNegativeOutputSizes() {
        Tensor x = Torch.randn(1, 2, 4, 4);
        raisesNaming("adaptiveAvgPool1d", () -> F.adaptiveAvgPool1d(x.flatten(2, 3), -1));
        raisesNaming("adaptiveMaxPool1d", () -> F.adaptiveMaxPool1d(x.flatten(2, 3), -3));
        raisesNaming("adaptiveAvgPool2d", () -> F.adaptiveAvgPool2d(x, 2, -2));
        raisesNaming("adaptiveMaxPool2d", () -> F.adaptiveMaxPool2d(x, Long.MIN_VALUE));
        // -1 stays jtorch's spelling of None in the 2-d forms: keep the input's size
        assertArrayEquals(new long[] {1, 2, 4, 1}, F.adaptiveAvgPool2d(x, -1, 1).shape());
    }
}
