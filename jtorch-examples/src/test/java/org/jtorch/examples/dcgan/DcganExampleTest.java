package org.jtorch.examples.dcgan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.examples.ImageData;
import org.jtorch.examples.LossCurve;
import org.jtorch.types.Generator;
import org.jtorch.vision.transforms.Normalize;
import org.junit.jupiter.api.Test;

/**
 * The CI variant of dcgan/main.py, narrowed (ngf = ndf = 16) on the bundled digits at 32x32. A GAN's
 * two losses do not both fall; what must happen first is that the discriminator learns to tell the
 * real digits from the generator's noise, so its loss is the one checked.
 */
class DcganExampleTest {
    @Test
    void discriminatorLossFallsOnTheBundledDigits() {
        Torch.manualSeed(1);
        ImageData.Split data = ImageData.load("digits", 32, new Normalize(new double[] {0.5}, new double[] {0.5}), 0, 0, System.out);
        var loader = DataLoader.builder(data.train()).batchSize(32).shuffle(true).generator(new Generator(1)).build();
        var t = new DcganExample.Training(DcganExample.NZ, 16, 16, 1, 0.0002);
        double[] lossD = new double[20];
        int i = 0;
        for (Sample b : loader) {
            if (i == lossD.length) break;
            lossD[i++] = t.step(b.input()).lossD();
        }
        LossCurve.assertFalls("dcgan (Loss_D)", lossD, 4, 0.7);
    }

    @Test
    void generatorMakes32x32ImagesAndDiscriminatorOneProbabilityEach() {
        var t = new DcganExample.Training(DcganExample.NZ, 8, 8, 1, 0.0002);
        Tensor fake = t.netG.forward(Torch.randn(3, DcganExample.NZ, 1, 1));
        assertArrayEquals(new long[] {3, 1, 32, 32}, fake.shape());
        assertArrayEquals(new long[] {3}, t.netD.forward(fake).shape(), Arrays.toString(t.netD.forward(fake).shape()));
    }
}
