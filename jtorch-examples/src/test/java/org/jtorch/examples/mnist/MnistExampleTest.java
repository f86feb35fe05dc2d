package org.jtorch.examples.mnist;

import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.examples.ImageData;
import org.jtorch.examples.LossCurve;
import org.jtorch.vision.datasets.MNIST;
import org.junit.jupiter.api.Test;

/** The CI variant of the MNIST CNN: 24 Adadelta steps on the bundled digits upsampled to 28x28. */
class MnistExampleTest {
    @Test
    void lossFallsOnTheBundledDigits() {
        Torch.manualSeed(1);
        ImageData.Split data = ImageData.load("digits", 28, MNIST.normalize(), 0, 0, System.out);
        var loader = DataLoader.builder(data.train()).batchSize(32).shuffle(true).generator(new org.jtorch.types.Generator(1)).build();
        var t = new MnistExample.Training(1.0);
        double[] losses = new double[24];
        int i = 0;
        for (Sample b : loader) {
            if (i == losses.length) break;
            losses[i++] = t.step(b.input(), b.target());
        }
        LossCurve.assertFalls("mnist", losses, 4, 0.6);
    }
}
