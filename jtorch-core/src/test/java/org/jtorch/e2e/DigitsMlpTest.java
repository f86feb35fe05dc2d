package org.jtorch.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPInputStream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.junit.jupiter.api.Test;

/**
 * Real learning end to end: an MLP learns the UCI handwritten digits (1,797 8x8 images, committed
 * under test resources with their CC BY 4.0 attribution) to at least 95% test accuracy in seconds.
 */
class DigitsMlpTest {

    /** Pixels scaled to [0, 1] as float32 [n, 64], labels int64 [n]. */
    record Digits(Tensor images, Tensor labels) {}

    static Digits load() throws IOException {
        List<float[]> rows = new ArrayList<>();
        List<Long> labels = new ArrayList<>();
        try (InputStream in = DigitsMlpTest.class.getResourceAsStream("/data/digits.csv.gz");
             BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(in), StandardCharsets.US_ASCII))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank()) continue;
                String[] f = line.split(",");
                float[] px = new float[64];
                for (int i = 0; i < 64; i++) px[i] = Float.parseFloat(f[i]) / 16f;
                rows.add(px);
                labels.add((long) Double.parseDouble(f[64]));
            }
        }
        float[] flat = new float[rows.size() * 64];
        long[] y = new long[rows.size()];
        for (int i = 0; i < rows.size(); i++) {
            System.arraycopy(rows.get(i), 0, flat, i * 64, 64);
            y[i] = labels.get(i);
        }
        return new Digits(Torch.tensor(flat, rows.size(), 64), Torch.tensor(y));
    }

    @Test
    void mlpLearnsDigitsToNinetyFivePercent() throws IOException {
        Digits data = load();
        assertEquals(1797, data.images().size(0));
        Torch.manualSeed(42);
        Tensor perm = Torch.randperm(1797);
        Tensor trainIdx = perm.narrow(0, 0, 1437);
        Tensor testIdx = perm.narrow(0, 1437, 360);
        Tensor xTrain = data.images().indexSelect(0, trainIdx);
        Tensor yTrain = data.labels().indexSelect(0, trainIdx);
        Tensor xTest = data.images().indexSelect(0, testIdx);
        Tensor yTest = data.labels().indexSelect(0, testIdx);

        Sequential model = new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10));
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9));
        long batch = 64;
        for (int epoch = 0; epoch < 30; epoch++) {
            Tensor order = Torch.randperm(1437);
            for (long start = 0; start < 1437; start += batch) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor idx = order.narrow(0, start, Math.min(batch, 1437 - start));
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
            Tensor predicted = model.forward(xTest).argmax(1, false);
            accuracy = predicted.eq(yTest).sum().item() / 360.0;
        }
        System.out.println("digits MLP test accuracy: " + accuracy);
        assertTrue(accuracy >= 0.95, "test accuracy " + accuracy);
    }
}
