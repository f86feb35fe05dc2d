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

    private static void assertMessage(String fragment, org.junit.jupiter.api.function.Executable body) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, body);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' should contain '" + fragment + "'");
    }
}
