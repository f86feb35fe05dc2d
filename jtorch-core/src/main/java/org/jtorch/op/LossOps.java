package org.jtorch.op;

import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;
import static org.jtorch.op.Expr.scalar;

import org.jtorch.types.Device;

/**
 * The elementwise losses, declared as compositions ({@link OpDef.Kind#COMPOSITE}, differentiated through
 * their parts): {@code mse_loss}, {@code l1_loss}, {@code smooth_l1_loss}, {@code huber_loss},
 * {@code binary_cross_entropy_with_logits} and {@code kl_div}. The first scalar is
 * PyTorch's {@code reduction} enum ({@link #NONE}, {@link #MEAN}, {@link #SUM}). Their front ends ({@code nn.F}) check
 * the arguments; autocast runs them in float32 on both device types, as PyTorch 1.13's lists.
 */
public final class LossOps {
    private LossOps() {}

    /** PyTorch's {@code at::Reduction} values, the losses' first scalar. */
    public static final int NONE = 0, MEAN = 1, SUM = 2;


    private static final Expr SELF = in(0, "self");
    private static final Expr TARGET = in(1, "target");

    public static final OpDef MSE_LOSS = loss("mse_loss", DTypeRule.FLOATING_ONLY, null,
            reduced(call(PointwiseOps.MUL, difference(), difference())), "(self - target)^2, reduced");

    public static final OpDef L1_LOSS = loss("l1_loss", DTypeRule.SAME_NO_BOOL, null, reduced(absoluteDifference()),
            "|self - target|, reduced");

    /** {@code |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta} ({@code beta > 0}: the front end calls {@link #L1_LOSS} for 0). */
    public static final OpDef SMOOTH_L1_LOSS = loss("smooth_l1_loss", DTypeRule.FLOATING_ONLY, Param.scalar("beta", "float", "1.0"),
            reduced(piecewise(scalar(1, "beta"),
                    call(PointwiseOps.MUL, square(), Expr.math(Fn.DIV, Expr.c(0.5), scalar(1, "beta"))),
                    call(PointwiseOps.SUB, absoluteDifference(), Expr.math(Fn.MUL, Expr.c(0.5), scalar(1, "beta"))))),
            "quadratic below beta, linear above, reduced");

    /** {@code |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta)}. */
    public static final OpDef HUBER_LOSS = loss("huber_loss", DTypeRule.FLOATING_ONLY, Param.scalar("delta", "float", "1.0"),
            reduced(piecewise(scalar(1, "delta"), call(PointwiseOps.MUL, square(), Expr.c(0.5)),
                    call(PointwiseOps.MUL, call(PointwiseOps.SUB, absoluteDifference(), Expr.math(Fn.MUL, Expr.c(0.5), scalar(1, "delta"))),
                            scalar(1, "delta")))),
            "quadratic below delta, linear above, reduced");

    /**
     * {@code (1 - target) x + (1 + (pos_weight - 1) target) softplus(-x)}, times {@code weight}, reduced; {@code softplus(-x)}
     * written {@code m + log(exp(-m) + exp(-x - m))} with {@code m = max(-x, 0)}: stable, and its gradient through the parts
     * is exact at {@code x = 0} (the pieces of {@code log1p(exp(-|x|)) + max(-x, 0)} have kinks there).
     */
    public static final OpDef BINARY_CROSS_ENTROPY_WITH_LOGITS = OpDef.composite("binary_cross_entropy_with_logits")
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    new Param("pos_weight", "Tensor?", "None"), Param.scalar("reduction", "int", "Mean"))
            .composition(reduced(binaryCrossEntropyWithLogits()))
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("log-sigmoid cross entropy, stable for large logits").build();

    /**
     * {@link #BINARY_CROSS_ENTROPY}'s loss before the reduction, in one pass, refusing an element of {@code self} outside
     * [0, 1] (NaN included) with PyTorch 1.13's "all elements of input should be between 0 and 1": the CPU's kernel checks
     * each element as it computes its loss and raises at the call; a device's kernel records the first bad element in the
     * device's check log, raised at its next synchronisation (nothing read back). {@code weight} (may be None) broadcasts
     * to {@code self}'s shape; the result has {@code self}'s shape and the inputs' promoted dtype, each element
     * {@code (target - 1) max(log1p(-self), -100) - target max(log(self), -100)}, times the weight, computed in that order
     * (each step rounded to the compute dtype). Not differentiable on its own: {@link #BINARY_CROSS_ENTROPY}'s
     * derivatives are declared there. Kept by the JIT even where unread ({@link OpDef#checksValues}).
     */
    public static final OpDef BINARY_CROSS_ENTROPY_ELEMENTWISE = OpDef.structured("binary_cross_entropy_elementwise")
            .rule(DTypeRule.FLOATING_ONLY).meta(LossOps::binaryCrossEntropyMeta)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None")).checksValues()
            .doc("the clamped-log cross entropy of each element, refusing self outside [0, 1] inside the kernel").build();

    /** PyTorch 1.13's message for an element of binary_cross_entropy's input outside [0, 1] or NaN. */
    public static final String BINARY_CROSS_ENTROPY_RANGE = "all elements of input should be between 0 and 1";

    /**
     * {@link #BINARY_CROSS_ENTROPY}'s error for an input of {@code shape} and {@code dtype} whose element {@code flatIndex}
     * (row-major) is bad, naming the function ({@code nn.F.binaryCrossEntropy}) as its other errors do.
     */
    public static IllegalArgumentException binaryCrossEntropyRangeError(long[] shape, org.jtorch.types.DType dtype, long flatIndex) {
        return new IllegalArgumentException("binaryCrossEntropy: " + BINARY_CROSS_ENTROPY_RANGE + " (input of shape "
                + Shapes.format(shape) + ", " + dtype + ": element " + java.util.Arrays.toString(Shapes.unravel(flatIndex, shape))
                + " is outside [0, 1] or NaN)");
    }

    private static Meta.Output binaryCrossEntropyMeta(StridedView[] in, double[] scalars) {
        String op = "binary_cross_entropy_elementwise";
        if (!java.util.Arrays.equals(in[0].shape(), in[1].shape())) {
            throw new IllegalArgumentException(op + ": expected self and target of one shape, got " + Shapes.format(in[0].shape())
                    + " and " + Shapes.format(in[1].shape()));
        }
        org.jtorch.types.DType dtype = org.jtorch.types.DType.promote(in[0].dtype(), in[1].dtype());
        if (in.length > 2 && in[2] != null) {
            in[2].expand(op, in[0].shape()); // a weight that does not broadcast to self is refused naming both shapes
            dtype = org.jtorch.types.DType.promote(dtype, in[2].dtype());
        }
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected floating operands, got " + in[0].dtype() + " and " + in[1].dtype());
        }
        return new Meta.Output(in[0].shape().clone(), dtype);
    }

    /**
     * {@code -weight * (target log(self) + (1 - target) log(1 - self))} for probabilities {@code self}, each logarithm
     * clamped at -100, reduced, as PyTorch's {@code binary_cross_entropy}: its composition computes the loss, its own
     * derivatives give PyTorch's gradients, finite where {@code self} is exactly 0 or 1 (the clamped logarithms' would be
     * NaN there): {@link #BINARY_CROSS_ENTROPY_BACKWARD} and {@link #BINARY_CROSS_ENTROPY_TARGET_BACKWARD}; none for the
     * weight (the front end, {@code nn.F.binaryCrossEntropy}, refuses one that requires grad). Autocast: float32 on the CPU;
     * refused on CUDA ("unsafe to autocast"), as PyTorch 1.13's lists.
     */
    public static final OpDef BINARY_CROSS_ENTROPY = OpDef.composite("binary_cross_entropy").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"))
            .composition(reduced(call(LossOps.BINARY_CROSS_ENTROPY_ELEMENTWISE, SELF, TARGET, in(2, "weight"))))
            .derivatives(LossOps::binaryCrossEntropyDerivatives)
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.BANNED)
            .doc("clamped-log cross entropy of probabilities").build();

    /**
     * The gradient of {@link #BINARY_CROSS_ENTROPY} with respect to {@code self}: {@code grad_out * weight * (self - target) /
     * max(self (1 - self), 1e-12)}, {@code grad_out} divided by the element count for the mean ({@code ops.LossBackward}: the
     * formula as ops, differentiable again).
     */
    public static final OpDef BINARY_CROSS_ENTROPY_BACKWARD = OpDef.frontEnd("binary_cross_entropy_backward", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_output"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"))
            .doc("`ops.LossBackward.binaryCrossEntropy`: grad * weight * (self - target) / max(self (1 - self), eps)").build();

    /**
     * The gradient of {@link #BINARY_CROSS_ENTROPY} with respect to {@code target}: {@code grad_out * weight * (log(1 - self) -
     * log(self))}, {@code grad_out} divided by the element count for the mean (PyTorch's {@code binary_cross_entropy_target_backward}).
     */
    public static final OpDef BINARY_CROSS_ENTROPY_TARGET_BACKWARD = OpDef.frontEnd("binary_cross_entropy_target_backward", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_output"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"))
            .doc("`ops.LossBackward.binaryCrossEntropyTarget`: grad * weight * (log(1 - self) - log(self))").build();

    private static java.util.List<Expr> binaryCrossEntropyDerivatives() {
        Expr weight = in(2, "weight"), reduction = scalar(0, "reduction");
        return java.util.Arrays.asList(call(BINARY_CROSS_ENTROPY_BACKWARD, Expr.GRAD, SELF, TARGET, weight, reduction),
                call(BINARY_CROSS_ENTROPY_TARGET_BACKWARD, Expr.GRAD, SELF, TARGET, weight, reduction), null);
    }

    /**
     * {@code target * (log(target) - self)} (0 where {@code target == 0}), or {@code exp(target) * (target - self)} with
     * {@code log_target}, reduced: {@code self} holds log-probabilities. PyTorch's {@code batchmean} is its front end's
     * {@code sum} divided by the batch size, as {@code torch.nn.functional.kl_div}'s.
     */
    public static final OpDef KL_DIV = OpDef.composite("kl_div").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), Param.scalar("reduction", "int", "Mean"),
                    Param.scalar("log_target", "bool", "False"))
            .composition(reduced(new Expr.IfScalar(1, 1, call(PointwiseOps.MUL, call(PointwiseOps.EXP, TARGET),
                    call(PointwiseOps.SUB, TARGET, SELF)), call(PointwiseOps.SUB, xlogx(TARGET), call(PointwiseOps.MUL, TARGET, SELF)))))
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("pointwise KL divergence from log-probabilities, reduced").build();

    /**
     * Negative log likelihood written with ops ({@code ops.Losses.nllLossComposite}: gather, the ignored targets masked, the
     * class weights gathered), for every shape, dtype and device: {@link #NLL_LOSS}'s decomposition.
     */
    public static final OpDef NLL_LOSS_COMPOSITE = OpDef.frontEnd("nll_loss_composite", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"), Param.scalar("ignore_index", "int", "-100"))
            .doc("`ops.Losses.nllLossComposite`: gather, masks and weights as ops").build();

    /**
     * Negative log likelihood of log-probabilities {@code self} ({@code [N, C, d...]}) at class indices {@code target}
     * ({@code [N, d...]}, int64): {@code -weight[t] * self[n, t, d...]}, zero where {@code t == ignore_index}, reduced (the mean
     * divides by the summed weights of the kept targets), as PyTorch's {@code nll_loss}/{@code nll_loss2d}. Outputs: the loss
     * and {@code total_weight}. Scalars: {@code reduction, ignore_index}. The dispatcher runs a backend's fused kernel where
     * one takes the call ({@link #nllFusedForm}: float32 or float64, int64 targets), its decomposition
     * ({@link #NLL_LOSS_COMPOSITE}) otherwise. Its derivative is one fused backward call ({@link #NLL_LOSS_BACKWARD}), or, when
     * the backward records a graph, the same formula as differentiable ops ({@link #NLL_LOSS_BACKWARD_COMPOSITE}).
     */
    public static final OpDef NLL_LOSS = OpDef.structured("nll_loss").rule(DTypeRule.FLOATING_ONLY)
            .outputs(LossOps::nllMeta, "output", "total_weight")
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"), Param.scalar("ignore_index", "int", "-100"))
            .derivatives(LossOps::nllDerivatives)
            .decomposition(call(NLL_LOSS_COMPOSITE, SELF, TARGET, in(2, "weight"), scalar(0, "reduction"), scalar(1, "ignore_index")))
            .denseInputs(0, 1)
            .autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.FP32)
            .doc("the targets' negative log-probabilities, weighted and reduced, in one pass").build();

    /**
     * The gradient of {@link #NLL_LOSS} with respect to {@code self}: zero but at each kept target,
     * {@code -weight[t] * grad_out} (over {@code total_weight} for the mean), in one pass. No derivative of its own (see
     * {@link #NLL_LOSS_BACKWARD_COMPOSITE}).
     */
    public static final OpDef NLL_LOSS_BACKWARD = OpDef.structured("nll_loss_backward").rule(DTypeRule.FLOATING_ONLY)
            .meta(LossOps::nllBackwardMeta)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", null),
                    Param.tensor("total_weight"), Param.scalar("reduction", "int", null), Param.scalar("ignore_index", "int", null))
            .denseInputs(0, 2)
            .doc("-weight[t] grad_out at each kept target, zero elsewhere").build();

    /** {@link #NLL_LOSS_BACKWARD} as differentiable tensor ops, for gradients of gradients. */
    public static final OpDef NLL_LOSS_BACKWARD_COMPOSITE = OpDef.frontEnd("nll_loss_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", null),
                    Param.scalar("reduction", "int", null), Param.scalar("ignore_index", "int", null))
            .doc("`ops.Losses.nllLossBackwardComposite`: the backward as ops, differentiable").build();

    private static java.util.List<Expr> nllDerivatives() {
        Expr weight = in(2, "weight"), reduction = scalar(0, "reduction"), ignore = scalar(1, "ignore_index");
        Expr fused = call(NLL_LOSS_BACKWARD, Expr.GRAD, SELF, TARGET, weight, Expr.output(1, "total_weight"), reduction, ignore);
        Expr composite = call(NLL_LOSS_BACKWARD_COMPOSITE, Expr.GRAD, SELF, TARGET, weight, reduction, ignore);
        return java.util.Arrays.asList(new Expr.IfGrad(composite, fused), null, null);
    }

    /**
     * The argument forms of {@link #NLL_LOSS}'s kernels (what its meta function accepts): {@code [N, C, d...]} log-probabilities
     * of float32 or float64, int64 targets of shape {@code [N, d...]}, a weight of shape {@code [C]} of their dtype or none, all
     * on one device. Other calls (a {@code [C]} input, int32 targets, half precision) run its decomposition.
     */
    public static boolean nllFusedForm(StridedView[] in, double[] scalars) {
        StridedView x = in[0], t = in[1], w = in[2];
        org.jtorch.types.DType dt = x.dtype();
        if (x.dim() < 2 || (dt != org.jtorch.types.DType.FLOAT32 && dt != org.jtorch.types.DType.FLOAT64)) return false;
        if (t.dtype() != org.jtorch.types.DType.INT64 || !java.util.Arrays.equals(t.shape(), nllTargetShape(x)) || !t.device().equals(x.device())) {
            return false;
        }
        return w == null || (w.dim() == 1 && w.size(0) == x.size(1) && w.dtype() == dt && w.device().equals(x.device()));
    }

    /** {@code [N, d...]}: the input's shape without its class dimension. */
    private static long[] nllTargetShape(StridedView x) {
        long[] s = new long[x.dim() - 1];
        s[0] = x.size(0);
        for (int d = 2; d < x.dim(); d++) s[d - 1] = x.size(d);
        return s;
    }

    private static Meta.Output[] nllMeta(StridedView[] in, double[] scalars) {
        String op = "nll_loss";
        StridedView x = in[0];
        if (!nllFusedForm(in, scalars)) {
            throw new IllegalArgumentException(op + ": expected [N, C, d...] input of float32 or float64, int64 targets of its shape "
                    + "without the class dimension and a [C] weight of its dtype on its device, got " + Shapes.format(x.shape()) + " of "
                    + x.dtype() + ", targets " + Shapes.format(in[1].shape()) + " of " + in[1].dtype()
                    + (in[2] == null ? "" : ", weight " + Shapes.format(in[2].shape()) + " of " + in[2].dtype()));
        }
        long[] loss = (int) scalars[0] == NONE ? nllTargetShape(x) : new long[0];
        return new Meta.Output[] {new Meta.Output(loss, x.dtype()), new Meta.Output(new long[0], x.dtype())};
    }

    private static Meta.Output nllBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "nll_loss_backward";
        StridedView x = in[1];
        if (!nllFusedForm(new StridedView[] {x, in[2], in[3]}, scalars)) {
            throw new IllegalArgumentException(op + ": expected [N, C, d...] input of float32 or float64 and int64 targets of its shape "
                    + "without the class dimension, got " + Shapes.format(x.shape()) + " of " + x.dtype() + " and "
                    + Shapes.format(in[2].shape()) + " of " + in[2].dtype());
        }
        long expected = (int) scalars[0] == NONE ? in[2].numel() : 1;
        if (in[0].numel() != expected || in[0].dtype() != x.dtype() || in[4].numel() != 1) {
            throw new IllegalArgumentException(op + ": expected grad_out of " + expected + " elements of " + x.dtype()
                    + " and one total weight, got " + Shapes.format(in[0].shape()) + " of " + in[0].dtype() + " and "
                    + Shapes.format(in[4].shape()));
        }
        return new Meta.Output(x.shape(), x.dtype());
    }

    /**
     * Cross entropy of class indices as {@code log_softmax} then {@code nll_loss} (and the label smoothing term), for every
     * shape, dtype and device: {@link #CROSS_ENTROPY_FUSED}'s decomposition ({@code ops.Losses.crossEntropy}).
     */
    public static final OpDef CROSS_ENTROPY_COMPOSITE = OpDef.frontEnd("cross_entropy_composite", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"), Param.scalar("ignore_index", "int", "-100"),
                    Param.scalar("label_smoothing", "float", "0.0"))
            .doc("`ops.Losses.crossEntropy`: log_softmax, nll_loss and the smoothing term as ops").build();

    /**
     * {@code F.cross_entropy} ({@code nn.F.crossEntropy}): class indices over {@link #CROSS_ENTROPY_FUSED}, class
     * probabilities as log_softmax and a weighted sum. Declared for its autocast policy, PyTorch 1.13's: float32 on the CPU;
     * on CUDA untouched, its parts (log_softmax and nll_loss, float32 there) cast one by one, as ATen's composite decomposes.
     * The dispatcher applies it ({@code Dispatcher.frontEnd}); the trace sees the ops inside. Its front end, {@code
     * ops.Losses.crossEntropyLoss}, checks the arguments; {@code Dispatcher.call} runs it from the signature's arguments.
     */
    public static final OpDef CROSS_ENTROPY_LOSS = OpDef.frontEnd("cross_entropy_loss", true).rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"), Param.scalar("ignore_index", "int", "-100"),
                    Param.scalar("label_smoothing", "float", "0.0"))
            .autocast(Device.Type.CPU, CastPolicy.FP32).doc("`ops.Losses.crossEntropyLoss` (`F.crossEntropy`)").build();

    /**
     * Cross entropy of logits {@code self} ({@code [N, C]}, float32 or float64) at class indices {@code target} ({@code [N]},
     * int64) as one pass over each row: the row's log-sum-exp {@code lse}, then {@code lse - self[n, t]} (and, with label
     * smoothing {@code ls}, {@code W lse - sum_c weight[c] self[n, c]} mixed in as PyTorch: {@code (1 - ls) nll + ls / C smooth}),
     * times {@code weight[t]} ({@code [C]}, may be None), zero where {@code t == ignore_index}, reduced. Outputs: the loss
     * ({@code [N]} for reduction none, else a scalar), {@code lse} ({@code [N]}) and {@code total_weight} (the mean's divisor:
     * the summed weights of the kept targets). Scalars: {@code reduction, ignore_index, label_smoothing}. The front end
     * ({@code ops.Losses.crossEntropyLoss}) checks the arguments and calls it; the dispatcher runs the kernel where one takes the call
     * ({@link #crossEntropyFusedForm}), its decomposition into log_softmax and nll_loss otherwise. Its derivative is one fused backward call ({@link #CROSS_ENTROPY_FUSED_BACKWARD}), or, when
     * the backward records a graph, the same formula as differentiable ops ({@link #CROSS_ENTROPY_BACKWARD_COMPOSITE}).
     */
    public static final OpDef CROSS_ENTROPY_FUSED = OpDef.structured("cross_entropy_fused").rule(DTypeRule.FLOATING_ONLY)
            .outputs(LossOps::crossEntropyMeta, "output", "lse", "total_weight")
            .signature(Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", "None"),
                    Param.scalar("reduction", "int", "Mean"), Param.scalar("ignore_index", "int", "-100"),
                    Param.scalar("label_smoothing", "float", "0.0"))
            .derivatives(LossOps::crossEntropyDerivatives)
            .decomposition(call(CROSS_ENTROPY_COMPOSITE, SELF, TARGET, in(2, "weight"), scalar(0, "reduction"),
                    scalar(1, "ignore_index"), scalar(2, "label_smoothing")))
            .denseInputs(0)
            .doc("log_softmax and nll_loss in one pass over each row").build();

    /**
     * The argument forms of {@link #CROSS_ENTROPY_FUSED}'s kernels (what its meta function accepts): {@code [N, C]} logits of
     * float32 or float64, int64 targets of shape {@code [N]}, a weight of shape {@code [C]} of the logits' dtype or none, all
     * on one device. Other calls run its decomposition.
     */
    public static boolean crossEntropyFusedForm(StridedView[] in, double[] scalars) {
        StridedView x = in[0], t = in[1], w = in[2];
        org.jtorch.types.DType dt = x.dtype();
        if (x.dim() != 2 || (dt != org.jtorch.types.DType.FLOAT32 && dt != org.jtorch.types.DType.FLOAT64)) return false;
        if (t.dtype() != org.jtorch.types.DType.INT64 || t.dim() != 1 || t.size(0) != x.size(0) || !t.device().equals(x.device())) return false;
        return w == null || (w.dim() == 1 && w.size(0) == x.size(1) && w.dtype() == dt && w.device().equals(x.device()));
    }

    /** The argument forms of {@link #MSE_LOSS_FUSED}'s kernels: operands of one shape and dtype (float32 or float64), reduced. */
    public static boolean mseFusedForm(StridedView[] in, double[] scalars) {
        StridedView x = in[0], t = in[1];
        org.jtorch.types.DType dt = x.dtype();
        return (dt == org.jtorch.types.DType.FLOAT32 || dt == org.jtorch.types.DType.FLOAT64) && t.dtype() == dt
                && java.util.Arrays.equals(x.shape(), t.shape()) && t.device().equals(x.device()) && (int) scalars[0] != NONE;
    }

    /**
     * The gradient of {@link #CROSS_ENTROPY_FUSED} with respect to its logits in one pass over each row: with
     * {@code p = exp(self - lse)}, {@code w_t = weight[t]} (1 without weights; 0 where ignored) and {@code W = sum(weight)}
     * ({@code C} without), {@code grad_out * scale * ((1 - ls) w_t (p - onehot(t)) + ls / C (W p - weight))}, {@code scale}
     * {@code 1 / total_weight} for the mean. No derivative of its own (see {@link #CROSS_ENTROPY_BACKWARD_COMPOSITE}).
     */
    public static final OpDef CROSS_ENTROPY_FUSED_BACKWARD = OpDef.structured("cross_entropy_fused_backward")
            .rule(DTypeRule.FLOATING_ONLY).meta(LossOps::crossEntropyBackwardMeta)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", null),
                    Param.tensor("lse"), Param.tensor("total_weight"), Param.scalar("reduction", "int", null),
                    Param.scalar("ignore_index", "int", null), Param.scalar("label_smoothing", "float", null))
            .doc("softmax minus the smoothed one-hot target, scaled, in one pass").build();

    /** {@link #CROSS_ENTROPY_FUSED_BACKWARD} as differentiable tensor ops, for gradients of gradients. */
    public static final OpDef CROSS_ENTROPY_BACKWARD_COMPOSITE = OpDef.frontEnd("cross_entropy_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), new Param("weight", "Tensor?", null),
                    Param.scalar("reduction", "int", null), Param.scalar("ignore_index", "int", null),
                    Param.scalar("label_smoothing", "float", null))
            .doc("`ops.LossBackward.crossEntropy`: the backward as ops, differentiable").build();

    private static java.util.List<Expr> crossEntropyDerivatives() {
        Expr target = in(1, "target"), weight = in(2, "weight");
        Expr reduction = scalar(0, "reduction"), ignore = scalar(1, "ignore_index"), smoothing = scalar(2, "label_smoothing");
        Expr fused = call(CROSS_ENTROPY_FUSED_BACKWARD, Expr.GRAD, SELF, target, weight, Expr.output(1, "lse"),
                Expr.output(2, "total_weight"), reduction, ignore, smoothing);
        Expr composite = call(CROSS_ENTROPY_BACKWARD_COMPOSITE, Expr.GRAD, SELF, target, weight, reduction, ignore, smoothing);
        return java.util.Arrays.asList(new Expr.IfGrad(composite, fused), null, null);
    }

    private static Meta.Output[] crossEntropyMeta(StridedView[] in, double[] scalars) {
        String op = "cross_entropy_fused";
        StridedView x = in[0];
        long rows = checkCrossEntropy(op, x, in[1], in[2]);
        long[] loss = (int) scalars[0] == NONE ? new long[] {rows} : new long[0];
        return new Meta.Output[] {new Meta.Output(loss, x.dtype()), new Meta.Output(new long[] {rows}, x.dtype()),
                new Meta.Output(new long[0], x.dtype())};
    }

    private static Meta.Output crossEntropyBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "cross_entropy_fused_backward";
        StridedView x = in[1];
        long rows = checkCrossEntropy(op, x, in[2], in[3]);
        if (in[4].numel() != rows || in[4].dtype() != x.dtype() || in[5].numel() != 1) {
            throw new IllegalArgumentException(op + ": expected lse of " + rows + " elements of " + x.dtype()
                    + " and one total weight, got " + Shapes.format(in[4].shape()) + " of " + in[4].dtype() + " and "
                    + Shapes.format(in[5].shape()));
        }
        long expected = (int) scalars[0] == NONE ? rows : 1;
        if (in[0].numel() != expected || in[0].dtype() != x.dtype()) {
            throw new IllegalArgumentException(op + ": expected grad_out of " + expected + " elements of " + x.dtype() + ", got "
                    + Shapes.format(in[0].shape()) + " of " + in[0].dtype());
        }
        return new Meta.Output(x.shape(), x.dtype());
    }

    /** Checks the fused cross entropy's logits, targets and weight; returns the row count. */
    private static long checkCrossEntropy(String op, StridedView x, StridedView target, StridedView weight) {
        if (x.dim() != 2 || (x.dtype() != org.jtorch.types.DType.FLOAT32 && x.dtype() != org.jtorch.types.DType.FLOAT64)) {
            throw new IllegalArgumentException(op + ": expected [N, C] logits of float32 or float64, got " + Shapes.format(x.shape())
                    + " of " + x.dtype());
        }
        if (target.dtype() != org.jtorch.types.DType.INT64 || target.dim() != 1 || target.size(0) != x.size(0)) {
            throw new IllegalArgumentException(op + ": expected int64 targets of shape [" + x.size(0) + "] for logits of shape "
                    + Shapes.format(x.shape()) + ", got " + Shapes.format(target.shape()) + " of " + target.dtype());
        }
        if (weight != null && (weight.dim() != 1 || weight.size(0) != x.size(1) || weight.dtype() != x.dtype())) {
            throw new IllegalArgumentException(op + ": expected a weight of shape [" + x.size(1) + "] of " + x.dtype() + ", got "
                    + Shapes.format(weight.shape()) + " of " + weight.dtype());
        }
        for (StridedView t : new StridedView[] {target, weight}) {
            if (t != null && !t.device().equals(x.device())) {
                throw new IllegalArgumentException(op + ": expected every operand on " + x.device() + ", got one on " + t.device());
            }
        }
        return x.size(0);
    }

    /**
     * {@link #MSE_LOSS} reduced (mean or sum) in one pass: {@code sum((self - target)^2)}, divided by the element count for
     * the mean, for operands of one shape and dtype (float32 or float64). The front end ({@code nn.F.mseLoss}) calls it for every
     * call; the dispatcher runs the kernel where one takes the call ({@link #mseFusedForm}), its decomposition
     * ({@link #MSE_LOSS}: broadcast, unreduced or mixed dtypes) otherwise. Its derivatives are one fused backward call
     * ({@link #MSE_LOSS_FUSED_BACKWARD}), or, when the backward records a graph, the same formula as differentiable ops
     * ({@link #MSE_LOSS_BACKWARD_COMPOSITE}).
     */
    public static final OpDef MSE_LOSS_FUSED = OpDef.structured("mse_loss_fused").rule(DTypeRule.FLOATING_ONLY)
            .meta(LossOps::mseMeta).signature(Param.tensor("self"), Param.tensor("target"), Param.scalar("reduction", "int", "Mean"))
            .derivatives(LossOps::mseDerivatives)
            .decomposition(call(MSE_LOSS, SELF, TARGET, scalar(0, "reduction"))).denseInputs(0, 1)
            .doc("(self - target)^2 summed in one pass, mean or sum").build();

    /** {@code 2 grad_out (self - target)}, over the element count for the mean, in one pass. */
    public static final OpDef MSE_LOSS_FUSED_BACKWARD = OpDef.structured("mse_loss_fused_backward").rule(DTypeRule.FLOATING_ONLY)
            .meta(LossOps::mseBackwardMeta)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), Param.scalar("reduction", "int", null))
            .doc("2 grad_out (self - target), scaled, in one pass").build();

    /** {@link #MSE_LOSS_FUSED_BACKWARD} as differentiable tensor ops, for gradients of gradients. */
    public static final OpDef MSE_LOSS_BACKWARD_COMPOSITE = OpDef.frontEnd("mse_loss_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("self"), Param.tensor("target"), Param.scalar("reduction", "int", null))
            .doc("`ops.LossBackward.mse`: the backward as ops, differentiable").build();

    private static java.util.List<Expr> mseDerivatives() {
        Expr reduction = scalar(0, "reduction");
        Expr self = new Expr.IfGrad(call(MSE_LOSS_BACKWARD_COMPOSITE, Expr.GRAD, SELF, TARGET, reduction),
                call(MSE_LOSS_FUSED_BACKWARD, Expr.GRAD, SELF, TARGET, reduction));
        return java.util.Arrays.asList(self, call(PointwiseOps.NEG, self));
    }

    private static Meta.Output mseMeta(StridedView[] in, double[] scalars) {
        checkMse("mse_loss_fused", in[0], in[1]);
        if ((int) scalars[0] == NONE) throw new IllegalArgumentException("mse_loss_fused: expected reduction mean or sum, got none");
        return new Meta.Output(new long[0], in[0].dtype());
    }

    private static Meta.Output mseBackwardMeta(StridedView[] in, double[] scalars) {
        checkMse("mse_loss_fused_backward", in[1], in[2]);
        if (in[0].numel() != 1 || in[0].dtype() != in[1].dtype()) {
            throw new IllegalArgumentException("mse_loss_fused_backward: expected one grad_out element of " + in[1].dtype() + ", got "
                    + Shapes.format(in[0].shape()) + " of " + in[0].dtype());
        }
        return new Meta.Output(in[1].shape(), in[1].dtype());
    }

    private static void checkMse(String op, StridedView x, StridedView t) {
        boolean floating = x.dtype() == org.jtorch.types.DType.FLOAT32 || x.dtype() == org.jtorch.types.DType.FLOAT64;
        if (!floating || t.dtype() != x.dtype() || !java.util.Arrays.equals(x.shape(), t.shape()) || !x.isContiguous()
                || !t.isContiguous() || !t.device().equals(x.device())) {
            throw new IllegalArgumentException(op + ": expected contiguous self and target of one shape and dtype (float32 or "
                    + "float64) on one device, got " + Shapes.format(x.shape()) + " of " + x.dtype() + " on " + x.device() + " and "
                    + Shapes.format(t.shape()) + " of " + t.dtype() + " on " + t.device());
        }
    }

    /** {@code x * log(x)}, 0 where {@code x == 0}. */
    private static Expr xlogx(Expr x) {
        return Expr.where(call(PointwiseOps.EQ, x, Expr.c(0)), call(PointwiseOps.MUL, x, Expr.c(0)),
                call(PointwiseOps.MUL, x, call(PointwiseOps.LOG, x)));
    }

    private static Expr binaryCrossEntropyWithLogits() {
        Expr negX = call(PointwiseOps.NEG, SELF);
        Expr m = call(PointwiseOps.CLAMP, negX, Expr.c(0), Expr.c(Double.NaN));
        Expr softplusNeg = call(PointwiseOps.ADD, m, call(PointwiseOps.LOG, call(PointwiseOps.ADD, call(PointwiseOps.EXP,
                call(PointwiseOps.NEG, m)), call(PointwiseOps.EXP, call(PointwiseOps.SUB, negX, m)))));
        Expr linear = call(PointwiseOps.MUL, call(PointwiseOps.SUB, Expr.c(1), TARGET), SELF);
        Expr posWeight = in(3, "pos_weight");
        Expr weighted = call(PointwiseOps.MUL, call(PointwiseOps.ADD, call(PointwiseOps.MUL, call(PointwiseOps.SUB, posWeight, Expr.c(1)),
                TARGET), Expr.c(1)), softplusNeg);
        Expr loss = new Expr.IfPresent(3, call(PointwiseOps.ADD, linear, weighted), call(PointwiseOps.ADD, linear, softplusNeg));
        return new Expr.IfPresent(2, call(PointwiseOps.MUL, loss, in(2, "weight")), loss);
    }

    private static OpDef loss(String name, DTypeRule rule, Param extra, Expr composition, String doc) {
        Param reduction = Param.scalar("reduction", "int", "Mean");
        OpDef.Builder b = OpDef.composite(name).rule(rule);
        if (extra == null) b.signature(Param.tensor("self"), Param.tensor("target"), reduction);
        else b.signature(Param.tensor("self"), Param.tensor("target"), reduction, extra);
        return b.composition(composition).autocast(Device.Type.CPU, CastPolicy.FP32).autocast(Device.Type.CUDA, CastPolicy.FP32)
                .doc(doc).build();
    }

    private static Expr difference() {
        return call(PointwiseOps.SUB, SELF, TARGET);
    }

    private static Expr absoluteDifference() {
        return call(PointwiseOps.ABS, difference());
    }

    private static Expr square() {
        return call(PointwiseOps.MUL, absoluteDifference(), absoluteDifference());
    }

    /** {@code |d| < bound ? below : above}. */
    private static Expr piecewise(Expr bound, Expr below, Expr above) {
        return Expr.where(call(PointwiseOps.LT, absoluteDifference(), bound), below, above);
    }

    /** The loss per element reduced as the call's {@code reduction} says. */
    private static Expr reduced(Expr loss) {
        return new Expr.IfScalar(0, MEAN, new Expr.ReduceAll(ReductionOps.MEAN, loss),
                new Expr.IfScalar(0, SUM, new Expr.ReduceAll(ReductionOps.SUM, loss), loss));
    }
}
