package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.NormalizationOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@code torch.nn.SyncBatchNorm}: batch norm whose training statistics are those of the whole batch across a process
 * group's ranks, so that data-parallel training normalises as one process would on the global batch. On the
 * {@code mpi} backend it runs on CPU tensors, on {@code nccl} on CUDA tensors.
 *
 * <p>As PyTorch's {@code SyncBatchNorm} function, through declared ops ({@code op.NormalizationOps}): each rank takes
 * its per-channel mean and {@code invstd} ({@code batch_norm_stats}, accumulated in double, so that a mean large against
 * the deviation does not cancel the variance away) and its row count, which may differ between ranks; one all-gather of
 * {@code [mean, invstd, count]} gives every rank all of them, merged in double with Chan's formula
 * ({@code batch_norm_gather_stats_with_counts}: {@code M2 = sum n_r var_r + sum n_r (mean_r - mean)^2}, ranks without rows
 * left out), which also moves the running statistics as PyTorch's: the mean by the global mean, the variance by the
 * global unbiased variance, with {@code momentum}; the input is normalised with the global statistics
 * ({@code batch_norm_elemt}). The backward takes this rank's sums ({@code batch_norm_backward_reduce}), all-reduces
 * {@code [sum_dy, sum_dy_xmu]} and gives the input gradient from them ({@code batch_norm_backward_elemt}), so that each
 * rank's input gradient accounts for every rank's loss. Statistics of {@code float16} and {@code bfloat16} inputs are
 * {@code float32}. In evaluation, or with a group of one rank, it is plain batch norm. Every rank must run the same
 * forward and backward (the collectives must match).
 *
 * <p>Conversion: {@link #convertSyncBatchnorm} makes the {@link BatchNorm} layers of an existing model synchronised.
 * Java cannot rebind a model's fields to new objects, so unlike PyTorch it converts them in place: each layer keeps
 * its class, its tensors and its input checks, and normalises with synchronised statistics from then on.
 */
public class SyncBatchNorm extends BatchNorm {
    /** PyTorch's defaults (eps 1e-5, momentum 0.1, affine, tracking), synchronised across the default group. */
    public SyncBatchNorm(long numFeatures) {
        this(numFeatures, 1e-5, 0.1, true, true, null);
    }

    /** {@code group} null: the default group ({@code Distributed.defaultGroup()}) at each training forward. */
    public SyncBatchNorm(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, ProcessGroup group) {
        this(numFeatures, eps, momentum, affine, trackRunningStats, group, Torch.defaultDtype(), Device.cpu());
    }

    public SyncBatchNorm(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, ProcessGroup group,
                         DType dtype, Device device) {
        Arguments.nonNull("SyncBatchNorm", "dtype", dtype);
        Arguments.nonNull("SyncBatchNorm", "device", device);
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
        synchronizeAcross(group);
    }

    @Override
    protected void checkInputDim(Tensor input) {
        if (input.dim() < 2) {
            throw new IllegalArgumentException("SyncBatchNorm: expected at least 2D input (got " + input.dim() + "D input)");
        }
    }

    /** {@link #convertSyncBatchnorm(Module, ProcessGroup)} across the default group. */
    public static <M extends Module> M convertSyncBatchnorm(M module) {
        return convertSyncBatchnorm(module, null);
    }

    /**
     * Makes every {@link BatchNorm} layer in {@code module} (itself included) synchronise its training statistics across
     * {@code group} (null: the default group at each forward), in place (see the class comment), and returns
     * {@code module}, as {@code torch.nn.SyncBatchNorm.convert_sync_batchnorm}.
     */
    public static <M extends Module> M convertSyncBatchnorm(M module, ProcessGroup group) {
        Arguments.nonNull("convertSyncBatchnorm", "module", module);
        for (Module m : module.modules()) {
            if (m instanceof BatchNorm bn) bn.synchronizeAcross(group);
        }
        return module;
    }

    /**
     * Batch norm of {@code input} ({@code [N, C, *]}) in training mode with statistics over every rank of {@code group};
     * {@code runningMean}/{@code runningVar} (either may be null) move with {@code momentum}. Differentiable (once: the
     * backward's own ops record no graph, as PyTorch's).
     */
    public static Tensor syncBatchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias, double momentum,
                                       double eps, ProcessGroup group) {
        Arguments.nonNull("syncBatchNorm", "input", input);
        Arguments.nonNull("syncBatchNorm", "group", group);
        if (input.dim() < 2) throw new IllegalArgumentException("syncBatchNorm: expected at least 2D input, got " + input.dim() + "D");
        // before the collectives and the running statistics' update in place, which a later op's own check would follow
        Dispatcher.sameDevice(FrontEndOps.BATCH_NORM, input, runningMean, runningVar, weight, bias);
        long channels = input.size(1);
        Tensor out;
        Tensor mean;
        Tensor invstd;
        Tensor counts;
        try (Grad.Mode g = Grad.noGrad()) {
            Tensor[] local = input.numel() > 0 ? Dispatcher.callAll(NormalizationOps.BATCH_NORM_STATS, new Tensor[] {input}, eps)
                    : emptyRankStatistics(input, channels);
            DType statType = local[0].dtype();
            long rowsHere = input.numel() / Math.max(1, channels);
            Tensor all = Tensor.empty(new long[] {group.size(), 2 * channels + 1}, statType, input.device());
            try (Tensor localMean = local[0]; Tensor localInvstd = local[1];
                    Tensor localCount = Torch.full(new long[] {1}, (double) rowsHere, statType, input.device());
                    Tensor combined = Torch.cat(localMean, localInvstd, localCount)) {
                group.allGatherIntoTensor(all, combined).waitFor();
            }
            try (all; Tensor means = all.narrow(1, 0, channels); Tensor invstds = all.narrow(1, channels, channels);
                    Tensor countColumn = all.select(1, 2 * channels)) {
                counts = countColumn.contiguous();
                Tensor[] global = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS,
                        new Tensor[] {input, means, invstds, runningMean, runningVar, counts}, momentum, eps);
                mean = global[0];
                invstd = global[1];
            }
            // the kernel moved the running statistics in place
            if (runningMean != null) runningMean.bumpVersion();
            if (runningVar != null) runningVar.bumpVersion();
            out = Dispatcher.call(NormalizationOps.BATCH_NORM_ELEMT, new Tensor[] {input, weight, bias, mean, invstd}, eps);
        }
        if (!Autograd.needsGrad(input, weight, bias)) {
            mean.close();
            invstd.close();
            counts.close();
            return out;
        }
        recordBackward(out, input, weight, bias, mean, invstd, counts, group);
        return out;
    }

    /** A rank with no rows contributes zeros, and a count of zero that the gather leaves out (as PyTorch's). */
    private static Tensor[] emptyRankStatistics(Tensor input, long channels) {
        DType statType = input.dtype() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        return new Tensor[] {Torch.zeros(new long[] {channels}, statType, input.device()), Torch.zeros(new long[] {channels}, statType,
                input.device())};
    }

    /**
     * The backward, as PyTorch's {@code SyncBatchNorm} autograd function: this rank's per-channel sums
     * ({@code batch_norm_backward_reduce}), one all-reduce of {@code [sum_dy, sum_dy_xmu]} so that every rank's input
     * gradient accounts for every rank's loss, then {@code batch_norm_backward_elemt}. The weight's and bias's gradients
     * are this rank's own (data parallelism all-reduces parameters' gradients). Takes {@code mean}, {@code invstd} and
     * {@code counts}: the node owns them from here.
     */
    private static void recordBackward(Tensor out, Tensor input, Tensor weight, Tensor bias, Tensor mean, Tensor invstd, Tensor counts,
                                       ProcessGroup group) {
        SavedTensor savedInput = Autograd.save(input), savedWeight = weight == null ? null : Autograd.save(weight);
        SavedTensor savedMean = Autograd.save(mean), savedInvstd = Autograd.save(invstd), savedCounts = Autograd.save(counts);
        mean.close();
        invstd.close();
        counts.close();
        boolean[] needs = {input.requiresGrad(), weight != null && weight.requiresGrad(), bias != null && bias.requiresGrad()};
        SavedTensor[] saved = savedWeight == null ? new SavedTensor[] {savedInput, savedMean, savedInvstd, savedCounts}
                : new SavedTensor[] {savedInput, savedWeight, savedMean, savedInvstd, savedCounts};
        Autograd.record("SyncBatchNormBackward", new Tensor[] {input, weight, bias}, new Tensor[] {out}, grads -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("SyncBatchNorm: a double backward (createGraph) is not supported, as in PyTorch");
            }
            Tensor x = savedInput.get(), w = savedWeight == null ? null : savedWeight.get();
            Tensor m = savedMean.get(), inv = savedInvstd.get();
            Tensor[] sums = Dispatcher.callAll(NormalizationOps.BATCH_NORM_BACKWARD_REDUCE, new Tensor[] {grads[0], x, m, inv, w},
                    needs[0] ? 1 : 0, needs[1] ? 1 : 0, needs[2] ? 1 : 0);
            Tensor gradInput = null;
            if (needs[0]) {
                long channels = sums[0].numel();
                try (Tensor combined = Torch.cat(sums[0], sums[1])) {
                    group.allReduce(combined, ReduceOp.SUM).waitFor();
                    try (Tensor sumDy = combined.narrow(0, 0, channels); Tensor sumDyXmu = combined.narrow(0, channels, channels)) {
                        gradInput = Dispatcher.call(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT, new Tensor[] {grads[0], x, m, inv, w, sumDy,
                                sumDyXmu, savedCounts.get()});
                    }
                }
            }
            sums[0].close();
            sums[1].close();
            Tensor gradWeight = sums[2], gradBias = sums[3];
            if (!needs[1]) {
                gradWeight.close();
                gradWeight = null;
            }
            if (!needs[2]) {
                gradBias.close();
                gradBias = null;
            }
            return new Tensor[] {gradInput, gradWeight, gradBias};
        }, saved);
    }
}
