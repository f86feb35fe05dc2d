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
 * <p>Forward, as PyTorch's {@code sync_batch_norm}: each rank sums its input per channel, and sums its squares, and
 * counts its elements per channel; one all-reduce of {@code [sum, sum of squares, count]} gives every rank the
 * global mean and biased variance ({@code E[x^2] - E[x]^2}); the input is normalised with them. Backward all-reduces
 * the gradients of those sums (PyTorch's {@code sum_dy} and {@code sum_dy_xmu}), so that each rank's input gradient
 * accounts for every rank's loss. Running statistics move as PyTorch's: the mean by the global mean, the variance by
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
        try (Tensor wide = input.to(statType); Tensor perChannel = wide.transpose(0, 1); Tensor rows = perChannel.reshape(channels, -1);
                Tensor squares = rows.mul(rows); Tensor sum = rows.sum(1); Tensor sumOfSquares = squares.sum(1);
                Tensor localCount = Torch.full(new long[] {1}, (double) rows.size(1), statType, input.device());
                Tensor local = Torch.cat(sum, sumOfSquares, localCount); Tensor global = allReduceSum(local, group);
                Tensor globalSum = global.narrow(0, 0, channels); Tensor globalSquares = global.narrow(0, channels, channels);
                Tensor meanSquare = globalSquares.div(global.narrow(0, 2L * channels, 1))) {
            count = global.narrow(0, 2L * channels, 1);
            mean = globalSum.div(count);
            try (Tensor meanSquared = mean.mul(mean)) {
                var = meanSquare.sub(meanSquared);
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

    /** The sum of {@code t} over the ranks; its backward is the sum of the gradients over the ranks. */
    private static Tensor allReduceSum(Tensor t, ProcessGroup group) {
        Tensor out;
        try (Grad.Mode g = Grad.noGrad()) {
            out = t.clone();
            group.allReduce(out, ReduceOp.SUM).waitFor();
        }
        if (Autograd.needsGrad(t)) {
            Autograd.record("SyncBatchNormAllReduceBackward", out, grads -> {
                Tensor summed = grads[0].clone();
                group.allReduce(summed, ReduceOp.SUM).waitFor();
                return new Tensor[] {summed};
            }, new Tensor[] {t});
        }
        return out;
    }
}
