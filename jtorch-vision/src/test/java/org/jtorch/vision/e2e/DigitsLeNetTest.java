package org.jtorch.vision.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Datasets;
import org.jtorch.data.Sample;
import org.jtorch.data.Subset;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.optim.Adam;
import org.jtorch.types.Generator;
import org.jtorch.vision.datasets.Digits;
import org.jtorch.vision.models.LeNet5;
import org.jtorch.vision.transforms.Compose;
import org.jtorch.vision.transforms.Resize;
import org.jtorch.vision.transforms.ToTensor;
import org.junit.jupiter.api.Test;

/**
 * The pipeline end to end, offline: the bundled digits, resized to 28x28 and normalised by transforms
 * in DataLoader workers, train LeNet-5 to at least 90% accuracy (95% measured) on held-out digits in three epochs.
 */
class DigitsLeNetTest {

    @Test
    void leNetLearnsTheBundledDigitsThroughTheDataLoader() {
        Torch.manualSeed(0);
        Digits digits = new Digits(new Compose(new ToTensor(), new Resize(28), Digits.normalize()), null);
        List<Subset<Sample>> split = Datasets.randomSplit(digits, new int[] {1437, 360}, new Generator(1));
        DataLoader<Sample> train = DataLoader.builder(split.get(0))
                .batchSize(32).shuffle(true).generator(new Generator(2)).numWorkers(2).build();
        DataLoader<Sample> test = DataLoader.builder(split.get(1)).batchSize(120).numWorkers(2).build();

        LeNet5 model = new LeNet5();
        Adam opt = new Adam(model.parameters(), Adam.options().lr(5e-3));
        for (int epoch = 0; epoch < 3; epoch++) {
            for (Sample batch : train) {
                assertEquals(28, batch.input().size(3));
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor loss = F.crossEntropy(model.forward(batch.input()), batch.target());
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
            }
        }
        model.eval();
        long correct = 0;
        try (var noGrad = Grad.noGrad()) {
            for (Sample batch : test) {
                assertArrayEquals(new long[] {120, 1, 28, 28}, batch.input().shape());
                try (MemoryScope scope = new MemoryScope()) {
                    correct += (long) model.forward(batch.input()).argmax(1, false).eq(batch.target()).sum().item();
                }
            }
        }
        train.close();
        test.close();
        double accuracy = correct / 360.0;
        System.out.println("LeNet-5 on the bundled digits, 3 epochs: test accuracy " + accuracy);
        assertTrue(accuracy >= 0.9, "test accuracy " + accuracy);
    }
}
