package org.jtorch.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.examples.mnist.MnistExample;
import org.jtorch.testing.FinalModuleFields;
import org.junit.jupiter.api.Test;

/** The examples' models, written as users copy them, keep no child in a final field: Module.deepCopy works on them (JEP 500). */
class ExampleModelsDeepCopyTest {

    @Test
    void noExampleModelKeepsAChildInAFinalField() throws Exception {
        int[] modules = {0};
        List<String> offenders = FinalModuleFields.find(FinalModuleFields.classFolder(MnistExample.class), modules);
        assertTrue(modules[0] >= 8, "found the models (" + modules[0] + ")");
        assertEquals(List.of(), offenders);
    }
}
