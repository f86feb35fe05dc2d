package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * Copies of transposed views ({@link TransposeCopy}: whole 16 x 16 tiles through the vector scratch, 4- and 8-byte
 * elements, partial tiles element by element) hold the element-by-element copy's values: square and odd shapes, batched planes,
 * a permute whose merged dimensions make the transpose, and a view with an offset.
 */
class TransposeCopyTest {
    private static void assertTransposedCopy(Tensor view) {
        // The reference: the view's elements read one by one through its strides.
        double[] expected = new double[(int) view.numel()];
        long[] shape = view.shape(), strides = view.strides();
        int[] index = new int[shape.length];
        for (int i = 0; i < expected.length; i++) {
            long rem = i;
            for (int d = shape.length - 1; d >= 0; d--) {
                index[d] = (int) (rem % shape[d]);
                rem /= shape[d];
            }
            Tensor e = view;
            for (int d = 0; d < shape.length; d++) e = e.select(0, index[d]);
            expected[i] = e.item();
        }
        assertArrayEquals(expected, view.contiguous().to(DType.FLOAT64).toDoubleArray(), 0);
    }

    @Test
    void transposedViewsCopyToTheElementByElementValues() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.INT32, DType.INT64}) {
            try (MemoryScope scope = new MemoryScope()) {
                assertTransposedCopy(Torch.randn(32, 48).to(t).t());
                assertTransposedCopy(Torch.randn(37, 53).to(t).t());
                assertTransposedCopy(Torch.randn(3, 33, 20).to(t).transpose(1, 2));
                assertTransposedCopy(Torch.randn(5, 17, 16).to(t).permute(2, 0, 1));
                assertTransposedCopy(Torch.randn(40, 70).to(t).narrow(1, 3, 50).narrow(0, 1, 33).t());
                assertTransposedCopy(Torch.randn(2, 67, 45).mul(1000).to(t).transpose(1, 2));
            }
        }
    }
}
