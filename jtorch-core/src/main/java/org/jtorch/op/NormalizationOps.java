package org.jtorch.op;

import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;
import static org.jtorch.op.Expr.scalar;

import org.jtorch.types.Device;

/**
 * RMS norm and group norm, declared as compositions of ops ({@link OpDef.Kind#COMPOSITE}): every backend runs them
 * from the kernels of their parts, the JIT traces (and fuses) those parts, and autograd differentiates through them,
 * to any order. Normalisation over the trailing dimensions is {@link Expr.ReduceTrailing}: the mean and the biased
 * variance, kept for broadcasting. Their front ends ({@code ops.Normalization}) check the arguments and pass the
 * normalised shape by its number of dimensions.
 *
 * <p>Layer norm is a multi-output structured op with a fused backward ({@link #NATIVE_LAYER_NORM}), as batch norm.
 *
 * <p>Batch norm is a multi-output structured op ({@link #NATIVE_BATCH_NORM}, as PyTorch's {@code native_batch_norm}): one
 * kernel call gives the output and the saved mean and inverse standard deviation, and updates the running statistics in
 * place; its derivatives select the three gradients of one fused backward call ({@link #NATIVE_BATCH_NORM_BACKWARD}), or,
 * when the backward records a graph, run the backward formula as differentiable ops ({@link #BATCH_NORM_BACKWARD_COMPOSITE}).
 * The JIT traces batch norm by its front end ({@link FrontEndOps#BATCH_NORM}).
 */
public final class NormalizationOps {
    private NormalizationOps() {}

    private static final Expr X = in(0, "input");
    private static final Expr W = in(1, "weight");
    private static final Expr B = in(2, "bias");

    /**
     * {@code (x - mean) / sqrt(var + eps) * weight + bias} per channel (dimension 1 of {@code [N, C, *]}): in training
     * with the batch's mean and biased variance, the running statistics (where given) moved towards them in place
     * ({@code running = (1 - momentum) * running + momentum * batch}, the variance unbiased, as PyTorch's); in evaluation
     * with the running statistics. Outputs: the result, and the mean and {@code 1 / sqrt(var + eps)} it used (float64 for a
     * float64 input, else float32), which the backward reads. Scalars: {@code training, momentum, eps}.
     */
    public static final OpDef NATIVE_BATCH_NORM = OpDef.structured("native_batch_norm").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::batchNormMeta, "output", "save_mean", "save_invstd")
            .signature(Param.tensor("input"), new Param("weight", "Tensor?", null), new Param("bias", "Tensor?", null),
                    new Param("running_mean", "Tensor(a!)?", null), new Param("running_var", "Tensor(b!)?", null),
                    Param.scalar("training", "bool", null), Param.scalar("momentum", "float", null), Param.scalar("eps", "float", null))
            .derivatives(NormalizationOps::batchNormDerivatives)
            .doc("fused statistics and normalisation; running statistics updated in place").build();

    /**
     * Batch norm's statistics in training: the per-channel mean and biased variance of {@code input} ({@code [N, C, *]}) over
     * every dimension but 1, float64 for a float64 input, else float32 ({@code torch.var_mean(input, dims, unbiased=False)}
     * in the other order, computed as the batch norm kernel computes them). Not PyTorch's {@code batch_norm_stats}, which
     * returns {@code invstd}: the running variance moves towards the variance itself, and rebuilding it from
     * {@code invstd} would round twice. {@code ops.Normalization.batchNormStatistics} (the JIT's fused batch norm) calls it.
     */
    public static final OpDef BATCH_NORM_MEAN_VAR = OpDef.structured("batch_norm_mean_var").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::batchNormMeanVarMeta, "mean", "var").signature(Param.tensor("input"))
            .doc("per-channel mean and biased variance, one pass").build();

    /**
     * The gradients of {@link #NATIVE_BATCH_NORM} with respect to input, weight and bias from one fused kernel call:
     * with {@code xhat = (x - mean) * invstd}, {@code grad_bias = sum(g)}, {@code grad_weight = sum(g * xhat)} and
     * {@code grad_input = weight * invstd * (g - mean(g) - xhat * mean(g * xhat))} in training ({@code weight * invstd * g} in
     * evaluation), over every dimension but 1. No derivative of its own: a backward that records a graph runs
     * {@link #BATCH_NORM_BACKWARD_COMPOSITE} instead. Scalars: {@code training, eps}.
     */
    public static final OpDef NATIVE_BATCH_NORM_BACKWARD = OpDef.structured("native_batch_norm_backward").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::batchNormBackwardMeta, "grad_input", "grad_weight", "grad_bias")
            .signature(Param.tensor("grad_out"), Param.tensor("input"), new Param("weight", "Tensor?", null), Param.tensor("save_mean"),
                    Param.tensor("save_invstd"), Param.scalar("train", "bool", null), Param.scalar("eps", "float", null))
            .doc("one fused kernel for the three gradients").build();

    /**
     * Gradient {@code output} (0: input, 1: weight, 2: bias) of {@link #NATIVE_BATCH_NORM} as differentiable tensor ops
     * (the statistics recomputed from the input in training), for gradients of gradients: {@code ops.Normalization}'s front end.
     */
    public static final OpDef BATCH_NORM_BACKWARD_COMPOSITE = OpDef.frontEnd("batch_norm_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("input"), new Param("weight", "Tensor?", null), Param.tensor("save_mean"),
                    Param.tensor("save_invstd"), Param.scalar("train", "bool", null), Param.scalar("eps", "float", null),
                    Param.scalar("output", "int", null))
            .doc("`ops.Normalization.batchNormBackwardComposite`: the backward as ops, differentiable").build();

    // ---------------------------------------------------------------- the synchronised batch norm's parts (PyTorch's SyncBatchNorm)

    /**
     * One rank's statistics for a synchronised batch norm, as PyTorch's {@code batch_norm_stats}: the per-channel mean and
     * {@code 1 / sqrt(var + eps)} of {@code input} ({@code [N, C, *]}) over every dimension but 1, the variance biased;
     * float64 for a float64 input, else float32. The mean and the centred sum of squares are accumulated in double (as
     * {@link #BATCH_NORM_MEAN_VAR}), so a mean large against the deviation does not cancel the variance away, and
     * {@code invstd} is computed in float64 and rounded once. Scalar: {@code eps}.
     */
    public static final OpDef BATCH_NORM_STATS = OpDef.structured("batch_norm_stats").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::batchNormStatsMeta, "mean", "invstd")
            .signature(Param.tensor("input"), Param.scalar("eps", "float", null))
            .doc("one rank's per-channel mean and inverse standard deviation").build();

    /**
     * The global statistics from every rank's ({@code mean}, {@code invstd}, {@code counts}) ({@code [ranks, C]},
     * {@code [ranks, C]}, {@code [ranks]}), as PyTorch's {@code batch_norm_gather_stats_with_counts}: each rank's
     * centred sum of squares {@code count * (1 / invstd^2 - eps)} merged with Chan's formula
     * ({@code M2 = sum M2_r + sum n_r (mean_r - mean)^2}) in double, ranks with no rows left out; outputs the global mean
     * and {@code 1 / sqrt(M2 / n + eps)} in {@code mean}'s dtype. The running statistics (where given) move in place as
     * batch norm's: {@code running = (1 - momentum) * running + momentum * batch}, the variance unbiased
     * ({@code M2 / (n - 1)}). {@code input} is read for its device only. Scalars: {@code momentum, eps}.
     */
    public static final OpDef BATCH_NORM_GATHER_STATS_WITH_COUNTS = OpDef.structured("batch_norm_gather_stats_with_counts")
            .rule(DTypeRule.FLOATING_ONLY).outputs(NormalizationOps::gatherStatsMeta, "mean", "invstd")
            .signature(Param.tensor("input"), Param.tensor("mean"), Param.tensor("invstd"), new Param("running_mean", "Tensor(a!)?", null),
                    new Param("running_var", "Tensor(b!)?", null), Param.scalar("momentum", "float", null), Param.scalar("eps", "float", null),
                    Param.tensor("counts"))
            .doc("every rank's statistics merged (Chan); running statistics updated in place").build();

    /**
     * {@code (input - mean) * invstd * weight + bias} per channel with the given statistics, as PyTorch's
     * {@code batch_norm_elemt} ({@code eps} unused, as there); the result has the input's shape and dtype.
     */
    public static final OpDef BATCH_NORM_ELEMT = OpDef.structured("batch_norm_elemt").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), new Param("weight", "Tensor?", null), new Param("bias", "Tensor?", null),
                    Param.tensor("mean"), Param.tensor("invstd"), Param.scalar("eps", "float", null))
            .meta(NormalizationOps::batchNormElemtMeta)
            .doc("normalisation with given statistics").build();

    /**
     * One rank's per-channel sums for a synchronised batch norm's backward, as PyTorch's {@code batch_norm_backward_reduce}:
     * {@code sum_dy = sum(grad_out)} and {@code sum_dy_xmu = sum(grad_out * (input - mean))} (float64 for a float64 input,
     * else float32), {@code grad_weight = sum_dy_xmu * invstd} and {@code grad_bias = sum_dy} (the weight's dtype, or the
     * input's without one), over every dimension but 1, accumulated in double. jtorch has no undefined tensors: all four
     * are computed whatever the flags {@code input_g, weight_g, bias_g} (its scalars) say.
     */
    public static final OpDef BATCH_NORM_BACKWARD_REDUCE = OpDef.structured("batch_norm_backward_reduce").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::backwardReduceMeta, "sum_dy", "sum_dy_xmu", "grad_weight", "grad_bias")
            .signature(Param.tensor("grad_out"), Param.tensor("input"), Param.tensor("mean"), Param.tensor("invstd"),
                    new Param("weight", "Tensor?", null), Param.scalar("input_g", "bool", null), Param.scalar("weight_g", "bool", null),
                    Param.scalar("bias_g", "bool", null))
            .doc("one rank's sums of the gradient and of the gradient times the centred input").build();

    /**
     * The input gradient of a synchronised batch norm from the sums over every rank, as PyTorch's
     * {@code batch_norm_backward_elemt}: with {@code n = sum(count)},
     * {@code grad_input = (grad_out - sum_dy / n - (input - mean) * invstd^2 * sum_dy_xmu / n) * invstd * weight}, in the
     * input's dtype; the per-channel coefficients in double.
     */
    public static final OpDef BATCH_NORM_BACKWARD_ELEMT = OpDef.structured("batch_norm_backward_elemt").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("input"), Param.tensor("mean"), Param.tensor("invstd"),
                    new Param("weight", "Tensor?", null), Param.tensor("sum_dy"), Param.tensor("sum_dy_xmu"), Param.tensor("count"))
            .meta(NormalizationOps::backwardElemtMeta)
            .doc("the input gradient from every rank's sums").build();

    private static Meta.Output[] batchNormStatsMeta(StridedView[] in, double[] scalars) {
        StridedView x = in[0];
        checkBatch("batch_norm_stats", x);
        long[] c = {x.size(1)};
        return new Meta.Output[] {new Meta.Output(c, statsType(x)), new Meta.Output(c, statsType(x))};
    }

    private static Meta.Output[] gatherStatsMeta(StridedView[] in, double[] scalars) {
        String op = "batch_norm_gather_stats_with_counts";
        StridedView mean = in[1], invstd = in[2], counts = in[5];
        if (mean.dim() != 2 || !java.util.Arrays.equals(mean.shape(), invstd.shape())) {
            throw new IllegalArgumentException(op + ": expected mean and invstd of one shape [ranks, C], got " + Shapes.format(mean.shape())
                    + " and " + Shapes.format(invstd.shape()));
        }
        if (counts.numel() != mean.size(0)) {
            throw new IllegalArgumentException(op + ": expected one count per rank (" + mean.size(0) + "), got counts of shape "
                    + Shapes.format(counts.shape()));
        }
        long c = mean.size(1);
        String[] names = {"input", "mean", "invstd", "running_mean", "running_var", "counts"};
        for (int j = 1; j < 6; j++) {
            StridedView t = in[j];
            if (t == null) continue;
            if (!t.dtype().isFloatingPoint() && j != 5) {
                throw new IllegalArgumentException(op + ": " + names[j] + " must have a floating point dtype, got " + t.dtype());
            }
        }
        checkChannels(op, "running_mean", in[3], c, in[0]);
        checkChannels(op, "running_var", in[4], c, in[0]);
        return new Meta.Output[] {new Meta.Output(new long[] {c}, mean.dtype()), new Meta.Output(new long[] {c}, mean.dtype())};
    }

    private static Meta.Output batchNormElemtMeta(StridedView[] in, double[] scalars) {
        StridedView x = checkBatchAndChannels("batch_norm_elemt", in, "input", "weight", "bias", "mean", "invstd");
        return new Meta.Output(x.shape(), x.dtype());
    }

    private static Meta.Output[] backwardReduceMeta(StridedView[] in, double[] scalars) {
        String op = "batch_norm_backward_reduce";
        StridedView x = checkGradAndInput(op, in[0], in[1]);
        long c = x.size(1);
        checkChannels(op, "mean", in[2], c, x);
        checkChannels(op, "invstd", in[3], c, x);
        checkChannels(op, "weight", in[4], c, x);
        long[] shape = {c};
        org.jtorch.types.DType sums = statsType(x), w = in[4] == null ? x.dtype() : in[4].dtype();
        return new Meta.Output[] {new Meta.Output(shape, sums), new Meta.Output(shape, sums), new Meta.Output(shape, w),
                new Meta.Output(shape, w)};
    }

    private static Meta.Output backwardElemtMeta(StridedView[] in, double[] scalars) {
        String op = "batch_norm_backward_elemt";
        StridedView x = checkGradAndInput(op, in[0], in[1]);
        long c = x.size(1);
        String[] names = {"grad_out", "input", "mean", "invstd", "weight", "sum_dy", "sum_dy_xmu"};
        for (int j = 2; j < 7; j++) checkChannels(op, names[j], in[j], c, x);
        StridedView count = in[7];
        if (count.dim() != 1 || !count.device().equals(x.device()) || count.dtype().isBool()) {
            throw new IllegalArgumentException(op + ": expected count, one real number per rank ([ranks]) on " + x.device() + ", got "
                    + Shapes.format(count.shape()) + " of " + count.dtype() + " on " + count.device());
        }
        return new Meta.Output(x.shape(), x.dtype());
    }

    /** {@code grad_out} and {@code input} of one shape {@code [N, C, *]}, floating, on one device; returns {@code input}. */
    private static StridedView checkGradAndInput(String op, StridedView g, StridedView x) {
        checkBatch(op, x);
        if (!java.util.Arrays.equals(g.shape(), x.shape()) || !g.device().equals(x.device()) || !g.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected grad_out of the input's shape " + Shapes.format(x.shape()) + " on "
                    + x.device() + ", got " + Shapes.format(g.shape()) + " of " + g.dtype() + " on " + g.device());
        }
        return x;
    }

    private static java.util.List<Expr> batchNormDerivatives() {
        Expr mean = Expr.output(1, "save_mean"), invstd = Expr.output(2, "save_invstd");
        Expr training = scalar(0, "training"), eps = scalar(2, "eps");
        Expr.Op fused = (Expr.Op) call(NATIVE_BATCH_NORM_BACKWARD, Expr.GRAD, X, W, mean, invstd, training, eps);
        Expr[] d = new Expr[3];
        for (int j = 0; j < 3; j++) {
            d[j] = new Expr.IfGrad(call(BATCH_NORM_BACKWARD_COMPOSITE, Expr.GRAD, X, W, mean, invstd, training, eps, Expr.c(j)),
                    new Expr.Select(fused, j));
        }
        return java.util.Arrays.asList(d[0], d[1], d[2], null, null);
    }

    private static Meta.Output[] batchNormMeta(StridedView[] in, double[] scalars) {
        String op = "native_batch_norm";
        StridedView x = checkBatchAndChannels(op, in, "input", "weight", "bias", "running_mean", "running_var");
        long c = x.size(1);
        if (scalars[0] == 0 && (in[3] == null || in[4] == null)) {
            throw new IllegalArgumentException(op + ": running_mean and running_var must be defined in evaluation mode");
        }
        org.jtorch.types.DType stats = statsType(x);
        return new Meta.Output[] {new Meta.Output(x.shape(), x.dtype()), new Meta.Output(new long[] {c}, stats),
                new Meta.Output(new long[] {c}, stats)};
    }

    private static Meta.Output[] batchNormMeanVarMeta(StridedView[] in, double[] scalars) {
        String op = "batch_norm_mean_var";
        StridedView x = in[0];
        checkBatch(op, x);
        org.jtorch.types.DType stats = statsType(x);
        long[] c = {x.size(1)};
        return new Meta.Output[] {new Meta.Output(c, stats), new Meta.Output(c, stats)};
    }

    private static Meta.Output[] batchNormBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "native_batch_norm_backward";
        StridedView g = in[0], x = in[1];
        if (x.dim() < 2 || !java.util.Arrays.equals(g.shape(), x.shape())) {
            throw new IllegalArgumentException(op + ": expected grad_out and input of one shape [N, C, *], got " + Shapes.format(g.shape())
                    + " and " + Shapes.format(x.shape()));
        }
        long c = x.size(1);
        checkChannels(op, "weight", in[2], c, x);
        checkChannels(op, "save_mean", in[3], c, x);
        checkChannels(op, "save_invstd", in[4], c, x);
        org.jtorch.types.DType w = in[2] == null ? x.dtype() : in[2].dtype();
        return new Meta.Output[] {new Meta.Output(x.shape(), x.dtype()), new Meta.Output(new long[] {c}, w),
                new Meta.Output(new long[] {c}, w)};
    }

    /** Batch norm's input: floating point, {@code [N, C, *]}; an error naming {@code op} otherwise. */
    private static void checkBatch(String op, StridedView x) {
        if (x.dim() < 2) {
            throw new IllegalArgumentException(op + ": expected an input of at least 2 dimensions [N, C, *], got shape " + Shapes.format(x.shape()));
        }
        if (!x.dtype().isFloatingPoint()) throw new IllegalArgumentException(op + ": expected a floating point input, got " + x.dtype());
    }

    /** {@code in[0]} checked as a batch input, and {@code in[1..]} as per-channel tensors named by {@code names[1..]}; returns {@code in[0]}. */
    private static StridedView checkBatchAndChannels(String op, StridedView[] in, String... names) {
        StridedView x = in[0];
        checkBatch(op, x);
        for (int j = 1; j < names.length; j++) checkChannels(op, names[j], in[j], x.size(1), x);
        return x;
    }

    /** Batch norm's statistics dtype: float64 for a float64 input, else float32. */
    private static org.jtorch.types.DType statsType(StridedView x) {
        return x.dtype() == org.jtorch.types.DType.FLOAT64 ? org.jtorch.types.DType.FLOAT64 : org.jtorch.types.DType.FLOAT32;
    }

    private static void checkChannels(String op, String name, StridedView t, long c, StridedView x) {
        if (t == null) return;
        if (t.dim() != 1 || t.size(0) != c) {
            throw new IllegalArgumentException(op + ": expected " + name + " of shape [" + c + "] for an input of shape "
                    + Shapes.format(x.shape()) + ", got " + Shapes.format(t.shape()));
        }
        if (!t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + name + " must have a floating point dtype, got " + t.dtype());
        }
    }

    /**
     * Layer norm written with ops: each row normalised by {@link #NATIVE_BATCH_NORM} as a channel of a {@code [1, rows, cols]}
     * batch, then the affine ({@code ops.Normalization.layerNormComposite}): {@link #NATIVE_LAYER_NORM}'s decomposition.
     */
    public static final OpDef LAYER_NORM_COMPOSITE = LayerNormComposite.OP;

    /** Holds {@link #LAYER_NORM_COMPOSITE}, initialised before {@link #NATIVE_LAYER_NORM} names it. */
    private static final class LayerNormComposite {
        static final OpDef OP = OpDef.frontEnd("layer_norm_composite", true).rule(DTypeRule.FLOATING_ONLY)
                .signature(Param.tensor("input"), new Param("weight", "Tensor?", "None"), new Param("bias", "Tensor?", "None"),
                        new Param("normalized_shape", "int[]", null), Param.scalar("eps", "float", "1e-05"))
                .doc("`ops.Normalization.layerNormComposite`: batch norm of the rows, then the affine, as ops").build();
    }

    /**
     * {@code (x - mean) / sqrt(var + eps) * weight + bias} over the last {@code len(normalized_shape)} dimensions, the
     * variance biased, as PyTorch's {@code native_layer_norm}: one fused kernel call gives the output and the per-row
     * {@code mean} and {@code rstd = 1 / sqrt(var + eps)} (float64 for a float64 result, else float32, of the input's
     * leading shape followed by ones), which the backward reads. The result's dtype is the promotion of the input's, the
     * weight's and the bias's; float16 and bfloat16 compute in float32, rounded once. Its scalars are
     * {@code len(normalized_shape), eps}: the front end ({@code ops.Normalization.layerNorm}) checks that the trailing
     * dimensions are {@code normalized_shape} and that the weight and bias have that shape. A backend without its kernel
     * runs its decomposition ({@link #LAYER_NORM_COMPOSITE}: batch norm of the rows, then the affine). Its derivatives select the
     * three gradients of one fused backward call ({@link #NATIVE_LAYER_NORM_BACKWARD}), or, when the backward records a
     * graph, run the backward formula as differentiable ops ({@link #LAYER_NORM_BACKWARD_COMPOSITE}).
     */
    public static final OpDef NATIVE_LAYER_NORM = OpDef.structured("native_layer_norm").rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::layerNormMeta, "output", "mean", "rstd")
            .signature(Param.tensor("input"), new Param("weight", "Tensor?", "None"), new Param("bias", "Tensor?", "None"),
                    new Param("normalized_shape", "int[]", null), Param.scalar("eps", "float", "1e-05"))
            .derivatives(NormalizationOps::layerNormDerivatives)
            .decomposition(call(LayerNormComposite.OP, X, W, B, scalar(0, "len(normalized_shape)"), scalar(1, "eps")))
            .autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("fused statistics and normalisation over the trailing dimensions").build();

    /**
     * The gradients of {@link #NATIVE_LAYER_NORM} with respect to input, weight and bias from one fused kernel call: with
     * {@code xhat = (x - mean) * rstd} and {@code gw = grad_out * weight}, {@code grad_input = rstd * (gw - mean(gw) - xhat *
     * mean(gw * xhat))} over each row, {@code grad_weight = sum(grad_out * xhat)} and {@code grad_bias = sum(grad_out)} over
     * the leading dimensions. The bias is read for its dtype only. No derivative of its own: a backward that records a graph
     * runs {@link #LAYER_NORM_BACKWARD_COMPOSITE} instead. Scalar: {@code len(normalized_shape)}.
     */
    public static final OpDef NATIVE_LAYER_NORM_BACKWARD = OpDef.structured("native_layer_norm_backward")
            .rule(DTypeRule.FLOATING_ONLY)
            .outputs(NormalizationOps::layerNormBackwardMeta, "grad_input", "grad_weight", "grad_bias")
            .signature(Param.tensor("grad_out"), Param.tensor("input"), Param.tensor("mean"), Param.tensor("rstd"),
                    new Param("weight", "Tensor?", null), new Param("bias", "Tensor?", null), new Param("normalized_shape", "int[]", null))
            .doc("one fused kernel for the three gradients").build();

    /**
     * Gradient {@code output} (0: input, 1: weight, 2: bias) of {@link #NATIVE_LAYER_NORM} as differentiable tensor ops (the
     * statistics recomputed from the input), for gradients of gradients: {@code ops.Normalization}'s front end.
     */
    public static final OpDef LAYER_NORM_BACKWARD_COMPOSITE = OpDef.frontEnd("layer_norm_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("input"), new Param("weight", "Tensor?", null),
                    new Param("normalized_shape", "int[]", null), Param.scalar("eps", "float", null), Param.scalar("output", "int", null))
            .doc("`ops.Normalization.layerNormBackwardComposite`: the backward as ops, differentiable").build();

    private static java.util.List<Expr> layerNormDerivatives() {
        Expr mean = Expr.output(1, "mean"), rstd = Expr.output(2, "rstd");
        Expr k = scalar(0, "len(normalized_shape)"), eps = scalar(1, "eps");
        Expr.Op fused = (Expr.Op) call(NATIVE_LAYER_NORM_BACKWARD, Expr.GRAD, X, mean, rstd, W, B, k);
        Expr[] d = new Expr[3];
        for (int j = 0; j < 3; j++) {
            d[j] = new Expr.IfGrad(call(LAYER_NORM_BACKWARD_COMPOSITE, Expr.GRAD, X, W, k, eps, Expr.c(j)), new Expr.Select(fused, j));
        }
        return java.util.Arrays.asList(d);
    }

    /** The number of rows (the product of the leading dimensions) of {@code x} normalised over its last {@code k}. */
    private static long layerNormRows(String op, StridedView x, double k) {
        int nk = (int) k;
        if (nk < 1 || nk > x.dim()) {
            throw new IllegalArgumentException(op + ": expected 1 to " + x.dim() + " normalised dimensions for an input of shape "
                    + Shapes.format(x.shape()) + ", got " + nk);
        }
        long rows = 1;
        for (int d = 0; d < x.dim() - nk; d++) rows *= x.size(d);
        return rows;
    }

    /** The statistics' shape: the leading dimensions of {@code x}, then a one for each of the last {@code k}. */
    private static long[] layerNormStatsShape(StridedView x, double k) {
        long[] s = x.shape().clone();
        for (int d = x.dim() - (int) k; d < s.length; d++) s[d] = 1;
        return s;
    }

    private static Meta.Output[] layerNormMeta(StridedView[] in, double[] scalars) {
        String op = "native_layer_norm";
        StridedView x = in[0];
        if (!x.dtype().isFloatingPoint()) throw new IllegalArgumentException(op + ": expected a floating point input, got " + x.dtype());
        layerNormRows(op, x, scalars[0]);
        long[] normalized = java.util.Arrays.copyOfRange(x.shape(), x.dim() - (int) scalars[0], x.dim());
        org.jtorch.types.DType out = x.dtype();
        String[] names = {"input", "weight", "bias"};
        for (int j = 1; j < 3; j++) {
            StridedView t = in[j];
            if (t == null) continue;
            checkAffine(op, names[j], t, normalized, x);
            out = org.jtorch.types.DType.promote(out, t.dtype());
        }
        org.jtorch.types.DType stats = out == org.jtorch.types.DType.FLOAT64 ? org.jtorch.types.DType.FLOAT64 : org.jtorch.types.DType.FLOAT32;
        long[] statsShape = layerNormStatsShape(x, scalars[0]);
        return new Meta.Output[] {new Meta.Output(x.shape(), out), new Meta.Output(statsShape, stats), new Meta.Output(statsShape, stats)};
    }

    private static Meta.Output[] layerNormBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "native_layer_norm_backward";
        StridedView g = in[0], x = in[1];
        if (!java.util.Arrays.equals(g.shape(), x.shape())) {
            throw new IllegalArgumentException(op + ": expected grad_out and input of one shape, got " + Shapes.format(g.shape())
                    + " and " + Shapes.format(x.shape()));
        }
        long rows = layerNormRows(op, x, scalars[0]);
        for (int j = 2; j < 4; j++) {
            if (in[j].numel() != rows || in[j].dtype() != in[2].dtype()) {
                throw new IllegalArgumentException(op + ": expected " + (j == 2 ? "mean" : "rstd") + " of " + rows + " elements of "
                        + in[2].dtype() + " for an input of shape " + Shapes.format(x.shape()) + ", got " + Shapes.format(in[j].shape())
                        + " of " + in[j].dtype());
            }
        }
        long[] normalized = java.util.Arrays.copyOfRange(x.shape(), x.dim() - (int) scalars[0], x.dim());
        if (in[4] != null) checkAffine(op, "weight", in[4], normalized, x);
        if (in[5] != null) checkAffine(op, "bias", in[5], normalized, x);
        org.jtorch.types.DType w = in[4] == null ? x.dtype() : in[4].dtype();
        org.jtorch.types.DType b = in[5] == null ? w : in[5].dtype();
        return new Meta.Output[] {new Meta.Output(x.shape(), x.dtype()), new Meta.Output(normalized, w), new Meta.Output(normalized, b)};
    }

    private static void checkAffine(String op, String name, StridedView t, long[] normalized, StridedView x) {
        if (!java.util.Arrays.equals(t.shape(), normalized)) {
            throw new IllegalArgumentException(op + ": expected " + name + " of shape " + Shapes.format(normalized) + " for an input of shape "
                    + Shapes.format(x.shape()) + ", got " + Shapes.format(t.shape()));
        }
        if (!t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + name + " must have a floating point dtype, got " + t.dtype());
        }
    }

    /**
     * {@code x / sqrt(mean(x^2) + eps) * weight} over the last {@code len(normalized_shape)} dimensions, as PyTorch 2.4's
     * {@code rms_norm}. Its scalars are {@code len(normalized_shape), eps} (the front end turns a None {@code eps} into
     * the machine epsilon of the input's dtype).
     */
    public static final OpDef RMS_NORM = OpDef.composite("rms_norm").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), new Param("normalized_shape", "int[]", null), new Param("weight", "Tensor?", "None"),
                    Param.scalar("eps", "float?", "None"))
            .composition(rmsNorm()).doc("root mean square over the trailing dimensions").build();

    /**
     * The channels split into {@code num_groups} groups, each (sample, group) normalised as layer norm normalises, then
     * scaled and shifted per channel. float16 and bfloat16 compute in float32, rounded once. Its scalars are
     * {@code num_groups, eps}: the front end checks them and the affine parameters' shapes.
     */
    public static final OpDef GROUP_NORM = OpDef.composite("group_norm").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), Param.scalar("num_groups", "int", null), new Param("weight", "Tensor?", "None"),
                    new Param("bias", "Tensor?", "None"), Param.scalar("eps", "float", "1e-05"))
            .composition(groupNorm())
            .autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("layer norm of each group of channels, then a per-channel affine").build();

    /** {@code (x - mean) * rsqrt(var + eps)} over the last {@code count} dimensions of {@code x}. */
    private static Expr normalized(Expr x, Expr count, Expr eps) {
        Expr mean = new Expr.ReduceTrailing(ReductionOps.MEAN, x, count, null);
        Expr var = new Expr.ReduceTrailing(ReductionOps.VAR, x, count, Expr.c(0));
        return call(PointwiseOps.MUL, call(PointwiseOps.SUB, x, mean), call(PointwiseOps.RSQRT, call(PointwiseOps.ADD, var, eps)));
    }

    /** {@code y * weight + bias}, each where given (broadcast from the right). */
    private static Expr affine(Expr y, Expr weight, Expr bias) {
        Expr scaled = new Expr.IfPresent(1, call(PointwiseOps.MUL, y, weight), y);
        return new Expr.IfPresent(2, call(PointwiseOps.ADD, scaled, bias), scaled);
    }

    private static Expr rmsNorm() {
        Expr meanSquare = new Expr.ReduceTrailing(ReductionOps.MEAN, call(PointwiseOps.MUL, X, X), scalar(0, "len(normalized_shape)"), null);
        Expr y = call(PointwiseOps.MUL, X, call(PointwiseOps.RSQRT, call(PointwiseOps.ADD, meanSquare, scalar(1, "eps"))));
        return new Expr.IfPresent(1, call(PointwiseOps.MUL, y, W), y);
    }

    private static Expr groupNorm() {
        Expr x = new Expr.Widened(X);
        Expr n = new Expr.Size(X, 0);
        Expr groups = call(ViewOps.RESHAPE, x, n, scalar(0, "num_groups"), Expr.c(-1));
        Expr y = normalized(groups, Expr.c(1), scalar(1, "eps"));
        // [N, C, spatial] so that a per-channel [C, 1] weight and bias broadcast.
        Expr channels = call(ViewOps.RESHAPE, y, n, new Expr.Size(X, 1), Expr.c(-1));
        Expr w = call(ViewOps.RESHAPE, W, new Expr.Size(W, 0), Expr.c(1));
        Expr b = call(ViewOps.RESHAPE, B, new Expr.Size(B, 0), Expr.c(1));
        return new Expr.CastLike(new Expr.ReshapeLike(affine(channels, w, b), X), X);
    }
}
