package org.jtorch.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.backend.Backends;
import org.jtorch.backend.MatmulSettings;
import org.jtorch.cuda.Cuda;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
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
import org.jtorch.vision.datasets.Digits;
import org.jtorch.vision.models.CifarResNet;
import org.jtorch.vision.models.ResNet;

/**
 * The GPU check's training smoke test and benchmarks on {@code cuda:0}, printed next to PyTorch's numbers
 * for the same card ({@code tools/gpu_bench_torch.py} writes them, {@code scripts/gpu-check device} runs
 * both in one call):
 * <ul>
 *   <li>smoke: the digits MLP (64-128-10, SGD momentum 0.9, batch 64, 300 steps) fed by a pinning
 *       DataLoader that transfers batches to cuda:0; passes when the mean loss of the last 20 steps is
 *       under half that of the first 20 and the test accuracy (359 held-out images) is at least 90%;</li>
 *   <li>matmul 4096 and 8192 square: float32 (TF32 off), TF32, bfloat16, TFLOP/s = 2n^3 / time;</li>
 *   <li>a large elementwise add (2^28 float32, 3 x 1 GiB moved) in GB/s against a device-to-device copy
 *       of the same tensor (2 x 1 GiB), the card's practical bandwidth;</li>
 *   <li>ResNet-50 training step (batch 128, 224x224, float32, SGD momentum) in images/s;</li>
 *   <li>ResNet-20 (CIFAR shape, batch 128, synthetic inputs) epoch time on the CPU and on cuda:0 = median
 *       step x 391 steps (50,000 images), and the speedup.</li>
 * </ul>
 * Times are wall clock around {@code Cuda.synchronize}, as the PyTorch script's around
 * {@code torch.cuda.synchronize}. Each part runs under its own time limit and reports {@code not run:
 * <reason>} (an exception, an unwired op, the limit) instead of stopping the table, which is printed last.
 * Exit status 0, or 1 when the smoke test failed or could not run on an available GPU, 2 without CUDA.
 *
 * <p>Arguments: {@code [--torch results.tsv] [--table out.txt] [--seconds per-part limit, 60]
 * [--total-seconds limit of all parts, 180]}.
 */
public final class GpuBench {
    private static final Device CUDA = Device.cuda(0);
    private static final long EPOCH_IMAGES = 50_000;

    /** One table row: what is measured, its unit, and the key both sides write. */
    private record Row(String key, String label, String unit) {}

    private static final List<Row> ROWS = List.of(
            new Row("smoke_loss", "smoke: digits MLP loss first->last 20", ""),
            new Row("smoke_accuracy", "smoke: digits MLP test accuracy", ""),
            new Row("matmul_4096_f32", "matmul 4096 f32", "TFLOP/s"),
            new Row("matmul_4096_tf32", "matmul 4096 tf32", "TFLOP/s"),
            new Row("matmul_4096_bf16", "matmul 4096 bf16", "TFLOP/s"),
            new Row("matmul_8192_f32", "matmul 8192 f32", "TFLOP/s"),
            new Row("matmul_8192_tf32", "matmul 8192 tf32", "TFLOP/s"),
            new Row("matmul_8192_bf16", "matmul 8192 bf16", "TFLOP/s"),
            new Row("add_gbs", "add 2^28 f32", "GB/s"),
            new Row("copy_gbs", "device-to-device copy 1 GiB", "GB/s"),
            new Row("add_vs_copy", "add / copy bandwidth", "ratio"),
            new Row("resnet50_images_s", "ResNet-50 train b128 224 f32", "img/s"),
            new Row("resnet50_peak_gib", "ResNet-50 f32 peak allocated", "GiB"),
            new Row("resnet50_bf16_images_s", "ResNet-50 train b128 224 bf16 autocast", "img/s"),
            new Row("resnet50_bf16_peak_gib", "ResNet-50 bf16 autocast peak allocated", "GiB"),
            new Row("resnet50_bf16_speedup", "ResNet-50 bf16 autocast / f32", "x"),
            new Row("resnet20_epoch_cpu_s", "ResNet-20 epoch cpu (b128)", "s"),
            new Row("resnet20_epoch_cuda_s", "ResNet-20 epoch cuda:0 (b128)", "s"),
            new Row("resnet20_speedup", "ResNet-20 cuda:0 speedup", "x"));

    private final Map<String, String> results = new LinkedHashMap<>();
    private final long partSeconds;
    private final long deadlineNanos;

    private GpuBench(long partSeconds, long totalSeconds) {
        this.partSeconds = partSeconds;
        this.deadlineNanos = System.nanoTime() + totalSeconds * 1_000_000_000L;
    }

    public static void main(String[] args) throws IOException {
        Path torchFile = null, tableFile = null;
        long seconds = 60, total = 180;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--torch" -> torchFile = Path.of(args[++i]);
                case "--table" -> tableFile = Path.of(args[++i]);
                case "--seconds" -> seconds = Long.parseLong(args[++i]);
                case "--total-seconds" -> total = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("GpuBench: unknown argument " + args[i]);
            }
        }
        GpuBench bench = new GpuBench(seconds, total);
        int status = bench.runAll();
        String table = table(bench.results, readTorch(torchFile), torchFile);
        if (tableFile != null) Files.writeString(tableFile, table);
        System.out.print(table);
        System.out.flush();
        // Parts that ran past their limit may still hold threads (and the GPU): end the process.
        Runtime.getRuntime().halt(status);
    }

    private int runAll() {
        if (!Cuda.isAvailable()) {
            String reason = "not run: CUDA unavailable: " + Cuda.unavailableReason();
            for (Row r : ROWS) results.put(r.key(), reason);
            return 2;
        }
        System.out.println("gpu-bench: " + Cuda.devices().get(0) + ", " + partSeconds + " s limit a part, "
                + (deadlineNanos - System.nanoTime()) / 1_000_000_000L + " s in all");
        part("smoke", () -> results.putAll(smoke(CUDA)), "smoke_loss", "smoke_accuracy");
        for (int n : new int[] {4096, 8192}) {
            for (String mode : new String[] {"f32", "tf32", "bf16"}) {
                String key = "matmul_" + n + "_" + mode;
                part(key, () -> results.put(key, fmt(matmulTflops(n, mode))), key);
            }
        }
        part("bandwidth", this::bandwidth, "add_gbs", "copy_gbs", "add_vs_copy");
        part("resnet50", () -> resnet50("", null), "resnet50_images_s", "resnet50_peak_gib");
        part("resnet50 bf16", () -> resnet50("_bf16", DType.BFLOAT16), "resnet50_bf16_images_s", "resnet50_bf16_peak_gib");
        results.put("resnet50_bf16_speedup", ratio(results.get("resnet50_bf16_images_s"), results.get("resnet50_images_s")));
        part("resnet20 cpu", () -> results.put("resnet20_epoch_cpu_s", fmt(resnet20EpochSeconds(Device.cpu()))), "resnet20_epoch_cpu_s");
        part("resnet20 cuda", () -> results.put("resnet20_epoch_cuda_s", fmt(resnet20EpochSeconds(CUDA))), "resnet20_epoch_cuda_s");
        results.put("resnet20_speedup", ratio(results.get("resnet20_epoch_cpu_s"), results.get("resnet20_epoch_cuda_s")));
        String smoke = results.get("smoke_accuracy");
        return smoke != null && smoke.startsWith("PASS") ? 0 : 1;
    }

    private interface Part {
        void run() throws Exception;
    }

    /**
     * Runs one part on its own thread under the time limit (the part's, or what is left of the total); on
     * an exception or the limit, every key it should have filled and has not reads {@code not run: <reason>}.
     */
    private void part(String name, Part body, String... keys) {
        long limit = Math.min(partSeconds, (deadlineNanos - System.nanoTime()) / 1_000_000_000L);
        if (limit < 5) {
            for (String k : keys) results.put(k, (k.startsWith("smoke") ? "FAIL: " : "not run: ") + "the total time limit was spent");
            System.out.println("gpu-bench: " + name + " skipped: the total time limit was spent");
            return;
        }
        ExecutorService exec = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "gpu-bench-" + name);
            t.setDaemon(true);
            return t;
        });
        long t0 = System.nanoTime();
        String failure = null;
        try {
            Future<?> f = exec.submit(() -> {
                body.run();
                return null;
            });
            f.get(limit, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            failure = "timed out after " + limit + " s";
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            failure = c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + firstLine(c.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = "interrupted";
        } finally {
            exec.shutdownNow();
        }
        for (String k : keys) {
            if (failure != null && !results.containsKey(k)) results.put(k, (k.startsWith("smoke") ? "FAIL: " : "not run: ") + failure);
        }
        System.out.printf(Locale.ROOT, "gpu-bench: %-14s %6.1f s %s%n", name, (System.nanoTime() - t0) * 1e-9,
                failure == null ? "done" : failure);
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        String line = nl < 0 ? s : s.substring(0, nl);
        return line.length() > 160 ? line.substring(0, 157) + "..." : line;
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    }

    private static String ratio(String a, String b) {
        try {
            return fmt(Double.parseDouble(a) / Double.parseDouble(b));
        } catch (NumberFormatException | NullPointerException e) {
            return "not run: needs both epoch times";
        }
    }

    // ------------------------------------------------------------------ smoke test

    /**
     * The digits MLP on {@code device} through a pinning DataLoader that transfers batches there; see the
     * class comment for the pass rule. Returns {@code smoke_loss} and {@code smoke_accuracy}, each starting
     * with PASS or FAIL.
     */
    static Map<String, String> smoke(Device device) {
        Map<String, String> results = new LinkedHashMap<>();
        Torch.manualSeed(0);
        Module model = new Sequential(new Linear(64, 128), new ReLU(), new Linear(128, 10)).to(device);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9));
        List<Double> losses = new ArrayList<>();
        long t0 = System.nanoTime();
        try (var train = DataLoader.builder(new Digits(true, null, null)).batchSize(64).shuffle(true).generator(new Generator(0))
                .numWorkers(2).pinMemory(true).transferTo(device).build()) {
            while (losses.size() < 300) {
                for (Sample b : train) {
                    if (losses.size() == 300) break;
                    try (MemoryScope scope = new MemoryScope()) {
                        Tensor loss = F.crossEntropy(model.forward(b.input().reshape(-1, 64)), b.target());
                        opt.zeroGrad();
                        loss.backward();
                        opt.step();
                        losses.add(loss.item());
                    }
                }
            }
        }
        double stepMs = (System.nanoTime() - t0) * 1e-6 / losses.size();
        double first = mean(losses.subList(0, 20)), last = mean(losses.subList(280, 300));
        boolean falls = last < 0.5 * first;
        results.put("smoke_loss", String.format(Locale.ROOT, "%s %.3f->%.3f", falls ? "PASS" : "FAIL", first, last));
        long correct = 0, total = 0;
        model.eval();
        try (var test = DataLoader.builder(new Digits(false, null, null)).batchSize(128).transferTo(device).build()) {
            for (Sample b : test) {
                try (MemoryScope scope = new MemoryScope()) {
                    long[] predicted = model.forward(b.input().reshape(-1, 64)).argmax(1).cpu().toLongArray();
                    long[] labels = b.target().cpu().toLongArray();
                    for (int i = 0; i < labels.length; i++) if (predicted[i] == labels[i]) correct++;
                    total += labels.length;
                }
            }
        }
        double accuracy = (double) correct / total;
        boolean pass = falls && accuracy >= 0.90;
        results.put("smoke_accuracy", String.format(Locale.ROOT, "%s %.3f (%.1f ms/step)", pass ? "PASS" : "FAIL", accuracy, stepMs));
        opt.close();
        model.close();
        return results;
    }

    private static double mean(List<Double> v) {
        double s = 0;
        for (double x : v) s += x;
        return s / v.size();
    }

    // ------------------------------------------------------------------ matmul and bandwidth

    /** Wall seconds of {@code reps} calls after {@code warmup}, the device synchronised around the timed calls. */
    private static double seconds(int warmup, int reps, Runnable body) {
        for (int i = 0; i < warmup; i++) body.run();
        Cuda.synchronize(CUDA);
        long t0 = System.nanoTime();
        for (int i = 0; i < reps; i++) body.run();
        Cuda.synchronize(CUDA);
        return (System.nanoTime() - t0) * 1e-9 / reps;
    }

    private static double matmulTflops(int n, String mode) {
        DType dtype = mode.equals("bf16") ? DType.BFLOAT16 : DType.FLOAT32;
        boolean previous = MatmulSettings.setAllowTf32(mode.equals("tf32"));
        try (Tensor a = Torch.randn(new long[] {n, n}, dtype, CUDA, Generator.defaultGenerator()); Tensor b = Torch.randn(new long[] {n, n}, dtype, CUDA, Generator.defaultGenerator())) {
            double s = seconds(3, n <= 4096 ? 30 : 8, () -> a.matmul(b).close());
            return 2.0 * n * n * n / s / 1e12;
        } finally {
            MatmulSettings.setAllowTf32(previous);
        }
    }

    private void bandwidth() {
        long n = 1L << 28;
        double bytes = n * 4.0;
        try (Tensor x = Torch.full(new long[] {n}, 1.0, DType.FLOAT32, CUDA); Tensor y = Torch.full(new long[] {n}, 2.0, DType.FLOAT32, CUDA);
             Tensor z = Torch.empty(new long[] {n}, DType.FLOAT32, CUDA)) {
            double add = 3 * bytes / seconds(2, 10, () -> x.add(y).close()) / 1e9;
            results.put("add_gbs", fmt(add));
            double copy = 2 * bytes / seconds(2, 10, () -> z.copy_(x)) / 1e9;
            results.put("copy_gbs", fmt(copy));
            results.put("add_vs_copy", fmt(add / copy));
        }
    }

    // ------------------------------------------------------------------ training steps

    /** Median seconds of a training step of {@code model} on {@code device}, random inputs, cross entropy, SGD momentum. */
    private static double stepSeconds(Module model, Device device, long[] inputShape, int classes, int warmup, int reps) {
        return stepSeconds(model, device, inputShape, classes, warmup, reps, null);
    }

    /** As above; with {@code amp} (a lower-precision dtype) the forward and loss run under autocast. */
    private static double stepSeconds(Module model, Device device, long[] inputShape, int classes, int warmup, int reps, DType amp) {
        model.to(device);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.05).momentum(0.9).weightDecay(1e-4));
        try (Tensor x = Torch.randn(inputShape, DType.FLOAT32, device, Generator.defaultGenerator());
             Tensor y = Torch.randint(0, classes, new long[] {inputShape[0]}, DType.INT64, device, Generator.defaultGenerator())) {
            Runnable step = () -> {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor loss;
                    try (Autocast ac = Autocast.scope(device, amp == null ? DType.BFLOAT16 : amp, amp != null, true)) {
                        loss = F.crossEntropy(model.forward(x), y);
                    }
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
                if (device.isCuda()) Cuda.synchronize(device);
            };
            return Timing.median(warmup, reps, step);
        } finally {
            opt.close();  // its momentum buffers, which would count in the next part's peak
            model.close();
        }
    }

    /** ResNet-50 images per second and the allocator's peak (f32, or under {@code amp} autocast) into {@code results}. */
    private void resnet50(String key, DType amp) {
        Torch.manualSeed(0);
        Backends.of(CUDA).allocator(CUDA).resetPeakStats();
        double step = stepSeconds(ResNet.resnet50(), CUDA, new long[] {128, 3, 224, 224}, 1000, 3, 10, amp);
        results.put("resnet50" + key + "_images_s", fmt(128 / step));
        results.put("resnet50" + key + "_peak_gib", fmt(Torch.memoryStats(CUDA).peakAllocatedBytes() / (double) (1L << 30)));
    }

    /** Median step x 391 steps: an epoch of 50,000 CIFAR-shaped images (synthetic: no data set is carried). */
    private static double resnet20EpochSeconds(Device device) {
        Torch.manualSeed(0);
        double step = device.isCuda() ? stepSeconds(CifarResNet.resnet20(10), device, new long[] {128, 3, 32, 32}, 10, 5, 20)
                : stepSeconds(CifarResNet.resnet20(10), device, new long[] {128, 3, 32, 32}, 10, 3, 5);
        return step * Math.ceilDiv(EPOCH_IMAGES, 128);
    }

    // ------------------------------------------------------------------ the table

    private static Map<String, String> readTorch(Path file) {
        Map<String, String> m = new LinkedHashMap<>();
        if (file == null) return m;
        try {
            for (String line : Files.readAllLines(file)) {
                int tab = line.indexOf('\t');
                if (tab > 0) m.put(line.substring(0, tab), line.substring(tab + 1));
            }
        } catch (IOException e) {
            m.put("_error", "not run: cannot read " + file + ": " + e.getMessage());
        }
        return m;
    }

    /** The side-by-side table; long "not run" reasons become numbered notes under it. */
    static String table(Map<String, String> jtorch, Map<String, String> torch, Path torchFile) {
        String missingTorch = torch.getOrDefault("_error", torchFile == null ? "not run: no PyTorch results given"
                : "not run: no result (see the PyTorch script's output)");
        List<String> notes = new ArrayList<>();
        StringBuilder sb = new StringBuilder();
        sb.append("\n==== GPU table: jtorch vs PyTorch ").append(torch.getOrDefault("_torch_version", "?")).append(" on ")
                .append(torch.getOrDefault("_device", Cuda.isAvailable() ? Cuda.devices().get(0).name() : "no GPU")).append(" ====\n");
        sb.append(String.format(Locale.ROOT, "%-38s %-24s %-24s %s%n", "benchmark", "jtorch", "torch", "unit"));
        for (Row r : ROWS) {
            String j = cell(jtorch.getOrDefault(r.key(), "not run: not measured"), notes);
            String t = cell(torch.getOrDefault(r.key(), missingTorch), notes);
            sb.append(String.format(Locale.ROOT, "%-38s %-24s %-24s %s%n", r.label(), j, t, r.unit()));
        }
        for (int i = 0; i < notes.size(); i++) sb.append("[").append(i + 1).append("] ").append(notes.get(i)).append('\n');
        return sb.toString();
    }

    private static String cell(String value, List<String> notes) {
        if (value.length() <= 24) return value;
        int i = notes.indexOf(value);
        if (i < 0) {
            notes.add(value);
            i = notes.size() - 1;
        }
        String head = value.startsWith("FAIL") ? "FAIL" : value.startsWith("not run") ? "not run" : value.substring(0, 16);
        return head + " [" + (i + 1) + "]";
    }
}
