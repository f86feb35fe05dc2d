package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The TF32 switch: off by default as PyTorch's {@code torch.backends.cuda.matmul.allow_tf32} (since 1.12); settable and restorable. */
class MatmulSettingsTest {
    @Test
    void tf32IsOffByDefaultAndSettable() {
        assertFalse(MatmulSettings.allowTf32());
        boolean previous = MatmulSettings.setAllowTf32(true);
        try {
            assertFalse(previous);
            assertTrue(MatmulSettings.allowTf32());
        } finally {
            MatmulSettings.setAllowTf32(previous);
        }
        assertFalse(MatmulSettings.allowTf32());
    }
}
