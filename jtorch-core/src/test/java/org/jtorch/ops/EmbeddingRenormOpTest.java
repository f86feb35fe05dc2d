package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.nn.F;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code embedding_renorm_} as a declared front end ({@link FrontEndOps#EMBEDDING_RENORM_}), called by its own signature
 * through the dispatcher against PyTorch 1.13 ({@code tools/fixtures/gen_embedding_renorm.py}: the weight after the call),
 * and reached from {@code F.embedding} with {@code maxNorm}.
 */
@ExtendWith(ScopePerTest.class)
class EmbeddingRenormOpTest {
    private static final List<Case> CASES = Fixtures.load("embedding_renorm");

    @Test
    void calledByItsSignatureItScalesTheNamedRowsAsPyTorchInPlace() {
        int checked = 0;
        for (Case c : CASES) {
            if (c.expectsError()) continue;
            Tensor weight = c.input(0).clone();
            Tensor returned = Dispatcher.call(FrontEndOps.EMBEDDING_RENORM_, new Tensor[] {weight, c.input(1)}, c.doubleArg("max_norm", 0),
                    c.doubleArg("norm_type", 2));
            assertTrue(returned.storage() == weight.storage(), c + ": returns self");
            double tol = weight.dtype() == DType.FLOAT64 ? 1e-12 : 1e-6;
            Fixtures.assertMatches(c.expectedTensor(), weight, tol, tol, c.toString());
            checked++;
        }
        assertEquals(7, checked);
    }

    @Test
    void badArgumentsAreRefusedNamingTheOpShapesDtypesAndDevices() {
        int checked = 0;
        for (Case c : CASES) {
            if (!c.expectsError()) continue;
            Tensor weight = c.input(0).clone(), indices = c.input(1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(FrontEndOps.EMBEDDING_RENORM_, new Tensor[] {weight, indices}, 1.0, 2.0), c.toString());
            String m = e.getMessage();
            for (Tensor t : List.of(weight, indices)) {
                assertTrue(m.startsWith("embedding_renorm_: ") && m.contains(Shapes.format(t.shape())) && m.contains(t.dtype().toString())
                        && m.contains(t.device().toString()), m);
            }
            checked++;
        }
        assertEquals(2, checked);
    }

    /** F.embedding with maxNorm renormalises the looked-up rows first (under no-grad) through the op; the trace sees its parts. */
    @Test
    void fsEmbeddingWithMaxNormReachesTheOp() {
        OpDef op = FrontEndOps.EMBEDDING_RENORM_;
        assertFalse(op.isDifferentiable());
        assertNull(op.autocast(Device.Type.CPU));
        assertNull(op.autocast(Device.Type.CUDA));
        Case c = CASES.get(0);
        Tensor weight = c.input(0).clone().requiresGrad_(true);
        Tensor out = F.embedding(c.input(1), weight, F.Embedding.options().maxNorm(c.doubleArg("max_norm", 0)));
        Fixtures.assertMatches(c.expectedTensor(), weight.detach(), 1e-6, 1e-6, "weight after F.embedding");
        assertArrayEquals(weight.detach().indexSelect(0, c.input(1).reshape(-1)).reshape(out.shape()).toFloatArray(), out.toFloatArray(), 0f);
        Tensor again = c.input(0).clone();
        List<String> ops = traced(() -> F.embedding(c.input(1), again, F.Embedding.options().maxNorm(1.5)));
        assertFalse(ops.contains("embedding_renorm_"), ops.toString());
        assertTrue(ops.contains("embedding"), ops.toString());
    }
}
