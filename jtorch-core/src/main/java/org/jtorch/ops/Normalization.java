package org.jtorch.ops;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.memory.MemoryScope;

/**
 * The normalisation family, as {@code torch.nn.functional}: {@code batchNorm} (one fused kernel
 * forward and one backward, as PyTorch's {@code native_batch_norm}), and {@code instanceNorm} (batch
 * norm over a {@code [1, N*C, ...]} view, as PyTorch does it), {@code groupNorm} and
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
     * <p>Backward (derivatives.yaml's {@code native_batch_norm_backward}): with {@code xhat = (x - mean)
     * * invstd}, {@code grad_bias = sum(g)}, {@code grad_weight = sum(g * xhat)}, and {@code grad_input
     * = weight * invstd * (g - mean(g) - xhat * mean(g * xhat))} in training ({@code weight * invstd * g}
     * in evaluation), sums and means over all dimensions but 1. One fused kernel computes all three;
     * under {@code createGraph} the same formula runs as differentiable tensor ops (double backward).
     */
    public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
                                   boolean training, double momentum, double eps) {
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
        Device device = input.device();
        checkChannels(op, "running_mean", runningMean, c, device);
        checkChannels(op, "running_var", runningVar, c, device);
        checkChannels(op, "weight", weight, c, device);
        checkChannels(op, "bias", bias, c, device);
        if (training && n * s == 1) {
            throw new IllegalArgumentException(op + ": Expected more than 1 value per channel when training, got input size "
                    + Shapes.format(input.shape()));
        }
        if (!training && (runningMean == null || runningVar == null)) {
            throw new IllegalArgumentException(op + ": running_mean and running_var must be defined in evaluation mode");
        }
        NormalizationKernels k = Backends.of(device).normalization();
        DType statsType = input.dtype() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        long[] cShape = {c};
        boolean record = Autograd.needsGrad(input, weight, bias);
        // Made with grad mode as the caller has it, so that the saved copy is part of the graph (double backward).
        Tensor x = input.contiguous();
        Tensor mean;
        Tensor invstd;
        Tensor out = Tensor.empty(input.shape(), input.dtype(), device);
        try (Grad.Mode g = Grad.noGrad()) {
            if (training) {
                mean = Tensor.empty(cShape, statsType, device);
                try (Tensor var = Tensor.empty(cShape, statsType, device)) {
                    k.batchNormStats(x, n, c, s, mean, var);
                    invstd = invstd(var, eps);
                    long count = n * s;
                    if (runningMean != null) runningMean.mul_(1 - momentum).add_(mean, momentum);
                    if (runningVar != null) {
                        double unbias = count > 1 ? (double) count / (count - 1) : Double.NaN;
                        runningVar.mul_(1 - momentum).add_(var, momentum * unbias);
                    }
                }
            } else {
                mean = runningMean.to(statsType);
                try (Tensor rv = runningVar.to(statsType)) {
                    invstd = invstd(rv, eps);
                }
            }
            k.batchNormApply(x, n, c, s, mean, invstd, weight, bias, out);
        }
        if (!record) {
            x.close();
            mean.close();
            invstd.close();
            return out;
        }
        boolean needInput = input.requiresGrad();
        boolean needWeight = weight != null && weight.requiresGrad();
        boolean needBias = bias != null && bias.requiresGrad();
        SavedTensor sx = Autograd.save(x);
        SavedTensor sw = weight != null ? Autograd.save(weight) : null;
        SavedTensor sm = Autograd.save(mean);
        SavedTensor si = Autograd.save(invstd);
        x.close();
        mean.close();
        invstd.close();
        long[] shape = input.shape();
        DType inType = input.dtype();
        DType wType = weight != null ? weight.dtype() : null;
        DType bType = bias != null ? bias.dtype() : null;
        final long fc = c;
        final long fs = s;
        List<SavedTensor> saved = new ArrayList<>(List.of(sx, sm, si));
        if (sw != null) saved.add(sw);
        Autograd.record("NativeBatchNormBackward0", out, gr -> {
            Tensor w = sw == null ? null : sw.get();
            if (Grad.isEnabled()) {
                return batchNormBackwardComposite(gr[0], sx.get(), w, sm.get(), si.get(), training, eps, needInput, needWeight,
                        needBias, inType);
            }
            Tensor gi = needInput ? Tensor.empty(shape, inType, device) : null;
            Tensor gw = needWeight ? Tensor.empty(new long[] {fc}, wType, device) : null;
            Tensor gb = needBias ? Tensor.empty(new long[] {fc}, bType, device) : null;
            try (Tensor go = gr[0].contiguous()) {
                Backends.of(device).normalization().batchNormBackward(go, sx.get(), n, fc, fs, sm.get(), si.get(), w, training,
                        gi, gw, gb);
            }
            return new Tensor[] {gi, gw, gb};
        }, new Tensor[] {input, weight, bias}, saved.toArray(new SavedTensor[0]));
        return out;
    }

    /** {@code 1 / sqrt(var + eps)}, computed in double per channel. */
    private static Tensor invstd(Tensor var, double eps) {
        double[] v = var.toDoubleArray();
        for (int i = 0; i < v.length; i++) v[i] = 1 / Math.sqrt(v[i] + eps);
        if (var.device().equals(Device.cpu())) return Torch.tensor(v, var.dtype(), var.shape());
        try (Tensor host = Torch.tensor(v, var.dtype(), var.shape())) {
            return host.to(var.device());
        }
    }

    /** The batch-norm backward formula as differentiable tensor ops, for gradients of gradients. */
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

    private static void checkChannels(String op, String name, Tensor t, long c, Device device) {
        if (t == null) return;
        t.checkOpen(op);
        if (t.numel() != c) {
            throw new IllegalArgumentException(op + ": " + name + " should contain " + c + " elements not " + t.numel());
        }
        if (t.dim() != 1) {
            throw new IllegalArgumentException(op + ": " + name + " should be 1-D of " + c + " elements, got shape "
                    + Shapes.format(t.shape()));
        }
        if (!t.device().equals(device)) {
            throw new IllegalArgumentException(op + ": " + name + " is on " + t.device() + " but the input is on " + device);
        }
        if (!t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + name + " must have a floating point dtype, got " + t.dtype());
        }
    }
}
