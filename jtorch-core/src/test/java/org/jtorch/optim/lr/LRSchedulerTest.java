package org.jtorch.optim.lr;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.optim.Adagrad;
import org.jtorch.optim.SGD;
import org.junit.jupiter.api.Test;

/** Scheduler validation and edge behaviour (messages as PyTorch 1.13's). */
class LRSchedulerTest {

    private static SGD sgd(Tensor p) {
        return new SGD(List.of(p), SGD.options().lr(0.1).momentum(0.9));
    }

    @Test
    void constructionSetsTheEpochZeroRateAndRecordsInitialLr() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            LinearLR s = new LinearLR(opt, 0.5, 1.0, 4);
            assertEquals(0.05, opt.paramGroups().get(0).lr(), 1e-15);
            assertEquals(0.1, opt.paramGroups().get(0).getDouble("initial_lr"));
            assertEquals(List.of(0.05), s.getLastLr());
            assertEquals(0, s.lastEpoch());
        }
        p.close();
    }

    @Test
    void resumingWithoutInitialLrFails() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new StepLR(opt, 3, 0.1, 5));
            assertTrue(e.getMessage().contains("param 'initial_lr' is not specified in param_groups[0]"), e.getMessage());
        }
        p.close();
    }

    @Test
    void oneCycleRefusesToStepPastTotalSteps() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            OneCycleLR s = new OneCycleLR(opt, OneCycleLR.options(1.0).totalSteps(3));
            for (int i = 0; i < 3; i++) s.step();
            IllegalStateException e = assertThrows(IllegalStateException.class, s::step);
            assertEquals("OneCycleLR: Tried to step 5 times. The specified number of total steps is 3", e.getMessage());
        }
        p.close();
    }

    @Test
    void oneCycleMomentumNeedsAnOptimizerWithMomentum() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (Adagrad opt = new Adagrad(List.of(p), Adagrad.options())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new OneCycleLR(opt, OneCycleLR.options(1.0).totalSteps(10)));
            assertTrue(e.getMessage().contains("optimizer must support momentum"), e.getMessage());
            new OneCycleLR(opt, OneCycleLR.options(1.0).totalSteps(10).cycleMomentum(false));
        }
        p.close();
    }

    @Test
    void invalidSettingsFail() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            assertMessage("Starting multiplicative factor expected to be between 0 and 1.", () -> new LinearLR(opt, 1.5, 1.0, 5));
            assertMessage("Factor should be < 1.0.", () -> new ReduceLROnPlateau(opt, ReduceLROnPlateau.options().factor(1.0)));
            assertMessage("mode avg is unknown!", () -> new ReduceLROnPlateau(opt, ReduceLROnPlateau.options().mode("avg")));
            assertMessage("expected 1 min_lrs, got 2", () -> new ReduceLROnPlateau(opt, ReduceLROnPlateau.options().minLr(0.1, 0.2)));
            assertMessage("anneal_strategy must by one of 'cos' or 'linear'",
                    () -> new OneCycleLR(opt, OneCycleLR.options(1.0).totalSteps(5).annealStrategy("exp")));
            assertMessage("You must define either total_steps OR (epochs AND steps_per_epoch)",
                    () -> new OneCycleLR(opt, OneCycleLR.options(1.0)));
            assertMessage("Expected 1 lr_lambdas, but got 2", () -> new LambdaLR(opt, List.of(e -> 1.0, e -> 2.0)));
            StepLR a = new StepLR(opt, 2);
            assertMessage("number of schedulers 2 and the number of milestones to be equal to 0",
                    () -> new SequentialLR(opt, List.of(a, new ExponentialLR(opt, 0.9)), new int[0]));
        }
        p.close();
    }

    @Test
    void stepToAnEpochUsesTheClosedForm() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            StepLR s = new StepLR(opt, 3, 0.5);
            s.step(7);   // 0.1 * 0.5^(7 / 3)
            assertEquals(0.025, opt.paramGroups().get(0).lr(), 1e-15);
            MultiStepLR m = new MultiStepLR(opt, new int[] {2, 5, 5}, 0.1);
            m.step(6);   // initial_lr 0.1 * 0.1^3
            assertEquals(1e-4, opt.paramGroups().get(0).lr(), 1e-18);
        }
        p.close();
    }

    @Test
    void theNewerSchedulersRefuseInvalidSettings() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        Tensor q = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p); SGD other = sgd(q); org.jtorch.optim.Adam adam = new org.jtorch.optim.Adam(List.of(q), org.jtorch.optim.Adam.options())) {
            assertMessage("Constant multiplicative factor expected to be between 0 and 1.", () -> new ConstantLR(opt, 1.5, 3));
            assertMessage("Expected positive integer T_0, but got 0", () -> new CosineAnnealingWarmRestarts(opt, 0));
            assertMessage("Expected integer T_mult >= 1, but got 0", () -> new CosineAnnealingWarmRestarts(opt, 3, 0, 0.0));
            assertMessage("Expected non-negative epoch, but got -1.0", () -> new CosineAnnealingWarmRestarts(opt, 3).step(-1.0));
            assertMessage("mode is invalid and scale_fn is None", () -> new CyclicLR(opt, CyclicLR.options(0.01, 0.1).mode("sine")));
            assertMessage("expected 1 values for max_lr, got 2", () -> new CyclicLR(opt, CyclicLR.options(new double[] {0.01}, new double[] {0.1, 0.2})));
            // PyTorch 1.13 cycles only a 'momentum' option, which Adam lacks.
            assertMessage("optimizer must support momentum with `cycle_momentum` option enabled",
                    () -> new CyclicLR(adam, CyclicLR.options(0.01, 0.1)));
            assertMessage("Expected 1 lr_lambdas, but got 2", () -> new MultiplicativeLR(opt, List.of(e -> 1.0, e -> 2.0)));
            assertMessage("expects all schedulers to belong to the same optimizer, but got schedulers at index 0 and 1 to be different",
                    () -> new ChainedScheduler(List.of(new ExponentialLR(opt, 0.9), new ExponentialLR(other, 0.9))));
        }
        p.close();
        q.close();
    }

    @Test
    void cyclicLrWithACustomScaleFunction() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            // Amplitude halved every step ("iterations"): lr = base + (max - base) * (step / 2) * 0.5^step on the way up.
            CyclicLR s = new CyclicLR(opt, CyclicLR.options(0.0, 1.0).stepSizeUp(2).scaleFn(x -> Math.pow(0.5, x)).scaleMode("iterations")
                    .cycleMomentum(false));
            assertEquals(0.0, opt.paramGroups().get(0).lr());
            s.step();
            assertEquals(0.5 * 0.5, opt.paramGroups().get(0).lr(), 1e-15);
            s.step();
            assertEquals(1.0 * 0.25, opt.paramGroups().get(0).lr(), 1e-15);
            assertEquals(0.9, opt.paramGroups().get(0).getDouble("momentum"), "momentum left alone without cycleMomentum");
        }
        p.close();
    }

    @Test
    void chainedSchedulerStateHoldsItsSchedulers() {
        Tensor p = Torch.zeros(1).requiresGrad_(true);
        try (SGD opt = sgd(p)) {
            ChainedScheduler s = new ChainedScheduler(List.of(new ConstantLR(opt, 0.5, 2), new ExponentialLR(opt, 0.9)));
            s.step();
            var sd = s.stateDict();
            assertEquals(List.of("_last_lr", "_schedulers"), List.copyOf(sd.keySet()));
            assertEquals(2, ((List<?>) sd.get("_schedulers")).size());
            assertThrows(UnsupportedOperationException.class, () -> s.step(3));
        }
        p.close();
    }

    private static void assertMessage(String fragment, org.junit.jupiter.api.function.Executable body) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, body);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' should contain '" + fragment + "'");
    }
}
