package org.jtorch.ops;

import org.jtorch.op.FrontEndOps;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The normalisation family, as {@code torch.nn.functional}: {@code batchNorm} (the declared
 * {@link NormalizationOps#NATIVE_BATCH_NORM}: one fused kernel forward and one backward, as PyTorch's), {@code instanceNorm} (batch
 * norm over a {@code [1, N*C, ...]} view, as PyTorch does it), {@code layerNorm} (the declared
 * {@link NormalizationOps#NATIVE_LAYER_NORM}, fused as batch norm), {@code rmsNorm} and
 * {@code groupNorm} (front ends of the compositions declared in {@link NormalizationOps}) and
 * {@code localResponseNorm} composed from tensor ops.
 *
 * <p>Inputs are {@code [N, C, *]}. Float16 and bfloat16 inputs are normalised with float32
 * statistics and rounded once; PyTorch 1.13's CPU batch norm accepts bfloat16 but not float16,
 * which jtorch accepts as well.
 */
public final class Normalization {
    private Normalization() {}

    // ------------------------------------------------------------------ batch norm

    /**
     * {@code torch.nn.functional.batch_norm}: {@code (x - mean) / sqrt(var + eps) * weight + bias} per
     * channel (dimension 1). In training the statistics are the batch's (biased variance), and the
     * running statistics, when given, are updated in place: {@code running = (1 - momentum) * running +
     * momentum * batch} with the unbiased batch variance. In evaluation the running statistics are used.
     * {@code weight}, {@code bias} and (in training) the running statistics may be null.
     *
     * <p>Backward: {@link NormalizationOps#NATIVE_BATCH_NORM_BACKWARD}, one fused kernel for the three gradients; under
     * {@code createGraph} the same formula runs as differentiable tensor ops (double backward).
     */
    public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
                                   boolean training, double momentum, double eps) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(FrontEndOps.BATCH_NORM, new Tensor[] {input, runningMean, runningVar, weight, bias},
                    new double[] {training ? 1 : 0, momentum, eps},
                    () -> batchNorm(input, runningMean, runningVar, weight, bias, training, momentum, eps));
        }
        final String op = "batchNorm";
        input.checkOpen(op);
        if (input.dim() < 2) {
            throw new IllegalArgumentException(op + ": expected an input of at least 2 dimensions [N, C, *], got shape "
                    + Shapes.format(input.shape()));
        }
        if (!input.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": \"batch_norm\" not implemented for '" + input.dtype()
                    + "': expected a floating point input");
        }
        long n = input.size(0);
        long c = input.size(1);
        long s = 1;
        for (int d = 2; d < input.dim(); d++) s *= input.size(d);
        Dispatcher.sameDevice(FrontEndOps.BATCH_NORM, input, runningMean, runningVar, weight, bias);
        checkChannels(op, "running_mean", runningMean, c);
        checkChannels(op, "running_var", runningVar, c);
        checkChannels(op, "weight", weight, c);
        checkChannels(op, "bias", bias, c);
        if (training && n * s == 1) {
            throw new IllegalArgumentException(op + ": Expected more than 1 value per channel when training, got input size "
                    + Shapes.format(input.shape()));
        }
        if (!training && (runningMean == null || runningVar == null)) {
            throw new IllegalArgumentException(op + ": running_mean and running_var must be defined in evaluation mode");
        }
        if (input.numel() == 0) return emptyBatchNorm(input, weight, bias);
        Tensor[] r = Dispatcher.callAll(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {input, weight, bias, runningMean, runningVar},
                training ? 1 : 0, momentum, eps);
        // the saved statistics: autograd holds its own references where the backward reads them
        r[1].close();
        r[2].close();
        if (training) {
            // the kernel moved the running statistics in place
            if (runningMean != null) runningMean.bumpVersion();
            if (runningVar != null) runningVar.bumpVersion();
        }
        return r[0];
    }

    /**
     * Batch norm's statistics in training: the per-channel mean and {@code 1 / sqrt(var + eps)} of {@code x}
     * (contiguous, at least {@code [N, C]}; float64 for a float64 input, else float32), with the running statistics
     * (where given) moved towards them by {@code momentum}, the variance unbiased, as PyTorch does; the statistics by
     * {@link NormalizationOps#BATCH_NORM_MEAN_VAR}. Called with grad mode off; the JIT's batch norm fused with its
     * activation computes its statistics here too.
     */
    public static Tensor[] batchNormStatistics(Tensor x, Tensor runningMean, Tensor runningVar, double momentum, double eps) {
        long count = x.numel() / Math.max(1, x.size(1));
        Tensor[] meanVar = Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {x});
        try (Tensor var = meanVar[1]) {
            return batchNormStatistics(meanVar[0], var, count, runningMean, runningVar, momentum, eps);
        }
    }

    /**
     * The end of {@link #batchNormStatistics(Tensor, Tensor, Tensor, double, double)} from a batch's per-channel
     * {@code mean} and biased {@code var} over {@code count} values each, computed elsewhere (the JIT gathers them in a
     * convolution's epilogue): the running statistics updated, then {@code [mean, invstd]} ({@code mean} itself, now
     * the caller's to close with the new {@code invstd}; {@code var} stays the caller's).
     */
    public static Tensor[] batchNormStatistics(Tensor mean, Tensor var, long count, Tensor runningMean, Tensor runningVar,
                                               double momentum, double eps) {
        double varAlpha = momentum * (count > 1 ? (double) count / (count - 1) : Double.NaN);
        Tensor inv = updateStatsInOneKernel(mean, var, runningMean, runningVar, momentum, varAlpha, eps);
        if (inv != null) return new Tensor[] {mean, inv};
        if (runningMean != null) runningMean.mul_(1 - momentum).add_(mean, momentum);
        if (runningVar != null) runningVar.mul_(1 - momentum).add_(var, varAlpha);
        return new Tensor[] {mean, invstd(var, eps)};
    }

    /**
     * The running statistics moved and {@code invstd} computed by the backend's one kernel
     * ({@code NormalizationKernels.batchNormUpdateStats}, the bits of the tensor ops), four dispatched ops and a host
     * round trip fewer; null, having done nothing, where it has none for these operands or they are not all on one device
     * (then the tensor ops run, and name any mismatch).
     */
    private static Tensor updateStatsInOneKernel(Tensor mean, Tensor var, Tensor runningMean, Tensor runningVar, double momentum,
                                                 double varAlpha, double eps) {
        Device device = var.device();
        for (Tensor t : new Tensor[] {mean, runningMean, runningVar}) {
            if (t != null && !t.device().equals(device)) return null;
        }
        Tensor inv = Tensor.empty(var.shape(), var.dtype(), device);
        if (!Backends.of(device).normalization().batchNormUpdateStats(Dispatcher.view(mean), Dispatcher.view(var),
                Dispatcher.view(runningMean), Dispatcher.view(runningVar), momentum, momentum, varAlpha, eps, Dispatcher.view(inv))) {
            inv.close();
            return null;
        }
        if (runningMean != null) runningMean.bumpVersion();
        if (runningVar != null) runningVar.bumpVersion();
        return inv;
    }

    // ------------------------------------------------------------------ instance, group and local response norm

    /**
     * {@code torch.nn.functional.instance_norm}: batch norm of each (sample, channel) plane on its own,
     * computed as PyTorch does, by batch norm over the {@code [1, N*C, *]} view with weight, bias and
     * running statistics repeated N times; the running statistics (when given and {@code useInputStats})
     * then take the mean over the batch of the N updated copies.
     */
    public static Tensor instanceNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
                                      boolean useInputStats, double momentum, double eps) {
        final String op = "instanceNorm";
        input.checkOpen(op);
        if (input.dim() < 2) {
            throw new IllegalArgumentException(op + ": expected an input of at least 2 dimensions [N, C, *], got shape "
                    + Shapes.format(input.shape()));
        }
        long n = input.size(0);
        long c = input.size(1);
        if (useInputStats && input.numel() / Math.max(1, n * c) == 1 && n * c > 0) {
            throw new IllegalArgumentException(op + ": Expected more than 1 spatial element when training, got input size "
                    + Shapes.format(input.shape()));
        }
        Dispatcher.sameDevice(FrontEndOps.INSTANCE_NORM, input, runningMean, runningVar, weight, bias);
        checkChannels(op, "running_mean", runningMean, c);
        checkChannels(op, "running_var", runningVar, c);
        checkChannels(op, "weight", weight, c);
        checkChannels(op, "bias", bias, c);
        long[] flat = input.shape().clone();
        flat[0] = 1;
        flat[1] = n * c;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = input.reshape(flat);
            Tensor w = weight == null ? null : weight.unsqueeze(0).expand(n, c).reshape(n * c);
            Tensor b = bias == null ? null : bias.unsqueeze(0).expand(n, c).reshape(n * c);
            Tensor rm;
            Tensor rv;
            try (Grad.Mode g = Grad.noGrad()) {
                rm = runningMean == null ? null : runningMean.unsqueeze(0).expand(n, c).contiguous().reshape(n * c);
                rv = runningVar == null ? null : runningVar.unsqueeze(0).expand(n, c).contiguous().reshape(n * c);
            }
            Tensor out = batchNorm(x, rm, rv, w, b, useInputStats, momentum, eps).reshape(input.shape());
            if (useInputStats) {
                try (Grad.Mode g = Grad.noGrad()) {
                    if (runningMean != null) runningMean.copy_(rm.view(n, c).mean(0));
                    if (runningVar != null) runningVar.copy_(rv.view(n, c).mean(0));
                }
            }
            return scope.keep(out);
        }
    }

    /**
     * {@code torch.nn.functional.layer_norm}: {@code (x - mean) / sqrt(var + eps) * weight + bias} over the trailing
     * dimensions {@code normalizedShape}, the variance biased; {@code weight} and {@code bias} (of shape
     * {@code normalizedShape}) may be null. The declared {@link NormalizationOps#NATIVE_LAYER_NORM}: one fused kernel
     * forward and one backward where the backend has them, else its decomposition; under {@code createGraph} the backward
     * runs as differentiable tensor ops (double backward).
     */
    public static Tensor layerNorm(Tensor input, long[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        int k = checkTrailing("layerNorm", input, normalizedShape, weight, bias);
        if (!input.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("layerNorm: expected a floating point input, got " + input.dtype());
        }
        return Dispatcher.call(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {input, weight, bias}, k, eps);
    }

    /**
     * Layer norm over the last {@code k} dimensions written with ops ({@link NormalizationOps#LAYER_NORM_COMPOSITE}, the
     * decomposition of {@link NormalizationOps#NATIVE_LAYER_NORM} for a backend without its kernel): each row a channel
     * of a {@code [1, rows, cols]} batch normalised by the declared batch norm (its statistics biased, as layer norm's),
     * then the per-column affine, in the statistics' dtype (float32 for float16 and bfloat16, rounded once at the end).
     */
    static Tensor layerNormComposite(Tensor input, Tensor weight, Tensor bias, int k, double eps) {
        DType out = input.dtype();
        if (weight != null) out = DType.promote(out, weight.dtype());
        if (bias != null) out = DType.promote(out, bias.dtype());
        DType ct = out == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        long cols = 1;
        for (int d = input.dim() - k; d < input.dim(); d++) cols *= input.size(d);
        long rows = cols == 0 ? 0 : input.numel() / cols;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = input.dtype() == ct ? input : input.to(ct);
            Tensor y = Dispatcher.call(NormalizationOps.NATIVE_BATCH_NORM, new Tensor[] {x.reshape(1, rows, cols), null, null, null, null},
                    1, 0, eps).reshape(input.shape());
            if (weight != null) y = y.mul(weight.dtype() == ct ? weight : weight.to(ct));
            if (bias != null) y = y.add(bias.dtype() == ct ? bias : bias.to(ct));
            return scope.keep(y.dtype() == out ? y : y.to(out));
        }
    }

    /**
     * Gradient {@code output} (0: input, 1: weight, 2: bias) of layer norm over the last {@code k} dimensions as
     * differentiable tensor ops, for gradients of gradients ({@link NormalizationOps#LAYER_NORM_BACKWARD_COMPOSITE}): the
     * statistics recomputed from {@code x}, {@code xhat = (x - mean) * rstd}, {@code gw = gradOut * weight},
     * {@code gradInput = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))} per row, the weight's and bias's gradients
     * {@code gradOut * xhat} and {@code gradOut} summed over the leading dimensions.
     */
    static Tensor layerNormBackwardComposite(Tensor gradOut, Tensor x, Tensor weight, int k, double eps, int output) {
        int lead = x.dim() - k;
        int[] rowDims = new int[k];
        for (int d = 0; d < k; d++) rowDims[d] = lead + d;
        int[] leadDims = new int[lead];
        for (int d = 0; d < lead; d++) leadDims[d] = d;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor rstd = x.var(rowDims, 0, true).add(eps).rsqrt();
            Tensor xhat = x.sub(x.mean(rowDims, true)).mul(rstd);
            Tensor r;
            if (output == 0) {
                Tensor gw = weight != null ? gradOut.mul(weight) : gradOut;
                r = gw.sub(gw.mean(rowDims, true)).sub(xhat.mul(gw.mul(xhat).mean(rowDims, true))).mul(rstd);
                if (r.dtype() != x.dtype()) r = r.to(x.dtype());
            } else {
                Tensor each = output == 1 ? gradOut.mul(xhat) : gradOut;
                r = lead == 0 ? each : each.sum(leadDims, false);
                DType dtype = weight != null ? weight.dtype() : x.dtype();
                if (r.dtype() != dtype) r = r.to(dtype);
            }
            return scope.keep(r);
        }
    }

    /**
     * RMS normalisation, as PyTorch 2.4's {@code rms_norm}: {@code x / sqrt(mean(x^2) + eps) * weight} over
     * {@code normalizedShape}; a null {@code eps} means the machine epsilon of {@code x}'s dtype. Declared as a
     * composition ({@link NormalizationOps#RMS_NORM}).
     */
    public static Tensor rmsNorm(Tensor input, long[] normalizedShape, Tensor weight, Double eps) {
        int k = checkTrailing("rmsNorm", input, normalizedShape, weight, null);
        // a composite op: the dispatcher runs its parts, which would name the first of them that meets the weight (mul)
        Dispatcher.sameDevice(NormalizationOps.RMS_NORM, input, weight);
        double e = eps != null ? eps : machineEpsilon(input.dtype());
        return Dispatcher.call(NormalizationOps.RMS_NORM, new Tensor[] {input, weight}, k, e);
    }

    /** {@code torch.finfo(dtype).eps}. */
    static double machineEpsilon(DType dtype) {
        return switch (dtype) {
            case FLOAT64 -> Math.ulp(1.0);
            case FLOAT32 -> Math.ulp(1.0f);
            case FLOAT16 -> 0.0009765625;
            case BFLOAT16 -> 0.0078125;
            default -> throw new IllegalArgumentException("rmsNorm: expected a floating point input, got " + dtype);
        };
    }

    /** The number of normalised trailing dimensions, checked against the input's shape and the affine parameters'. */
    private static int checkTrailing(String op, Tensor input, long[] normalizedShape, Tensor weight, Tensor bias) {
        input.checkOpen(op);
        int k = normalizedShape.length;
        if (k == 0) throw new IllegalArgumentException(op + ": normalizedShape must have at least one dimension");
        long[] s = input.shape();
        if (s.length < k || !Arrays.equals(Arrays.copyOfRange(s, s.length - k, s.length), normalizedShape)) {
            throw new IllegalArgumentException(op + ": given normalized_shape=" + Shapes.format(normalizedShape)
                    + ", expected input with shape [*, " + Shapes.format(normalizedShape).substring(1) + ", but got input of size "
                    + Shapes.format(s));
        }
        checkAffine(op, "weight", weight, normalizedShape);
        checkAffine(op, "bias", bias, normalizedShape);
        return k;
    }

    private static void checkAffine(String op, String what, Tensor t, long[] normalizedShape) {
        if (t == null) return;
        t.checkOpen(op);
        if (!Arrays.equals(t.shape(), normalizedShape)) {
            throw new IllegalArgumentException(op + ": expected " + what + " of shape " + Shapes.format(normalizedShape) + ", got "
                    + Shapes.format(t.shape()));
        }
    }

    /**
     * {@code torch.nn.functional.group_norm}: the channels are split into {@code numGroups} groups and
     * each (sample, group) is normalised to zero mean and unit biased variance, then scaled by {@code
     * weight} and shifted by {@code bias} per channel. Declared as a composition ({@link NormalizationOps#GROUP_NORM}),
     * so differentiable to any order; float16 and bfloat16 inputs are computed in float32.
     */
    public static Tensor groupNorm(Tensor input, long numGroups, Tensor weight, Tensor bias, double eps) {
        final String op = "groupNorm";
        input.checkOpen(op);
        if (input.dim() < 2) {
            throw new IllegalArgumentException(op + ": Expected at least 2 dimensions for input tensor but received " + input.dim());
        }
        if (!input.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected a floating point input, got " + input.dtype());
        }
        long n = input.size(0);
        long c = input.size(1);
        if (numGroups <= 0 || c % numGroups != 0) {
            throw new IllegalArgumentException(op + ": Expected number of channels in input to be divisible by num_groups, but got"
                    + " input of shape " + Shapes.format(input.shape()) + " and num_groups=" + numGroups);
        }
        long spatial = input.numel() / Math.max(1, n * c);
        if (n * (c / numGroups) * spatial == 1) {
            throw new IllegalArgumentException(op + ": Expected more than 1 value per channel when training, got input size "
                    + Shapes.format(input.shape()) + " with num_groups=" + numGroups);
        }
        Dispatcher.sameDevice(NormalizationOps.GROUP_NORM, input, weight, bias);
        checkChannels(op, "weight", weight, c);
        checkChannels(op, "bias", bias, c);
        if (input.numel() == 0) return emptyAffine(input, weight, bias);
        return Dispatcher.call(NormalizationOps.GROUP_NORM, new Tensor[] {input, weight, bias}, numGroups, eps);
    }

    /**
     * An empty input's group norm: empty, of the input's dtype, and zero gradients for the affine parameters, as PyTorch.
     * The composition's reshape into groups (with a -1) cannot size zero elements.
     */
    private static Tensor emptyAffine(Tensor input, Tensor weight, Tensor bias) {
        long[] affineShape = new long[input.dim()];
        Arrays.fill(affineShape, 1);
        affineShape[1] = input.size(1);
        return MemoryScope.run(() -> {
            Tensor y = input;
            if (weight != null) y = y.mul(weight.reshape(affineShape));
            if (bias != null) y = y.add(bias.reshape(affineShape));
            return y == input ? input.alias() : y.to(input.dtype());
        });
    }

    /**
     * {@code torch.nn.functional.local_response_norm}: {@code x / (k + alpha / size * sum(x^2))^beta},
     * the sum over a window of {@code size} neighbouring channels ({@code size / 2} before, {@code
     * (size - 1) / 2} after, zero-padded), as PyTorch's average-pool formulation.
     */
    public static Tensor localResponseNorm(Tensor input, int size, double alpha, double beta, double k) {
        final String op = "localResponseNorm";
        input.checkOpen(op);
        if (input.dim() < 3) {
            throw new IllegalArgumentException(op + ": Expected 3D or higher dimensionality input (got " + input.dim()
                    + " dimensions)");
        }
        if (size <= 0) throw new IllegalArgumentException(op + ": size must be positive, got " + size);
        if (input.numel() == 0) return input.alias();
        long c = input.size(1);
        return MemoryScope.run(() -> {
            Tensor sq = input.mul(input);
            long[] before = input.shape().clone();
            before[1] = size / 2;
            long[] after = input.shape().clone();
            after[1] = (size - 1) / 2;
            Tensor padded = Torch.cat(List.of(Torch.zeros(before, sq.dtype(), sq.device()), sq,
                    Torch.zeros(after, sq.dtype(), sq.device())), 1);
            Tensor sum = padded.narrow(1, 0, c);
            for (int j = 1; j < size; j++) sum = sum.add(padded.narrow(1, j, c));
            Tensor div = sum.div((double) size).mul(alpha).add(k).pow(beta);
            return input.div(div);
        });
    }

    /**
     * An empty input gives an empty output and leaves the running statistics alone, as PyTorch; written
     * with tensor ops so that the weight and bias still get (zero) gradients.
     */
    private static Tensor emptyBatchNorm(Tensor input, Tensor weight, Tensor bias) {
        long[] affineShape = new long[input.dim()];
        Arrays.fill(affineShape, 1);
        affineShape[1] = input.size(1);
        return MemoryScope.run(() -> {
            Tensor y = input.mul(1.0);
            if (weight != null) y = y.mul(weight.reshape(affineShape));
            if (bias != null) y = y.add(bias.reshape(affineShape));
            return y;
        });
    }

    /**
     * {@code 1 / sqrt(var + eps)}, computed in double per channel: on the host for CPU tensors; on other devices
     * as float64 tensor ops there, since a round trip through the host would synchronise the device every forward.
     */
    private static Tensor invstd(Tensor var, double eps) {
        if (var.device().isCpu()) {
            double[] v = var.toDoubleArray();
            for (int i = 0; i < v.length; i++) v[i] = 1 / Math.sqrt(v[i] + eps);
            return Torch.tensor(v, var.dtype(), var.shape());
        }
        return MemoryScope.run(() -> var.to(DType.FLOAT64).add(eps).rsqrt().to(var.dtype()));
    }

    /**
     * Gradient {@code output} (0: input, 1: weight, 2: bias) of batch norm as differentiable tensor ops, for gradients of
     * gradients ({@link NormalizationOps#BATCH_NORM_BACKWARD_COMPOSITE}); in training the statistics are recomputed from
     * {@code x}, so that they are differentiated too.
     */
    static Tensor batchNormBackwardComposite(Tensor gradOut, Tensor x, Tensor weight, Tensor mean, Tensor invstd, boolean training,
                                             double eps, int output) {
        Tensor[] g = batchNormBackwardComposite(gradOut, x, weight, mean, invstd, training, eps, output == 0, output == 1, output == 2,
                x.dtype());
        return g[output];
    }

    private static Tensor[] batchNormBackwardComposite(Tensor gradOut, Tensor x, Tensor weight, Tensor mean, Tensor invstd,
                                                       boolean training, double eps, boolean needInput, boolean needWeight,
                                                       boolean needBias, DType inType) {
        long n = x.size(0);
        long c = x.size(1);
        long count = x.numel() / Math.max(1, c);
        int[] dims = {0, 2};
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x3 = x.reshape(n, c, -1);
            Tensor g3 = gradOut.reshape(n, c, -1);
            Tensor m3;
            Tensor is3;
            if (training) {
                m3 = x3.mean(dims, true);
                is3 = x3.var(dims, 0, true).add(eps).rsqrt();
            } else {
                m3 = mean.reshape(1, c, 1);
                is3 = invstd.reshape(1, c, 1);
            }
            Tensor xhat = x3.sub(m3).mul(is3);
            Tensor sumG = g3.sum(dims, true);
            Tensor sumGX = g3.mul(xhat).sum(dims, true);
            Tensor gi = null;
            if (needInput) {
                Tensor scale = weight != null ? is3.mul(weight.reshape(1, c, 1)) : is3;
                gi = training ? g3.sub(sumG.div((double) count)).sub(xhat.mul(sumGX.div((double) count))).mul(scale) : g3.mul(scale);
                gi = gi.reshape(x.shape());
                if (gi.dtype() != inType) gi = gi.to(inType);
            }
            Tensor gw = needWeight ? sumGX.reshape(c).to(weight.dtype()) : null;
            Tensor gb = needBias ? sumG.reshape(c) : null;
            return new Tensor[] {scope.keep(gi), scope.keep(gw), scope.keep(gb)};
        }
    }

    private static void checkChannels(String op, String name, Tensor t, long c) {
        if (t == null) return;
        t.checkOpen(op);
        if (t.numel() != c) {
            throw new IllegalArgumentException(op + ": " + name + " should contain " + c + " elements not " + t.numel());
        }
        if (t.dim() != 1) {
            throw new IllegalArgumentException(op + ": " + name + " should be 1-D of " + c + " elements, got shape "
                    + Shapes.format(t.shape()));
        }
        if (!t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + name + " must have a floating point dtype, got " + t.dtype());
        }
    }
}
