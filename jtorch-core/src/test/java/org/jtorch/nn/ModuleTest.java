package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/** Module registration, traversal order and names, modes, conversion and state dicts, as torch.nn.Module (PyTorch 1.13). */
class ModuleTest {

    /** A module with a parameter, a persistent and a non-persistent buffer, and a Sequential child, like a small PyTorch model. */
    static final class Net extends Module {
        Net() {
            registerParameter("scale", Torch.ones(2));
            registerBuffer("steps", Torch.zeros(1), true);
            registerBuffer("cache", Torch.zeros(3), false);
            registerModule("layers", new Sequential(new Linear(4, 3), new ReLU(), new Linear(3, 2, false)));
        }

        @Override
        public Tensor forward(Tensor x) {
            return ((Sequential) child("layers")).forward(x);
        }
    }

    @Test
    void namedParametersUseDottedPathsInRegistrationOrder() {
        try (Net net = new Net()) {
            assertEquals(List.of("scale", "layers.0.weight", "layers.0.bias", "layers.2.weight"),
                    new ArrayList<>(net.namedParameters().keySet()));
            for (Tensor p : net.parameters()) assertTrue(p.requiresGrad());
        }
    }

    @Test
    void stateDictHoldsParametersThenPersistentBuffersPerModule() {
        try (Net net = new Net()) {
            Map<String, Tensor> sd = net.stateDict();
            assertEquals(List.of("scale", "steps", "layers.0.weight", "layers.0.bias", "layers.2.weight"), new ArrayList<>(sd.keySet()));
            assertEquals(List.of("steps", "cache"), new ArrayList<>(net.namedBuffers().keySet()));
            for (Tensor t : sd.values()) {
                assertFalse(t.requiresGrad(), "state dict tensors are detached");
                t.close();
            }
            assertFalse(net.parameters().get(0).isClosed(), "closing state dict entries leaves the module's tensors open");
        }
    }

    @Test
    void stateDictAliasesTheModuleStorage() {
        try (Linear l = new Linear(2, 2)) {
            Map<String, Tensor> sd = l.stateDict();
            sd.get("bias").fill_(7.0);
            assertArrayEquals(new double[] {7, 7}, l.bias().toDoubleArray());
            sd.values().forEach(Tensor::close);
        }
    }

    @Test
    void modulesAndChildrenArePreOrder() {
        try (Net net = new Net()) {
            assertEquals(List.of("", "layers", "layers.0", "layers.1", "layers.2"), new ArrayList<>(net.namedModules().keySet()));
            assertEquals(List.of("layers"), new ArrayList<>(net.namedChildren().keySet()));
            assertEquals(5, net.modules().size());
        }
    }

    @Test
    void applyVisitsChildrenBeforeParents() {
        try (Net net = new Net()) {
            List<String> order = new ArrayList<>();
            net.apply(m -> order.add(m.getClass().getSimpleName()));
            assertEquals(List.of("Linear", "ReLU", "Linear", "Sequential", "Net"), order);
        }
    }

    @Test
    void sharedParametersAppearOnce() {
        Linear shared = new Linear(2, 2);
        try (Sequential s = new Sequential(shared, shared)) {
            assertEquals(List.of("0.weight", "0.bias"), new ArrayList<>(s.namedParameters().keySet()));
        }
    }

    @Test
    void trainAndEvalPropagateToDescendants() {
        try (Net net = new Net()) {
            net.eval();
            for (Module m : net.modules()) assertFalse(m.isTraining());
            net.train();
            for (Module m : net.modules()) assertTrue(m.isTraining());
        }
    }

    @Test
    void registrationRejectsBadAndDuplicateNames() {
        try (Net net = new Net()) {
            assertThrows(IllegalArgumentException.class, () -> net.registerParameter("a.b", Torch.ones(1)));
            assertThrows(IllegalArgumentException.class, () -> net.registerParameter("", Torch.ones(1)));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> net.registerBuffer("scale", Torch.ones(1)));
            assertTrue(e.getMessage().contains("attribute 'scale' already exists"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> net.registerParameter("idx", Torch.tensor(1L, 2L)));
        }
    }

    @Test
    void absentParametersAreSkipped() {
        try (Linear l = new Linear(3, 2, false)) {
            assertNull(l.bias());
            assertEquals(List.of("weight"), new ArrayList<>(l.namedParameters().keySet()));
            assertEquals("Linear(in_features=3, out_features=2, bias=False)", l.toString());
        }
    }

    @Test
    void toDtypeReplacesTensorsKeepingRequiresGradAndClosesOldOnes() {
        try (Net net = new Net()) {
            Tensor oldWeight = net.namedParameters().get("layers.0.weight");
            double[] values = oldWeight.toDoubleArray();
            net.namedParameters().get("scale").requiresGrad_(false);
            net.to(DType.FLOAT64);
            Tensor newWeight = net.namedParameters().get("layers.0.weight");
            assertNotSame(oldWeight, newWeight);
            assertTrue(oldWeight.isClosed());
            assertEquals(DType.FLOAT64, newWeight.dtype());
            assertTrue(newWeight.requiresGrad());
            assertFalse(net.namedParameters().get("scale").requiresGrad());
            assertArrayEquals(values, newWeight.toDoubleArray(), 1e-7);
            assertEquals(DType.FLOAT64, net.namedBuffers().get("cache").dtype());
            assertThrows(IllegalArgumentException.class, () -> net.to(DType.INT32));
        }
    }

    @Test
    void toTheDeviceOrDtypeItIsAlreadyOnKeepsTheParametersSoTheyStillTrain() {
        try (Linear l = new Linear(3, 2)) {
            Tensor weight = l.weight();
            l.to(Device.cpu());
            l.to(DType.FLOAT32);
            assertSame(weight, l.weight(), "no copy was needed, so the parameter stays the same autograd leaf");
            assertFalse(weight.isClosed());
            try (Tensor x = Torch.ones(4, 3); Tensor loss = l.forward(x).sum()) {
                loss.backward();
            }
            assertNotNull(l.weight().grad(), "gradients reach the parameter after to()");
        }
    }

    @Test
    void zeroGradReleasesGradients() {
        try (Linear l = new Linear(2, 2)) {
            Tensor g = Torch.ones(2, 2);
            l.weight().setGrad(g);
            l.zeroGrad();
            assertNull(l.weight().grad());
            assertTrue(g.isClosed());
        }
    }

    @Test
    void loadStateDictCopiesValuesAndReportsKeys() {
        try (Linear a = new Linear(3, 2); Linear b = new Linear(3, 2)) {
            Map<String, Tensor> sd = a.stateDict();
            Module.LoadResult r = b.loadStateDict(sd, true);
            assertEquals(List.of(), r.missingKeys());
            assertEquals(List.of(), r.unexpectedKeys());
            assertArrayEquals(a.weight().toDoubleArray(), b.weight().toDoubleArray());
            assertTrue(b.weight().requiresGrad(), "loading keeps the parameter a trainable leaf");
            sd.values().forEach(Tensor::close);
        }
    }

    @Test
    void strictLoadNamesMissingAndUnexpectedKeys() {
        try (Linear l = new Linear(3, 2); Tensor w = Torch.zeros(2, 3); Tensor extra = Torch.zeros(1)) {
            Map<String, Tensor> sd = new LinkedHashMap<>();
            sd.put("weight", w);
            sd.put("foo", extra);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.loadStateDict(sd, true));
            assertEquals("loadStateDict: Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\".\n"
                    + "\tUnexpected key(s) in state_dict: \"foo\".", e.getMessage());
            assertFalse(l.weight().toDoubleArray()[0] == 0 && l.weight().toDoubleArray()[1] == 0, "nothing is copied on error");
            Module.LoadResult r = l.loadStateDict(sd, false);
            assertEquals(List.of("bias"), r.missingKeys());
            assertEquals(List.of("foo"), r.unexpectedKeys());
            assertArrayEquals(new double[6], l.weight().toDoubleArray());
        }
    }

    @Test
    void sizeMismatchFailsEvenWhenNotStrict() {
        try (Sequential s = new Sequential(new Linear(4, 10)); Tensor w = Torch.zeros(10, 5); Tensor b = Torch.zeros(10)) {
            Map<String, Tensor> sd = Map.of("0.weight", w, "0.bias", b);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.loadStateDict(sd, false));
            assertTrue(e.getMessage().contains("size mismatch for 0.weight: copying a param with shape [10, 5] from checkpoint, "
                    + "the shape in current model is [10, 4]."), e.getMessage());
        }
    }

    @Test
    void closeReleasesEveryParameterAndBuffer() {
        Net net = new Net();
        List<Tensor> all = new ArrayList<>(net.parameters());
        all.addAll(net.buffers());
        net.close();
        for (Tensor t : all) assertTrue(t.isClosed());
    }

    @Test
    void sequentialChainsAndIndexes() {
        try (Sequential s = new Sequential(new Identity(), new ReLU()); Tensor x = Torch.tensor(-1f, 2f); Tensor y = s.forward(x)) {
            assertArrayEquals(new float[] {0f, 2f}, y.toFloatArray());
            assertSame(s.get(-1), s.get(1));
            assertThrows(IndexOutOfBoundsException.class, () -> s.get(2));
        }
    }

    @Test
    void moduleListAndDictRegisterChildren() {
        try (ModuleList list = new ModuleList(new Linear(2, 2), new Linear(2, 1));
             ModuleDict dict = new ModuleDict().put("enc", new Linear(2, 2)).put("act", new ReLU())) {
            assertEquals(List.of("0.weight", "0.bias", "1.weight", "1.bias"), new ArrayList<>(list.namedParameters().keySet()));
            assertEquals(List.of("enc.weight", "enc.bias"), new ArrayList<>(dict.namedParameters().keySet()));
            assertTrue(dict.get("act") instanceof ReLU);
            assertThrows(UnsupportedOperationException.class, () -> list.forward(null));
        }
    }

    @Test
    void toStringFollowsPyTorchRepr() {
        try (Sequential s = new Sequential(new Linear(4, 3), new ReLU())) {
            assertEquals("Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n  (1): ReLU()\n)", s.toString());
        }
    }

    @Test
    void multiheadAttentionUsesPyTorchKeyNames() {
        try (MultiheadAttention m = new MultiheadAttention(8, 2)) {
            assertEquals(List.of("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"),
                    new ArrayList<>(m.namedParameters().keySet()));
        }
    }
}
