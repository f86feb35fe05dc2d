package org.jtorch.vision.models;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.Module;
import org.jtorch.testing.FinalModuleFields;
import org.junit.jupiter.api.Test;

/** The model zoo copies with {@link Module#deepCopy()}: no model keeps a child in a final field (JEP 500; see DeepCopyFieldsTest). */
class ModelsDeepCopyTest {

    @Test
    void noModelKeepsAChildInAFinalField() throws Exception {
        int[] modules = {0};
        List<String> offenders = FinalModuleFields.find(FinalModuleFields.classFolder(LeNet5.class), modules);
        assertTrue(modules[0] >= 5, "found the models (" + modules[0] + ")");
        assertEquals(List.of(), offenders);
    }

    @Test
    void aCopiedResNetComputesWhatTheOriginalDoesWithItsOwnWeights() {
        Torch.manualSeed(1);
        try (CifarResNet original = CifarResNet.resnet20(10); Tensor x = Torch.randn(2, 3, 32, 32)) {
            original.eval();
            try (Module copy = original.deepCopy(); Grad.Mode g = Grad.noGrad()) {
                assertArrayEquals(original.forward(x).toFloatArray(), copy.forward(x).toFloatArray());
                copy.parameters().forEach(p -> p.fill_(0.0));
                assertTrue(java.util.Arrays.stream(toDoubles(original.forward(x))).anyMatch(v -> v != 0), "the original keeps its weights");
            }
        }
    }

    private static double[] toDoubles(Tensor t) {
        return t.toDoubleArray();
    }
}
