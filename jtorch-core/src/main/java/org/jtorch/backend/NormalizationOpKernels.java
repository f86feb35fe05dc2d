package org.jtorch.backend;

import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.PointwiseKernel;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.StridedView;

/**
 * The kernels of the declared batch norm ({@link NormalizationOps#NATIVE_BATCH_NORM} and its backward) for one backend,
 * from its {@link NormalizationKernels} over a contiguous input ({@code [n, c, s]}). The running statistics are updated
 * with the backend's own {@code mul} and {@code add} kernels, as {@code running.mul_(1 - momentum).add_(batch, momentum)}
 * computes them, and {@code 1 / sqrt(var + eps)} in float64 by its formula kernel, rounded once: the results are those of
 * the tensor ops they replace, bit for bit.
 */
public final class NormalizationOpKernels {
    private NormalizationOpKernels() {}

    private static final int TRAINING = 0, MOMENTUM = 1, EPS = 2;
    /** {@code 1 / sqrt(x + p0)}, evaluated in float64. */
    private static final Expr INVSTD = math(Fn.DIV, new Expr.Const(1),
            math(Fn.SQRT, math(Fn.ADD, new Expr.In(0, "var"), new Expr.Scalar(0, "eps", 0))));

    private static Expr math(Fn fn, Expr... args) {
        return new Expr.Math(fn, java.util.List.of(args));
    }

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        FormulaKernel[] invstd = new FormulaKernel[1];
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_BATCH_NORM.kernel(), (outs, in, g) -> {
            if (invstd[0] == null) invstd[0] = KernelRegistry.formulaCompiler(type).compile(INVSTD, 1);
            StridedView out = outs[0], mean = outs[1], inv = outs[2];
            long n = in[0].size(0), c = in[0].size(1), s = in[0].numel() / Math.max(1, n * c);
            NormalizationKernels k = backend.normalization();
            int device = out.device().index();
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView x = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                StridedView var = scratch.allocate(out.device(), new long[] {c}, mean.dtype());
                if (g[TRAINING] != 0) {
                    k.batchNormStats(x, n, c, s, mean, var);
                    double momentum = g[MOMENTUM];
                    long count = n * s;
                    double unbias = count > 1 ? (double) count / (count - 1) : Double.NaN;
                    if (in[3] != null) moveTowards(backend, scratch, in[3], mean, momentum, momentum);
                    if (in[4] != null) moveTowards(backend, scratch, in[4], var, momentum, momentum * unbias);
                } else {
                    backend.copy(in[3], mean);
                    backend.copy(in[4], var);
                }
                invstd[0].run(device, DType.FLOAT64, inv, new StridedView[] {var}, new double[] {g[EPS]});
                k.batchNormApply(x, n, c, s, mean, inv, in[1], in[2], out);
            }
        });
        KernelRegistry.registerMulti(type, NormalizationOps.NATIVE_BATCH_NORM_BACKWARD.kernel(), (outs, in, g) -> {
            long n = in[1].size(0), c = in[1].size(1), s = in[1].numel() / Math.max(1, n * c);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView go = scratch.operand(in[0], in[0].dtype(), in[0].shape());
                StridedView x = scratch.operand(in[1], in[1].dtype(), in[1].shape());
                backend.normalization().batchNormBackward(go, x, n, c, s, in[3], in[4], in[2], g[TRAINING] != 0, outs[0], outs[1],
                        outs[2]);
            }
        });
    }

    /**
     * {@code running = running * (1 - momentum) + alpha * batch} in place, by the backend's {@code mul} kernel (the factor a
     * one-element operand, as a wrapped number: float32 for a half-precision {@code running}) and its {@code add} kernel
     * with {@code alpha}, in the dtypes {@code running.mul_(1 - momentum).add_(batch, alpha)} computes in.
     */
    private static void moveTowards(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView running, StridedView batch,
                                    double momentum, double alpha) {
        DType r = running.dtype();
        int device = running.device().index();
        DType factorType = r == DType.FLOAT16 || r == DType.BFLOAT16 ? DType.FLOAT32 : r;
        StridedView factor = scratch.allocate(running.device(), new long[0], factorType);
        backend.fill(factor, 1 - momentum, 0);
        PointwiseKernel mul = KernelRegistry.pointwise(PointwiseOps.MUL, backend.deviceType());
        mul.run(device, r, running, running, factor.restrided(running.shape(), new long[running.dim()], factor.offset()), 0, 0);
        DType b = batch.dtype();
        DType compute = r == b ? r : r == DType.FLOAT64 || b == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        KernelRegistry.pointwise(PointwiseOps.ADD, backend.deviceType()).run(device, compute, running, running, batch, alpha, 0);
    }
}
