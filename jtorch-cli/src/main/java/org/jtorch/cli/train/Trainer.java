package org.jtorch.cli.train;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.SteadyState;
import org.jtorch.amp.Autocast;
import org.jtorch.amp.GradScaler;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;
import org.jtorch.cli.report.ProgressBar;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.DistributedSampler;
import org.jtorch.distributed.LaunchEnvironment;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.io.Checkpoint;
import org.jtorch.memory.MemoryScope;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.nn.F;
import org.jtorch.nn.Flatten;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.parallel.DistributedDataParallel;
import org.jtorch.optim.Adadelta;
import org.jtorch.optim.Adamax;
import org.jtorch.optim.LBFGS;
import org.jtorch.optim.NAdam;
import org.jtorch.optim.RAdam;
import org.jtorch.optim.Adagrad;
import org.jtorch.optim.Adam;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.RMSprop;
import org.jtorch.optim.SGD;
import org.jtorch.optim.lr.CosineAnnealingLR;
import org.jtorch.optim.lr.LRScheduler;
import org.jtorch.optim.lr.MultiStepLR;
import org.jtorch.optim.lr.OneCycleLR;
import org.jtorch.optim.lr.StepLR;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.jtorch.vision.models.Models;

/**
 * The training loop of {@code jtorch train}: builds the model, optimizer, scheduler and data loaders
 * from a {@link TrainConfig}, trains with cross entropy, evaluates after every epoch, and keeps the
 * history that the summary table, the plot and the metrics file are made from.
 */
public final class Trainer {
    public static final List<String> MODELS = List.of("mlp", "lenet", "resnet20", "resnet32", "resnet56", "resnet18", "resnet34", "resnet50");
    public static final List<String> OPTIMIZERS = List.of("sgd", "adam", "adamw", "nadam", "radam", "adamax", "adadelta", "rmsprop", "adagrad", "lbfgs");
    public static final List<String> SCHEDULERS = List.of("none", "step", "multistep", "cosine", "onecycle");
    public static final List<String> PRECISIONS = List.of("off", "fp16", "bf16");

    /** One epoch's figures. */
    public record EpochResult(int epoch, double trainLoss, double trainAccuracy, double testLoss, double testAccuracy,
                              double seconds, double imagesPerSecond, double lr) {}

    /**
     * One training step of this run: where it ends in epochs (2.5: halfway through the third), its loss, its wall
     * time (from the end of the step before, so the wait for its batch counts) and its images.
     */
    public record Step(double epoch, double loss, double seconds, long images) {}

    /** The run's throughput after its warm-up, and the warm-up itself (C2 compiling, caches filling). */
    public record Throughput(double steadyImagesPerSecond, int warmupSteps, double warmupSeconds, double warmupImagesPerSecond) {}

    private final TrainConfig config;
    private final List<Step> steps = new ArrayList<>();
    private final PrintStream out;
    private final boolean terminal;
    private final List<EpochResult> history = new ArrayList<>();
    private TrainData data;
    private Module model;
    /** With {@code --compile}: the trained module (the model or its DDP wrapper) and the model, compiled by the JIT. */
    private TensorFunction compiledTrained;
    private TensorFunction compiledModel;
    private long peakBytes;
    private GradScaler scaler;

    public Trainer(TrainConfig config, PrintStream out, boolean terminal) {
        this.config = config;
        this.out = out;
        this.terminal = terminal;
    }

    public List<EpochResult> history() {
        return history;
    }

    /** This run's steps, in order (not those of a run it resumed). */
    public List<Step> steps() {
        return steps;
    }

    /**
     * The steady-state images per second (the steps after the warm-up, {@link SteadyState}), and the warm-up's;
     * null before the first step. A run too short to settle counts every step as steady.
     */
    public Throughput throughput() {
        if (steps.isEmpty()) return null;
        SteadyState st = SteadyState.of(steps.stream().mapToDouble(Step::seconds).toArray());
        int k = Math.max(0, st.warmupSteps());
        double warmSeconds = 0, warmImages = 0, seconds = 0, images = 0;
        for (int i = 0; i < steps.size(); i++) {
            Step s = steps.get(i);
            if (i < k) {
                warmSeconds += s.seconds();
                warmImages += s.images();
            } else {
                seconds += s.seconds();
                images += s.images();
            }
        }
        return new Throughput(images / seconds, k, warmSeconds, k == 0 ? 0 : warmImages / warmSeconds);
    }

    public TrainData data() {
        return data;
    }

    public Module model() {
        return model;
    }

    /** Peak bytes allocated on the training device during the run. */
    public long peakBytes() {
        return peakBytes;
    }

    /** Trains for the configured epochs (continuing from {@code --resume}); {@code defaultDataset} allows the digits fallback. */
    public void run(boolean defaultDataset) throws IOException {
        Torch.manualSeed(config.seed());
        Generator shuffle = new Generator(config.seed() + 1);
        Generator augmentation = new Generator(config.seed() + 2);
        data = TrainData.load(config, defaultDataset, augmentation);
        if (!data.note().isEmpty()) out.println("note: " + data.note());

        Device device = workerDevice(config.device());
        model = createModel(config.model(), data);
        model.to(device); // before the optimizer: to() replaces the parameter tensors
        // Started by jtorch launch or mpirun: data-parallel, each rank on its shard with its own --batch-size (as torchrun).
        ProcessGroup group = startProcessGroup(device);
        Module trained = group == null ? model : new DistributedDataParallel(model, group);
        if (config.compile()) {
            compiledTrained = Jit.compile(trained);
            compiledModel = trained == model ? compiledTrained : Jit.compile(model);
        }
        Optimizer optimizer = createOptimizer(trained);
        if (config.amp().equals("fp16") && device.isCpu()) {
            throw new IllegalArgumentException("--amp fp16 needs a CUDA device (CPU autocast computes in bf16: use --amp bf16)");
        }
        scaler = config.amp().equals("fp16") ? new GradScaler() : null; // bf16 has f32's range: no loss scaling needed
        if (scaler != null && optimizer instanceof LBFGS) {
            throw new IllegalArgumentException("--optimizer lbfgs cannot use --amp fp16: loss scaling takes no closure, as in PyTorch");
        }
        // On a GPU the loader hands out batches already there: copied from pinned memory on a side stream with
        // --pin-memory, overlapping the previous step's kernels.
        DistributedSampler shard = group == null ? null
                : new DistributedSampler(data.train().size(), group.size(), group.rank(), true, config.seed(), false);
        var trainBuilder = DataLoader.builder(data.train()).batchSize(config.batchSize()).numWorkers(config.workers())
                .pinMemory(config.pinMemory());
        if (shard == null) {
            trainBuilder.shuffle(true).generator(shuffle);
        } else {
            trainBuilder.sampler(shard);
        }
        var testBuilder = DataLoader.builder(data.test()).batchSize(Math.max(config.batchSize(), 256))
                .numWorkers(config.workers()).pinMemory(config.pinMemory());
        if (device.isCuda()) {
            trainBuilder.transferTo(device);
            testBuilder.transferTo(device);
        }
        DataLoader<Sample> trainLoader = trainBuilder.build();
        DataLoader<Sample> testLoader = testBuilder.build();
        double peakLr = optimizer.paramGroups().get(0).getDouble("lr"); // before a one-cycle schedule lowers it for warm-up
        LRScheduler scheduler = createScheduler(optimizer, trainLoader.size());

        Checkpoint checkpoint = new Checkpoint().model(model).optimizer(optimizer)
                .generator("shuffle", shuffle).generator("augmentation", augmentation).generator("default", Generator.defaultGenerator())
                .component("history", this::historyState, this::loadHistory);
        if (scheduler != null) checkpoint.scheduler(scheduler);
        if (scaler != null) checkpoint.component("scaler", scaler::stateDict, scaler::loadStateDict);
        int startEpoch = 0;
        if (config.resume() != null) {
            startEpoch = (int) checkpoint.load(config.resume()).epoch();
            out.println("resumed from " + config.resume() + " after epoch " + startEpoch);
        }

        out.printf(Locale.ROOT, "training %s on %s (%d train / %d test images) on %s%s: %d epochs, batch %d%s, %s lr %s%s%n",
                config.model(), data.description(), data.train().size(), data.test().size(), device,
                group == null ? "" : ", data-parallel on " + group.size() + " ranks (" + group.backend() + ")", config.epochs(),
                config.batchSize(), group == null ? "" : " per rank", config.optimizer(), formatLr(peakLr),
                scheduler == null ? "" : ", " + config.scheduler() + " schedule");
        Backends.of(device).allocator(device).resetPeakStats();
        try (trainLoader; testLoader) {
            for (int epoch = startEpoch; epoch < config.epochs(); epoch++) {
                double lr = optimizer.paramGroups().get(0).getDouble("lr");
                long start = System.nanoTime();
                if (shard != null) shard.setEpoch(epoch);
                double[] train = trainEpoch(epoch, trained, trainLoader, optimizer, scheduler instanceof OneCycleLR ? scheduler : null, device);
                double seconds = (System.nanoTime() - start) / 1e9;
                if (scheduler != null && !(scheduler instanceof OneCycleLR)) scheduler.step();
                double[] test = evaluate(testLoader, device);
                history.add(new EpochResult(epoch + 1, train[0], train[1], test[0], test[1], seconds, train[2] / seconds, lr));
                out.printf(Locale.ROOT, "epoch %d/%d: train loss %.4f, train accuracy %.2f%%, test loss %.4f, test accuracy %.2f%% (%.1f s, %.0f images/s)%n",
                        epoch + 1, config.epochs(), train[0], 100 * train[1], test[0], 100 * test[1], seconds, train[2] / seconds);
                if (config.checkpoint() != null && (group == null || group.rank() == 0)) checkpoint.save(config.checkpoint(), epoch + 1, (long) (epoch + 1) * trainLoader.size());
            }
        }
        peakBytes = Torch.memoryStats(device).peakAllocatedBytes();
        if (group != null) Distributed.destroyProcessGroup();
    }

    /** The process group when this process is one of several workers (mpi on the CPU, nccl on GPUs), else null. */
    private static ProcessGroup startProcessGroup(Device device) {
        if (LaunchEnvironment.current().worldSize() == 1) return null;
        return Distributed.initProcessGroup(device.isCpu() ? "mpi" : "nccl");
    }

    /** On GPUs each worker of a node takes its own device, cuda:(LOCAL_RANK mod devices), as the nccl group does. */
    private static Device workerDevice(Device configured) {
        LaunchEnvironment env = LaunchEnvironment.current();
        if (!configured.isCuda() || env.worldSize() == 1) return configured;
        int devices = org.jtorch.cuda.Cuda.deviceCount();
        return devices == 0 ? configured : Device.cuda(env.localRank() % devices);
    }

    /** Returns {mean loss, accuracy, images}; {@code trained} is the model, or its data-parallel wrapper. */
    private double[] trainEpoch(int epoch, Module trained, DataLoader<Sample> loader, Optimizer optimizer, LRScheduler perStep, Device device) {
        trained.train();
        ProgressBar bar = new ProgressBar(out, String.format(Locale.ROOT, "epoch %d/%d", epoch + 1, config.epochs()), loader.size(), terminal);
        double lossSum = 0;
        long correct = 0;
        long seen = 0;
        int step = 0;
        long last = System.nanoTime();
        for (Sample batch : loader) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = batch.input().to(device);
                Tensor y = batch.target().to(device);
                double l;
                if (optimizer instanceof LBFGS lbfgs) {
                    // LBFGS re-evaluates the batch; the loss and accuracy reported are its first evaluation's.
                    long[] firstCorrect = {-1};
                    Tensor loss = lbfgs.step(() -> {
                        optimizer.zeroGrad();
                        Forward f = forward(trained, x, y, device);
                        f.loss().backward();
                        if (firstCorrect[0] < 0) firstCorrect[0] = correctCount(f.logits(), y);
                        return f.loss();
                    });
                    l = loss.item();
                    correct += firstCorrect[0];
                } else {
                    Forward f = forward(trained, x, y, device);
                    Tensor loss = f.loss();
                    optimizer.zeroGrad();
                    if (scaler != null) {
                        scaler.scale(loss).backward();
                        scaler.step(optimizer);
                        scaler.update();
                    } else {
                        loss.backward();
                        optimizer.step();
                    }
                    l = loss.item();
                    correct += correctCount(f.logits(), y);
                }
                if (perStep != null) perStep.step();
                long n = y.size(0);
                lossSum += l * n;
                seen += n;
                step++;
                long now = System.nanoTime();
                steps.add(new Step(epoch + (double) step / loader.size(), l, (now - last) / 1e9, n));
                last = now;
                bar.update(step, String.format(Locale.ROOT, "loss %.4f", l));
            }
        }
        bar.finish();
        return new double[] {lossSum / Math.max(seen, 1), (double) correct / Math.max(seen, 1), seen};
    }

    private record Forward(Tensor logits, Tensor loss) {}

    /** The logits of {@code trained} (the model, or its data-parallel wrapper) and the batch's cross-entropy loss, under autocast when it is on. */
    private Forward forward(Module trained, Tensor x, Tensor y, Device device) {
        try (Autocast ac = autocast(device)) {
            Tensor logits = compiledTrained != null ? compiledTrained.apply(x) : trained.forward(x);
            return new Forward(logits, F.crossEntropy(logits, y));
        }
    }

    private static long correctCount(Tensor logits, Tensor y) {
        try (var g = Grad.noGrad(); Tensor predicted = logits.argmax(1, false); Tensor hits = predicted.eq(y); Tensor count = hits.sum()) {
            return (long) count.item();
        }
    }

    /** Returns {mean loss, accuracy}. */
    private double[] evaluate(DataLoader<Sample> loader, Device device) {
        model.eval();
        double lossSum = 0;
        long correct = 0;
        long seen = 0;
        try (var g = Grad.noGrad()) {
            for (Sample batch : loader) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor x = batch.input().to(device);
                    Tensor y = batch.target().to(device);
                    Tensor logits;
                    try (Autocast ac = autocast(device)) {
                        logits = compiledModel != null ? compiledModel.apply(x) : model.forward(x);
                        lossSum += F.crossEntropy(logits, y).item() * y.size(0);
                    }
                    correct += (long) logits.argmax(1, false).eq(y).sum().item();
                    seen += y.size(0);
                }
            }
        }
        return new double[] {lossSum / Math.max(seen, 1), (double) correct / Math.max(seen, 1)};
    }

    /** An autocast scope for {@code --amp}; null when it is off (try-with-resources skips a null resource). */
    private Autocast autocast(Device device) {
        return switch (config.amp()) {
            case "bf16" -> Autocast.enable(device, DType.BFLOAT16);
            case "fp16" -> Autocast.enable(device, DType.FLOAT16);
            default -> null;
        };
    }

    static Module createModel(String name, TrainData data) {
        if (name.equals("mlp")) {
            try (Sample s = data.train().get(0)) {
                long features = s.input().numel();
                return new Sequential(new Flatten(), new Linear(features, 512), new ReLU(), new Linear(512, 512), new ReLU(),
                        new Linear(512, data.numClasses()));
            }
        }
        return Models.create(name.equals("lenet") ? "lenet5" : name, data.numClasses(), data.inChannels());
    }

    private Optimizer createOptimizer(Module model) {
        double lr = config.lr();
        double wd = Double.isNaN(config.weightDecay()) ? 0 : config.weightDecay(); // NaN: the optimizer's default
        return switch (config.optimizer()) {
            case "sgd" -> new SGD(model.parameters(), SGD.options().lr(Double.isNaN(lr) ? (config.scheduler().equals("onecycle") ? 0.05 : 0.01) : lr).momentum(config.momentum()).weightDecay(wd));
            case "adam" -> new Adam(model.parameters(), Adam.options().lr(Double.isNaN(lr) ? 1e-3 : lr).weightDecay(wd));
            case "adamw" -> new AdamW(model.parameters(), AdamW.options().lr(Double.isNaN(lr) ? 1e-3 : lr).weightDecay(Double.isNaN(config.weightDecay()) ? 0.01 : wd));
            case "nadam" -> new NAdam(model.parameters(), NAdam.options().lr(Double.isNaN(lr) ? 2e-3 : lr).weightDecay(wd));
            case "radam" -> new RAdam(model.parameters(), RAdam.options().lr(Double.isNaN(lr) ? 1e-3 : lr).weightDecay(wd));
            case "adamax" -> new Adamax(model.parameters(), Adamax.options().lr(Double.isNaN(lr) ? 2e-3 : lr).weightDecay(wd));
            case "adadelta" -> new Adadelta(model.parameters(), Adadelta.options().lr(Double.isNaN(lr) ? 1.0 : lr).weightDecay(wd));
            case "rmsprop" -> new RMSprop(model.parameters(), RMSprop.options().lr(Double.isNaN(lr) ? 1e-3 : lr).weightDecay(wd));
            case "lbfgs" -> {
                if (wd != 0) throw new IllegalArgumentException("--weight-decay does not apply to --optimizer lbfgs (PyTorch's LBFGS has none)");
                yield new LBFGS(model.parameters(), LBFGS.options().lr(Double.isNaN(lr) ? 1 : lr).lineSearchFn("strong_wolfe"));
            }
            case "adagrad" -> new Adagrad(model.parameters(), Adagrad.options().lr(Double.isNaN(lr) ? 1e-2 : lr).weightDecay(wd));
            default -> throw new IllegalArgumentException("unknown optimizer '" + config.optimizer() + "'");
        };
    }

    private LRScheduler createScheduler(Optimizer optimizer, int stepsPerEpoch) {
        int epochs = config.epochs();
        return switch (config.scheduler()) {
            case "none" -> null;
            case "step" -> new StepLR(optimizer, Math.max(1, epochs / 3), 0.1);
            case "multistep" -> new MultiStepLR(optimizer, new int[] {Math.max(1, epochs / 2), Math.max(2, epochs * 3 / 4)}, 0.1);
            case "cosine" -> new CosineAnnealingLR(optimizer, epochs);
            case "onecycle" -> new OneCycleLR(optimizer, OneCycleLR.options(optimizer.paramGroups().get(0).getDouble("lr"))
                    .epochs(epochs).stepsPerEpoch(stepsPerEpoch));
            default -> throw new IllegalArgumentException("unknown scheduler '" + config.scheduler() + "'");
        };
    }

    private Map<String, Object> historyState() {
        List<Object> rows = new ArrayList<>();
        for (EpochResult r : history) {
            rows.add(List.of(r.epoch(), r.trainLoss(), r.trainAccuracy(), r.testLoss(), r.testAccuracy(), r.seconds(), r.imagesPerSecond(), r.lr()));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("epochs", rows);
        return m;
    }

    private void loadHistory(Map<String, Object> state) {
        history.clear();
        if (!(state.get("epochs") instanceof List<?> rows)) return;
        for (Object row : rows) {
            List<?> v = (List<?>) row;
            history.add(new EpochResult(((Number) v.get(0)).intValue(), d(v.get(1)), d(v.get(2)), d(v.get(3)), d(v.get(4)), d(v.get(5)), d(v.get(6)), d(v.get(7))));
        }
    }

    private static double d(Object o) {
        return ((Number) o).doubleValue();
    }

    static String formatLr(double lr) {
        return String.format(Locale.ROOT, "%.4g", lr).replaceAll("\\.?0+$", "");
    }
}
