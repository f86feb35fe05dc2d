package org.jtorch.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.amp.GradScaler;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * Mixed precision end to end on the UCI digits (as {@link DigitsMlpTest}): the issue's loop (autocast
 * forward, GradScaler backward/step/update) with bf16 autocast on the CPU, and pure bfloat16 parameters
 * trained with SGD and Adam, each reaching the f32 MLP's bar of 95% test accuracy.
 */
class DigitsAmpTest {

    record Split(Tensor xTrain, Tensor yTrain, Tensor xTest, Tensor yTest) {}

    static Split split() throws IOException {
        DigitsMlpTest.Digits data = DigitsMlpTest.load();
        Torch.manualSeed(42);
        Tensor perm = Torch.randperm(1797);
        Tensor trainIdx = perm.narrow(0, 0, 1437);
        Tensor testIdx = perm.narrow(0, 1437, 360);
        return new Split(data.images().indexSelect(0, trainIdx), data.labels().indexSelect(0, trainIdx),
                data.images().indexSelect(0, testIdx), data.labels().indexSelect(0, testIdx));
    }

    /** Trains for {@code epochs} with {@code step(x, y)} per batch, returns test accuracy. */
    static double train(Split d, Sequential model, int epochs, StepFn step) {
        long batch = 64;
        for (int epoch = 0; epoch < epochs; epoch++) {
            try (Tensor order = Torch.randperm(1437)) {
                for (long start = 0; start < 1437; start += batch) {
                    try (MemoryScope scope = new MemoryScope()) {
                        Tensor idx = order.narrow(0, start, Math.min(batch, 1437 - start));
                        step.run(d.xTrain().indexSelect(0, idx), d.yTrain().indexSelect(0, idx));
                    }
                }
            }
        }
        try (MemoryScope scope = new MemoryScope()) {
            model.eval();
            Tensor x = d.xTest().to(model.parameters().get(0).dtype());
            return model.forward(x).argmax(1, false).eq(d.yTest()).sum().item() / 360.0;
        }
    }

    interface StepFn {
        void run(Tensor x, Tensor y);
    }

    @Test
    void theIssuesLoopTrainsWithBf16AutocastAndAGradScaler() throws IOException {
        Split d = split();
        Sequential model = new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10));
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9));
        GradScaler scaler = new GradScaler();
        int[] skipped = {0};
        double accuracy = train(d, model, 30, (x, y) -> {
            opt.zeroGrad();
            Tensor loss;
            try (var ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                Tensor logits = model.forward(x);
                assertEquals(DType.BFLOAT16, logits.dtype());
                loss = F.crossEntropy(logits, y);
                assertEquals(DType.FLOAT32, loss.dtype());
            }
            scaler.scale(loss).backward();
            if (!scaler.step(opt)) skipped[0]++;
            scaler.update();
        });
        for (Tensor p : model.parameters()) assertEquals(DType.FLOAT32, p.grad().dtype(), "master weights keep f32 gradients");
        System.out.println("digits MLP, bf16 autocast + GradScaler: test accuracy " + accuracy + ", skipped steps " + skipped[0]);
        assertTrue(accuracy >= 0.95, "test accuracy " + accuracy);
        model.close();
    }

    @Test
    void bf16ParametersTrainWithSgdAndAdam() throws IOException {
        Split d = split();
        for (String name : new String[] {"sgd", "adam"}) {
            Torch.manualSeed(1);
            Sequential model = new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10));
            model.to(DType.BFLOAT16);
            Optimizer opt = name.equals("sgd") ? new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9))
                    : new Adam(model.parameters(), Adam.options().lr(3e-3));
            double accuracy = train(d, model, 20, (x, y) -> {
                Tensor logits = model.forward(x.to(DType.BFLOAT16));
                Tensor loss = F.crossEntropy(logits, y);
                assertEquals(DType.BFLOAT16, loss.dtype());
                opt.zeroGrad();
                loss.backward();
                opt.step();
            });
            for (Tensor p : model.parameters()) assertEquals(DType.BFLOAT16, p.dtype());
            System.out.println("digits MLP, bf16 parameters, " + name + ": test accuracy " + accuracy);
            assertTrue(accuracy >= 0.93, name + " test accuracy " + accuracy);
            model.close();
            opt.close();
        }
    }
}
