package org.jtorch.e2e;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** The README's example, kept compiling and learning. */
class ReadmeExampleTest {

    @Test
    void readmeExampleLearns() {
        Torch.manualSeed(42);
        Tensor x = Torch.randn(256, 20);
        Tensor y = x.narrow(1, 0, 1).squeeze(1).gt(0.0).to(DType.INT64);
        var model = new Sequential(new Linear(20, 64), new ReLU(), new Linear(64, 2));
        var opt = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9));
        double first = 0;
        double last = 0;
        for (int step = 0; step < 100; step++) {
            try (var scope = new MemoryScope()) {
                Tensor loss = F.crossEntropy(model.forward(x), y);
                opt.zeroGrad();
                loss.backward();
                opt.step();
                if (step == 0) first = loss.item();
                last = loss.item();
            }
        }
        assertTrue(last < first / 5, "loss should fall: " + first + " -> " + last);
        assertTrue(model.toString().startsWith("Sequential("), model.toString());
    }
}
