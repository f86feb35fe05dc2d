package org.jtorch.examples.regression;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.examples.LossCurve;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** The CI variant of regression/main.py: 200 batches fit the hidden polynomial. */
class RegressionExampleTest {
    @Test
    void lossFallsAndTheFitApproachesThePolynomial() {
        Torch.manualSeed(3);
        var target = RegressionExample.Target.random();
        var t = new RegressionExample.Training(0.1);
        double[] losses = new double[200];
        for (int i = 0; i < losses.length; i++) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] batch = RegressionExample.getBatch(target, 32);
                losses[i] = t.step(batch[0], batch[1]);
            }
        }
        LossCurve.assertFalls("regression", losses, 10, 0.1);
    }

    @Test
    void featuresArePowersOneToFour() {
        try (Tensor f = RegressionExample.makeFeatures(Torch.tensor(new float[] {2f}))) {
            assertEquals(java.util.List.of(2.0, 4.0, 8.0, 16.0), java.util.Arrays.stream(f.toDoubleArray()).boxed().toList());
        }
    }

    @Test
    void polyDescFormatsAsMainPy() {
        // main.py: 'y = ' + ' '.join('{:+.2f} x^{}'...) + '{:+.2f}'.format(b[0])
        assertEquals("y = +1.50 x^1 -2.00 x^2 +0.00 x^3 +3.25 x^4 -0.50",
                RegressionExample.polyDesc(Torch.tensor(new float[] {1.5f, -2f, 0f, 3.25f}), Torch.tensor(new float[] {-0.5f})));
    }
}
