package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.MultiheadAttention;
import org.jtorch.types.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The matmul family on empty operands (issue 19). Reference: PyTorch 1.13, where an empty batch, M or N
 * gives an empty result and an empty inner dimension K gives an empty sum: zeros, or {@code beta * input}
 * for {@code baddbmm}/{@code addmm}. Also the nn ops that flatten leading dimensions into rows the same way.
 */
class LinalgEmptyTest {
    private MemoryScope scope;
    private int threads;

    @BeforeEach
    void open() {
        scope = new MemoryScope();
        threads = Torch.getNumThreads();
        Torch.setNumThreads(2); // the batched CPU GEMM spreads small matrices over threads: the path that divided by zero
    }

    @AfterEach
    void close() {
        Torch.setNumThreads(threads);
        scope.close();
    }

    private static void assertZeros(long[] shape, Tensor t) {
        assertArrayEquals(shape, t.shape());
        assertArrayEquals(new double[(int) t.numel()], t.toDoubleArray());
    }

    @Test
    void bmmWithAnEmptyOuterDimensionIsEmpty() {
        for (DType d : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16, DType.INT64}) {
            assertArrayEquals(new long[] {2, 4, 0}, Torch.randn(2, 4, 3).to(d).bmm(Torch.randn(2, 3, 0).to(d)).shape(), d.toString());
            assertArrayEquals(new long[] {2, 0, 5}, Torch.randn(2, 0, 3).to(d).bmm(Torch.randn(2, 3, 5).to(d)).shape(), d.toString());
            assertArrayEquals(new long[] {0, 4, 5}, Torch.randn(0, 4, 3).to(d).bmm(Torch.randn(0, 3, 5).to(d)).shape(), d.toString());
        }
    }

    @Test
    void bmmWithAnEmptyInnerDimensionIsZeros() {
        for (DType d : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16, DType.INT64}) {
            assertZeros(new long[] {2, 4, 5}, Torch.randn(2, 4, 0).to(d).bmm(Torch.randn(2, 0, 5).to(d)));
        }
    }

    @Test
    void batchedMatmulWithEmptyDimensions() {
        assertArrayEquals(new long[] {2, 4, 0}, Torch.randn(2, 4, 3).matmul(Torch.randn(3, 0)).shape());
        assertZeros(new long[] {2, 4, 5}, Torch.randn(2, 4, 0).matmul(Torch.randn(0, 5)));
        assertZeros(new long[] {2, 4, 5}, Torch.randn(2, 4, 0).matmul(Torch.randn(2, 0, 5)));
        assertZeros(new long[] {2, 4, 5}, Torch.einsum("bij,bjk->bik", Torch.randn(2, 4, 0), Torch.randn(2, 0, 5)));
        assertZeros(new long[] {3}, Torch.einsum("ij->i", Torch.randn(3, 0)));
    }

    @Test
    void baddbmmWithAnEmptyInnerDimensionIsBetaTimesInput() {
        Tensor r = Torch.baddbmm(Torch.ones(2, 4, 5), Torch.randn(2, 4, 0), Torch.randn(2, 0, 5), 2, 3);
        assertArrayEquals(new long[] {2, 4, 5}, r.shape());
        for (float v : r.toFloatArray()) assertEquals(2f, v);
        // beta = 0 ignores the input, NaN included.
        Tensor nan = Torch.full(new long[] {2, 4, 5}, Double.NaN);
        assertZeros(new long[] {2, 4, 5}, Torch.baddbmm(nan, Torch.randn(2, 4, 0), Torch.randn(2, 0, 5), 0, 1));
        assertArrayEquals(new long[] {2, 0, 5}, Torch.baddbmm(Torch.ones(2, 0, 5), Torch.randn(2, 0, 3), Torch.randn(2, 3, 5), 1, 1).shape());
    }

    @Test
    void linearWithNoInputFeaturesIsTheBias() {
        Tensor r = F.linear(Torch.randn(3, 0), Torch.randn(5, 0), Torch.full(new long[] {5}, 1.5));
        assertArrayEquals(new long[] {3, 5}, r.shape());
        for (float v : r.toFloatArray()) assertEquals(1.5f, v);
    }

    @Test
    void attentionOverNoKeysIsZeros() {
        assertZeros(new long[] {2, 4, 8}, F.scaledDotProductAttention(Torch.randn(2, 4, 8), Torch.randn(2, 0, 8), Torch.randn(2, 0, 8)));
        // PyTorch's MultiheadAttention: zero weighted values, projected by an out_proj whose bias starts at 0.
        var mha = new MultiheadAttention(8, 2, 0.0, true, true);
        assertZeros(new long[] {2, 4, 8}, mha.forward(Torch.randn(2, 4, 8), Torch.randn(2, 0, 8), Torch.randn(2, 0, 8)).output());
    }

    @Test
    void gradientsThroughEmptyProducts() {
        Tensor a = Torch.randn(2, 4, 0).requiresGrad_();
        a.bmm(Torch.randn(2, 0, 5)).sum().backward();
        assertArrayEquals(new long[] {2, 4, 0}, a.grad().shape());
        Tensor b = Torch.randn(2, 4, 3).requiresGrad_();
        b.matmul(Torch.randn(3, 0)).sum().backward();
        assertZeros(new long[] {2, 4, 3}, b.grad());
        Tensor w = Torch.randn(0, 4).requiresGrad_();
        Tensor x = Torch.randn(3, 4).requiresGrad_();
        F.linear(x, w, null).sum().backward();
        assertZeros(new long[] {3, 4}, x.grad());
        assertArrayEquals(new long[] {0, 4}, w.grad().shape());
    }

    @Test
    void nnOpsFlatteningRowsAcceptAnEmptyLastDimension() {
        // PyTorch 1.13: bilinear with 0 output features is [2, 0]; an embedding of width 0 has a [5, 0] gradient.
        assertArrayEquals(new long[] {2, 0}, F.bilinear(Torch.randn(2, 2), Torch.randn(2, 3), Torch.randn(0, 2, 3), null).shape());
        Tensor w = Torch.randn(5, 0).requiresGrad_();
        F.embedding(Torch.tensor(1L, 2L), w).sum().backward();
        assertArrayEquals(new long[] {5, 0}, w.grad().shape());
    }
}
