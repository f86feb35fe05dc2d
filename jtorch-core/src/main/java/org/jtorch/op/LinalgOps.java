package org.jtorch.op;

import static org.jtorch.op.DTypeRule.SAME_NO_BOOL;
import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;
import static org.jtorch.op.Expr.scalar;

import java.util.Arrays;
import java.util.List;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The matrix products that run as one backend GEMM ({@link OpDef.Kind#STRUCTURED}): {@code mm}, {@code bmm},
 * {@code mv}, {@code dot}, {@code addmm}, {@code baddbmm} and {@code linear}. Each backend registers their kernels from
 * its batched GEMM over strided views (transposed operands are never copied; a vector is seen as a row or a column).
 * {@code matmul} is built from these by rank.
 */
public final class LinalgOps {
    private LinalgOps() {}

    private static final Expr A = in(0, "self");
    private static final Expr B = in(1, "mat2");

    public static final OpDef MM = OpDef.structured("mm").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("mat2"))
            .meta((in, s) -> {
                check2d("mm", in[0], in[1]);
                checkInner("mm", in[0], in[1], in[0].size(1), in[1].size(0));
                return new Meta.Output(new long[] {in[0].size(0), in[1].size(1)}, sameDeviceAndType("mm", in[0], in[1]));
            })
            .derivatives(() -> List.of(call(LinalgOps.MM, GRAD, t(B)), call(LinalgOps.MM, t(A), GRAD)))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("a GEMM").build();

    public static final OpDef BMM = OpDef.structured("bmm").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("mat2"))
            .meta((in, s) -> {
                checkBatches("bmm", "3-D tensors", in[0], in[1]);
                return new Meta.Output(new long[] {in[0].size(0), in[0].size(1), in[1].size(2)}, sameDeviceAndType("bmm", in[0], in[1]));
            })
            .derivatives(() -> List.of(call(LinalgOps.BMM, GRAD, bt(B)), call(LinalgOps.BMM, bt(A), GRAD)))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("a batched GEMM").build();

    private static final Expr VEC = in(1, "vec");

    /**
     * {@code self @ vec} for a matrix {@code self} ({@code [n, m]}) and a vector {@code vec} ({@code [m]}): the backend's
     * GEMM against {@code vec} seen as one column. Derivatives as PyTorch's: {@code grad.outer(vec)} and {@code
     * self.t().mv(grad)}. As is under CPU autocast (PyTorch 1.13's CPU list), lower precision on CUDA.
     */
    public static final OpDef MV = OpDef.structured("mv").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("vec"))
            .meta((in, s) -> {
                StridedView m = in[0], v = in[1];
                if (m.dim() != 2 || v.dim() != 1) {
                    throw new IllegalArgumentException("mv: expected a 2-D matrix and a 1-D vector, got shapes " + Shapes.format(m.shape())
                            + " and " + Shapes.format(v.shape()));
                }
                checkInner("mv", m, v, m.size(1), v.size(0));
                return new Meta.Output(new long[] {m.size(0)}, sameDeviceAndType("mv", m, v));
            })
            .derivatives(() -> List.of(call(MM, unsqueeze(GRAD, 1), unsqueeze(VEC, 0)), call(LinalgOps.MV, t(A), GRAD)))
            .autocast(Device.Type.CPU, CastPolicy.AS_IS).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("a GEMM against the vector as one column").build();

    private static final Expr OTHER_VECTOR = in(1, "tensor");

    /**
     * The inner product of two vectors of one length, a 0-d tensor: the backend's GEMM of {@code self} as a row against
     * {@code tensor} as a column. Derivatives {@code grad * tensor} and {@code grad * self}. As is under CPU autocast; on
     * CUDA both operands promoted to the widest floating type, as PyTorch's list.
     */
    public static final OpDef DOT = OpDef.structured("dot").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("tensor"))
            .meta((in, s) -> {
                StridedView a = in[0], b = in[1];
                if (a.dim() != 1 || b.dim() != 1) {
                    throw new IllegalArgumentException("dot: expected 1-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                            + Shapes.format(b.shape()));
                }
                if (a.size(0) != b.size(0)) {
                    throw new IllegalArgumentException("dot: inconsistent tensor size, expected tensor [" + a.size(0)
                            + "] and src [" + b.size(0) + "] to have the same number of elements");
                }
                return new Meta.Output(new long[0], sameDeviceAndType("dot", a, b));
            })
            .derivatives(() -> List.of(mul(GRAD, OTHER_VECTOR), mul(GRAD, A)))
            .autocast(Device.Type.CPU, CastPolicy.AS_IS).autocast(Device.Type.CUDA, CastPolicy.PROMOTE)
            .doc("a GEMM of a row against a column").build();

    private static final Expr INPUT = in(0, "self");
    private static final Expr M1 = in(1, "mat1");
    private static final Expr M2 = in(2, "mat2");
    private static final Expr BETA = scalar(0, "beta");
    private static final Expr ALPHA = scalar(1, "alpha");

    /** {@code beta * self + alpha * (mat1 @ mat2)}: its scalars are {@code beta, alpha}. */
    public static final OpDef ADDMM = OpDef.structured("addmm").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("mat1"), Param.tensor("mat2"), Param.scalar("beta", "Scalar", "1"),
                    Param.scalar("alpha", "Scalar", "1"))
            .meta((in, s) -> {
                check2d("addmm", in[1], in[2]);
                checkInner("addmm", in[1], in[2], in[1].size(1), in[2].size(0));
                DType t = sameDeviceAndType("addmm", in[1], in[2]);
                sameDeviceAndType("addmm", in[0], in[1]);
                long[] shape = {in[1].size(0), in[2].size(1)};
                checkBroadcastsTo("addmm", in[0], shape);
                return new Meta.Output(shape, t);
            })
            .derivatives(() -> List.of(mul(GRAD, BETA), mul(call(MM, GRAD, t(M2)), ALPHA), mul(call(MM, t(M1), GRAD), ALPHA)))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("a GEMM accumulating into the broadcast `self`").build();

    /** {@code beta * self + alpha * bmm(batch1, batch2)}: its scalars are {@code beta, alpha}. */
    public static final OpDef BADDBMM = OpDef.structured("baddbmm").rule(SAME_NO_BOOL)
            .signature(Param.tensor("self"), Param.tensor("batch1"), Param.tensor("batch2"), Param.scalar("beta", "Scalar", "1"),
                    Param.scalar("alpha", "Scalar", "1"))
            .meta((in, s) -> {
                checkBatches("baddbmm", "3-D batch tensors", in[1], in[2]);
                DType t = sameDeviceAndType("baddbmm", in[1], in[2]);
                sameDeviceAndType("baddbmm", in[0], in[1]);
                long[] shape = {in[1].size(0), in[1].size(1), in[2].size(2)};
                checkBroadcastsTo("baddbmm", in[0], shape);
                return new Meta.Output(shape, t);
            })
            .derivatives(() -> List.of(mul(GRAD, BETA), mul(call(BMM, GRAD, bt(M2)), ALPHA), mul(call(BMM, bt(M1), GRAD), ALPHA)))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("a batched GEMM accumulating into the broadcast `self`").build();

    private static final Expr X = in(0, "input");
    private static final Expr W = in(1, "weight");

    /**
     * {@code input @ weight.T + bias} over the last dimension of {@code input}. The weight's gradient is one GEMM over
     * all rows ({@link FrontEndOps#ROWS}); the bias's is the gradient summed to its shape.
     */
    public static final OpDef LINEAR = OpDef.structured("linear").rule(SAME_NO_BOOL)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"))
            .meta((in, s) -> {
                StridedView x = in[0], w = in[1], bias = in[2];
                if (w.dim() != 2) {
                    throw new IllegalArgumentException("linear: expected a 2-D weight [out_features, in_features], got shape "
                            + Shapes.format(w.shape()));
                }
                if (x.dim() == 0) throw new IllegalArgumentException("linear: input must have at least 1 dimension");
                if (x.size(-1) != w.size(1)) {
                    throw new IllegalArgumentException("linear: input shape " + Shapes.format(x.shape()) + " and weight shape "
                            + Shapes.format(w.shape()) + " cannot be multiplied (" + x.size(-1) + " != " + w.size(1) + ")");
                }
                DType t = sameDeviceAndType("linear", x, w);
                if (bias != null) {
                    sameDeviceAndType("linear", x, bias);
                    checkBroadcastsTo("linear", bias, new long[] {w.size(0)});
                }
                long[] shape = x.shape().clone();
                shape[shape.length - 1] = w.size(0);
                return new Meta.Output(shape, t);
            })
            .derivatives(() -> List.of(call(FrontEndOps.MATMUL, GRAD, W),
                    call(MM, t(call(FrontEndOps.ROWS, GRAD)), call(FrontEndOps.ROWS, X)), GRAD))
            .autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION)
            .doc("one GEMM over the input's rows, the bias its initial value").build();

    /**
     * {@link #LINEAR} with a callback ({@link Callback}) whose work the kernel runs on each block of the product as the
     * GEMM finishes it, the product seen as {@code [rows, out_features]} ({@code LinalgKernels.mmWithEpilogue}): the
     * JIT's linear layer with a fused pointwise epilogue. JIT-internal ({@link OpDef#takesCallback}): not traced, not
     * autocast. Its meta function, derivatives and autograd node are {@link #LINEAR}'s: the result carries the layer's
     * autograd whatever the epilogue wrote into it (the derivatives read the inputs only).
     */
    public static final OpDef LINEAR_EPILOGUE = OpDef.structured("linear_epilogue").py("_linear_epilogue").rule(SAME_NO_BOOL)
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"), Param.callback("epilogue"))
            .meta(LINEAR.meta()).derivatives(() -> LINEAR.derivatives()).node("LinearBackward0")
            .doc("`linear`'s GEMM with the callback's work on each finished block (the JIT's epilogue)").build();

    /** {@code _linear_activation}'s {@code activation} codes (the ordinals of the backends' {@code LinalgKernels.Activation}). */
    public static final int ACTIVATION_NONE = 0, ACTIVATION_RELU = 1, ACTIVATION_GELU_TANH = 2;

    /**
     * {@code out = activation(linear(input, weight, bias))} for the activation {@code activation} (0 none, 1 ReLU, 2
     * tanh-GELU), and {@code pre}, the activation's input, where its gradient needs it kept: tanh-GELU with {@code
     * keep_input}. Else {@code pre} is empty (0 elements): ReLU's gradient reads its output's sign, which stands for its
     * input (the two would alias), and tanh-GELU without {@code keep_input} recomputes the product in its backward.
     * Backends whose GEMM applies bias and activation as it writes the product (cuBLASLt's epilogues on CUDA) run it as one
     * kernel where their test ({@code LinalgKernels.takesBiasActivation}) takes the operands; the others, and a library
     * that declines at run time, write the product then the activation into the same outputs. JIT-internal: the JIT's
     * first choice for a linear layer followed by ReLU or tanh-GELU where the backend fuses it; not autocast.
     */
    public static final OpDef LINEAR_ACTIVATION = OpDef.structured("linear_activation").py("_linear_activation").rule(SAME_NO_BOOL)
            .outputs(LinalgOps::linearActivationMeta, "out", "pre")
            .signature(Param.tensor("input"), Param.tensor("weight"), new Param("bias", "Tensor?", "None"),
                    Param.scalar("activation", "int", null), Param.scalar("keep_input", "bool", null))
            .derivatives(LinalgOps::linearActivationDerivatives).node("LinearActivationBackward0")
            .doc("`linear` and ReLU or tanh-GELU, one kernel where the backend's GEMM applies them (cuBLASLt's epilogues)").build();

    private static Meta.Output[] linearActivationMeta(StridedView[] in, double[] s) {
        int activation = (int) s[0];
        if (s[0] != activation || activation < ACTIVATION_NONE || activation > ACTIVATION_GELU_TANH) {
            throw new IllegalArgumentException("_linear_activation: activation must be 0 (none), 1 (relu) or 2 (tanh gelu), got "
                    + s[0]);
        }
        Meta.Output out = LINEAR.meta().infer(in, s);
        if (activation == ACTIVATION_GELU_TANH && !out.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("_linear_activation: tanh gelu needs floating-point operands, got " + out.dtype()
                    + " input of shape " + Shapes.format(in[0].shape()) + " on " + in[0].device());
        }
        boolean keepsInput = activation == ACTIVATION_GELU_TANH && s[1] != 0;
        return new Meta.Output[] {out, new Meta.Output(keepsInput ? out.shape() : new long[] {0}, out.dtype())};
    }

    /** The activation's gradient (from the output's sign, the kept input, or the product recomputed), then {@link #LINEAR}'s. */
    private static List<Expr> linearActivationDerivatives() {
        Expr bias = in(2, "bias");
        Expr product = new Expr.IfPresent(2, call(LINEAR, X, W, bias), call(LINEAR, X, W));
        Expr geluInput = new Expr.IfScalar(1, 1, Expr.output(1, "pre"), product);
        Expr preGrad = new Expr.IfScalar(0, ACTIVATION_RELU, call(PointwiseOps.THRESHOLD_BACKWARD, GRAD, Expr.RESULT),
                new Expr.IfScalar(0, ACTIVATION_GELU_TANH, call(PointwiseOps.GELU_TANH_BACKWARD, GRAD, geluInput), GRAD));
        return List.of(call(FrontEndOps.MATMUL, preGrad, W),
                call(MM, t(call(FrontEndOps.ROWS, preGrad)), call(FrontEndOps.ROWS, X)), preGrad);
    }

    /** {@code x.t()}. */
    private static Expr t(Expr x) {
        return call(ViewOps.TRANSPOSE, x, Expr.c(0), Expr.c(1));
    }

    /** {@code x.unsqueeze(dim)}. */
    private static Expr unsqueeze(Expr x, int dim) {
        return call(ViewOps.UNSQUEEZE, x, Expr.c(dim));
    }

    /** {@code x.transpose(1, 2)}: each matrix of a batch transposed. */
    private static Expr bt(Expr x) {
        return call(ViewOps.TRANSPOSE, x, Expr.c(1), Expr.c(2));
    }

    private static Expr mul(Expr x, Expr s) {
        return call(PointwiseOps.MUL, x, s);
    }

    private static void check2d(String op, StridedView a, StridedView b) {
        if (a.dim() != 2 || b.dim() != 2) {
            throw new IllegalArgumentException(op + ": expected 2-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
    }

    private static void checkBatches(String op, String what, StridedView a, StridedView b) {
        if (a.dim() != 3 || b.dim() != 3) {
            throw new IllegalArgumentException(op + ": expected " + what + ", got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
        if (a.size(0) != b.size(0)) {
            throw new IllegalArgumentException(op + ": batch sizes differ: shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()) + " (" + a.size(0) + " != " + b.size(0) + ")");
        }
        checkInner(op, a, b, a.size(2), b.size(1));
    }

    /** An inner-dimension mismatch, named as PyTorch's message. */
    public static void checkInner(String op, StridedView a, StridedView b, long ka, long kb) {
        if (ka != kb) {
            throw new IllegalArgumentException(op + ": shapes " + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape())
                    + " cannot be multiplied (" + ka + " != " + kb + ")");
        }
    }

    /** The operands' common dtype; an error naming the op when their devices or dtypes differ, or they are bool. */
    public static DType sameDeviceAndType(String op, StridedView a, StridedView b) {
        if (!a.device().equals(b.device())) {
            throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + a.device()
                    + " and " + b.device());
        }
        return sameType(op, a.dtype(), b.dtype());
    }

    /** The operands' common dtype; an error naming the op when they differ or are bool. */
    public static DType sameType(String op, DType a, DType b) {
        if (a != b) throw new IllegalArgumentException(op + ": expected both operands to have the same dtype, but got " + a + " and " + b);
        if (a == DType.BOOL) throw new IllegalArgumentException(op + ": not implemented for bool tensors");
        return a;
    }

    private static void checkBroadcastsTo(String op, StridedView t, long[] shape) {
        long[] b = Shapes.broadcast(op, t.shape(), shape);
        if (!Arrays.equals(b, shape)) {
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(t.shape())
                    + " cannot be broadcast to the result shape " + Shapes.format(shape));
        }
    }
}
