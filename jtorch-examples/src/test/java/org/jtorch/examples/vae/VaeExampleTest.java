package org.jtorch.examples.vae;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.examples.ImageData;
import org.jtorch.examples.LossCurve;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** The CI variant of vae/main.py: 30 Adam steps on the bundled digits upsampled to 28x28. */
class VaeExampleTest {
    @Test
    void lossFallsOnTheBundledDigits() {
        Torch.manualSeed(1);
        ImageData.Split data = ImageData.load("digits", 28, null, 0, 0, System.out);
        var loader = DataLoader.builder(data.train()).batchSize(64).shuffle(true).generator(new Generator(1)).build();
        var t = new VaeExample.Training(1e-3);
        double[] losses = new double[30];
        int i = 0;
        while (i < losses.length) {
            for (Sample b : loader) {
                if (i == losses.length) break;
                losses[i++] = t.step(b.input()) / b.input().size(0);
            }
        }
        LossCurve.assertFalls("vae", losses, 5, 0.8);
    }

    @Test
    void lossIsSummedBceAndKlDivergence() {
        // By hand: BCE(0.5 | 1) + BCE(0.5 | 0) over 784 pixels = 784 ln 2; KLD of mu = 1, logvar = 0: -0.5 (1 + 0 - 1 - 1) = 0.5.
        Tensor recon = Torch.full(new long[] {1, 784}, 0.5);
        Tensor x = Torch.zeros(1, 784);
        double loss = VaeExample.lossFunction(recon, x, Torch.ones(1, 1), Torch.zeros(1, 1)).item();
        assertEquals(784 * Math.log(2) + 0.5, loss, 1e-3);
    }
}
