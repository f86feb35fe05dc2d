package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** Dropout's train/eval behaviour: kept elements scaled by 1/(1-p), a fraction p zeroed (binomial bounds), identity in eval. */
class DropoutTest {

    @Test
    void trainingZeroesAboutPAndScalesTheRest() {
        int n = 20000;
        double p = 0.3;
        try (Dropout d = new Dropout(p, new Generator(1)); Tensor x = Torch.ones(n); Tensor y = d.forward(x)) {
            int zeros = 0;
            for (float v : y.toFloatArray()) {
                if (v == 0) zeros++;
                else assertEquals(1 / (1 - p), v, 1e-6);
            }
            // Binomial(n, p): std = sqrt(n p (1-p)) ~ 65; allow 5 sigma.
            assertEquals(n * p, zeros, 5 * Math.sqrt(n * p * (1 - p)));
        }
    }

    @Test
    void evalIsTheIdentity() {
        try (Dropout d = new Dropout(0.5); Tensor x = Torch.tensor(1f, 2f, 3f)) {
            d.eval();
            try (Tensor y = d.forward(x)) {
                assertArrayEquals(x.toFloatArray(), y.toFloatArray());
            }
        }
    }

    @Test
    void pOneZeroesEverythingAndPZeroKeepsEverything() {
        try (Tensor x = Torch.tensor(1f, -2f); Tensor all = F.dropout(x, 1.0, true); Tensor none = F.dropout(x, 0.0, true)) {
            assertArrayEquals(new float[] {0f, -0f}, all.toFloatArray());
            assertArrayEquals(x.toFloatArray(), none.toFloatArray());
        }
    }

    @Test
    void sameSeedSameMask() {
        try (Tensor x = Torch.ones(64); Tensor a = F.dropout(x, 0.5, true, new Generator(7)); Tensor b = F.dropout(x, 0.5, true, new Generator(7))) {
            assertArrayEquals(a.toFloatArray(), b.toFloatArray());
        }
    }

    @Test
    void rejectsProbabilitiesOutsideZeroOne() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Dropout(1.5));
        assertTrue(e.getMessage().contains("dropout probability has to be between 0 and 1"));
        try (Tensor x = Torch.ones(2)) {
            assertThrows(IllegalArgumentException.class, () -> F.dropout(x, -0.1, true));
        }
    }
}
