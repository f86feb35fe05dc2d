package org.jtorch.op;

import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;
import static org.jtorch.op.Expr.scalar;

import org.jtorch.Device;

/**
 * Layer norm, RMS norm and group norm, declared as compositions of ops ({@link OpDef.Kind#COMPOSITE}): every backend runs them
 * from the kernels of their parts, the JIT traces (and fuses) those parts, and autograd differentiates through them,
 * to any order. Normalisation over the trailing dimensions is {@link Expr.ReduceTrailing}: the mean and the biased
 * variance, kept for broadcasting. Their front ends ({@code ops.Normalization}) check the arguments and pass the
 * normalised shape by its number of dimensions.
 *
 * <p>Batch norm (fused statistics and backward kernels, running statistics updated in place) is still a hand-written
 * front end ({@link FrontEndOps#BATCH_NORM}).
 */
public final class NormalizationOps {
    private NormalizationOps() {}

    private static final Expr X = in(0, "input");
    private static final Expr W = in(1, "weight");
    private static final Expr B = in(2, "bias");

    /**
     * {@code (x - mean) / sqrt(var + eps) * weight + bias} over the last {@code len(normalized_shape)} dimensions, the
     * variance biased. Its scalars are {@code len(normalized_shape), eps}: the front end checks that the trailing
     * dimensions are {@code normalized_shape} and that the weight and bias have that shape.
     */
    public static final OpDef LAYER_NORM = OpDef.composite("layer_norm").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("input"), new Param("normalized_shape", "int[]", null), new Param("weight", "Tensor?", "None"),
                    new Param("bias", "Tensor?", "None"), Param.scalar("eps", "float", "1e-05"))
            .composition(affine(normalized(X, scalar(0, "len(normalized_shape)"), scalar(1, "eps")), W, B))
            .autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("mean and biased variance over the trailing dimensions").build();

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
        Expr groups = call(FrontEndOps.RESHAPE, x, n, scalar(0, "num_groups"), Expr.c(-1));
        Expr y = normalized(groups, Expr.c(1), scalar(1, "eps"));
        // [N, C, spatial] so that a per-channel [C, 1] weight and bias broadcast.
        Expr channels = call(FrontEndOps.RESHAPE, y, n, new Expr.Size(X, 1), Expr.c(-1));
        Expr w = call(FrontEndOps.RESHAPE, W, new Expr.Size(W, 0), Expr.c(1));
        Expr b = call(FrontEndOps.RESHAPE, B, new Expr.Size(B, 0), Expr.c(1));
        return new Expr.CastLike(new Expr.ReshapeLike(affine(channels, w, b), X), X);
    }
}
