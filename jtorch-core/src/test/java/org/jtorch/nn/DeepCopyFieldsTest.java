package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.FinalModuleFields;
import org.junit.jupiter.api.Test;

/**
 * {@link Module#deepCopy()} never writes a final field (JEP 500 makes final fields final against deep reflection too):
 * every module field it points at the copies is non-final, and a module that keeps a child or tensor in a final field is
 * refused with a message naming the field rather than mutated.
 */
class DeepCopyFieldsTest {

    @Test
    void noModuleOfJtorchKeepsAChildOrTensorInAFinalField() throws Exception {
        int[] modules = {0};
        List<String> offenders = FinalModuleFields.find(FinalModuleFields.classFolder(Module.class), modules);
        assertTrue(modules[0] > 50, "found the modules (" + modules[0] + ")");
        assertEquals(List.of(), offenders, "final fields that deepCopy would have to write");
    }

    /** A user's module written the usual Java way, its child in a final field. */
    static final class FinalChild extends Module {
        private final Linear linear = registerModule("linear", new Linear(2, 2));

        @Override
        public Tensor forward(Tensor input) {
            return linear.forward(input);
        }
    }

    /** The same module with the field deepCopy may point at the copy. */
    static final class PlainChild extends Module {
        private Linear linear = registerModule("linear", new Linear(2, 2));

        @Override
        public Tensor forward(Tensor input) {
            return linear.forward(input);
        }
    }

    @Test
    void aFinalFieldHoldingAChildIsRefusedNamingIt() {
        try (FinalChild m = new FinalChild()) {
            var e = assertThrows(UnsupportedOperationException.class, m::deepCopy);
            assertTrue(e.getMessage().contains("FinalChild.linear") && e.getMessage().contains("final"), e.getMessage());
        }
    }

    @Test
    void aNonFinalFieldPointsAtTheCopysChild() {
        try (PlainChild m = new PlainChild(); PlainChild copy = Module.deepCopy(m); Tensor x = Torch.randn(3, 2)) {
            assertNotSame(m.linear, copy.linear);
            assertSame(copy.child("linear"), copy.linear, "the field and the registered child are one module");
            assertEquals(java.util.Arrays.toString(m.forward(x).toDoubleArray()), java.util.Arrays.toString(copy.forward(x).toDoubleArray()));
        }
    }
}
