package org.jtorch.op;

import static org.jtorch.op.Expr.unreduce;

import java.util.List;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The reductions and the ops along one dimension (softmax), declared: signature, dtype rule, autocast policy, and the derivative written
 * with ops, where {@code unreduce(v)} broadcasts a result-shaped value back over the reduced dimensions and a
 * reduction called inside a derivative reduces over the differentiated call's dimensions. The backends run
 * each primitive through their accumulating kernel for its {@link ReduceOp}.
 */
public final class ReductionOps {
    private ReductionOps() {}

    private static final Expr X = Expr.in(0, "self");
    private static final Expr G = Expr.GRAD;
    private static final Expr Y = Expr.RESULT;

    private static final Param SELF = Param.tensor("self");
    private static final Param DIM = Param.scalar("dim", "int[1]?", "None");
    private static final Param KEEPDIM = Param.scalar("keepdim", "bool", "False");
    private static final Param DTYPE = Param.scalar("dtype", "ScalarType?", "None");

    public static final OpDef SUM = OpDef.reduction("sum", ReduceOp.SUM).rule(DTypeRule.INT64_FOR_INTEGRAL)
            .signature(SELF, DIM, KEEPDIM, DTYPE).autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> List.of(unreduce(G))).build();

    /**
     * d prod / d x is the product of the other elements: result / x without zeros; with exactly one zero in a
     * group, the zero's gradient is the product of the nonzero elements and the others' 0; with two or more
     * zeros, every gradient is 0.
     */
    public static final OpDef PROD = OpDef.reduction("prod", ReduceOp.PROD).rule(DTypeRule.INT64_FOR_INTEGRAL)
            .signature(SELF, DIM, KEEPDIM, DTYPE).autocast(Device.Type.CPU, CastPolicy.FP32)
            .autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> {
                Expr isZero = eq(X, Expr.c(0));
                Expr zeros = unreduce(Expr.call(SUM, isZero));
                Expr nonzeroProduct = unreduce(Expr.call(prod(), Expr.where(isZero, Expr.c(1), X)));
                Expr noZero = Expr.call(PointwiseOps.DIV, unreduce(Y), X);
                Expr oneZero = Expr.where(isZero, nonzeroProduct, Expr.c(0));
                Expr local = Expr.where(eq(zeros, Expr.c(0)), noZero, Expr.where(eq(zeros, Expr.c(1)), oneZero, Expr.c(0)));
                return List.of(mul(unreduce(G), local));
            }).build();

    /**
     * The sum divided by the count, as ATen's CPU mean (so its rounding is the sum's, then one division). A float16 or
     * bfloat16 mean without a {@code dtype} sums and divides in float32 and rounds once (65,505 float16 ones sum to inf
     * long before their mean overflows).
     */
    public static final OpDef MEAN = OpDef.compositeReduction("mean").rule(DTypeRule.FLOATING_RESULT)
            .signature(SELF, DIM, KEEPDIM, DTYPE).halfAccumulatesIn(DType.FLOAT32)
            .composition(Expr.call(PointwiseOps.DIV, Expr.call(SUM, X), new Expr.Count()))
            .derivatives(() -> List.of(Expr.call(PointwiseOps.DIV, unreduce(G), new Expr.Count()))).build();

    /** NaN propagates; the gradient is shared evenly among tied extrema, as PyTorch's evenly_distribute_backward. */
    public static final OpDef AMAX = extremum("amax", ReduceOp.MAX);
    public static final OpDef AMIN = extremum("amin", ReduceOp.MIN);

    /**
     * The vector p-norm ({@code p} may be 0, ±inf or any real). Its gradient: 0 for p = 0, sign(x) for p = 1, the
     * elements attaining the norm sharing it evenly for ±inf, and {@code x |x|^(p-2) / norm^(p-1)} otherwise,
     * 0 where the norm is 0, as PyTorch's norm_backward. Autocast: PyTorch's {@code fp32_append_dtype} on CUDA is
     * {@code fp32} here (both give a float32 result).
     */
    public static final OpDef NORM = OpDef.reduction("norm", ReduceOp.NORM).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("p", "Scalar?", "2"), DIM, KEEPDIM)
            .autocast(Device.Type.CUDA, CastPolicy.FP32)
            .derivatives(() -> {
                Expr p = Expr.scalar(0, "p");
                Expr n = unreduce(Y);
                Expr sign = Expr.call(PointwiseOps.SIGN, X);
                Expr attains = new Expr.CastLike(eq(Expr.call(PointwiseOps.ABS, X), n), X);
                Expr extremal = Expr.call(PointwiseOps.DIV, mul(sign, attains), unreduce(Expr.call(SUM, attains)));
                Expr two = Expr.where(eq(n, Expr.c(0)), Expr.c(0), Expr.call(PointwiseOps.DIV, X, n));
                Expr general = Expr.where(eq(n, Expr.c(0)), Expr.c(0), Expr.call(PointwiseOps.DIV,
                        mul(X, Expr.call(PointwiseOps.POW_SCALAR, Expr.call(PointwiseOps.ABS, X), Expr.math(Fn.SUB, p, Expr.c(2)))),
                        Expr.call(PointwiseOps.POW_SCALAR, n, Expr.math(Fn.SUB, p, Expr.c(1)))));
                Expr local = new Expr.IfScalar(0, 0, new Expr.ZerosLike(X),
                        new Expr.IfScalar(0, 1, sign,
                        new Expr.IfScalar(0, Double.POSITIVE_INFINITY, extremal,
                        new Expr.IfScalar(0, Double.NEGATIVE_INFINITY, extremal,
                        new Expr.IfScalar(0, 2, two, general)))));
                return List.of(mul(unreduce(G), local));
            }).build();

    /** {@code log(sum(exp(x)))}, computed stably by the backends; integers compute in the default float dtype. */
    public static final OpDef LOGSUMEXP = OpDef.reduction("logsumexp").rule(DTypeRule.FLOAT)
            .signature(SELF, DIM, KEEPDIM).autocast(Device.Type.CUDA, CastPolicy.FP32)
            .derivatives(() -> List.of(mul(unreduce(G), Expr.call(PointwiseOps.EXP, Expr.call(PointwiseOps.SUB, X, unreduce(Y))))))
            .build();

    /** {@code sum (x - mean)^2 / max(0, N - correction)}, by the backends' variance kernel. */
    public static final OpDef VAR = OpDef.reduction("var").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, DIM, Param.scalar("correction", "Scalar?", "1"), KEEPDIM)
            .derivatives(() -> List.of(mul(mul(unreduce(G), centered()), Expr.math(Fn.DIV, Expr.c(2), freedom())))).build();

    /** The square root of {@link #VAR}. */
    public static final OpDef STD = OpDef.reduction("std").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, DIM, Param.scalar("correction", "Scalar?", "1"), KEEPDIM)
            .derivatives(() -> List.of(Expr.call(PointwiseOps.DIV, mul(unreduce(G), centered()), mul(unreduce(Y), freedom()))))
            .build();

    /** Stable softmax along {@code dim}; integers compute in the default float dtype. */
    public static final OpDef SOFTMAX = OpDef.alongDim("softmax").rule(DTypeRule.FLOAT)
            .signature(SELF, Param.scalar("dim", "int", null), DTYPE)
            .autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> List.of(mul(Y, Expr.call(PointwiseOps.SUB, G, Expr.call(SUM, mul(G, Y)))))).build();

    public static final OpDef LOG_SOFTMAX = OpDef.alongDim("log_softmax").rule(DTypeRule.FLOAT)
            .signature(SELF, Param.scalar("dim", "int", null), DTYPE)
            .autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> List.of(new Expr.IfGrad(Expr.call(PointwiseOps.SUB, G, mul(Expr.call(PointwiseOps.EXP, Y), Expr.call(SUM, G))),
                    Expr.call(logSoftmaxBackwardData(), G, Y, Expr.scalar(0, "dim")))))
            .build();

    /**
     * {@link #LOG_SOFTMAX_BACKWARD_DATA} as differentiable ops ({@code ops.Reductions.logSoftmaxBackwardComposite}):
     * {@code grad_output - exp(output) * sum(grad_output, dim, keepdim=True)}.
     */
    public static final OpDef LOG_SOFTMAX_BACKWARD_COMPOSITE = OpDef.frontEnd("log_softmax_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_output"), Param.tensor("output"), Param.scalar("dim", "int", null))
            .doc("`ops.Reductions.logSoftmaxBackwardComposite`: the backward as ops, differentiable").build();

    /**
     * {@link #LOG_SOFTMAX}'s gradient ({@code _log_softmax_backward_data}) in one pass over each line along {@code dim}:
     * {@code grad_output - exp(output) * sum(grad_output, dim, keepdim=True)}, where the composite form runs four kernels
     * (exp, a sum, a multiplication and a subtraction) over the whole tensor. A kernel takes the call where
     * {@link #softmaxBackwardForm} holds; other calls run {@link #LOG_SOFTMAX_BACKWARD_COMPOSITE}. It has no derivative
     * of its own: a backward that records a graph takes the composite form ({@link Expr.IfGrad}).
     */
    public static final OpDef LOG_SOFTMAX_BACKWARD_DATA = OpDef.structured("log_softmax_backward_data").py("_log_softmax_backward_data")
            .rule(DTypeRule.FLOATING_ONLY).meta(ReductionOps::softmaxBackwardMeta)
            .signature(Param.tensor("grad_output"), Param.tensor("output"), Param.scalar("dim", "int", null))
            .decomposition(Expr.call(LOG_SOFTMAX_BACKWARD_COMPOSITE, Expr.in(0, "grad_output"), Expr.in(1, "output"), Expr.scalar(0, "dim")))
            .doc("grad_output - exp(output) * sum(grad_output, dim) in one pass over each line").build();

    /**
     * The argument form of {@link #LOG_SOFTMAX_BACKWARD_DATA}'s kernels: float32 or float64 operands of one dtype and
     * device whose lines along {@code dim} are contiguous and end each at a row of a row-major result (every dimension
     * after {@code dim} of size 1), so that a line is one run of memory in each operand. Arguments that no form takes are
     * refused here, with the op's name (the meta function's checks), rather than in the decomposition's parts.
     */
    public static boolean softmaxBackwardForm(StridedView[] in, double[] scalars) {
        softmaxBackwardMeta(in, scalars);
        StridedView g = in[0], y = in[1];
        DType dt = g.dtype();
        if ((dt != DType.FLOAT32 && dt != DType.FLOAT64) || y.dtype() != dt || !y.device().equals(g.device())) return false;
        int rank = g.dim();
        if (rank == 0) return true;
        int dim = (int) scalars[0];
        for (int d = dim + 1; d < rank; d++) if (g.size(d) != 1) return false;
        return g.size(dim) <= 1 || (g.stride(dim) == 1 && y.stride(dim) == 1);
    }

    private static Meta.Output softmaxBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "_log_softmax_backward_data";
        StridedView g = in[0], y = in[1];
        if (!java.util.Arrays.equals(g.shape(), y.shape()) || g.dtype() != y.dtype() || !g.device().equals(y.device())) {
            throw new IllegalArgumentException(op + ": expected grad_output and output of one shape, dtype and device, got "
                    + Shapes.format(g.shape()) + " " + g.dtype() + " on " + g.device() + " and " + Shapes.format(y.shape()) + " "
                    + y.dtype() + " on " + y.device());
        }
        int rank = Math.max(1, g.dim());
        double dim = scalars[0];
        if (dim != (int) dim || dim < 0 || dim >= rank) {
            throw new IllegalArgumentException(op + ": dim " + dim + " out of range for a tensor of shape " + Shapes.format(g.shape()));
        }
        return new Meta.Output(g.shape(), g.dtype());
    }

    /**
     * The inclusive cumulative sum along {@code dim}: bool and integers give int64 unless a {@code dtype} is given, floating
     * scans accumulate in double. Its derivative is the reverse cumulative sum of the gradient, {@code sum - cumsum + g}.
     */
    public static final OpDef CUMSUM = OpDef.alongDim("cumsum").rule(DTypeRule.INT64_FOR_INTEGRAL)
            .signature(SELF, Param.scalar("dim", "int", null), DTYPE)
            .autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> List.of(reverseCumsum(G))).build();

    /**
     * The inclusive cumulative product along {@code dim}. Its derivative ({@code d y_j / d x_i = prod_{k<=j, k!=i} x_k} for
     * {@code j >= i}) without zeros is {@code reverse_cumsum(g * y) / x}. With zeros, before the first zero of a slice it is
     * still that (every later {@code y_j} is 0); at the first zero it is {@code reverse_cumsum(g * y')}, where {@code y'} is
     * the cumulative product with that zero taken as 1; after it, 0. Written with ops, so that gradients of any order follow.
     */
    public static final OpDef CUMPROD = OpDef.alongDim("cumprod").rule(DTypeRule.INT64_FOR_INTEGRAL)
            .signature(SELF, Param.scalar("dim", "int", null), DTYPE)
            .autocast(Device.Type.CUDA, CastPolicy.FP32_SET_OPT_DTYPE)
            .derivatives(() -> {
                Expr isZero = eq(X, Expr.c(0));
                Expr zerosSoFar = Expr.call(CUMSUM, isZero);
                Expr beforeZero = eq(zerosSoFar, Expr.c(0));
                Expr firstZero = Expr.where(isZero, eq(zerosSoFar, Expr.c(1)), isZero);
                Expr beforeFirst = Expr.call(PointwiseOps.DIV, reverseCumsum(mul(G, Y)), Expr.where(beforeZero, X, Expr.c(1)));
                Expr zeroAsOne = Expr.call(cumprod(), Expr.where(firstZero, Expr.c(1), X));
                Expr atFirst = reverseCumsum(mul(G, zeroAsOne));
                Expr firstOrder = Expr.where(beforeZero, beforeFirst, Expr.where(firstZero, atFirst, Expr.c(0)));
                // The masks' zero after the first zero has no derivative with respect to that zero: a graph of the
                // gradient takes the form differentiable through its parts, as ATen's in grad mode.
                return List.of(new Expr.IfGrad(Expr.call(ReductionOps.CUMPROD_BACKWARD, G, X, Y, Expr.scalar(0, "dim")), firstOrder));
            }).build();

    /**
     * {@link #CUMPROD}'s gradient as ops that autograd records ({@code ops.Reductions.cumprodBackward}): without zeros
     * {@code reverse_cumsum(g * y) / x}, with zeros the products left of each element times the reverse recurrence
     * {@code S_i = g_i + x_{i+1} S_{i+1}}, so that it is differentiable again at zeros. Scalar: the dimension.
     */
    public static final OpDef CUMPROD_BACKWARD = OpDef.frontEnd("cumprod_backward", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad"), SELF, Param.tensor("result"), Param.scalar("dim", "int", null))
            .doc("`ops.Reductions.cumprodBackward`: cumprod's gradient as ops, differentiable").build();

    public static final OpDef ANY = OpDef.reduction("any", ReduceOp.ANY).rule(DTypeRule.LOGICAL)
            .signature(SELF, DIM, KEEPDIM).build();
    public static final OpDef ALL = OpDef.reduction("all", ReduceOp.ALL).rule(DTypeRule.LOGICAL)
            .signature(SELF, DIM, KEEPDIM).build();

    private static OpDef extremum(String name, ReduceOp op) {
        return OpDef.reduction(name, op).rule(DTypeRule.SAME).signature(SELF, DIM, KEEPDIM)
                .derivatives(() -> {
                    Expr mask = new Expr.CastLike(eq(X, unreduce(Y)), G);
                    return List.of(Expr.call(PointwiseOps.DIV, mul(unreduce(G), mask), unreduce(Expr.call(SUM, mask))));
                }).build();
    }

    /** {@code x - mean(x)} over the call's dimensions. */
    private static Expr centered() {
        return Expr.call(PointwiseOps.SUB, X, unreduce(Expr.call(MEAN, X)));
    }

    /** {@code max(0, N - correction)}: the degrees of freedom a variance divides by. */
    private static Expr freedom() {
        return Expr.math(Fn.NEG, Expr.math(Fn.MIN, Expr.c(0), Expr.math(Fn.SUB, Expr.scalar(0, "correction"), new Expr.Count())));
    }

    // Derivatives may name the op being declared, so they are built lazily and reach it through a method.
    private static OpDef prod() { return PROD; }
    private static OpDef cumprod() { return CUMPROD; }
    private static OpDef logSoftmaxBackwardData() { return LOG_SOFTMAX_BACKWARD_DATA; }

    /** {@code sum_{j >= i} v_j} along the call's dimension: {@code sum(v) - cumsum(v) + v}, as ATen's reversed cumsum. */
    private static Expr reverseCumsum(Expr v) {
        return Expr.call(PointwiseOps.ADD, Expr.call(PointwiseOps.SUB, Expr.call(SUM, v), Expr.call(CUMSUM, v)), v);
    }
    private static Expr eq(Expr a, Expr b) { return Expr.call(PointwiseOps.EQ, a, b); }
    private static Expr mul(Expr a, Expr b) { return Expr.call(PointwiseOps.MUL, a, b); }
}
