package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The contiguous fast paths of gather and scatter_add ({@link IndexRows}) against the general strided loop, which a
 * non-contiguous operand with the same values takes: the same bits on random shapes, dims and dtypes (duplicates in a
 * scatter sum in the same order), and a bad index raises the op's error.
 */
@ExtendWith(ScopePerTest.class)
class IndexRowsTest {
    private static final DType[] TYPES = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT32, DType.INT16, DType.INT8, DType.BFLOAT16};

    /** The same values in a non-contiguous tensor (a narrow of a wider one), so that the general loop runs. */
    private static Tensor strided(Tensor t) {
        long[] wide = t.shape().clone();
        wide[wide.length - 1] += 3;
        return Torch.zeros(wide, t.dtype(), Device.cpu()).narrow(t.dim() - 1, 0, t.size(-1)).copy_(t);
    }

    private static double[] values(Tensor t) {
        return t.to(DType.FLOAT64).toDoubleArray();
    }

    @Test
    void gatherAndScatterAddGiveTheGeneralLoopsBitsOnRandomShapes() {
        Random r = new Random(5);
        Generator gen = new Generator(5);
        for (int c = 0; c < 60; c++) {
            int rank = 1 + r.nextInt(4);
            long[] shape = new long[rank];
            for (int k = 0; k < rank; k++) shape[k] = 1 + r.nextInt(k == rank - 1 ? 40 : 6);
            int dim = r.nextInt(rank);
            long[] ishape = shape.clone();
            ishape[dim] = 1 + r.nextInt(12);
            DType t = TYPES[c % TYPES.length];
            Tensor self = Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen).mul(8).to(t);
            long[] iv = new long[(int) org.jtorch.op.Shapes.numel(ishape)];
            for (int q = 0; q < iv.length; q++) iv[q] = r.nextInt((int) shape[dim]);
            Tensor index = Torch.tensor(iv).reshape(ishape);
            Tensor src = Torch.randn(ishape, DType.FLOAT32, Device.cpu(), gen).mul(8).to(t);
            String what = t + " " + java.util.Arrays.toString(shape) + " dim " + dim + " index " + java.util.Arrays.toString(ishape);
            assertArrayEquals(values(strided(self).gather(dim, index)), values(self.gather(dim, index)), "gather " + what);
            if (t == DType.BFLOAT16) continue;
            assertArrayEquals(values(self.scatterAdd(dim, index, strided(src))), values(self.scatterAdd(dim, index, src)),
                    "scatter_add " + what);
        }
    }

    @Test
    void aBadIndexNamesTheOpTheValueAndTheSize() {
        Tensor self = Torch.randn(3, 4);
        Tensor index = Torch.tensor(new long[] {0, 1, 7, 2, 3, 0}).reshape(3, 2);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> self.gather(1, index));
        assertTrue(e.getMessage().equals("gather: index 7 is out of bounds for dimension 1 with size 4"), e.getMessage());
        Tensor z = Torch.zeros(3, 4);
        e = assertThrows(IndexOutOfBoundsException.class, () -> z.scatterAdd_(1, index, Torch.ones(3, 2)));
        assertTrue(e.getMessage().contains("index 7 is out of bounds"), e.getMessage());
        assertArrayEquals(new float[12], z.toFloatArray(), "nothing is written before a bad index is found");
    }
}
