package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.nn.F;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;

/**
 * Sizes whose element or byte count does not fit in 64 bits (issue 19): each is an
 * {@link IllegalArgumentException} naming the op and the shape, never a tensor whose count wrapped
 * around to a small number and never a JDK-internal message. PyTorch 1.13 raises too ("Storage size
 * calculation overflowed with sizes=[...]", "numel: integer multiplication overflow"). None of these
 * cases allocates: a size that fits but is too large for memory is the allocator's out-of-memory error.
 */
@ExtendWith(ScopePerTest.class)
class ShapeOverflowTest {
    private static final long TWO_32 = 1L << 32;
    private static void assertRefused(String op, String shownShape, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().startsWith(op + ":"), "should name the op " + op + ": " + e.getMessage());
        if (shownShape != null) assertTrue(e.getMessage().contains(shownShape), "should name the shape " + shownShape + ": " + e.getMessage());
    }

    @Test
    void factoriesRefuseAnElementCountBeyondInt64() {
        long[] shape = {1L << 62, 4};
        assertRefused("zeros", "[4611686018427387904, 4]", () -> Torch.zeros(shape, DType.FLOAT32, Device.cpu()));
        assertRefused("ones", "[4611686018427387904, 4]", () -> Torch.ones(shape, DType.FLOAT32, Device.cpu()));
        assertRefused("full", "[4611686018427387904, 4]", () -> Torch.full(shape, 1.0));
        assertRefused("empty", "[4611686018427387904, 4]", () -> Torch.empty(shape));
        assertRefused("randn", "[4611686018427387904, 4]", () -> Torch.randn(shape));
        assertRefused("rand", "[4611686018427387904, 4]", () -> Torch.rand(shape));
        assertRefused("randint", "[4611686018427387904, 4]", () -> Torch.randint(0, 5, shape));
        assertRefused("eye", "[4294967296, 4294967296]", () -> Torch.eye(TWO_32, TWO_32, DType.FLOAT32, Device.cpu()));
        assertRefused("tensor", "[4294967296, 4294967296]", () -> Torch.tensor(new float[0], TWO_32, TWO_32));
    }

    @Test
    void factoriesRefuseAByteCountBeyondInt64() {
        assertRefused("zeros", "[2305843009213693952]", () -> Torch.zeros(1L << 61));
        assertRefused("ones", "[9223372036854775807]", () -> Torch.ones(Long.MAX_VALUE));
    }

    @Test
    void emptyStridedChecksItsGeometryAndNamesItself() {
        assertRefused("emptyStrided", "[4611686018427387904, 4]", () -> Torch.emptyStrided(new long[] {1L << 62, 4}, new long[] {4, 1},
                DType.FLOAT32, Device.cpu()));
        assertRefused("emptyStrided", "[3, 3]", () -> Torch.emptyStrided(new long[] {3, 3}, new long[] {1L << 62, 1}, DType.FLOAT32, Device.cpu()));
        assertRefused("emptyStrided", null, () -> Torch.emptyStrided(new long[] {3}, new long[] {-1}, DType.FLOAT32, Device.cpu()));
        assertRefused("emptyStrided", null, () -> Torch.emptyStrided(new long[] {3}, new long[] {1, 1}, DType.FLOAT32, Device.cpu()));
        // PyTorch: torch.empty_strided((2, 3), (1, 2)) has those strides, its storage 6 elements (1 + 1 * 1 + 2 * 2)
        try (Tensor t = Torch.emptyStrided(new long[] {2, 3}, new long[] {1, 2}, DType.FLOAT32, Device.cpu())) {
            assertArrayEquals(new long[] {1, 2}, t.strides());
            assertEquals(0, t.storageOffset());
            assertTrue(t.storage().byteSize() >= 6 * 4);
        }
    }

    @Test
    void aZeroSizeMakesAnyOtherSizesEmpty() {
        // PyTorch: torch.empty(0).reshape(0, 2**62, 4) has shape (0, 4611686018427387904, 4).
        assertArrayEquals(new long[] {0, 1L << 62, 4}, Torch.zeros(0, 1L << 62, 4).shape());
        assertEquals(0, Torch.randn(0).reshape(0, 1L << 62, 4).numel());
    }

    @Test
    void viewsRefuseAnElementCountBeyondInt64() {
        assertRefused("reshape", "[4294967296, 4294967296]", () -> Torch.randn(0).reshape(TWO_32, TWO_32));
        assertRefused("view", "[4294967296, 4294967296]", () -> Torch.randn(0).view(TWO_32, TWO_32));
        assertRefused("view", "[-1, 4294967296, 4294967296]", () -> Torch.randn(0).view(-1, TWO_32, TWO_32));
    }

    @Test
    void broadcastingRefusesAnElementCountBeyondInt64() {
        Tensor rows = Torch.randn(1, 1).expand(TWO_32, 1);
        Tensor cols = Torch.randn(1, 1).expand(1, TWO_32);
        assertRefused("add", "[4294967296, 4294967296]", () -> rows.add(cols));
    }

    @Test
    void sequencesRefuseLengthsBeyondInt64() {
        assertRefused("arange", null, () -> Torch.arange(Long.MIN_VALUE, Long.MAX_VALUE, 1));
        assertRefused("arange", "[4611686018427387904]", () -> Torch.arange(0, 1L << 62, 1));
        assertRefused("arange", null, () -> Torch.arange(0.0, 1.0, 1e-30));
        assertRefused("linspace", "[4611686018427387904]", () -> Torch.linspace(0, 1, 1L << 62));
        assertRefused("randperm", "[4611686018427387904]", () -> Torch.randperm(1L << 62));
        assertRefused("pad", null, () -> F.pad(Torch.randn(1, 2), new long[] {Long.MAX_VALUE, 1}, "replicate"));
    }

    @Test
    void integerArangeCountsExactlyAcrossTheFullInt64Range() {
        // By the definition [start, end) in steps: no overflow in end - start.
        assertArrayEquals(new long[] {Long.MIN_VALUE, -1, Long.MAX_VALUE - 1}, Torch.arange(Long.MIN_VALUE, Long.MAX_VALUE, Long.MAX_VALUE).toLongArray());
        assertArrayEquals(new long[] {Long.MAX_VALUE, -1}, Torch.arange(Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE).toLongArray());
    }

    @Test
    void sequencesRefuseEndsTheStepCannotReach() {
        // PyTorch 1.13: torch.arange(5, 0, 1) and torch.arange(0., float('nan'), 1.) raise.
        assertRefused("arange", null, () -> Torch.arange(5, 0, 1));
        assertRefused("arange", null, () -> Torch.arange(-5));
        assertRefused("arange", null, () -> Torch.arange(0.0, Double.NaN, 1.0));
        assertRefused("arange", null, () -> Torch.arange(0.0, Double.POSITIVE_INFINITY, 1.0));
        assertRefused("eye", null, () -> Torch.eye(-1));
        assertEquals(0, Torch.arange(3, 3, 1).numel());
        assertArrayEquals(new long[] {0, Long.MAX_VALUE}, Torch.eye(0, Long.MAX_VALUE, DType.FLOAT32, Device.cpu()).shape());
    }

    @Test
    void javaArraysRefuseTensorsTheyCannotHold() {
        Tensor big = Torch.zeros(1).expand(1L << 40);
        assertRefused("toFloatArray", "[1099511627776]", big::toFloatArray);
        assertRefused("toLongArray", "[1099511627776]", big::toLongArray);
    }
}
