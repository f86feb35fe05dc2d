package org.jtorch.vision.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.Adam;
import org.jtorch.types.DType;
import org.jtorch.vision.datasets.DataRoot;
import org.jtorch.vision.datasets.MNIST;
import org.junit.jupiter.api.Test;

/**
 * Full MNIST (60k/10k, fetched by {@code scripts/fetch-data mnist}): an MLP reaches at least 97.5%
 * test accuracy in 3 epochs. Skipped, with the reason, when the data are absent.
 */
class MnistMlpTest {

    @Test
    void mlpReachesNinetySevenAndAHalfPercentInThreeEpochs() {
        assumeTrue(DataRoot.find("mnist") != null, "MNIST not found: run scripts/fetch-data mnist (or set JTORCH_DATA)");
        MNIST train = new MNIST(true);
        MNIST test = new MNIST(false);
        Tensor xTrain = flatPixels(train);
        Tensor yTrain = train.targets();
        Tensor xTest = flatPixels(test);
        Tensor yTest = test.targets();
        assertEquals(60000, xTrain.size(0));
        assertEquals(10000, xTest.size(0));

        Torch.manualSeed(0);
        Sequential model = new Sequential(new Linear(784, 512), new ReLU(), new Linear(512, 256), new ReLU(), new Linear(256, 10));
        Adam opt = new Adam(model.parameters(), Adam.options().lr(1e-3));
        long batch = 128;
        for (int epoch = 0; epoch < 3; epoch++) {
            Tensor order = Torch.randperm(60000);
            for (long start = 0; start < 60000; start += batch) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor idx = order.narrow(0, start, Math.min(batch, 60000 - start));
                    Tensor loss = F.crossEntropy(model.forward(xTrain.indexSelect(0, idx)), yTrain.indexSelect(0, idx));
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
            }
            order.close();
        }
        double accuracy;
        try (MemoryScope scope = new MemoryScope()) {
            model.eval();
            accuracy = model.forward(xTest).argmax(1, false).eq(yTest).sum().item() / 10000.0;
        }
        System.out.println("MNIST MLP test accuracy after 3 epochs: " + accuracy);
        assertTrue(accuracy >= 0.975, "MNIST test accuracy " + accuracy);
    }

    /** The images as float32 {@code [n, 784]} in [0, 1]. */
    private static Tensor flatPixels(MNIST ds) {
        try (Tensor u8 = ds.data(); Tensor f = u8.to(DType.FLOAT32); Tensor flat = f.reshape(ds.size(), 784)) {
            return flat.div(255.0);
        }
    }
}
