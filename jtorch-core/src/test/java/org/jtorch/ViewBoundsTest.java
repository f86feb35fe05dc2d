package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.testing.ScopePerTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

/**
 * View bounds where arithmetic on sizes, strides and offsets could wrap around (issue 19), beyond the
 * PyTorch fixtures in {@link ViewsConformanceTest}: here PyTorch 1.13 itself overflows (it accepts an
 * offset of 2^63-1 and gives {@code t[0:5:2**63-1]} no element), so the reference is the definition of
 * the view, and every refusal is an exception naming the op and the bad argument.
 */
@ExtendWith(ScopePerTest.class)
class ViewBoundsTest {
    private static void assertRefused(Class<? extends RuntimeException> kind, String op, String argument, Executable call) {
        RuntimeException e = assertThrows(kind, call);
        assertTrue(e.getMessage().startsWith(op + ":"), "should name " + op + ": " + e.getMessage());
        assertTrue(e.getMessage().contains(argument), "should name " + argument + ": " + e.getMessage());
    }

    @Test
    void aSliceWithAHugeStepHasItsFirstElement() {
        // Elements start, start + step, ... below end: only index 0 here.
        Tensor s = Torch.arange(5.0, 10.0, 1.0).slice(0, 0, 5, Long.MAX_VALUE);
        assertArrayEquals(new long[] {1}, s.shape());
        assertArrayEquals(new float[] {5f}, s.toFloatArray());
        Tensor w = Torch.arange(5.0, 10.0, 1.0).unfold(0, 2, Long.MAX_VALUE);
        assertArrayEquals(new long[] {1, 2}, w.shape());
        assertArrayEquals(new float[] {5f, 6f}, w.toFloatArray());
    }

    @Test
    void asStridedRefusesOffsetsAndExtentsPastTheStorage() {
        Tensor t = Torch.randn(5);
        assertRefused(IndexOutOfBoundsException.class, "asStrided", "offset 9223372036854775807",
                () -> t.asStrided(new long[] {2}, new long[] {1}, Long.MAX_VALUE));
        assertRefused(IndexOutOfBoundsException.class, "asStrided", "[4611686018427387904]",
                () -> t.asStrided(new long[] {1L << 62}, new long[] {1L << 62}, 0));
        assertRefused(IllegalArgumentException.class, "asStrided", "-1", () -> t.asStrided(new long[] {2}, new long[] {1}, -1));
        assertRefused(IllegalArgumentException.class, "asStrided", "[4611686018427387904, 4]",
                () -> t.asStrided(new long[] {1L << 62, 4}, new long[] {0, 0}, 0));
    }

    @Test
    void narrowRefusesALengthThatOverflowsTheEnd() {
        assertRefused(IndexOutOfBoundsException.class, "narrow", "9223372036854775807", () -> Torch.randn(5).narrow(0, 4, Long.MAX_VALUE));
        assertRefused(IndexOutOfBoundsException.class, "narrow", "-9223372036854775808", () -> Torch.randn(5).narrow(0, Long.MIN_VALUE, 1));
    }

    @Test
    void expandRefusesNegativeSizes() {
        assertRefused(IllegalArgumentException.class, "expand", "-5", () -> Torch.randn(1).expand(-5));
        assertRefused(IllegalArgumentException.class, "expand", "-2", () -> Torch.randn(3).expand(-2));
    }

    @Test
    void zeroDimTensorsHaveNoSizeOrStrideToAskFor() {
        // PyTorch 1.13: IndexError "Dimension specified as 0 but tensor has no dimensions".
        Tensor s = Torch.scalar(1.0);
        assertRefused(IndexOutOfBoundsException.class, "size", "dimension specified as 0", () -> s.size(0));
        assertRefused(IndexOutOfBoundsException.class, "stride", "dimension specified as -1", () -> s.stride(-1));
        assertArrayEquals(new long[0], s.transpose(0, -1).shape());
    }

    @Test
    void splitsOfHugeSizesDoNotWrapAround() {
        List<Tensor> parts = Torch.randn(5).split(Long.MAX_VALUE, 0);
        assertEquals(1, parts.size());
        assertArrayEquals(new long[] {5}, parts.get(0).shape());
        assertRefused(IllegalArgumentException.class, "split", "9223372036854775807",
                () -> Torch.randn(0).split(new long[] {Long.MAX_VALUE, Long.MAX_VALUE, 2}, 0));
    }

    @Test
    void broadcastToRefusesShapesThatDoNotBroadcast() {
        assertRefused(IllegalArgumentException.class, "broadcastTo", "[5]", () -> Torch.randn(3).broadcastTo(new long[] {5}));
        assertRefused(IllegalArgumentException.class, "broadcastTo", "[-5]", () -> Torch.randn(1).broadcastTo(new long[] {-5}));
        assertRefused(IllegalArgumentException.class, "broadcastTo", "[3]", () -> Torch.randn(2, 3).broadcastTo(new long[] {3}));
    }
}
