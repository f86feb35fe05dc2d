package org.jtorch.nn;

import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.ops.Arguments;

/**
 * {@code torch.nn.SyncBatchNorm}: batch norm whose training statistics are those of the whole batch across a process
 * group's ranks, so that data-parallel training normalises as one process would on the global batch. On the
 * {@code mpi} backend it runs on CPU tensors, on {@code nccl} on CUDA tensors.
 *
 * <p>Forward, as PyTorch's {@code sync_batch_norm}: each rank computes, per channel, the mean of its rows and their
 * centred sum of squares (two passes, as Welford's result), and its row count, which may differ between ranks; one
 * all-gather of {@code [mean, M2, count]} gives every rank all of them, merged with Chan's formula
 * ({@code M2 = sum M2_r + sum n_r (mean_r - mean)^2}) into the global mean and biased variance; the input is
 * normalised with them. The merge is differentiable and the all-gather's backward all-reduces the gradients, so
 * that each rank's input gradient accounts for every rank's loss. (The textbook {@code E[x^2] - E[x]^2} cancels
 * catastrophically in float32 when the mean is large against the deviation.) Running statistics move as PyTorch's: the mean by the global mean, the variance by
 * the global unbiased variance ({@code count / (count - 1)}), with {@code momentum}. Statistics of {@code float16}
 * and {@code bfloat16} inputs are computed in {@code float32}. In evaluation, or with a group of one rank, it is
 * plain batch norm. Every rank must run the same forward and backward (the all-reduces must match).
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
     * {@code runningMean}/{@code runningVar} (either may be null) move with {@code momentum}. Differentiable.
     */
    public static Tensor syncBatchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias, double momentum,
                                       double eps, ProcessGroup group) {
        Arguments.nonNull("syncBatchNorm", "input", input);
        Arguments.nonNull("syncBatchNorm", "group", group);
        if (input.dim() < 2) throw new IllegalArgumentException("syncBatchNorm: expected at least 2D input, got " + input.dim() + "D");
        int channels = (int) input.size(1);
        DType statType = input.dtype() == DType.FLOAT16 || input.dtype() == DType.BFLOAT16 ? DType.FLOAT32 : input.dtype();
        long[] statShape = new long[input.dim()];
        java.util.Arrays.fill(statShape, 1);
        statShape[1] = channels;
        Tensor mean;
        Tensor var;
        Tensor count;
        // Each rank's mean and centred sum of squares (two passes over its own rows), merged across ranks with Chan's
        // formula: E[x^2] - E[x]^2 in float32 loses the variance entirely once the mean is ~1e4 times the deviation.
        long rowsHere = input.numel() / channels;
        try (Tensor wide = input.to(statType); Tensor perChannel = wide.transpose(0, 1); Tensor rows = perChannel.reshape(channels, -1);
                Tensor sum = rows.sum(1); Tensor localMean = sum.div((double) Math.max(1, rowsHere)); Tensor column = localMean.view(channels, 1);
                Tensor centred = rows.sub(column); Tensor squares = centred.mul(centred); Tensor localM2 = squares.sum(1);
                Tensor localCount = Torch.full(new long[] {1}, (double) rowsHere, statType, input.device());
                Tensor local = Torch.cat(localMean, localM2, localCount); Tensor all = allGatherRows(local, group);
                Tensor means = all.narrow(1, 0, channels); Tensor m2s = all.narrow(1, channels, channels);
                Tensor counts = all.narrow(1, 2L * channels, 1); Tensor weighted = means.mul(counts); Tensor weightedSum = weighted.sum(0)) {
            count = counts.sum(0);
            mean = weightedSum.div(count);
            try (Tensor delta = means.sub(mean); Tensor deltaSquared = delta.mul(delta); Tensor between = deltaSquared.mul(counts);
                    Tensor betweenSum = between.sum(0); Tensor within = m2s.sum(0); Tensor m2 = within.add(betweenSum)) {
                var = m2.div(count);
            }
        }
        try (count) {
            updateRunningStats(runningMean, runningVar, mean, var, count, momentum);
        }
        try (mean; var; Tensor shift = mean.view(statShape); Tensor varEps = var.add(eps); Tensor invstd = varEps.rsqrt();
                Tensor scale = invstd.view(statShape); Tensor centred = input.sub(shift); Tensor normed = centred.mul(scale)) {
            Tensor out = normed.to(input.dtype());
            if (weight != null) {
                try (Tensor w = weight.view(statShape)) {
                    Tensor scaled = out.mul(w);
                    out.close();
                    out = scaled;
                }
            }
            if (bias != null) {
                try (Tensor b = bias.view(statShape)) {
                    Tensor shifted = out.add(b);
                    out.close();
                    out = shifted;
                }
            }
            return out;
        }
    }

    /** PyTorch's update: mean by the global mean, variance by the global unbiased variance. */
    private static void updateRunningStats(Tensor runningMean, Tensor runningVar, Tensor mean, Tensor var, Tensor count, double momentum) {
        try (Grad.Mode g = Grad.noGrad()) {
            if (runningMean != null) {
                try (Tensor step = mean.mul(momentum); Tensor typed = step.to(runningMean.dtype())) {
                    runningMean.mul_(1 - momentum).add_(typed);
                }
            }
            if (runningVar != null) {
                try (Tensor less = count.sub(1.0); Tensor bessel = count.div(less); Tensor unbiased = var.mul(bessel);
                        Tensor step = unbiased.mul(momentum); Tensor typed = step.to(runningVar.dtype())) {
                    runningVar.mul_(1 - momentum).add_(typed);
                }
            }
        }
    }

    /**
     * Every rank's {@code t} ({@code [L]}) as the rows of a {@code [ranks, L]} tensor; its backward gives this rank the
     * sum over the ranks of the gradients of its row (each rank's loss used every row).
     */
    private static Tensor allGatherRows(Tensor t, ProcessGroup group) {
        Tensor out;
        try (Grad.Mode g = Grad.noGrad()) {
            out = Tensor.empty(new long[] {group.size(), t.numel()}, t.dtype(), t.device());
            try (Tensor c = t.contiguous()) {
                group.allGatherIntoTensor(out, c).waitFor();
            }
        }
        if (Autograd.needsGrad(t)) {
            int rank = group.rank();
            Autograd.record("SyncBatchNormAllGatherBackward", out, grads -> {
                try (Tensor summed = grads[0].contiguous().clone()) {
                    group.allReduce(summed, ReduceOp.SUM).waitFor();
                    try (Tensor mine = summed.select(0, rank)) {
                        return new Tensor[] {mine.clone()};
                    }
                }
            }, new Tensor[] {t});
        }
        return out;
    }
}
