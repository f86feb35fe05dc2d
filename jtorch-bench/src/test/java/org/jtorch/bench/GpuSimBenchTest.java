package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.Cuda;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What cuda:0 is asked to do, counted by the CUDA simulator: skipped without one (a real GPU has no counters),
 * run by {@code scripts/cuda-sim test}.
 */
class GpuSimBenchTest {
    private static final Device CUDA = Device.cuda(0);
    private GpuSimBench.Stats stats;

    @BeforeEach
    void simulator() {
        assumeTrue(Cuda.isAvailable(), () -> "CUDA is not available: " + Cuda.unavailableReason());
        try {
            stats = new GpuSimBench.Stats();
        } catch (IllegalStateException e) {
            assumeTrue(false, "not the CUDA simulator: " + e.getMessage());
        }
    }

    /** Regression: crossEntropy copied every target to the host to validate it, a wait on the device each call. */
    @Test
    void crossEntropyDoesNotReadTheTargetsBack() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor logits = Torch.randn(new long[] {64, 10}, DType.FLOAT32, CUDA, new Generator(1));
            Tensor targets = Torch.randint(0, 10, new long[] {64}, DType.INT64, CUDA, new Generator(2));
            Cuda.synchronize(CUDA);
            stats.reset();
            F.crossEntropy(logits, targets);
            GpuSimBench.Counts c = stats.read();
            // gather's index check reports into mapped memory read at the next synchronisation: nothing is
            // copied back (not the 512 bytes of targets either) and the host does not wait.
            assertEquals(0, c.bytesDeviceToHost(), "bytes read back: " + c);
            assertEquals(0, c.synchronizations(), "host waits: " + c);
        }
    }

    @Test
    void anOutOfRangeTargetOnTheDeviceIsAnErrorNamingTheLossAtTheNextRead() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor logits = Torch.zeros(new long[] {4, 10}, DType.FLOAT32, CUDA);
            Tensor targets = Torch.tensor(new long[] {1, 2, 12, 3}).to(CUDA);
            Tensor loss = F.crossEntropy(logits, targets);
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, loss::item);
            assertTrue(e.getMessage().startsWith("crossEntropy: a target is out of bounds (10 classes): gather: index 12 is out of bounds"
                    + " for dimension 1 with size 10 (found by the op's CUDA index check"), e.getMessage());
            assertEquals(-Math.log(0.1), F.crossEntropy(logits, Torch.tensor(new long[] {1, 2, 9, 3}).to(CUDA)).item(), 1e-6,
                    "the device stays usable");
        }
    }

    @Test
    void withSynchronousIndexChecksAnOutOfRangeTargetIsAnErrorNamingTheLoss() {
        boolean previous = Cuda.setSynchronousIndexChecks(true);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor logits = Torch.zeros(new long[] {4, 10}, DType.FLOAT32, CUDA);
            Tensor targets = Torch.tensor(new long[] {1, 2, 12, 3}).to(CUDA);
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> F.crossEntropy(logits, targets));
            assertEquals("crossEntropy: a target is out of bounds (10 classes): gather: index 12 is out of bounds for dimension 1 with size 10",
                    e.getMessage());
        } finally {
            Cuda.setSynchronousIndexChecks(previous);
        }
    }

    /** The digits MLP's steady-state step: the batch up, the loss down, no driver allocation, one wait (the loss read). */
    @Test
    void theMlpStepCopiesOnlyTheBatchAndAllocatesNothing() {
        var rows = java.util.List.of(GpuSimBench.measureMlp(stats, false), GpuSimBench.measureMlp(stats, true));
        for (GpuSimBench.Row r : rows) {
            assertEquals(64 * 64 * 4 + 64 * 8, r.bytesHostToDevice(), r.toString());
            assertEquals(0, r.allocationsAfterSecondStep(), r.toString());
            assertEquals(1, r.synchronizations(), r.toString());  // loss.item() (docs/BENCHMARKS.md)
        }
    }

    /** The digits MLP's training step replayed from a CUDA graph: one cuGraphLaunch, no kernel launch, and the loss read only. */
    @Test
    void aTrainingStepReplayedFromACudaGraphIsOneGraphLaunch() {
        GpuSimBench.GraphRow r = GpuSimBench.measureGraphed(stats, "digits MLP", GpuSimBench::digitsMlp, new long[] {64, 64}, 10);
        assertEquals(GpuSimBench.STEPS, r.graph().graphLaunches(), r.toString());
        assertEquals(0, r.graph().kernelLaunches(), r.toString());
        assertEquals(0, r.graph().libraryCalls(), "cuBLASLt's calls replay inside the graph: " + r);
        assertEquals(GpuSimBench.STEPS + 1, r.graph().synchronizations(), "loss.item() per step and the loop's own: " + r);
        assertTrue(r.eager().launches() > 10, "eager launches per step: " + r.eager());
        assertTrue(r.graph().kernelsRun() >= GpuSimBench.STEPS * r.eager().launches(), "the replays ran the step's kernels: " + r);
        assertEquals(2 * GpuSimBench.STEPS, r.jit().graphLaunches(), "Jit cudaGraphs(): the forward and the backward graph: " + r);
        assertEquals(0, r.jit().libraryCalls(), "the linear layers' cuBLASLt calls replay inside the graphs: " + r.jit());
        assertTrue(r.jit().kernelLaunches() < r.eager().launches() * GpuSimBench.STEPS, "loss and SGD step only: " + r.jit());
        assertEquals(0, r.fused().graphLaunches(), "Jit.compile without graphs: " + r.fused());
        // Compiled code never launches more kernels than eager (the counts per workload are in docs/BENCHMARKS.md).
        assertTrue(r.fused().kernelLaunches() <= r.eager().launches() * GpuSimBench.STEPS,
                "Jit.compile launches no more than eager: " + r.fused() + " against eager " + r.eager());
    }
}
