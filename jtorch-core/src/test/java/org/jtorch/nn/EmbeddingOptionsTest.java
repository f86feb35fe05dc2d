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
 * {@link Embedding}'s keywords beyond {@code padding_idx} (the values are checked against PyTorch 1.13 in
 * {@code KeywordOptionsConformanceTest}): the repr PyTorch 1.13 prints, in-place renormalisation of the looked-up rows
 * only, and the refusal of {@code sparse=True}.
 */
class EmbeddingOptionsTest {

    @Test
    void reprIsPyTorchs() {
        // repr(nn.Embedding(10, 3, padding_idx=-1, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True)) in PyTorch 1.13.
        try (Embedding e = new Embedding(10, 3, F.Embedding.options().paddingIdx(-1L).maxNorm(1.0).normType(3.0).scaleGradByFreq(true))) {
            assertEquals("Embedding(10, 3, padding_idx=9, max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True)", e.toString());
        }
    }

    @Test
    void maxNormRenormalisesTheLookedUpRowsInPlaceAndNoOthers() {
        try (Embedding e = new Embedding(6, 4, F.Embedding.options().maxNorm(0.5), DType.FLOAT32, Device.cpu(), new Generator(3));
             Tensor before = e.weight().detach().clone(); Tensor ids = Torch.tensor(new long[] {1, 4, 1}, new long[] {3});
             Tensor y = e.forward(ids)) {
            float[] w = e.weight().toFloatArray();
            float[] w0 = before.toFloatArray();
            for (int row = 0; row < 6; row++) {
                double norm = 0;
                for (int j = 0; j < 4; j++) norm += (double) w[row * 4 + j] * w[row * 4 + j];
                if (row == 1 || row == 4) {
                    assertTrue(Math.sqrt(norm) <= 0.5 + 1e-6, "row " + row + " has norm " + Math.sqrt(norm));
                } else {
                    for (int j = 0; j < 4; j++) assertEquals(w0[row * 4 + j], w[row * 4 + j], "row " + row + " was not looked up");
                }
            }
            try (Tensor rows = e.weight().indexSelect(0, ids)) {
                assertArrayEquals(rows.toFloatArray(), y.toFloatArray(), "the output reads the renormalised rows");
            }
            assertTrue(e.weight().requiresGrad() && e.weight().gradFn() == null, "the weight stays a leaf");
        }
    }

    @Test
    void sparseGradientsAreRefusedSayingWhy() {
        try (Tensor w = Torch.randn(5, 2); Tensor ids = Torch.tensor(new long[] {0, 3}, new long[] {2})) {
            var e = assertThrows(UnsupportedOperationException.class, () -> F.embedding(ids, w, F.Embedding.options().sparse(true)));
            assertTrue(e.getMessage().startsWith("embedding: sparse=True") && e.getMessage().contains("no sparse tensors"), e.getMessage());
        }
        var e = assertThrows(UnsupportedOperationException.class, () -> new Embedding(5, 2, F.Embedding.options().sparse(true)));
        assertTrue(e.getMessage().startsWith("Embedding: sparse=True"), e.getMessage());
    }
}
