package org.jtorch.jit;

import static org.jtorch.jit.JitChecks.DEVICE;
import static org.jtorch.jit.JitChecks.assertSameOnCpu;
import static org.jtorch.jit.JitChecks.values;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BinaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.SGD;
import org.junit.jupiter.api.Test;

/**
 * {@link Jit#compileStep}: the optimizer's update inside the compiled step's backward equals the same compiled module's
 * backward followed by {@code opt.step()} (parameters, gradients and momentum buffers, bit for bit on the CPU: the same
 * update kernel with the same scalars, per parameter), and plain eager within float32 tolerance. The reference is the
 * update rule of {@code torch.optim.SGD} (PyTorch 1.13) as {@code OptimizerConformanceTest} checks it against PyTorch's
 * values. The simulator pass runs this class on cuda:0.
 */
class JitTrainingStepTest {
    private static final BinaryOperator<Tensor> CROSS_ENTROPY = F::crossEntropy;
    private static final int STEPS = 4;

    private static Module mlp(long seed) {
        Torch.manualSeed(seed);
        return new Sequential(new Linear(20, 32), new ReLU(), new Linear(32, 16), new ReLU(), new Linear(16, 5)).to(DEVICE);
    }

    private static Tensor[] batch(long seed) {
        Torch.manualSeed(seed);
        return new Tensor[] {Torch.randn(12, 20).to(DEVICE), Torch.randint(0, 5, 12).to(DEVICE)};
    }

    /** The reference: {@code zeroGrad}, one backward per micro-batch through {@code forward}, then {@code step()}. */
    private static void referenceStep(TensorFunction forward, Optimizer opt, Tensor[][] microBatches) {
        try (MemoryScope s = new MemoryScope()) {
            opt.zeroGrad();
            for (Tensor[] b : microBatches) CROSS_ENTROPY.apply(forward.apply(b[0]), b[1]).backward();
            opt.step();
        }
    }

    /** Each parameter's value, gradient and momentum buffer (absent ones as empty arrays), in order. */
    private static List<float[]> stateOf(Module m, Optimizer opt) {
        List<float[]> r = new ArrayList<>();
        for (Tensor p : m.parameters()) {
            r.add(values(p));
            r.add(p.grad() == null ? new float[0] : values(p.grad()));
            Object buf = opt.state(p).get("momentum_buffer");
            r.add(buf == null ? new float[0] : values((Tensor) buf));
        }
        return r;
    }

    private static void assertSameState(List<float[]> expected, List<float[]> actual, String what) {
        assertEquals(expected.size(), actual.size());
        String[] kinds = {"parameter", "gradient", "momentum buffer"};
        for (int i = 0; i < expected.size(); i++) {
            assertSameOnCpu(expected.get(i), actual.get(i), what + ": " + kinds[i % 3] + " of parameter " + i / 3, 2e-5f);
        }
    }

    /** {@code STEPS} steps of the compiled step and of the reference on twin models, compared after each step. */
    private static void assertStepsMatch(SGD.Options options, int microBatches, java.util.function.Consumer<Module> prepare) {
        Module a = mlp(1);
        Module b = mlp(1);
        prepare.accept(a);
        prepare.accept(b);
        SGD optA = new SGD(a.parameters(), options);
        SGD optB = new SGD(b.parameters(), options);
        TrainingStep step = Jit.compileStep(a, CROSS_ENTROPY, optA);
        TensorFunction compiledB = Jit.compile(b);
        for (int s = 0; s < STEPS; s++) {
            Tensor[][] mb = new Tensor[microBatches][];
            for (int k = 0; k < microBatches; k++) mb[k] = batch(100 + 10L * s + k);
            Tensor[] xs = new Tensor[microBatches];
            Tensor[] ys = new Tensor[microBatches];
            for (int k = 0; k < microBatches; k++) {
                xs[k] = mb[k][0];
                ys[k] = mb[k][1];
            }
            try (Tensor loss = step.step(xs, ys)) {
                assertTrue(Float.isFinite((float) loss.item()));
            }
            referenceStep(compiledB, optB, mb);
            assertSameState(stateOf(b, optB), stateOf(a, optA), "step " + s);
        }
    }

    @Test
    void plainSgdMatchesTheCompiledModuleThenStep() {
        assertStepsMatch(SGD.options().lr(0.1), 1, m -> {});
    }

    @Test
    void momentumWithDampeningMatches() {
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.9).dampening(0.1), 1, m -> {});
    }

    @Test
    void nesterovWithWeightDecayMatches() {
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.8).nesterov(true).weightDecay(1e-2), 1, m -> {});
    }

    @Test
    void maximizeMatches() {
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.9).maximize(true), 1, m -> {});
    }

    @Test
    void composedUpdateWithoutFusedKernelMatches() {
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.9).weightDecay(1e-3).foreach(false), 1, m -> {});
    }

    @Test
    void gradientAccumulationOverTwoMicroBatchesUpdatesOnce() {
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.9).weightDecay(1e-3), 2, m -> {});
    }

    @Test
    void aFrozenParameterKeepsANullGradientAndIsNotUpdated() {
        Module m = mlp(1);
        Tensor frozen = ((Linear) ((Sequential) m).get(0)).bias();
        float[] before = values(frozen);
        assertStepsMatch(SGD.options().lr(0.05).momentum(0.9), 1, model -> ((Linear) ((Sequential) model).get(0)).bias().requiresGrad_(false));
        SGD opt = new SGD(m.parameters(), SGD.options().lr(0.05).momentum(0.9));
        frozen.requiresGrad_(false);
        Tensor[] b = batch(7);
        try (Tensor loss = Jit.compileStep(m, CROSS_ENTROPY, opt).step(b[0], b[1])) {
            assertNull(frozen.grad());
            assertTrue(opt.state(frozen).isEmpty());
            assertSameOnCpu(before, values(frozen), "frozen bias", 0f);
        }
    }

    @Test
    void gradientsLeftFromAnEarlierBackwardAreClearedFirstAndTheStepLeavesItsOwn() {
        Module a = mlp(2);
        Module b = mlp(2);
        SGD optA = new SGD(a.parameters(), SGD.options().lr(0.1).momentum(0.9));
        SGD optB = new SGD(b.parameters(), SGD.options().lr(0.1).momentum(0.9));
        TrainingStep step = Jit.compileStep(a, CROSS_ENTROPY, optA);
        Tensor[] stale = batch(3);
        try (MemoryScope s = new MemoryScope()) {
            CROSS_ENTROPY.apply(a.forward(stale[0]), stale[1]).backward();  // left in .grad, not stepped
        }
        Tensor[] x = batch(4);
        step.step(x[0], x[1]).close();
        referenceStep(Jit.compile(b), optB, new Tensor[][] {x});
        assertSameState(stateOf(b, optB), stateOf(a, optA), "after a stale backward");
        for (Tensor p : a.parameters()) assertNotNull(p.grad(), "the step leaves each gradient readable");
    }

    /** A head per input width: a micro-batch of one width gives gradients to that head only. */
    private static final class TwoHeads extends Module {
        private final Linear narrow;
        private final Linear wide;

        TwoHeads(long seed) {
            Torch.manualSeed(seed);
            narrow = registerModule("narrow", new Linear(20, 5));
            wide = registerModule("wide", new Linear(30, 5));
            to(DEVICE);
        }

        @Override
        public Tensor forward(Tensor x) {
            return x.size(1) == 20 ? narrow.forward(x) : wide.forward(x);
        }
    }

    @Test
    void aParameterWhoseGradientCameOnlyFromAnEarlierMicroBatchIsUpdatedToo() {
        TwoHeads a = new TwoHeads(12);
        TwoHeads b = new TwoHeads(12);
        SGD optA = new SGD(a.parameters(), SGD.options().lr(0.1).momentum(0.9));
        SGD optB = new SGD(b.parameters(), SGD.options().lr(0.1).momentum(0.9));
        TrainingStep step = Jit.compileStep(a, CROSS_ENTROPY, optA);
        TensorFunction compiledB = Jit.compile(b);
        for (int s = 0; s < 2; s++) {
            Tensor[] first = batch(300 + s);
            Torch.manualSeed(400 + s);
            Tensor[] second = {Torch.randn(12, 30).to(DEVICE), Torch.randint(0, 5, 12).to(DEVICE)};
            step.step(new Tensor[] {first[0], second[0]}, new Tensor[] {first[1], second[1]}).close();
            referenceStep(compiledB, optB, new Tensor[][] {first, second});
            assertSameState(stateOf(b, optB), stateOf(a, optA), "step " + s);
        }
        assertNotNull(optA.state(a.narrow.weight()).get("momentum_buffer"));
    }

    @Test
    void theLastLayerIsUpdatedInsideTheBackwardBeforeTheFirstLayersGradientLands() {
        Module m = mlp(13);
        Tensor first = ((Linear) ((Sequential) m).get(0)).weight();
        Tensor last = ((Linear) ((Sequential) m).get(4)).weight();
        float[] lastBefore = values(last);
        List<float[]> seen = new ArrayList<>();
        first.registerPostAccumulateGradHook(p -> seen.add(values(last)));
        Tensor[] b = batch(14);
        Jit.compileStep(m, CROSS_ENTROPY, new SGD(m.parameters(), SGD.options().lr(0.1))).step(b[0], b[1]).close();
        assertEquals(1, seen.size());
        assertSameOnCpu(values(last), seen.get(0), "the last layer's weight when the first layer's gradient landed", 0f);
        assertTrue(lastBefore[0] != seen.get(0)[0], "the last layer's weight was not updated yet");
    }

    @Test
    void anOptimizerParameterTheModuleDoesNotUseIsSkipped() {
        Module m = mlp(5);
        Tensor unused = Torch.ones(3).to(DEVICE).requiresGrad_(true);
        List<Tensor> params = new ArrayList<>(m.parameters());
        params.add(unused);
        SGD opt = new SGD(params, SGD.options().lr(0.1).momentum(0.9));
        Tensor[] b = batch(6);
        Jit.compileStep(m, CROSS_ENTROPY, opt).step(b[0], b[1]).close();
        assertNull(unused.grad());
        assertTrue(opt.state(unused).isEmpty());
        assertSameOnCpu(new float[] {1, 1, 1}, values(unused), "unused parameter", 0f);
    }

    @Test
    void matchesPlainEagerWithinFloat32Tolerance() {
        Module a = mlp(8);
        Module b = mlp(8);
        SGD.Options o = SGD.options().lr(0.05).momentum(0.9).nesterov(true).weightDecay(1e-3);
        SGD optA = new SGD(a.parameters(), o);
        SGD optB = new SGD(b.parameters(), o);
        TrainingStep step = Jit.compileStep(a, CROSS_ENTROPY, optA);
        for (int s = 0; s < STEPS; s++) {
            Tensor[] x = batch(200 + s);
            step.step(x[0], x[1]).close();
            referenceStep(in -> b.forward(in[0]), optB, new Tensor[][] {x});
        }
        List<float[]> e = stateOf(b, optB);
        List<float[]> c = stateOf(a, optA);
        for (int i = 0; i < e.size(); i++) {
            for (int j = 0; j < e.get(i).length; j++) {
                float ev = e.get(i)[j], cv = c.get(i)[j];
                assertTrue(Math.abs(ev - cv) <= 1e-5f * Math.max(1, Math.abs(ev)), "state " + i + " at " + j + ": eager " + ev + ", step " + cv);
            }
        }
    }

    @Test
    void anOptimizerWhoseUpdateIsNotPerParameterIsRefused() {
        Module m = mlp(9);
        Adam adam = new Adam(m.parameters(), Adam.options().lr(1e-3));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Jit.compileStep(m, CROSS_ENTROPY, adam));
        assertTrue(e.getMessage().contains("Jit.compileStep") && e.getMessage().contains("Adam") && e.getMessage().contains("SGD"),
                e.getMessage());
    }

    @Test
    void mismatchedMicroBatchesAreRefused() {
        Module m = mlp(10);
        TrainingStep step = Jit.compileStep(m, CROSS_ENTROPY, new SGD(m.parameters(), SGD.options().lr(0.1)));
        Tensor[] b = batch(11);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> step.step(new Tensor[] {b[0], b[0]}, new Tensor[] {b[1]}));
        assertTrue(e.getMessage().contains("TrainingStep.step") && e.getMessage().contains("2 inputs and 1 targets"), e.getMessage());
    }
}
