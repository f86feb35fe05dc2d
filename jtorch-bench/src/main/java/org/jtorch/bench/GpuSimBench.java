package org.jtorch.bench;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.backend.Backends;
import org.jtorch.cuda.Cuda;
import org.jtorch.cuda.CudaGraph;
import org.jtorch.cuda.Stream;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.CudaRuntime;
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
import org.jtorch.vision.models.CifarResNet;
import org.jtorch.vision.models.ResNet;

/**
 * {@code jtorch bench gpu-sim}: what a training step asks of the GPU, counted exactly by the CUDA simulator
 * (its {@code jtsim_get_stats}, jtorch-cuda/src/sim/jtsim.h): kernel launches, library calls (cuBLASLt, cuDNN),
 * host waits, bytes copied each way, driver allocations after the second step, and peak device memory.
 *
 * <p>Each workload trains as a user's loop does: the batch copied from pinned host memory without blocking,
 * forward (under bf16 autocast for the bf16 rows), loss, {@code zeroGrad}, backward, an SGD step with momentum,
 * and {@code loss.item()} (the one synchronisation the loop asks for). Two warm-up steps, then the counts of
 * the next {@value #STEPS} steps divided by {@value #STEPS}.
 */
final class GpuSimBench {
    static final int STEPS = 3;
    private static final Device CUDA = Device.cuda(0);

    private GpuSimBench() {}

    /** The simulator's counters (the fields of jtsim_stats, in order). */
    record Counts(long kernelLaunches, long graphLaunches, long kernelsRun, long libraryCalls, long synchronizations,
                  long bytesHostToDevice, long bytesDeviceToHost, long bytesDeviceToDevice, long deviceAllocations,
                  long deviceFrees, long deviceBytesInUse, long deviceBytesPeak) {}

    /** The simulator's statistics calls, found in the loaded driver; an error naming the need when it is a real driver. */
    static final class Stats {
        private final MethodHandle get, reset;

        Stats() {
            if (!Cuda.isAvailable()) {
                throw new IllegalStateException("jtorch bench gpu-sim: CUDA is not available (" + Cuda.unavailableReason()
                        + "); run it on the CUDA simulator: JTORCH_CUDA_PATH=$(scripts/cuda-sim build) ./jtorch bench gpu-sim");
            }
            var library = CudaRuntime.system().driver().library();
            try {
                get = library.downcall(FunctionDescriptor.ofVoid(ADDRESS), "jtsim_get_stats");
                reset = library.downcall(FunctionDescriptor.ofVoid(), "jtsim_reset_stats");
            } catch (CudaException e) {
                throw new IllegalStateException("jtorch bench gpu-sim: the CUDA driver in use is not the simulator's (no jtsim_get_stats); "
                        + "run it with JTORCH_CUDA_PATH=$(scripts/cuda-sim build)", e);
            }
        }

        Counts read() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment s = arena.allocate(JAVA_LONG, 12);
                get.invokeExact(s);
                long[] v = s.toArray(JAVA_LONG);
                return new Counts(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        void reset() {
            try {
                reset.invokeExact();
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }

    /** One workload's results per step. */
    record Row(String workload, String precision, double launches, double libraryCalls, double synchronizations,
               double bytesHostToDevice, double bytesDeviceToHost, long allocationsAfterSecondStep, long peakDeviceBytes,
               long peakAllocatedBytes, double stepSeconds) {}

    static String run() {
        Stats stats = new Stats();
        List<Row> rows = new ArrayList<>();
        for (boolean bf16 : new boolean[] {false, true}) {
            rows.add(measureMlp(stats, bf16));
            rows.add(measure(stats, "CIFAR ResNet-20, batch 32", () -> CifarResNet.resnet20(10), new long[] {32, 3, 32, 32}, 10, bf16));
            rows.add(measure(stats, "ResNet-50, batch 8, 64x64", ResNet::resnet50, new long[] {8, 3, 64, 64}, 1000, bf16));
        }
        return table(rows) + "\n" + runGraphs(stats);
    }

    /** The second table alone: launches per step eagerly, compiled, and replayed from CUDA graphs. */
    static String runGraphs() {
        return runGraphs(new Stats());
    }

    private static String runGraphs(Stats stats) {
        return graphTable(List.of(
                measureGraphed(stats, "digits MLP 64-128-10, batch 64", GpuSimBench::digitsMlp, new long[] {64, 64}, 10),
                measureGraphed(stats, "CIFAR ResNet-20, batch 32", () -> CifarResNet.resnet20(10), new long[] {32, 3, 32, 32}, 10),
                measureGraphed(stats, "ResNet-50, batch 8, 64x64", ResNet::resnet50, new long[] {8, 3, 64, 64}, 1000)));
    }

    static Module digitsMlp() {
        return new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10));
    }

    static Row measureMlp(Stats stats, boolean bf16) {
        return measure(stats, "digits MLP 64-128-10, batch 64", GpuSimBench::digitsMlp, new long[] {64, 64}, 10, bf16);
    }

    private static Row measure(Stats stats, String workload, java.util.function.Supplier<Module> factory, long[] shape, int classes, boolean bf16) {
        Torch.emptyCache(CUDA);  // the previous workload's cached segments would count in this one's peak
        Torch.manualSeed(0);
        Module model = factory.get().to(CUDA);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        try (Tensor x = Torch.randn(shape, DType.FLOAT32, Device.cpu(), new Generator(1));
             Tensor y = Torch.randint(0, classes, new long[] {shape[0]}, DType.INT64, Device.cpu(), new Generator(2));
             Tensor xPinned = x.pinMemory(); Tensor yPinned = y.pinMemory()) {
            step(model, opt, xPinned, yPinned, bf16);
            step(model, opt, xPinned, yPinned, bf16);
            Cuda.synchronize(CUDA);
            Backends.of(CUDA).allocator(CUDA).resetPeakStats();
            stats.reset();
            long t0 = System.nanoTime();
            for (int i = 0; i < STEPS; i++) step(model, opt, xPinned, yPinned, bf16);
            Cuda.synchronize(CUDA);
            double seconds = (System.nanoTime() - t0) * 1e-9 / STEPS;
            Counts c = stats.read();
            long peakAllocated = Torch.memoryStats(CUDA).peakAllocatedBytes();
            return new Row(workload, bf16 ? "bf16 autocast" : "f32", (double) c.kernelLaunches() / STEPS, (double) c.libraryCalls() / STEPS,
                    // less the measuring loop's own Cuda.synchronize
                    (double) (c.synchronizations() - 1) / STEPS, (double) c.bytesHostToDevice() / STEPS,
                    (double) c.bytesDeviceToHost() / STEPS, c.deviceAllocations(), c.deviceBytesPeak(), peakAllocated, seconds);
        } finally {
            opt.close();  // its momentum buffers
            model.close();
        }
    }

    private static void step(Module model, SGD opt, Tensor x, Tensor y, boolean bf16) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor xs = x.to(CUDA, true), ys = y.to(CUDA, true);
            Tensor loss;
            try (Autocast ac = Autocast.scope(CUDA, DType.BFLOAT16, bf16, true)) {
                Tensor out = model.forward(shapeFor(model, xs));
                loss = F.crossEntropy(out, ys);
            }
            opt.zeroGrad();
            loss.backward();
            opt.step();
            loss.item();
        }
    }

    /**
     * One f32 workload's launches per training step: eager, replayed whole from a CUDA graph, and with the model
     * compiled by {@code Jit.compile(model, Options.cudaGraphs())} (forward and backward graphs; loss and optimizer eager).
     */
    record GraphRow(String workload, Row eager, Counts graph, Counts jit, Counts fused) {}

    /**
     * The same f32 training step eagerly ({@link #measure}'s loop) and as a CUDA graph: PyTorch's whole-network
     * capture (three warm-up steps on a side stream, gradients set to none, one captured step: forward, loss,
     * backward, SGD with momentum), then per step the batch copied from pinned memory into the static inputs, one
     * replay and {@code loss.item()}. Counts per step over {@value #STEPS} steps.
     */
    static GraphRow measureGraphed(Stats stats, String workload, java.util.function.Supplier<Module> factory, long[] shape, int classes) {
        Row eager = measure(stats, workload, factory, shape, classes, false);
        Torch.emptyCache(CUDA);
        Torch.manualSeed(0);
        Module model = factory.get().to(CUDA);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        CudaGraph graph = new CudaGraph(CUDA);
        try (Tensor x = Torch.randn(shape, DType.FLOAT32, Device.cpu(), new Generator(1));
             Tensor y = Torch.randint(0, classes, new long[] {shape[0]}, DType.INT64, Device.cpu(), new Generator(2));
             Tensor xPinned = x.pinMemory(); Tensor yPinned = y.pinMemory();
             Tensor staticX = x.to(CUDA); Tensor staticY = y.to(CUDA);
             Stream side = Stream.create(CUDA)) {
            try (Cuda.StreamScope s = Cuda.withStream(side)) {
                for (int i = 0; i < 3; i++) step(model, opt, staticX, staticY, false);
            }
            side.synchronize();
            opt.zeroGrad();
            Tensor loss;
            try (CudaGraph.Capture c = CudaGraph.graph(graph)) {
                loss = F.crossEntropy(model.forward(shapeFor(model, staticX)), staticY);
                loss.backward();
                opt.step();
            }
            Cuda.synchronize(CUDA);
            stats.reset();
            for (int i = 0; i < STEPS; i++) {
                staticX.copy_(xPinned, true);
                staticY.copy_(yPinned, true);
                graph.replay();
                loss.item();
            }
            Cuda.synchronize(CUDA);
            Counts graphed = stats.read();
            return new GraphRow(workload, eager, graphed, measureJit(stats, factory, xPinned, yPinned, Jit.Options.cudaGraphs()),
                    measureJit(stats, factory, xPinned, yPinned, Jit.Options.defaults()));
        } finally {
            graph.reset();
            opt.close();
            model.close();
        }
    }

    /**
     * {@link #measure}'s loop with the model compiled: with {@link Jit.Options#cudaGraphs()} the first step traces and
     * the second captures; with the defaults, the fused kernels launch one by one.
     */
    private static Counts measureJit(Stats stats, java.util.function.Supplier<Module> factory, Tensor x, Tensor y, Jit.Options options) {
        Torch.emptyCache(CUDA);
        Torch.manualSeed(0);
        Module model = factory.get().to(CUDA);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        TensorFunction compiled = Jit.compile(model, options);
        Runnable step = () -> {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor xs = x.to(CUDA, true), ys = y.to(CUDA, true);
                Tensor loss = F.crossEntropy(compiled.apply(shapeFor(model, xs)), ys);
                opt.zeroGrad();
                loss.backward();
                opt.step();
                loss.item();
            }
        };
        try {
            step.run();
            step.run();
            Cuda.synchronize(CUDA);
            stats.reset();
            for (int i = 0; i < STEPS; i++) step.run();
            Cuda.synchronize(CUDA);
            return stats.read();
        } finally {
            opt.close();
            model.close();
        }
    }

    static String graphTable(List<GraphRow> rows) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-32s %-22s %9s %8s %7s %6s%n", "workload (f32)", "step", "launches", "library",
                "graphs", "syncs"));
        for (GraphRow r : rows) {
            b.append(String.format(Locale.ROOT, "%-32s %-22s %9.0f %8.0f %7d %6.1f%n", r.workload(), "eager", r.eager().launches(),
                    r.eager().libraryCalls(), 0, r.eager().synchronizations()));
            for (var c : List.of(Map.entry("Jit.compile (fused)", r.fused()), Map.entry("CudaGraph, whole step", r.graph()),
                    Map.entry("Jit cudaGraphs()", r.jit()))) {
                Counts n = c.getValue();
                b.append(String.format(Locale.ROOT, "%-32s %-22s %9.0f %8.0f %7.0f %6.1f%n", "", c.getKey(), (double) n.kernelLaunches() / STEPS,
                        (double) n.libraryCalls() / STEPS, (double) n.graphLaunches() / STEPS, (n.synchronizations() - 1.0) / STEPS));
            }
        }
        b.append("""
                Per f32 training step (forward, loss, backward, SGD with momentum), counted by the CUDA simulator: launches =
                cuLaunchKernel calls, library = cuBLASLt/cuDNN calls, graphs = cuGraphLaunch calls, syncs less the loop's own
                one. Jit.compile (fused): the model compiled with the default options (fused kernels, launched one by one),
                loss, zeroGrad and the SGD step eager. CudaGraph, whole step: the batch copied from pinned memory into static inputs, one replay, loss.item().
                Jit cudaGraphs(): the model compiled with Jit.compile(model, Options.cudaGraphs()) (its forward and backward
                replayed from two graphs), loss, zeroGrad and the SGD step eager.
                """);
        return b.toString();
    }

    /** The MLP takes flat rows; the convolutional networks images. */
    private static Tensor shapeFor(Module model, Tensor x) {
        return model instanceof Sequential ? x.reshape(x.size(0), -1) : x;
    }

    static String table(List<Row> rows) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-32s %-14s %9s %8s %6s %12s %10s %7s %11s %11s %8s%n", "workload", "precision",
                "launches", "library", "syncs", "H2D bytes", "D2H bytes", "allocs", "peak dev", "peak alloc", "s/step"));
        for (Row r : rows) {
            b.append(String.format(Locale.ROOT, "%-32s %-14s %9.0f %8.0f %6.1f %12.0f %10.0f %7d %11s %11s %8.2f%n", r.workload(), r.precision(),
                    r.launches(), r.libraryCalls(), r.synchronizations(), r.bytesHostToDevice(), r.bytesDeviceToHost(),
                    r.allocationsAfterSecondStep(), mib(r.peakDeviceBytes()), mib(r.peakAllocatedBytes()), r.stepSeconds()));
        }
        b.append("""
                Per training step, steady state (steps 3-5), counted by the CUDA simulator: launches = cuLaunchKernel calls
                (jtorch's own kernels), library = cuBLASLt and cuDNN calls, syncs = synchronising calls (stream, context and
                event synchronisations, cuMemFree, copies into pageable memory; 1 is the loop's own loss.item()), bytes each way,
                allocs = cuMemAlloc calls after the second step (the caching allocator should serve everything),
                peak dev = the driver's peak of allocated segments, peak alloc = jtorch's allocator peak of live tensors.
                s/step is the simulator's time, not a GPU's.
                """);
        return b.toString();
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
    }
}
