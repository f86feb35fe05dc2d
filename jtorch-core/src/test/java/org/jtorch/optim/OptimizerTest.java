package org.jtorch.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** Optimizer behaviour beyond the update rules: options, groups, zeroGrad, state dicts, ownership, and fused-kernel agreement. */
class OptimizerTest {

    private static Tensor param(float... values) {
        return Torch.tensor(values).requiresGrad_(true);
    }

    @Test
    void invalidOptionsFailWithPyTorchsMessages() {
        Tensor p = param(1f);
        assertMessage("Invalid learning rate: -1.0", () -> new SGD(List.of(p), SGD.options().lr(-1)));
        assertMessage("Invalid momentum value: -0.5", () -> new SGD(List.of(p), SGD.options().lr(0.1).momentum(-0.5)));
        assertMessage("Nesterov momentum requires a momentum and zero dampening",
                () -> new SGD(List.of(p), SGD.options().lr(0.1).nesterov(true)));
        assertMessage("Invalid beta parameter at index 1: 1.0", () -> new Adam(List.of(p), Adam.options().betas(0.9, 1.0)));
        assertMessage("Invalid epsilon value: -1.0E-8", () -> new AdamW(List.of(p), AdamW.options().eps(-1e-8)));
        assertMessage("Invalid rho value: 1.5", () -> new Adadelta(List.of(p), Adadelta.options().rho(1.5)));
        assertMessage("Invalid alpha value: -0.1", () -> new RMSprop(List.of(p), RMSprop.options().alpha(-0.1)));
        assertMessage("Invalid lr_decay value: -1.0", () -> new Adagrad(List.of(p), Adagrad.options().lrDecay(-1)));
        assertMessage("required optimization parameter lr", () -> new SGD(List.of(p), SGD.options()));
        assertMessage("empty parameter list", () -> new Adam(new ArrayList<Tensor>(), Adam.options()));
        assertMessage("unknown option 'momentum'", () -> Adam.options().set("momentum", 0.9));
        p.close();
    }

    @Test
    void groupsTakeTheDefaultsTheyDoNotOverride() {
        Tensor a = param(1f);
        Tensor b = param(2f);
        try (SGD opt = new SGD(List.of(ParamGroup.of(List.of(a)), ParamGroup.of(List.of(b), SGD.options().lr(0.01))),
                SGD.options().lr(0.1).momentum(0.9))) {
            assertEquals(0.1, opt.paramGroups().get(0).lr());
            assertEquals(0.01, opt.paramGroups().get(1).lr());
            assertEquals(0.9, opt.paramGroups().get(1).getDouble("momentum"));
            assertEquals(false, opt.paramGroups().get(1).getBoolean("nesterov"));
        }
        a.close();
        b.close();
    }

    @Test
    void aParameterMayBelongToOneGroupOnly() {
        Tensor a = param(1f);
        try (SGD opt = new SGD(List.of(a), SGD.options().lr(0.1))) {
            assertMessage("some parameters appear in more than one parameter group", () -> opt.addParamGroup(ParamGroup.of(List.of(a))));
            Tensor b = param(3f);
            opt.addParamGroup(ParamGroup.of(List.of(b), SGD.options().momentum(0.5)));
            assertEquals(2, opt.paramGroups().size());
            assertEquals(0.1, opt.paramGroups().get(1).lr());
            b.close();
        }
        a.close();
    }

    @Test
    void nonLeafTensorsCannotBeOptimized() {
        Tensor a = param(1f, 2f);
        Tensor b = org.jtorch.autograd.Autograd.record("test_op", Torch.tensor(2f, 4f), grads -> grads, new Tensor[] {a});
        assertFalse(b.isLeaf());
        assertMessage("SGD: can't optimize a non-leaf Tensor", () -> new SGD(List.of(b), SGD.options().lr(0.1)));
        a.close();
        b.close();
    }

    @Test
    void zeroGradReleasesGradientsByDefaultAndZeroesThemInPlaceOnRequest() {
        Tensor p = param(1f, 2f);
        try (SGD opt = new SGD(List.of(p), SGD.options().lr(0.1))) {
            Tensor g = Torch.tensor(3f, 4f);
            p.setGrad(g);
            opt.zeroGrad(false);
            assertArrayEquals(new float[] {0f, 0f}, p.grad().toFloatArray());
            opt.zeroGrad();
            assertNull(p.grad());
            assertTrue(g.isClosed(), "the released gradient is closed");
        }
        p.close();
    }

    @Test
    void parametersWithoutGradientAreSkippedAndGetNoState() {
        Tensor a = param(1f);
        Tensor b = param(2f);
        try (Adam opt = new Adam(List.of(a, b), Adam.options().lr(0.1))) {
            a.setGrad(Torch.tensor(1f));
            opt.step();
            assertEquals(2f, b.toFloatArray()[0]);
            assertTrue(opt.state(b).isEmpty());
            assertEquals(1.0, ((Tensor) opt.state(a).get("step")).item());
            opt.zeroGrad();
        }
        a.close();
        b.close();
    }

    @Test
    void stateDictHasPyTorchsStructureAndIsADeepCopy() {
        Tensor a = param(1f, 2f);
        Tensor b = param(3f);
        try (SGD opt = new SGD(List.of(ParamGroup.of(List.of(a)), ParamGroup.of(List.of(b), SGD.options().lr(0.5))),
                SGD.options().lr(0.1).momentum(0.9))) {
            a.setGrad(Torch.tensor(1f, 1f));
            opt.step();
            Map<String, Object> sd = opt.stateDict();
            @SuppressWarnings("unchecked")
            Map<Integer, Map<String, Object>> state = (Map<Integer, Map<String, Object>>) sd.get("state");
            assertEquals(List.of(0), new ArrayList<>(state.keySet()), "only the parameter that stepped has state");
            Tensor buf = (Tensor) state.get(0).get("momentum_buffer");
            assertNotSame(opt.state(a).get("momentum_buffer"), buf);
            assertArrayEquals(new float[] {1f, 1f}, buf.toFloatArray());
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> groups = (List<Map<String, Object>>) sd.get("param_groups");
            assertEquals(List.of(0), groups.get(0).get("params"));
            assertEquals(List.of(1), groups.get(1).get("params"));
            assertEquals(0.5, groups.get(1).get("lr"));
            assertEquals(0.9, groups.get(1).get("momentum"));
            buf.fill_(7.0);
            assertArrayEquals(new float[] {1f, 1f}, ((Tensor) opt.state(a).get("momentum_buffer")).toFloatArray());
            Optimizer.closeStateDict(sd);
            assertTrue(buf.isClosed());
            opt.zeroGrad();
        }
        a.close();
        b.close();
    }

    @Test
    void loadingAMismatchedStateDictNamesTheProblemAndChangesNothing() {
        Tensor a = param(1f, 2f);
        Tensor b = param(3f);
        Tensor c = param(4f, 5f, 6f);
        try (Adam one = new Adam(List.of(a, b), Adam.options());
             Adam two = new Adam(List.of(ParamGroup.of(List.of(a)), ParamGroup.of(List.of(b))), Adam.options());
             Adam shapes = new Adam(List.of(c, b), Adam.options())) {
            a.setGrad(Torch.tensor(1f, 1f));
            one.step();
            Map<String, Object> sd = one.stateDict();
            assertMessage("different number of parameter groups (1, the optimizer has 2)", () -> two.loadStateDict(sd));
            assertMessage("state 'exp_avg' of parameter 0 has shape [2] but the parameter has shape [3]", () -> shapes.loadStateDict(sd));
            assertTrue(shapes.state(c).isEmpty());
            assertMessage("has no 'param_groups' (expected a list)", () -> one.loadStateDict(Map.of("state", Map.of())));
            Optimizer.closeStateDict(sd);
            one.zeroGrad();
        }
        for (Tensor t : List.of(a, b, c)) t.close();
    }

    @Test
    void loadingTheStateOfAnotherOptimizerFailsClearly() {
        Tensor a = param(1f, 2f);
        try (SGD sgd = new SGD(List.of(a), SGD.options().lr(0.1).momentum(0.9)); Adam adam = new Adam(List.of(a), Adam.options())) {
            a.setGrad(Torch.tensor(1f, 1f));
            sgd.step();
            Map<String, Object> sd = sgd.stateDict();
            assertMessage("Adam.loadStateDict: parameter group 0 has no option 'betas'", () -> adam.loadStateDict(sd));
            // Options present but state of the wrong kind: the next step names the missing state.
            @SuppressWarnings("unchecked")
            Map<String, Object> group = ((List<Map<String, Object>>) sd.get("param_groups")).get(0);
            group.putAll(adam.paramGroups().get(0).options());
            adam.loadStateDict(sd);
            Optimizer.closeStateDict(sd);
            IllegalStateException e = assertThrows(IllegalStateException.class, adam::step);
            assertTrue(e.getMessage().contains("Adam") && e.getMessage().contains("exp_avg"), e.getMessage());
            sgd.zeroGrad();
        }
        a.close();
    }

    @Test
    void loadedStateIsCastToTheParameterDtype() {
        Tensor a32 = param(1f, 2f);
        Tensor a64 = Torch.tensor(new double[] {1, 2}).requiresGrad_(true);
        try (SGD src = new SGD(List.of(a32), SGD.options().lr(0.1).momentum(0.9));
             SGD dst = new SGD(List.of(a64), SGD.options().lr(0.1).momentum(0.9))) {
            a32.setGrad(Torch.tensor(0.5f, 0.25f));
            src.step();
            Map<String, Object> sd = src.stateDict();
            dst.loadStateDict(sd);
            Optimizer.closeStateDict(sd);
            assertEquals(DType.FLOAT64, ((Tensor) dst.state(a64).get("momentum_buffer")).dtype());
            src.zeroGrad();
        }
        a32.close();
        a64.close();
    }

    @Test
    void stateSurvivesTheMemoryScopeItWasCreatedIn() {
        Tensor p = param(1f, 2f, 3f);
        try (Adam opt = new Adam(List.of(p), Adam.options())) {
            try (MemoryScope scope = new MemoryScope()) {
                p.setGrad(Torch.tensor(1f, 1f, 1f));
                opt.step();
                opt.zeroGrad();
            }
            Tensor expAvg = (Tensor) opt.state(p).get("exp_avg");
            assertFalse(expAvg.isClosed());
            assertArrayEquals(new float[] {0.1f, 0.1f, 0.1f}, expAvg.toFloatArray(), 1e-7f);
            opt.close();
            assertTrue(expAvg.isClosed(), "close() releases the state");
        }
        p.close();
    }

    @Test
    void stepWithClosureReturnsTheLoss() {
        Tensor p = param(2f);
        try (SGD opt = new SGD(List.of(p), SGD.options().lr(0.5))) {
            Tensor loss = opt.step(() -> {
                p.setGrad(Torch.tensor(4f));
                return Torch.tensor(4f);
            });
            assertEquals(4f, loss.toFloatArray()[0]);
            assertEquals(0f, p.toFloatArray()[0]);
            loss.close();
            opt.zeroGrad();
        }
        p.close();
    }

    /** The fused float32 kernels and the composed tensor ops agree on tensors that exercise vector bodies, tails and the parallel split. */
    @Test
    void fusedKernelsAgreeWithComposedOps() {
        List<java.util.function.Function<List<Tensor>, Optimizer>> makers = List.of(
                ps -> new SGD(ps, SGD.options().lr(0.1).momentum(0.9).nesterov(true).weightDecay(0.01)),
                ps -> new SGD(ps, SGD.options().lr(0.1).momentum(0.8).dampening(0.2).maximize(true)),
                ps -> new SGD(ps, SGD.options().lr(0.1)),
                ps -> new Adam(ps, Adam.options().lr(0.01).weightDecay(0.1).amsgrad(true)),
                ps -> new Adam(ps, Adam.options().lr(0.01).maximize(true)),
                ps -> new AdamW(ps, AdamW.options().lr(0.01).amsgrad(true)),
                ps -> new Adadelta(ps, Adadelta.options().weightDecay(0.01)),
                ps -> new Adadelta(ps, Adadelta.options().lr(0.5).rho(0.95).maximize(true)));
        long[] shape = {333, 307};   // 102231 elements: several parallel chunks and a vector tail
        for (var maker : makers) {
            Generator gen = Torch.manualSeed(42);
            List<Tensor> fusedParams = List.of(Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen).requiresGrad_(true));
            List<Tensor> composedParams = List.of(fusedParams.get(0).detach().clone().requiresGrad_(true));
            Optimizer fused = maker.apply(fusedParams);
            Optimizer composed = maker.apply(composedParams);
            composed.useFusedKernels(false);
            for (int step = 0; step < 4; step++) {
                Tensor g = Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen);
                fusedParams.get(0).setGrad(g);
                composedParams.get(0).setGrad(g.clone());
                fused.step();
                composed.step();
                Fixtures.assertClose(composedParams.get(0), fusedParams.get(0), 1e-6, 1e-7, fused + " step " + step);
                if (fused instanceof Adadelta) {
                    // Adadelta's fused pass does the composed ops' float operations in their order: same bits.
                    assertArrayEquals(bits(composedParams.get(0)), bits(fusedParams.get(0)), fused + " step " + step + ", bit for bit");
                }
                fused.zeroGrad();
                composed.zeroGrad();
            }
            fused.close();
            composed.close();
            fusedParams.get(0).close();
            composedParams.get(0).close();
        }
    }

    private static int[] bits(Tensor t) {
        float[] f = t.toFloatArray();
        int[] b = new int[f.length];
        for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
        return b;
    }

    @Test
    void addcmulAndAddcdivFollowTheirFormulas() {
        try (Tensor self = Torch.tensor(1f, 2f, 3f); Tensor t1 = Torch.tensor(2f, 4f, 6f); Tensor t2 = Torch.tensor(0.5f, 2f, 3f);
             Tensor m = self.addcmul(t1, t2, 0.5); Tensor d = self.addcdiv(t1, t2, -1)) {
            assertArrayEquals(new float[] {1.5f, 6f, 12f}, m.toFloatArray());       // self + 0.5 * t1 * t2
            assertArrayEquals(new float[] {-3f, 0f, 1f}, d.toFloatArray());         // self - t1 / t2
            self.lerp_(t1, 0.25);
            assertArrayEquals(new float[] {1.25f, 2.5f, 3.75f}, self.toFloatArray()); // self + 0.25 * (t1 - self)
        }
        try (Tensor i = Torch.tensor(1L, 2L)) {
            assertMessage("addcdiv", () -> i.addcdiv(i, i, 1).close());
        }
    }

    @Test
    void theAdamVariantsRejectInvalidOptionsWithPyTorchsMessages() {
        Tensor p = param(1f);
        assertMessage("NAdam: Invalid momentum_decay value: -1.0", () -> new NAdam(List.of(p), NAdam.options().momentumDecay(-1)));
        assertMessage("RAdam: Invalid beta parameter at index 0: 1.0", () -> new RAdam(List.of(p), RAdam.options().betas(1.0, 0.9)));
        assertMessage("Adamax: Invalid epsilon value: -1.0", () -> new Adamax(List.of(p), Adamax.options().eps(-1)));
        // SparseAdam, unlike Adam, wants a strictly positive lr and eps.
        assertMessage("SparseAdam: Invalid learning rate: 0.0", () -> new SparseAdam(List.of(p), SparseAdam.options().lr(0)));
        assertMessage("SparseAdam: Invalid epsilon value: 0.0", () -> new SparseAdam(List.of(p), SparseAdam.options().eps(0)));
        assertMessage("unknown option 'maximize'", () -> NAdam.options().maximize(true));
        assertMessage("unknown option 'weight_decay'", () -> SparseAdam.options().weightDecay(0.1));
        p.close();
    }

    @Test
    void sparseAdamLeavesRowsWithoutGradientAsTheyAre() {
        Tensor p = Torch.tensor(new float[] {1f, 2f, 3f, 4f, 5f, 6f}).reshape(3, 2).requiresGrad_(true);
        try (SparseAdam opt = new SparseAdam(List.of(p), SparseAdam.options().lr(0.1))) {
            p.setGrad(Torch.tensor(new float[] {0f, 0f, 1f, 0f, 0f, 0f}).reshape(3, 2));
            opt.step();
            float[] v = p.toFloatArray();
            assertArrayEquals(new float[] {1f, 2f, 5f, 6f}, new float[] {v[0], v[1], v[4], v[5]});
            // The touched row moves by lr where its gradient is nonzero (Adam's first step) and not at its zero entry.
            assertArrayEquals(new float[] {2.9f, 4f}, new float[] {v[2], v[3]}, 1e-6f);
            float[] m = ((Tensor) opt.state(p).get("exp_avg")).toFloatArray();
            assertArrayEquals(new float[] {0f, 0f, 0.1f, 0f, 0f, 0f}, m, 1e-7f);
            opt.zeroGrad();
        }
        p.close();
    }

    @Test
    void optionsHoldNullWherePyTorchsTakeNone() {
        Tensor p = param(1f, 2f);
        try (Adam opt = new Adam(List.of(p), Adam.options());
             Adam off = new Adam(List.of(ParamGroup.of(List.of(param(3f)), Adam.options().foreach(false))), Adam.options().foreach(true))) {
            assertTrue(opt.defaults().containsKey("foreach"));
            assertNull(opt.paramGroups().get(0).get("foreach"));
            assertEquals(false, off.paramGroups().get(0).get("foreach"));
            assertEquals(true, off.defaults().get("foreach"));
            assertMessage("Adam: foreach must be null, true or false, not the string \"yes\"",
                    () -> new Adam(List.of(p), Adam.options().set("foreach", "yes")));
            p.setGrad(Torch.tensor(1f, 1f));
            opt.step();
            Map<String, Object> sd = opt.stateDict();
            @SuppressWarnings("unchecked")
            Map<String, Object> group = ((List<Map<String, Object>>) sd.get("param_groups")).get(0);
            assertTrue(group.containsKey("foreach") && group.get("foreach") == null);
            // A state dict saved before foreach existed loads, taking the default, as PyTorch's __setstate__ does.
            group.remove("foreach");
            opt.loadStateDict(sd);
            assertTrue(opt.paramGroups().get(0).has("foreach"));
            assertNull(opt.paramGroups().get(0).get("foreach"));
            group.put("foreach", "yes");
            assertMessage("parameter group 0: Adam: foreach must be null, true or false", () -> opt.loadStateDict(sd));
            Optimizer.closeStateDict(sd);
            opt.zeroGrad();
            off.paramGroups().get(0).params().get(0).close();
        }
        p.close();
    }

    /** An optimizer that records, per step, whether its group may take the fused kernels. */
    private static final class FusedProbe extends Optimizer {
        static final class Options extends OptimizerOptions<Options> {
            @Override
            protected Map<String, Object> builtinDefaults() {
                Map<String, Object> d = new java.util.LinkedHashMap<>();
                d.put("lr", 0.1);
                d.put("foreach", null);
                return d;
            }
        }

        final List<Boolean> fusable = new ArrayList<>();

        FusedProbe(List<ParamGroup> groups) {
            super("FusedProbe", groups, new Options());
        }

        @Override
        protected void validate(Map<String, Object> options) {}

        @Override
        protected void updateGroup(ParamGroup group) {
            fusable.add(fusable(org.jtorch.op.OptimizerOps.FUSED_SGD, group.params().get(0)));
        }
    }

    @Test
    void foreachFalseKeepsAGroupOffTheFusedKernels() {
        Tensor a = param(1f);
        Tensor b = param(2f);
        Tensor c = param(3f);
        try (FusedProbe probe = new FusedProbe(List.of(ParamGroup.of(List.of(a)), ParamGroup.of(List.of(b), new FusedProbe.Options().foreach(false)),
                ParamGroup.of(List.of(c), new FusedProbe.Options().foreach(true))))) {
            probe.step();
            assertEquals(List.of(true, false, true), probe.fusable);
        }
        for (Tensor t : List.of(a, b, c)) t.close();
    }

    private static void assertMessage(String fragment, org.junit.jupiter.api.function.Executable body) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, body);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' should contain '" + fragment + "'");
    }
}
