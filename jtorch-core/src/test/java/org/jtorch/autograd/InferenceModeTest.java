package org.jtorch.autograd;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/** Inference mode, as torch.inference_mode: no graph, and its tensors never join one. */
class InferenceModeTest {

    @Test
    void opsInsideRecordNoGraphAndMarkTheirResults() {
        Tensor w = Torch.randn(3).requiresGrad_();
        Tensor y;
        try (Grad.Mode m = Grad.inferenceMode()) {
            assertFalse(Grad.isEnabled());
            y = w.mul(2.0);
        }
        assertFalse(y.requiresGrad());
        assertTrue(y.isInference());
        assertTrue(Grad.isEnabled(), "the previous mode is restored");
    }

    @Test
    void inferenceTensorsCannotRequireGradOrBeSavedForBackward() {
        Tensor x;
        try (Grad.Mode m = Grad.inferenceMode()) {
            x = Torch.randn(3);
        }
        assertThrows(IllegalStateException.class, x::requiresGrad_);
        Tensor w = Torch.randn(3).requiresGrad_();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.mul(x));
        assertTrue(e.getMessage().contains("Inference tensors cannot be saved for backward"), e.getMessage());
        Tensor copy = x.clone();
        assertFalse(copy.isInference());
        w.mul(copy).sum().backward();
        assertTrue(w.grad() != null);
    }
}
