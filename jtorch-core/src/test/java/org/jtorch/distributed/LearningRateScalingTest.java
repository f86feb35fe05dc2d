package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.optim.SGD;
import org.jtorch.optim.lr.LRScheduler;
import org.junit.jupiter.api.Test;

/** Linear scaling with warm-up (Goyal et al. 2017): rate = base * k, reached linearly from base. */
class LearningRateScalingTest {
    @Test
    void ratesScaleWithTheWorldOrTheBatch() {
        assertEquals(0.8, LearningRateScaling.linear(0.1, 8), 1e-15);
        assertEquals(0.4, LearningRateScaling.forBatch(0.1, 256, 1024), 1e-15);
    }

    @Test
    void warmupRisesLinearlyFromTheSingleProcessRateToTheScaledOne() {
        try (Tensor w = Torch.zeros(2).requiresGrad_(true)) {
            SGD opt = new SGD(List.of(w), SGD.options().lr(0.1));
            LearningRateScaling.scaleLinearly(opt, 4);
            assertEquals(0.4, opt.paramGroups().get(0).lr(), 1e-15);
            LRScheduler warmup = LearningRateScaling.warmup(opt, 4, 3);
            double[] seen = new double[5];
            for (int s = 0; s < 5; s++) {
                seen[s] = opt.paramGroups().get(0).lr();
                opt.step();
                warmup.step();
            }
            // 0.1 + (0.4 - 0.1) * s / 3, then 0.4.
            double[] expected = {0.1, 0.2, 0.3, 0.4, 0.4};
            for (int s = 0; s < 5; s++) assertEquals(expected[s], seen[s], 1e-12, "step " + s);
        }
    }

    @Test
    void scalingAfterASchedulerRecordedTheRateIsAnError() {
        try (Tensor w = Torch.zeros(2).requiresGrad_(true)) {
            SGD opt = new SGD(List.of(w), SGD.options().lr(0.1));
            LearningRateScaling.warmup(opt, 2, 3);
            var e = assertThrows(IllegalStateException.class, () -> LearningRateScaling.scaleLinearly(opt, 2));
            assertEquals("LearningRateScaling.scaleLinearly: a scheduler already recorded the initial rate; scale before creating schedulers",
                    e.getMessage());
        }
    }
}
