package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.function.Consumer;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CudaGraph} on cuda:0 (the CUDA simulator in CI): PyTorch's {@code torch.cuda.CUDAGraph} contract.
 * The reference for every replay is the same work run eagerly.
 */
class CudaGraphTest {
    private static final Device CUDA = Device.cuda(0);

    @BeforeEach
    void cuda() {
        assumeTrue(Cuda.isAvailable(), () -> "cuda:0 unavailable: " + Cuda.unavailableReason());
    }

    private static Tensor randn(long seed, long... shape) {
        return Torch.randn(shape, DType.FLOAT32, Device.cpu(), new Generator(seed));
    }

    @Test
    void aReplayRecomputesTheStaticOutputFromTheStaticInput() {
        try (CudaGraph g = new CudaGraph(CUDA); Tensor x = randn(1, 1000).to(CUDA)) {
            Tensor y;
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                y = x.mul(2.0).add(1.0);
            }
            Tensor fresh = randn(2, 1000);
            x.copy_(fresh.to(CUDA));
            g.replay();
            assertArrayEquals(fresh.mul(2.0).add(1.0).toFloatArray(), y.toFloatArray(), 1e-6f);
            Tensor again = randn(3, 1000);
            x.copy_(again.to(CUDA));
            g.replay();
            assertArrayEquals(again.mul(2.0).add(1.0).toFloatArray(), y.toFloatArray(), 1e-6f, "the same buffer, updated again");
        }
    }

    @Test
    void anInPlaceAddOfAJavaNumberToAZeroDimIntegerTensorReplays() {
        try (CudaGraph g = new CudaGraph(CUDA); Tensor count = Torch.zeros(new long[0], DType.INT64, CUDA)) {
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                count.add_(1L);
            }
            g.replay();
            g.replay();
            assertEquals(2, count.itemLong());
        }
    }

    @Test
    void nothingRunsAtCapture() {
        try (CudaGraph g = new CudaGraph(CUDA); Tensor x = Torch.zeros(new long[] {64}, DType.FLOAT32, CUDA)) {
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                x.add_(Torch.ones(new long[] {64}, DType.FLOAT32, CUDA));
            }
            assertEquals(0.0, x.sum().item());
            g.replay();
            g.replay();
            assertEquals(128.0, x.sum().item());
        }
    }

    private static Module mlp() {
        return new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10)).to(CUDA);
    }

    private static void step(Module model, SGD opt, Tensor x, Tensor y, Tensor[] loss) {
        Tensor l = F.crossEntropy(model.forward(x), y);
        l.backward();
        opt.step();
        loss[0] = l;
    }

    /**
     * PyTorch's whole-network capture: warm-up steps on a side stream, gradients set to none, then one captured
     * step (forward, loss, backward, SGD with momentum) replayed on new batches copied into static inputs. The
     * parameters and losses match the eager model trained on the same batches from the same initialisation.
     */
    @Test
    void aReplayedTrainingStepWithItsOptimizerMatchesEagerTraining() {
        Torch.manualSeed(0);
        Module eager = mlp();
        Torch.manualSeed(0);
        Module graphed = mlp();
        SGD eagerOpt = new SGD(eager.parameters(), SGD.options().lr(0.05).momentum(0.9));
        SGD graphOpt = new SGD(graphed.parameters(), SGD.options().lr(0.05).momentum(0.9));
        Tensor staticX = Torch.zeros(new long[] {32, 64}, DType.FLOAT32, CUDA);
        Tensor staticY = Torch.zeros(new long[] {32}, DType.INT64, CUDA);
        Tensor[] batchesX = new Tensor[8], batchesY = new Tensor[8];
        for (int i = 0; i < 8; i++) {
            batchesX[i] = randn(10 + i, 32, 64).to(CUDA);
            batchesY[i] = Torch.randint(0, 10, new long[] {32}, DType.INT64, Device.cpu(), new Generator(20 + i)).to(CUDA);
        }
        Tensor[] eagerLoss = new Tensor[1], staticLoss = new Tensor[1];
        Consumer<Integer> eagerStep = i -> {
            eagerOpt.zeroGrad();
            step(eager, eagerOpt, batchesX[i], batchesY[i], eagerLoss);
        };
        // Warm-up: lazy state (momentum buffers, kernels) is created eagerly, on the stream the capture will use.
        try (Stream side = Stream.create(CUDA)) {
            try (Cuda.StreamScope s = Cuda.withStream(side)) {
                for (int i = 0; i < 3; i++) {
                    staticX.copy_(batchesX[i]);
                    staticY.copy_(batchesY[i]);
                    graphOpt.zeroGrad();
                    step(graphed, graphOpt, staticX, staticY, staticLoss);
                }
            }
            side.synchronize();
        }
        for (int i = 0; i < 3; i++) eagerStep.accept(i);
        assertParametersEqual(eager, graphed);

        CudaGraph g = new CudaGraph(CUDA);
        graphOpt.zeroGrad(); // gradients set to none: the captured backward allocates them in the graph's pool
        try (CudaGraph.Capture c = CudaGraph.graph(g)) {
            step(graphed, graphOpt, staticX, staticY, staticLoss);
        }
        assertParametersEqual(eager, graphed); // the capture ran nothing
        for (int i = 3; i < 8; i++) {
            staticX.copy_(batchesX[i]);
            staticY.copy_(batchesY[i]);
            g.replay();
            eagerStep.accept(i);
            assertEquals(eagerLoss[0].item(), staticLoss[0].item(), 1e-6, "loss of step " + i);
            assertParametersEqual(eager, graphed);
        }
        g.reset();
    }

    /** Adam's bias corrections come from a step count on the host: a replay would repeat the captured one, so capture is refused. */
    @Test
    void anAdamStepIsRefusedDuringCaptureRatherThanReplayedWithAFrozenStepCount() {
        Torch.manualSeed(0);
        Module model = mlp();
        org.jtorch.optim.Adam adam = new org.jtorch.optim.Adam(model.parameters(), org.jtorch.optim.Adam.options().lr(1e-3));
        Tensor x = randn(40, 8, 64).to(CUDA);
        F.crossEntropy(model.forward(x), Torch.zeros(new long[] {8}, DType.INT64, CUDA)).backward();
        adam.step(); // warm-up: state created
        CudaGraph g = new CudaGraph(CUDA);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                adam.step();
            }
        });
        assertTrue(e.getMessage().startsWith("Adam.step() during CUDA graph capture on cuda:0: its step count"), e.getMessage());
        assertFalse(g.isCaptured(), "the capture was discarded");
        assertFalse(CudaGraph.isCapturing(CUDA));
    }

    private static void assertParametersEqual(Module expected, Module actual) {
        List<Tensor> e = expected.parameters(), a = actual.parameters();
        for (int p = 0; p < e.size(); p++) assertArrayEquals(e.get(p).toFloatArray(), a.get(p).toFloatArray(), 1e-5f, "parameter " + p);
    }

    @Test
    void itemDuringCaptureIsRefusedTheCaptureDiscardedAndTheDeviceStaysUsable() {
        CudaGraph g = new CudaGraph(CUDA);
        Tensor x = Torch.ones(new long[] {16}, DType.FLOAT32, CUDA);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                x.mul(3.0).sum().item();
            }
        });
        assertTrue(e.getMessage().contains("item()") && e.getMessage().contains("during CUDA graph capture on cuda:0"), e.getMessage());
        assertEquals(1, e.getSuppressed().length, "the capture's end reports the discarded capture too");
        assertTrue(e.getSuppressed()[0].getMessage().contains("nothing was captured"), e.getSuppressed()[0].getMessage());
        assertFalse(g.isCaptured());
        assertFalse(CudaGraph.isCapturing(CUDA));
        assertEquals(48.0, x.mul(3.0).sum().item(), "eager work runs after the failed capture");
        Tensor y;
        try (CudaGraph.Capture c = CudaGraph.graph(g)) {
            y = x.mul(3.0);
        }
        g.replay();
        assertEquals(48.0, y.sum().item(), "the graph captures again");
        g.reset();
    }

    @Test
    void synchronisationsHostCopiesAndPinnedAllocationsAreRefusedDuringCapture() {
        Tensor x = Torch.ones(new long[] {16}, DType.FLOAT32, CUDA);
        Tensor host = Torch.ones(new long[] {16}, DType.FLOAT32, Device.cpu());
        record Refused(String name, Runnable call) {}
        for (Refused r : List.of(
                new Refused("Cuda.synchronize()", () -> Cuda.synchronize(CUDA)),
                new Refused("Stream.synchronize()", () -> Cuda.currentStream(CUDA).synchronize()),
                new Refused("a copy from cuda:0 to cpu", x::toFloatArray),
                new Refused("a copy from cpu to cuda:0", () -> host.to(CUDA)),
                new Refused("a pinned host allocation", host::pinMemory),
                new Refused("random sampling", () -> org.jtorch.nn.F.dropout(x, 0.5, true)))) {
            CudaGraph g = new CudaGraph(CUDA);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                    x.add(1.0);
                    r.call().run();
                }
            }, r.name());
            assertTrue(e.getMessage().startsWith(r.name()), e.getMessage());
            assertFalse(CudaGraph.isCapturing(CUDA));
        }
        assertEquals(32.0, x.add(1.0).sum().item());
    }

    @Test
    void captureOnTheDefaultStreamIsRefused() {
        CudaGraph g = new CudaGraph(CUDA);
        IllegalStateException e = assertThrows(IllegalStateException.class, g::captureBegin);
        assertTrue(e.getMessage().contains("non-default stream"), e.getMessage());
        assertFalse(CudaGraph.isCapturing(CUDA));
    }

    @Test
    void memoryFreedDuringCaptureIsReusedWithinTheGraphButNotByEagerWork() {
        try (CudaGraph g = new CudaGraph(CUDA)) {
            long tempAddress, secondAddress;
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                Tensor temp = Torch.empty(new long[] {4096}, DType.FLOAT32, CUDA);
                tempAddress = temp.storage().address();
                temp.close();
                Tensor second = Torch.empty(new long[] {4096}, DType.FLOAT32, CUDA);
                secondAddress = second.storage().address();
                second.close();
            }
            assertEquals(tempAddress, secondAddress, "reused within the capture");
            try (Tensor eager = Torch.empty(new long[] {4096}, DType.FLOAT32, CUDA)) {
                assertNotEquals(tempAddress, eager.storage().address(), "the graph's memory is its own");
            }
            assertTrue(Cuda.allocator(CUDA).poolReservedBytes(g.pool().id()) > 0);
        }
    }

    /**
     * Two graphs in one pool ({@code graph_pool_handle()}): the second reads the first's output and reuses
     * memory the first freed; replayed in capture order they compute the eager result.
     */
    @Test
    void graphsSharingAPoolReplayInCaptureOrder() {
        CudaGraph.PoolHandle pool = CudaGraph.graphPoolHandle(CUDA);
        CudaCachingAllocator allocator = Cuda.allocator(CUDA);
        try (CudaGraph first = new CudaGraph(CUDA); CudaGraph second = new CudaGraph(CUDA);
             Tensor x = randn(4, 2048).to(CUDA)) {
            Tensor out1, out2;
            try (CudaGraph.Capture c = CudaGraph.graph(first, pool, null)) {
                Tensor temp = x.mul(2.0);
                out1 = temp.add(1.0);
                temp.close();
            }
            long reserved = allocator.poolReservedBytes(pool.id());
            try (CudaGraph.Capture c = CudaGraph.graph(second, first.pool(), null)) {
                Tensor temp = out1.mul(3.0); // lands where the first graph's temporary was
                out2 = temp.sub(x);
                temp.close();
            }
            assertEquals(reserved, allocator.poolReservedBytes(pool.id()), "the second graph grew no segment of the shared pool");
            Tensor fresh = randn(5, 2048);
            x.copy_(fresh.to(CUDA));
            first.replay();
            second.replay();
            Tensor expected = fresh.mul(2.0).add(1.0).mul(3.0).sub(fresh);
            assertArrayEquals(expected.toFloatArray(), out2.toFloatArray(), 1e-5f);
            first.reset();
            assertTrue(allocator.poolReservedBytes(pool.id()) > 0, "the pool lives while the second graph uses it");
        }
    }

    /** Cross entropy gathers by its targets: a captured index check reports a bad target at the next synchronisation after a replay. */
    @Test
    void aCapturedIndexCheckReportsABadIndexAfterTheReplay() {
        try (CudaGraph g = new CudaGraph(CUDA)) {
            Tensor src = randn(6, 8, 4).to(CUDA);
            Tensor index = Torch.zeros(new long[] {8, 1}, DType.INT64, CUDA);
            Tensor out;
            try (CudaGraph.Capture c = CudaGraph.graph(g)) {
                out = src.gather(1, index);
            }
            g.replay();
            assertArrayEquals(src.select(1, 0).toFloatArray(), out.reshape(8).toFloatArray());
            index.copy_(Torch.full(new long[] {8, 1}, 7.0, DType.INT64, Device.cpu()).to(CUDA));
            g.replay();
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> Cuda.synchronize(CUDA));
            assertTrue(e.getMessage().contains("7"), e.getMessage());
            index.zero_();
            g.replay();
            Cuda.synchronize(CUDA); // the record was cleared for the next replay
        }
    }

    /** The simulator's statistics call (jtsim_get_stats, src/sim/jtsim.h); empty on a real driver, which counts nothing. */
    private static java.util.Optional<java.lang.invoke.MethodHandle> simulatorStats() {
        return CudaRuntime.system().driver().library().optionalDowncall(
                java.lang.foreign.FunctionDescriptor.ofVoid(java.lang.foreign.ValueLayout.ADDRESS), "jtsim_get_stats");
    }

    private static boolean simulated() {
        return simulatorStats().isPresent();
    }

    /** The simulator's count of cuGraphLaunch calls (the second field of jtsim_stats); 0 on a real driver. */
    private static long graphLaunches() {
        var get = simulatorStats();
        if (get.isEmpty()) return 0;
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var stats = arena.allocate(java.lang.foreign.ValueLayout.JAVA_LONG, 12);
            get.get().invokeExact(stats);
            return stats.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, 1);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * {@code Jit.compile(module, Options.cudaGraphs())} for inference: the first call traces, the second captures,
     * the later ones replay (one graph launch each); a new batch size captures its own graph; results equal eager.
     */
    @Test
    void aCompiledModuleWithCudaGraphsReplaysOneGraphPerCallAndEqualsEager() {
        Torch.manualSeed(0);
        Module model = mlp();
        TensorFunction compiled = Jit.compile(model, Jit.Options.cudaGraphs());
        try (Grad.Mode off = Grad.noGrad()) {
            for (int batch : new int[] {32, 32, 32, 32, 8, 8, 8, 32}) {
                Tensor x = randn(100 + batch, batch, 64).to(CUDA);
                long before = graphLaunches();
                Tensor y = compiled.apply(x);
                assertArrayEquals(model.forward(x).toFloatArray(), y.toFloatArray(), 1e-6f, "batch " + batch);
                assertTrue(graphLaunches() - before <= 1);
            }
            long before = graphLaunches();
            compiled.apply(randn(7, 32, 64).to(CUDA));
            if (simulated()) assertEquals(1, graphLaunches() - before, "a call of a captured signature is one graph launch");
            // The graph reads the parameters where they are: an in-place update shows in the next replay.
            model.parameters().get(0).mul_(2.0);
            Tensor x = randn(8, 32, 64).to(CUDA);
            assertArrayEquals(model.forward(x).toFloatArray(), compiled.apply(x).toFloatArray(), 1e-6f);
        }
    }

    /**
     * Training through {@code Jit.compile(module, Options.cudaGraphs())}: from the second step on, the forward and
     * its backward are replayed from two graphs (PyTorch's make_graphed_callables), and the model trains exactly
     * as the eager one on the same batches.
     */
    @Test
    void aCompiledMlpInTrainingReplaysForwardAndBackwardGraphsAndTrainsAsEager() {
        trainsAsEager(CudaGraphTest::mlp, 16, 64);
    }

    /** With batch norm: the running statistics match eager's too (the warm-up calls' updates are put back). */
    @Test
    void aCompiledConvolutionWithBatchNormTrainsAsEagerRunningStatisticsIncluded() {
        trainsAsEager(() -> new Sequential(new org.jtorch.nn.Conv2d(3, 8, 3), new org.jtorch.nn.BatchNorm2d(8), new ReLU(),
                new org.jtorch.nn.Flatten(), new Linear(8 * 6 * 6, 10)).to(CUDA), 16, 3, 8, 8);
    }

    private static void trainsAsEager(java.util.function.Supplier<Module> factory, long... shape) {
        Torch.manualSeed(0);
        Module eager = factory.get();
        Torch.manualSeed(0);
        Module graphed = factory.get();
        TensorFunction compiled = Jit.compile(graphed, Jit.Options.cudaGraphs());
        SGD eagerOpt = new SGD(eager.parameters(), SGD.options().lr(0.05).momentum(0.9));
        SGD graphOpt = new SGD(graphed.parameters(), SGD.options().lr(0.05).momentum(0.9));
        for (int i = 0; i < 6; i++) {
            Tensor x = randn(400 + i, shape).to(CUDA);
            Tensor y = Torch.randint(0, 10, new long[] {shape[0]}, DType.INT64, Device.cpu(), new Generator(500 + i)).to(CUDA);
            eagerOpt.zeroGrad();
            Tensor eagerLoss = F.crossEntropy(eager.forward(x), y);
            eagerLoss.backward();
            eagerOpt.step();
            double graphLoss;
            // Regression: the graphs' static tensors were the first step's MemoryScope's, closed with it.
            try (MemoryScope scope = new MemoryScope()) {
                graphOpt.zeroGrad();
                long before = graphLaunches();
                Tensor loss = F.crossEntropy(compiled.apply(x), y);
                loss.backward();
                if (i >= 2 && simulated()) assertEquals(2, graphLaunches() - before, "step " + i + ": the forward and the backward graph");
                graphOpt.step();
                graphLoss = loss.item();
            }
            assertEquals(eagerLoss.item(), graphLoss, 1e-5, "loss of step " + i);
            assertParametersEqual(eager, graphed);
            List<Tensor> e = eager.buffers(), g = graphed.buffers();
            for (int b = 0; b < e.size(); b++) {
                // num_batches_tracked: the traced program (graphs or not) does not replay its in-place count.add_
                // (a Jit trace gap, not of the graphs), so only the floating buffers are compared.
                if (!e.get(b).dtype().isFloatingPoint()) continue;
                assertArrayEquals(e.get(b).to(DType.FLOAT32).toFloatArray(), g.get(b).to(DType.FLOAT32).toFloatArray(), 1e-5f, "buffer " + b + " after step " + i);
            }
        }
    }

    @Test
    void aBackwardAfterItsForwardWasReplayedAgainIsRefused() {
        Torch.manualSeed(0);
        Module model = mlp();
        TensorFunction compiled = Jit.compile(model, Jit.Options.cudaGraphs());
        Tensor x = randn(600, 16, 64).to(CUDA);
        for (int i = 0; i < 3; i++) compiled.apply(x).sum().backward(); // trace, capture, replay
        Tensor first = compiled.apply(x).sum();
        compiled.apply(x); // overwrites what the first one's backward would read
        IllegalStateException e = assertThrows(IllegalStateException.class, first::backward);
        assertTrue(e.getMessage().contains("run each backward before the next forward"), e.getMessage());
    }

    @Test
    void aTracedFunctionWhoseResultNeedsAutogradRunsWithoutAGraph() {
        Torch.manualSeed(0);
        Module model = mlp();
        TensorFunction traced = Jit.trace(x -> model.forward(x[0]), Jit.Options.cudaGraphs());
        long before = graphLaunches();
        for (int i = 0; i < 4; i++) {
            Tensor x = randn(200 + i, 16, 64).to(CUDA);
            Tensor y = traced.apply(x);
            assertTrue(y.requiresGrad());
            assertArrayEquals(model.forward(x).toFloatArray(), y.toFloatArray(), 1e-6f);
        }
        assertEquals(0, graphLaunches() - before, "a traced function's parameters are unknown: no graph");
    }

    @Test
    void aCompiledFunctionThatReadsTheHostFallsBackToRunningWithoutAGraph() {
        TensorFunction f = x -> x[0].mul(x[0].sum().item());
        TensorFunction compiled = Jit.trace(f, Jit.Options.cudaGraphs());
        for (int i = 0; i < 4; i++) {
            Tensor x = randn(300 + i, 64).to(CUDA);
            assertArrayEquals(f.apply(x).toFloatArray(), compiled.apply(x).toFloatArray(), 1e-5f);
        }
        assertFalse(CudaGraph.isCapturing(CUDA));
    }
}
