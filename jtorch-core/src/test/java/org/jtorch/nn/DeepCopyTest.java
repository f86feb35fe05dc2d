package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.Test;

/** {@link Module#deepCopy()}, as Python's {@code copy.deepcopy(module)}. */
class DeepCopyTest {
    private static Sequential net() {
        Torch.manualSeed(0);
        return new Sequential(new Linear(4, 8), new BatchNorm1d(8), new ReLU(), new Dropout(0.5), new Linear(8, 2));
    }

    @Test
    void theCopyHasEqualValuesInItsOwnStorage() {
        Sequential original = net();
        Sequential copy = Module.deepCopy(original);
        assertNotSame(original, copy);
        assertEquals(original.toString(), copy.toString());
        Map<String, Tensor> a = original.stateDict();
        Map<String, Tensor> b = copy.stateDict();
        assertEquals(a.keySet(), b.keySet());
        for (String k : a.keySet()) {
            Fixtures.assertClose(a.get(k), b.get(k), 0, 0, k);
            assertNotSame(a.get(k).storage(), b.get(k).storage(), k + " has its own storage");
        }
        try (Grad.Mode g = Grad.noGrad()) {
            copy.get(0).parameter("weight").fill_(3.0);
            copy.get(1).buffer("running_mean").fill_(5.0);
        }
        assertFalse(original.get(0).parameter("weight").toDoubleArray()[0] == 3.0, "the original's weight is untouched");
        assertEquals(0.0, original.get(1).buffer("running_mean").toDoubleArray()[0], "the original's statistics are untouched");
    }

    @Test
    void trainingFlagsRequiresGradGradientsAndPersistenceAreCopied() {
        Sequential original = net();
        original.get(4).eval();
        original.get(0).parameter("bias").requiresGrad_(false);
        try (Tensor x = Torch.randn(3, 4)) {
            original.forward(x).sum().backward();
        }
        original.get(1).registerBuffer("scratch", Torch.ones(2), false);
        Sequential copy = Module.deepCopy(original);
        assertTrue(copy.isTraining());
        assertFalse(copy.get(4).isTraining(), "a submodule's own flag");
        assertFalse(copy.get(0).parameter("bias").requiresGrad(), "a frozen parameter stays frozen");
        assertTrue(copy.get(0).parameter("weight").requiresGrad());
        assertTrue(copy.get(0).parameter("weight").isLeaf());
        Tensor g = original.get(4).parameter("weight").grad();
        Tensor gc = copy.get(4).parameter("weight").grad();
        Fixtures.assertClose(g, gc, 0, 0, ".grad copied, as Tensor.__deepcopy__");
        assertNotSame(g.storage(), gc.storage());
        assertFalse(copy.stateDict().containsKey("1.scratch"), "a non-persistent buffer stays out of the state dict");
        assertTrue(copy.namedBuffers().containsKey("1.scratch"));
    }

    @Test
    void whatIsSharedStaysSharedInTheCopy() {
        Linear tied = new Linear(3, 3);
        Sequential original = new Sequential(tied, new ReLU(), tied);
        Module copy = original.deepCopy();
        assertSame(copy.child("0"), copy.child("2"), "a module registered twice is copied once");
        assertNotSame(tied, copy.child("0"));
        assertEquals(2, copy.parameters().size());
    }

    @Test
    void subclassFieldsPointToTheCopiedChildren() {
        // TransformerEncoderLayer reads its sublayers through fields; they must be the copy's, not the original's.
        Torch.manualSeed(1);
        TransformerEncoderLayer original = new TransformerEncoderLayer(8, 2, TransformerEncoderLayer.options().dimFeedforward(16).dropout(0));
        TransformerEncoderLayer copy = Module.deepCopy(original);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor src = Torch.randn(5, 2, 8);
            Tensor before = original.forward(src);
            Fixtures.assertClose(before, copy.forward(src), 0, 0, "the copy computes what the original does");
            try (Grad.Mode g = Grad.noGrad()) {
                copy.child("linear1").parameter("weight").zero_();
                ((MultiheadAttention) copy.child("self_attn")).outProj().parameter("weight").zero_();
            }
            Fixtures.assertClose(before, original.forward(src), 0, 0, "changing the copy leaves the original as it was");
            assertFalse(java.util.Arrays.equals(before.toDoubleArray(), copy.forward(src).toDoubleArray()),
                    "the copy's forward reads the copy's (changed) sublayers");
            assertSame(copy.selfAttn(), copy.child("self_attn"));
        }
    }

    @Test
    void aCopiedChainRunsItsCopiedSteps() {
        Torch.manualSeed(2);
        LSTM lstm = new LSTM(3, 4);
        Sequential.Chain<LSTM.Input, Tensor> chain = Sequential.of(lstm).map(LSTM.Output::output).then(new Linear(4, 2));
        Sequential.Chain<LSTM.Input, Tensor> copy = Module.deepCopy(chain);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(5, 2, 3);
            Tensor before = chain.forward(new LSTM.Input(x));
            try (Grad.Mode g = Grad.noGrad()) {
                copy.child("2").parameter("bias").fill_(100.0);
            }
            Fixtures.assertClose(before, chain.forward(new LSTM.Input(x)), 0, 0, "the original chain is unchanged");
            assertTrue(copy.forward(new LSTM.Input(x)).toDoubleArray()[0] > 50, "the copy runs its own head");
        }
    }

    @Test
    void theCopyOutlivesTheScopeItWasMadeIn() {
        Sequential original = net();
        Sequential copy;
        try (MemoryScope scope = new MemoryScope()) {
            copy = Module.deepCopy(original);
        }
        for (Tensor p : copy.parameters()) p.checkOpen("copy after the scope");
        for (Tensor b : copy.buffers()) b.checkOpen("copy after the scope");
        copy.close();
        for (Tensor p : original.parameters()) p.checkOpen("the original after closing the copy");
    }

    @Test
    void anAbsentParameterStaysAbsent() {
        Linear noBias = new Linear(3, 2, false);
        Module copy = noBias.deepCopy();
        assertNull(copy.parameter("bias"));
        assertEquals(List.of("weight"), List.copyOf(copy.stateDict().keySet()));
        assertArrayEquals(noBias.parameter("weight").shape(), copy.parameter("weight").shape());
    }
}
