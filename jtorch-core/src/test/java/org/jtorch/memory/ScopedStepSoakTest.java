package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.junit.jupiter.api.Test;

/**
 * Issue 19's leak soak: steps run in a {@link MemoryScope} leave nothing behind, with and without backward (an
 * evaluation loop that forgot {@code noGrad} still records graphs). After the first step has created the
 * gradients and the momentum buffers, the allocator's bytes handed out and blocks are exactly those of that
 * step after every later one, and no storage is left for the garbage collector. A few hundred steps by default;
 * {@code -Djtorch.test.soakSteps=10000} for the long soak.
 */
class ScopedStepSoakTest {
    private static final int STEPS = Integer.getInteger("jtorch.test.soakSteps", 300);

    @Test
    void forwardOnlyStepsLeaveNothingBehind() {
        soak(false);
    }

    @Test
    void trainingStepsLeaveNothingBehind() {
        soak(true);
    }

    private static void soak(boolean backward) {
        CpuCachingAllocator alloc = CpuCachingAllocator.get();
        Torch.manualSeed(19);
        try (var model = new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10));
             var opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
             Tensor x = Torch.randn(32, 64);
             Tensor y = Torch.randint(0, 10, 32)) {
            StorageCleaner.collect(); // earlier tests' garbage comes back now, not during the soak
            long leaked = alloc.stats().leakedStorages();
            MemoryStats first = null;
            for (int step = 0; step < STEPS; step++) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor loss = F.crossEntropy(model.forward(x), y);
                    if (backward) {
                        opt.zeroGrad();
                        loss.backward();
                        opt.step();
                    }
                }
                MemoryStats s = alloc.stats();
                if (first == null) {
                    first = s;
                    continue;
                }
                assertEquals(first.allocatedBytes(), s.allocatedBytes(), "bytes handed out after step " + step);
                assertEquals(first.activeBlocks(), s.activeBlocks(), "blocks handed out after step " + step);
            }
            StorageCleaner.collect();
            assertEquals(leaked, alloc.stats().leakedStorages(), "storages left to the garbage collector");
        }
    }
}
