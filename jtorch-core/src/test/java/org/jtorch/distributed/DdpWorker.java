package org.jtorch.distributed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.AttentionEncoder;
import org.jtorch.nn.BatchNorm1d;
import org.jtorch.nn.BatchNorm2d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Flatten;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.SyncBatchNorm;
import org.jtorch.nn.Tanh;
import org.jtorch.nn.Transformer;
import org.jtorch.nn.TransformerEncoderLayer;
import org.jtorch.nn.TupleModule;
import org.jtorch.nn.parallel.DistributedDataParallel;
import org.jtorch.optim.SGD;
import org.jtorch.types.Device;

/**
 * One rank of {@link DistributedDataParallelTest}'s jobs, and of {@link NcclDistributedDataParallelTest}'s on the
 * CUDA simulator ({@code -Djtorch.test.backend=nccl}: models, data and the reference on {@code cuda:0}). Every rank builds the same data and, in the same
 * process, the single-process reference run from rank 0's initial weights; rank 1's replica starts from other
 * weights, which the wrapper's broadcast must replace. A rank prints {@code rank R ok max|diff|=...} when its
 * replica matches the reference to 1e-6 after the steps, and throws otherwise.
 */
public final class DdpWorker {
    private static final int STEPS = 5;
    private static final int BATCH = 16;
    private static final double TOLERANCE = 1e-6;

    /** {@code mpi} (CPU tensors) or {@code nccl} (CUDA tensors). */
    private static final String BACKEND = System.getProperty("jtorch.test.backend", "mpi");
    private static final Device DEVICE = BACKEND.equals("nccl") ? Device.cuda() : Device.cpu();

    public static void main(String[] args) {
        ProcessGroup pg = Distributed.initProcessGroup(BACKEND, Duration.ofSeconds(60));
        double diff = switch (args[0]) {
            case "mlp" -> mlp(pg, DistributedDataParallel.options());
            case "mlp-small-buckets" -> mlp(pg, DistributedDataParallel.options().bucketCapMb(0.0002).firstBucketCapMb(0.0001));
            case "mlp-bucket-view" -> mlp(pg, DistributedDataParallel.options().bucketCapMb(0.0002).firstBucketCapMb(0.0001)
                    .gradientAsBucketView(true));
            case "cnn" -> cnn(pg);
            case "sync-bn" -> syncBatchNorm(pg);
            case "sync-bn-unequal" -> syncBatchNormUnequal(pg, 4);
            case "sync-bn-empty-rank" -> syncBatchNormUnequal(pg, 0);
            case "no-sync" -> noSync(pg, DistributedDataParallel.options());
            case "no-sync-bucket-view" -> noSync(pg, DistributedDataParallel.options().gradientAsBucketView(true));
            case "layout-differs" -> layoutDiffers(pg);
            case "unused" -> unused(pg);
            case "unused-found" -> unusedFound(pg);
            case "lstm-typed" -> lstmTyped(pg);
            case "encoder-typed" -> encoderTyped(pg);
            default -> throw new IllegalArgumentException(args[0]);
        };
        System.out.println("rank " + pg.rank() + " ok max|diff|=" + diff);
        Distributed.destroyProcessGroup();
    }

    private static Module mlpModel(long seed) {
        Torch.manualSeed(seed);
        return new Sequential(new Linear(8, 32), new Tanh(), new Linear(32, 16), new Tanh(), new Linear(16, 4)).to(DEVICE);
    }

    private static List<Tensor> data(long seed, long... shape) {
        Torch.manualSeed(seed);
        List<Tensor> out = new ArrayList<>();
        for (int s = 0; s < STEPS; s++) {
            try (Tensor t = Torch.randn(shape)) {
                out.add(t.to(DEVICE));
            }
        }
        return out;
    }

    /** Rows [from, from + n) of the global batch. */
    private static Tensor rows(Tensor t, int from, int n) {
        return t.narrow(0, from, n);
    }

    /** The single-process reference: {@code STEPS} steps on the whole batch. */
    private static Module trainedOnTheWholeBatch(Module ref, List<Tensor> xs, List<Tensor> ys) {
        SGD opt = sgd(ref);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            F.mseLoss(ref.forward(xs.get(s)), ys.get(s)).backward();
            opt.step();
        }
        return ref;
    }

    private static SGD sgd(Module m) {
        return new SGD(m.parameters(), SGD.options().lr(0.1).momentum(0.9));
    }

    private static double mlp(ProcessGroup pg, DistributedDataParallel.Options options) {
        int rank = pg.rank();
        int local = BATCH / pg.size();
        List<Tensor> xs = data(1, BATCH, 8);
        List<Tensor> ys = data(2, BATCH, 4);
        // Single process, the whole batch.
        Module ref = trainedOnTheWholeBatch(mlpModel(0), xs, ys);
        DistributedDataParallel ddp = new DistributedDataParallel(mlpModel(rank == 0 ? 0 : 99), pg, options);
        SGD opt = sgd(ddp);
        long headersAfterFirstStep = 0;
        for (int s = 0; s < STEPS; s++) {
            // As bucket views, gradients are set to none (copied into the bucket) and zeroed in place (accumulated there) in turn.
            opt.zeroGrad(!options.gradientAsBucketView() || s % 2 == 0);
            F.mseLoss(ddp.forward(rows(xs.get(s), rank * local, local)), rows(ys.get(s), rank * local, local)).backward();
            opt.step();
            if (s == 0) headersAfterFirstStep = headerExchanges(pg);
        }
        Map<String, Tensor> params = ddp.module().namedParameters();
        boolean shared = params.get("4.bias").grad().storage() == params.get("4.weight").grad().storage();
        check(shared == options.gradientAsBucketView(), "the gradients of one bucket share its storage: " + shared);
        // The layout was compared at construction and after the rebuild: the buckets' all-reduces exchange no headers.
        check(headerExchanges(pg) == headersAfterFirstStep, "header exchanges after the first step: "
                + (headerExchanges(pg) - headersAfterFirstStep));
        if (options.bucketCapBytes() < 1024) {
            // A bucket closes once it reaches its cap, so each holds a bias and a weight; rebuilt after the first
            // iteration in the order the gradients arrived (a layer's bias before its weight).
            check(ddp.bucketParameterNames().toString().equals("[[4.bias, 4.weight], [2.bias, 2.weight], [0.bias, 0.weight]]"),
                    "buckets " + ddp.bucketParameterNames());
        }
        Map<String, Tensor> state = ddp.stateDict();
        check(state.keySet().equals(ref.stateDict().keySet()), "state dict keys without a module. prefix: " + state.keySet());
        return compare(ref.stateDict(), state);
    }

    private static Module cnnModel(long seed) {
        Torch.manualSeed(seed);
        return new Sequential(new Conv2d(1, 4, 3, Conv2d.options().padding(1)), new BatchNorm2d(4), new ReLU(), new Flatten(),
                new Linear(4 * 6 * 6, 3)).to(DEVICE);
    }

    /**
     * Without SyncBatchNorm each rank normalises over its own shard, as PyTorch's DDP: the reference is one process
     * that runs the ranks' shards one after the other and averages their gradients. Buffers follow rank 0 (DDP
     * broadcasts them from rank 0 before each forward), so the reference runs rank 0's shard last.
     */
    private static double cnn(ProcessGroup pg) {
        int rank = pg.rank();
        int size = pg.size();
        int local = BATCH / size;
        List<Tensor> xs = data(3, BATCH, 1, 6, 6);
        List<Tensor> ys = data(4, BATCH, 3);
        Module ref = cnnModel(0);
        SGD refOpt = sgd(ref);
        for (int s = 0; s < STEPS; s++) {
            refOpt.zeroGrad();
            Map<String, Tensor> buffersBefore = new java.util.LinkedHashMap<>();
            for (Map.Entry<String, Tensor> b : ref.namedBuffers().entrySet()) buffersBefore.put(b.getKey(), b.getValue().clone());
            for (int r = size - 1; r >= 0; r--) {
                if (r != size - 1) restore(ref, buffersBefore);
                F.mseLoss(ref.forward(rows(xs.get(s), r * local, local)), rows(ys.get(s), r * local, local)).div(size).backward();
            }
            refOpt.step();
        }
        DistributedDataParallel ddp = new DistributedDataParallel(cnnModel(rank == 0 ? 0 : 99), pg);
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            F.mseLoss(ddp.forward(rows(xs.get(s), rank * local, local)), rows(ys.get(s), rank * local, local)).backward();
            opt.step();
        }
        Map<String, Tensor> expected = ref.stateDict();
        Map<String, Tensor> got = ddp.stateDict();
        if (rank != 0) {
            // Rank 1's buffers were last updated by its own shard; compare parameters only.
            expected.keySet().removeIf(k -> k.contains("running") || k.contains("num_batches"));
            got.keySet().removeIf(k -> k.contains("running") || k.contains("num_batches"));
        }
        double diff = compare(expected, got);
        // Eval mode: buffers broadcast, the outputs of every rank agree with the reference's.
        ref.eval();
        ddp.eval();
        try (Grad.Mode g = Grad.noGrad()) {
            if (rank == 0) diff = Math.max(diff, maxDiff(ref.forward(xs.get(0)), ddp.forward(xs.get(0))));
        }
        return diff;
    }

    /** Batch norm over the whole batch: 2d (converted) and 1d ({@link SyncBatchNorm} itself) layers; plain in the reference. */
    private static Module syncBnModel(long seed, boolean sync) {
        Torch.manualSeed(seed);
        Module bn1d = sync ? new SyncBatchNorm(8) : new BatchNorm1d(8);
        Module m = new Sequential(new Conv2d(1, 4, 3, Conv2d.options().padding(1)), new BatchNorm2d(4), new ReLU(), new Flatten(),
                new Linear(4 * 6 * 6, 8), bn1d, new Tanh(), new Linear(8, 3)).to(DEVICE);
        return sync ? SyncBatchNorm.convertSyncBatchnorm(m) : m;
    }

    /**
     * With SyncBatchNorm the ranks normalise over the global batch, so DDP equals one process with plain batch norm on
     * the whole batch: parameters and running statistics on every rank, and the evaluation outputs.
     */
    private static double syncBatchNorm(ProcessGroup pg) {
        int rank = pg.rank();
        int local = BATCH / pg.size();
        List<Tensor> xs = data(10, BATCH, 1, 6, 6);
        List<Tensor> ys = data(11, BATCH, 3);
        Module ref = trainedOnTheWholeBatch(syncBnModel(0, false), xs, ys);
        DistributedDataParallel ddp = new DistributedDataParallel(syncBnModel(rank == 0 ? 0 : 99, true), pg,
                DistributedDataParallel.options().broadcastBuffers(false));
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            F.mseLoss(ddp.forward(rows(xs.get(s), rank * local, local)), rows(ys.get(s), rank * local, local)).backward();
            opt.step();
        }
        double diff = compare(ref.stateDict(), ddp.stateDict());
        ref.eval();
        ddp.eval();
        try (Grad.Mode g = Grad.noGrad()) {
            diff = Math.max(diff, maxDiff(ref.forward(xs.get(0)), ddp.forward(xs.get(0))));
        }
        check(diff <= TOLERANCE, "evaluation outputs differ by " + diff);
        return diff;
    }

    /**
     * syncBatchNorm with {@code rowsOnRank0} of 13 rows on rank 0 (0: a rank without rows, which must still take part
     * in every collective) and the rest on rank 1, against F.batchNorm on the 13 rows in one process:
     * outputs, input gradients, the weight and bias gradients summed over the ranks, and the running statistics, in
     * float64 to 1e-10; then float32 rows around 1e4 (deviation 1), whose normalised values and running variance stay
     * within 2e-3 of the float64 reference (E[x^2] - E[x]^2 in float32 is off by several units there).
     */
    private static double syncBatchNormUnequal(ProcessGroup pg, int rowsOnRank0) {
        int rank = pg.rank();
        check(pg.size() == 2, "the scenario splits 13 rows over 2 ranks");
        int from = rank == 0 ? 0 : rowsOnRank0;
        int n = rank == 0 ? rowsOnRank0 : 13 - rowsOnRank0;
        Torch.manualSeed(21);
        Tensor full64;
        Tensor upstream;
        try (Tensor x = Torch.randn(13, 3, 2, 2); Tensor g = Torch.randn(13, 3, 2, 2)) {
            full64 = x.to(org.jtorch.types.DType.FLOAT64).mul(1.5).add(0.5).to(DEVICE);
            upstream = g.to(org.jtorch.types.DType.FLOAT64).to(DEVICE);
        }
        double worst = 0;
        for (boolean largeMean : new boolean[] {false, true}) {
            org.jtorch.types.DType dtype = largeMean ? org.jtorch.types.DType.FLOAT32 : org.jtorch.types.DType.FLOAT64;
            double tolerance = largeMean ? 2e-3 : 1e-10;
            // The float32 rows are exactly representable around 1e4; the reference normalises those same values in float64.
            Tensor global = largeMean ? full64.add(1e4).to(dtype) : full64;
            Tensor ref = global.to(org.jtorch.types.DType.FLOAT64).detach().requiresGrad_(true);
            Tensor refW = Torch.tensor(new double[] {0.5, -1.0, 2.0}).to(DEVICE).requiresGrad_(true);
            Tensor refB = Torch.tensor(new double[] {0.1, 0.2, -0.3}).to(DEVICE).requiresGrad_(true);
            Tensor refMean = Torch.zeros(3).to(org.jtorch.types.DType.FLOAT64).to(DEVICE);
            Tensor refVar = Torch.ones(3).to(org.jtorch.types.DType.FLOAT64).to(DEVICE);
            Tensor refOut = F.batchNorm(ref, refMean, refVar, refW, refB, true, 0.1, 1e-5);
            refOut.mul(upstream).sum().backward();

            Tensor x = rows(global, from, n).detach().requiresGrad_(true);
            Tensor w = Torch.tensor(new double[] {0.5, -1.0, 2.0}).to(dtype).to(DEVICE).requiresGrad_(true);
            Tensor b = Torch.tensor(new double[] {0.1, 0.2, -0.3}).to(dtype).to(DEVICE).requiresGrad_(true);
            Tensor runMean = Torch.zeros(3).to(dtype).to(DEVICE);
            Tensor runVar = Torch.ones(3).to(dtype).to(DEVICE);
            Tensor out = SyncBatchNorm.syncBatchNorm(x, runMean, runVar, w, b, 0.1, 1e-5, pg);
            out.mul(rows(upstream, from, n).to(dtype)).sum().backward();
            Tensor wGrad = w.grad().clone();
            Tensor bGrad = b.grad().clone();
            pg.allReduce(wGrad).waitFor();
            pg.allReduce(bGrad).waitFor();
            double[] diffs = {maxDiff(rows(refOut, from, n), out), maxDiff(rows(ref.grad(), from, n), x.grad()), maxDiff(refW.grad(), wGrad),
                    maxDiff(refB.grad(), bGrad), maxDiff(refMean, runMean), maxDiff(refVar, runVar)};
            String[] names = {"outputs", "input gradients", "weight gradient", "bias gradient", "running mean", "running variance"};
            for (int i = 0; i < diffs.length; i++) {
                // Around 1e4 the float32 gradients of the weight and bias sum 13*4 values of size ~1: their tolerance scales with them.
                double scaled = tolerance * (largeMean && (i == 2 || i == 3) ? 50 : 1);
                check(diffs[i] <= scaled, (largeMean ? "float32 around 1e4: " : "float64: ") + names[i] + " differ from batch norm on the "
                        + "13 rows by " + diffs[i]);
                if (!largeMean) worst = Math.max(worst, diffs[i]);
            }
        }
        return worst;
    }

    private static void restore(Module m, Map<String, Tensor> buffers) {
        try (Grad.Mode g = Grad.noGrad()) {
            for (Map.Entry<String, Tensor> b : m.namedBuffers().entrySet()) b.getValue().copy_(buffers.get(b.getKey()));
        }
    }

    /** Two micro-batches per step, the first under noSync: the same as one step on the whole batch. */
    private static double noSync(ProcessGroup pg, DistributedDataParallel.Options options) {
        int rank = pg.rank();
        int size = pg.size();
        int quarter = BATCH / (2 * size);
        List<Tensor> xs = data(5, BATCH, 8);
        List<Tensor> ys = data(6, BATCH, 4);
        Module ref = trainedOnTheWholeBatch(mlpModel(0), xs, ys);
        DistributedDataParallel ddp = new DistributedDataParallel(mlpModel(rank == 0 ? 0 : 99), pg, options);
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad(!options.gradientAsBucketView() || s % 2 == 0);
            for (int m = 0; m < 2; m++) {
                int from = (m * size + rank) * quarter;
                Tensor x = rows(xs.get(s), from, quarter);
                Tensor y = rows(ys.get(s), from, quarter);
                if (m == 0) {
                    try (var noSync = ddp.noSync()) {
                        F.mseLoss(ddp.forward(x), y).div(2).backward();
                    }
                } else {
                    F.mseLoss(ddp.forward(x), y).div(2).backward();
                }
            }
            opt.step();
        }
        return compare(ref.stateDict(), ddp.stateDict());
    }

    /** A model with a layer that forward never uses. */
    public static final class WithUnusedLayer extends Module {
        public WithUnusedLayer() {
            registerModule("used", new Linear(8, 4));
            registerModule("unused", new Linear(8, 4));
            to(DEVICE);
        }

        @Override
        public Tensor forward(Tensor input) {
            return child("used").forward(input);
        }
    }

    /** The mpi group's count of header comparisons (0 on other backends, where the check is vacuous). */
    private static long headerExchanges(ProcessGroup pg) {
        return pg instanceof MpiProcessGroup mpi ? mpi.headerExchanges() : 0;
    }

    /**
     * Rank 1's replica has the transposed weight: the same element count, so the construction's broadcast (one flat
     * buffer per dtype) agrees, and the layout comparison must name the parameter on every rank.
     */
    private static double layoutDiffers(ProcessGroup pg) {
        Module m = pg.rank() == 0 ? new Linear(2, 3, false) : new Linear(3, 2, false);
        try {
            new DistributedDataParallel(m.to(DEVICE), pg);
        } catch (DistributedException e) {
            System.out.println("rank " + pg.rank() + ": " + e.getMessage());
            check(e.getMessage().contains("parameter 0 (weight here) is float32 [3, 2] (6 elements) in bucket 0 on rank 0 but float32 [2, 3] "
                    + "(6 elements) in bucket 0 on rank 1"), e.getMessage());
            return 0;
        }
        throw new AssertionError("no error for replicas with different shapes");
    }

    private static double unused(ProcessGroup pg) {
        Torch.manualSeed(0);
        DistributedDataParallel ddp = new DistributedDataParallel(new WithUnusedLayer(), pg);
        List<Tensor> xs = data(7, BATCH, 8);
        try {
            ddp.forward(xs.get(0)).sum().backward();
        } catch (DistributedException e) {
            System.out.println("rank " + pg.rank() + ": " + e.getMessage());
            check(e.getMessage().contains("2 of 4 parameters got no gradient in this backward: unused.weight, unused.bias"), e.getMessage());
            return 0;
        }
        throw new AssertionError("no error for the unused parameters");
    }

    private static double unusedFound(ProcessGroup pg) {
        int rank = pg.rank();
        int local = BATCH / pg.size();
        List<Tensor> xs = data(8, BATCH, 8);
        List<Tensor> ys = data(9, BATCH, 4);
        Torch.manualSeed(0);
        Module ref = trainedOnTheWholeBatch(new WithUnusedLayer(), xs, ys);
        Torch.manualSeed(rank == 0 ? 0 : 99);
        DistributedDataParallel ddp = new DistributedDataParallel(new WithUnusedLayer(), pg,
                DistributedDataParallel.options().findUnusedParameters(true));
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            F.mseLoss(ddp.forward(rows(xs.get(s), rank * local, local)), rows(ys.get(s), rank * local, local)).backward();
            opt.step();
        }
        check(ddp.module().child("unused").parameter("weight").grad() == null, "a parameter no rank used keeps no gradient");
        return compare(ref.stateDict(), ddp.stateDict());
    }

    private static Sequential.Chain<LSTM.Input, Tensor> lstmChain(long seed) {
        Torch.manualSeed(seed);
        return Sequential.of(new LSTM(3, 4, LSTM.options().batchFirst(true))).map(LSTM.Output::output).then(new Linear(4, 2));
    }

    /**
     * A several-value module through DDP's typed form: a chain {@code (input, (h0, c0)) -> LSTM -> output -> Linear}, each
     * rank given its rows of the batch and of the initial states.
     */
    private static double lstmTyped(ProcessGroup pg) {
        int rank = pg.rank();
        int local = BATCH / pg.size();
        List<Tensor> xs = data(10, BATCH, 5, 3);
        List<Tensor> h0s = data(11, 1, BATCH, 4);
        List<Tensor> c0s = data(12, 1, BATCH, 4);
        List<Tensor> ys = data(13, BATCH, 5, 2);
        Sequential.Chain<LSTM.Input, Tensor> ref = lstmChain(0);
        SGD refOpt = sgd(ref);
        for (int s = 0; s < STEPS; s++) {
            refOpt.zeroGrad();
            F.mseLoss(ref.forward(new LSTM.Input(xs.get(s), new LSTM.State(h0s.get(s), c0s.get(s)))), ys.get(s)).backward();
            refOpt.step();
        }
        Sequential.Chain<LSTM.Input, Tensor> chain = lstmChain(rank == 0 ? 0 : 99);
        DistributedDataParallel ddp = new DistributedDataParallel(chain, pg);
        TupleModule<LSTM.Input, Tensor> model = ddp.typed(chain);
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            LSTM.State state = new LSTM.State(h0s.get(s).narrow(1, rank * local, local), c0s.get(s).narrow(1, rank * local, local));
            F.mseLoss(model.forward(new LSTM.Input(rows(xs.get(s), rank * local, local), state)), rows(ys.get(s), rank * local, local))
                    .backward();
            opt.step();
        }
        return compare(ref.stateDict(), ddp.stateDict());
    }

    private static TransformerEncoderLayer encoderLayer(long seed) {
        Torch.manualSeed(seed);
        return new TransformerEncoderLayer(8, 2, TransformerEncoderLayer.options().dimFeedforward(16).dropout(0).batchFirst(true));
    }

    /** The transformer's {@code (src, mask)} through DDP's typed form, with a causal mask. */
    private static double encoderTyped(ProcessGroup pg) {
        int rank = pg.rank();
        int local = BATCH / pg.size();
        List<Tensor> xs = data(14, BATCH, 6, 8);
        List<Tensor> ys = data(15, BATCH, 6, 8);
        Tensor mask = Transformer.generateSquareSubsequentMask(6);
        TransformerEncoderLayer ref = encoderLayer(0);
        SGD refOpt = sgd(ref);
        for (int s = 0; s < STEPS; s++) {
            refOpt.zeroGrad();
            F.mseLoss(ref.forward(new AttentionEncoder.Input(xs.get(s), mask)), ys.get(s)).backward();
            refOpt.step();
        }
        TransformerEncoderLayer layer = encoderLayer(rank == 0 ? 0 : 99);
        DistributedDataParallel ddp = new DistributedDataParallel(layer, pg);
        TupleModule<AttentionEncoder.Input, Tensor> model = ddp.typed(layer);
        SGD opt = sgd(ddp);
        for (int s = 0; s < STEPS; s++) {
            opt.zeroGrad();
            F.mseLoss(model.forward(new AttentionEncoder.Input(rows(xs.get(s), rank * local, local), mask)),
                    rows(ys.get(s), rank * local, local)).backward();
            opt.step();
        }
        return compare(ref.stateDict(), ddp.stateDict());
    }

    private static double compare(Map<String, Tensor> expected, Map<String, Tensor> got) {
        double worst = 0;
        for (Map.Entry<String, Tensor> e : expected.entrySet()) {
            Tensor g = got.get(e.getKey());
            check(g != null, "missing " + e.getKey());
            double d = maxDiff(e.getValue(), g);
            check(d <= TOLERANCE, e.getKey() + " differs from the single-process run by " + d);
            worst = Math.max(worst, d);
        }
        return worst;
    }

    private static double maxDiff(Tensor a, Tensor b) {
        double[] x = a.toDoubleArray();
        double[] y = b.toDoubleArray();
        double d = 0;
        for (int i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
        return d;
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError("check failed: " + what);
    }
}
