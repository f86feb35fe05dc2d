package org.jtorch.op;

import static org.jtorch.op.DTypeRule.BOOL;
import static org.jtorch.op.DTypeRule.FLOAT;
import static org.jtorch.op.DTypeRule.FLOATING_ONLY;
import static org.jtorch.op.DTypeRule.INTEGRAL_OR_BOOL;
import static org.jtorch.op.DTypeRule.SAME;
import static org.jtorch.op.DTypeRule.SAME_NO_BOOL;

import java.util.List;
import org.jtorch.types.Device;

/**
 * The pointwise family, declared. Each op is one value: signature, dtype rule, autocast policy,
 * derivative written with ops ({@code grad} = the output gradient, {@code result} = the forward value),
 * and the formula every backend generates its kernel from (the CPU's Vector API loops and reference,
 * CUDA's C), keyed by {@link OpDef#kernel()}.
 */
public final class PointwiseOps {
    private PointwiseOps() {}

    private static final Expr X = Expr.in(0, "self");
    private static final Expr A = X;
    private static final Expr B = Expr.in(1, "other");
    private static final Expr G = Expr.GRAD;
    private static final Expr Y = Expr.RESULT;
    private static final Expr P0 = Expr.scalar(0, "p0");
    private static final Expr P1 = Expr.scalar(1, "p1");

    /** A backward op's inputs, as ATen names them: the output gradient, then the forward's input. */
    private static final Expr GO = Expr.in(0, "grad_output");
    private static final Expr GX = Expr.in(1, "self");

    /** The tanh GELU's constants, {@code inner = beta (x + kappa x^3)} (declared before the ops whose formulas read them). */
    private static final double GELU_BETA = Math.sqrt(2.0 / Math.PI);
    private static final double GELU_KAPPA = 0.044715;

    private static final Param SELF = Param.tensor("self");
    private static final Param GRAD_OUTPUT = Param.tensor("grad_output");
    private static final Param OTHER = Param.tensor("other");

    // ---------------------------------------------------------------- unary

    public static final OpDef NEG = unary("neg", SAME_NO_BOOL, m(Fn.NEG, X), () -> List.of(neg(G)));
    public static final OpDef ABS = unary("abs", SAME_NO_BOOL, m(Fn.ABS, X), () -> List.of(mul(G, u(sign(), X))));
    public static final OpDef SIGN = unary("sign", SAME, m(Fn.SIGN, X), PointwiseOps::zeroGrad);
    public static final OpDef FLOOR = unary("floor", SAME_NO_BOOL, m(Fn.FLOOR, X), PointwiseOps::zeroGrad);
    public static final OpDef CEIL = unary("ceil", SAME_NO_BOOL, m(Fn.CEIL, X), PointwiseOps::zeroGrad);
    public static final OpDef ROUND = unary("round", SAME_NO_BOOL, m(Fn.RINT, X), PointwiseOps::zeroGrad);
    public static final OpDef TRUNC = unary("trunc", SAME_NO_BOOL, m(Fn.TRUNC, X), PointwiseOps::zeroGrad);
    public static final OpDef RELU = unary("relu", SAME_NO_BOOL, m(Fn.RELU, X), () -> List.of(Expr.call(thresholdBackward(), G, Y)));
    public static final OpDef LEAKY_RELU = OpDef.unary("leaky_relu").rule(FLOAT)
            .signature(SELF, Param.scalar("negative_slope", "Scalar", "0.01"))
            .formula(m(Fn.SELECT, m(Fn.GT, X, Expr.c(0)), X, m(Fn.MUL, X, P0)))
            .derivatives(() -> List.of(Expr.call(leakyReluBackward(), G, X, P0))).build();
    /** {@code x > 0 ? x : alpha * (exp(x) - 1)}; its gradient is one op ({@link #ELU_BACKWARD}), as PyTorch's. */
    public static final OpDef ELU = OpDef.unary("elu").rule(FLOAT)
            .signature(SELF, Param.scalar("alpha", "Scalar", "1.0"))
            .formula(m(Fn.SELECT, m(Fn.GT, X, Expr.c(0)), X, m(Fn.MUL, m(Fn.EXPM1, X), P0)))
            .derivatives(() -> List.of(Expr.call(eluBackward(), G, X, P0))).build();
    /** {@code clamp(min=p0, max=p1)}; a NaN bound is no bound. */
    public static final OpDef CLAMP = OpDef.unary("clamp").rule(SAME_NO_BOOL)
            .signature(SELF, Param.scalar("min", "Scalar?", "None"), Param.scalar("max", "Scalar?", "None"))
            .formula(m(Fn.CLAMP, X, P0, P1))
            .derivatives(() -> List.of(mul(G, b(logicalAnd(), ge(X, new Expr.Scalar(0, "min", Double.NEGATIVE_INFINITY)),
                    le(X, new Expr.Scalar(1, "max", Double.POSITIVE_INFINITY)))))).build();
    public static final OpDef EXP = unary("exp", FLOAT, m(Fn.EXP, X), CastPolicy.FP32, () -> List.of(mul(G, Y)));
    public static final OpDef LOG = unary("log", FLOAT, m(Fn.LOG, X), CastPolicy.FP32, () -> List.of(div(G, X)));
    public static final OpDef LOG1P = unary("log1p", FLOAT, m(Fn.LOG1P, X), CastPolicy.FP32, () -> List.of(div(G, add(X, Expr.c(1)))));
    public static final OpDef EXPM1 = unary("expm1", FLOAT, m(Fn.EXPM1, X), CastPolicy.FP32, () -> List.of(mul(G, add(Y, Expr.c(1)))));
    public static final OpDef SQRT = unary("sqrt", FLOAT, m(Fn.SQRT, X), () -> List.of(div(G, mul(Y, Expr.c(2)))));
    public static final OpDef RSQRT = unary("rsqrt", FLOAT, m(Fn.DIV, Expr.c(1), m(Fn.SQRT, X)), CastPolicy.FP32,
            () -> List.of(mul(G, mul(Expr.call(powScalar(), Y, Expr.c(3)), Expr.c(-0.5)))));
    public static final OpDef RECIPROCAL = unary("reciprocal", FLOAT, m(Fn.DIV, Expr.c(1), X), CastPolicy.FP32, () -> List.of(mul(G, neg(mul(Y, Y)))));
    public static final OpDef SIN = unary("sin", FLOAT, m(Fn.SIN, X), () -> List.of(mul(G, u(cos(), X))));
    public static final OpDef COS = unary("cos", FLOAT, m(Fn.COS, X), () -> List.of(mul(G, neg(u(sin(), X)))));
    public static final OpDef TANH = unary("tanh", FLOAT, m(Fn.TANH, X), () -> List.of(mul(G, sub(Expr.c(1), mul(Y, Y)))));
    public static final OpDef SIGMOID = unary("sigmoid", FLOAT, m(Fn.SIGMOID, X), () -> List.of(mul(G, mul(Y, sub(Expr.c(1), Y)))));
    public static final OpDef GELU = unary("gelu", FLOAT, m(Fn.GELU, X), () -> List.of(Expr.call(geluBackward(), G, X)));
    public static final OpDef GELU_TANH = unary("gelu_tanh", FLOAT, geluTanhFormula(), () -> List.of(Expr.call(geluTanhBackward(), G, X)));
    public static final OpDef SILU = unary("silu", FLOAT, m(Fn.DIV, X, m(Fn.ADD, Expr.c(1), m(Fn.EXP, m(Fn.NEG, X)))), () -> {
        Expr sig = u(sigmoid(), X);
        return List.of(mul(G, mul(sig, add(mul(X, sub(Expr.c(1), sig)), Expr.c(1)))));
    });
    /** {@code softplus(beta=p0, threshold=p1)}: linear above the threshold. */
    public static final OpDef SOFTPLUS = OpDef.unary("softplus").rule(FLOAT).autocast(Device.Type.CUDA, CastPolicy.FP32)
            .signature(SELF, Param.scalar("beta", "Scalar", "1"), Param.scalar("threshold", "Scalar", "20"))
            .formula(m(Fn.SELECT, m(Fn.GT, m(Fn.MUL, X, P0), P1), X, m(Fn.DIV, m(Fn.LOG1P, m(Fn.EXP, m(Fn.MUL, X, P0))), P0)))
            .derivatives(() -> {
                Expr z = u(exp(), mul(X, P0));
                Expr d = div(z, add(z, Expr.c(1)));
                return List.of(mul(G, Expr.where(gt(mul(X, P0), P1), Expr.c(1), d)));
            }).build();
    public static final OpDef ERF = unary("erf", FLOAT, m(Fn.ERF, X),
            () -> List.of(mul(G, mul(u(exp(), neg(mul(X, X))), Expr.c(2.0 / Math.sqrt(Math.PI))))));
    /** {@code pow(self, exponent)} with a scalar exponent (p0). */
    public static final OpDef POW_SCALAR = OpDef.unary("pow_scalar").py("pow").rule(SAME_NO_BOOL)
            .autocast(Device.Type.CUDA, CastPolicy.FP32)
            .signature(SELF, Param.scalar("exponent", "Scalar", null))
            .formula(m(Fn.POW_SCALAR, X, P0))
            .derivatives(() -> List.of(new Expr.IfScalar(0, 0, new Expr.ZerosLike(G),
                    mul(G, mul(Expr.call(powScalar(), X, Expr.math(Fn.SUB, P0, Expr.c(1))), P0))))).build();
    public static final OpDef LOGICAL_NOT = unary("logical_not", BOOL, m(Fn.EQ, X, Expr.c(0)), null);
    public static final OpDef BITWISE_NOT = unary("bitwise_not", INTEGRAL_OR_BOOL, m(Fn.BITWISE_NOT, X), null);
    public static final OpDef ISNAN = unary("isnan", BOOL, m(Fn.NE, X, X), null);
    public static final OpDef ISINF = unary("isinf", BOOL, m(Fn.ISINF, X), null);
    public static final OpDef ISFINITE = unary("isfinite", BOOL, m(Fn.ISFINITE, X), null);

    // ---------------------------------------------------------------- binary

    public static final OpDef ADD = OpDef.binary("add").rule(SAME)
            .signature(SELF, OTHER, Param.scalar("alpha", "Scalar", "1"))
            .formula(m(Fn.ADD, A, m(Fn.MUL, P0, B)))
            .derivatives(() -> List.of(G, new Expr.IfScalar(0, 1, G, mul(G, P0)))).build();
    public static final OpDef SUB = OpDef.binary("sub").rule(SAME)
            .signature(SELF, OTHER, Param.scalar("alpha", "Scalar", "1"))
            .formula(m(Fn.SUB, A, m(Fn.MUL, P0, B)))
            .derivatives(() -> List.of(G, mul(G, Expr.math(Fn.NEG, P0)))).build();
    public static final OpDef MUL = binary("mul", SAME, m(Fn.MUL, A, B), () -> List.of(mul(G, B), mul(G, A)));
    public static final OpDef DIV = binary("div", FLOAT, m(Fn.DIV, A, B), () -> List.of(div(G, B), neg(div(mul(G, Y), B))));
    public static final OpDef DIV_TRUNC = OpDef.binary("div_trunc").py("div").rule(SAME).integerDivision()
            .signature(SELF, OTHER, Param.scalar("rounding_mode", "str?", "'trunc'"))
            .formula(m(Fn.DIV_TRUNC, A, B))
            .derivatives(() -> List.of(new Expr.ZerosLike(G), new Expr.ZerosLike(G))).build();
    public static final OpDef DIV_FLOOR = OpDef.binary("div_floor").py("div").rule(SAME).integerDivision()
            .signature(SELF, OTHER, Param.scalar("rounding_mode", "str?", "'floor'"))
            .formula(m(Fn.DIV_FLOOR, A, B))
            .derivatives(() -> List.of(new Expr.ZerosLike(G), new Expr.ZerosLike(G))).build();
    public static final OpDef REMAINDER = OpDef.binary("remainder").rule(SAME).integerDivision()
            .signature(SELF, OTHER)
            .formula(m(Fn.REMAINDER, A, B))
            .derivatives(() -> List.of(G, neg(mul(G, Expr.call(DIV_FLOOR, A, B))))).build();
    public static final OpDef POW = OpDef.binary("pow").rule(SAME).signature(SELF, OTHER).formula(m(Fn.POW, A, B))
            .autocast(Device.Type.CUDA, CastPolicy.FP32).derivatives(() -> List.of(
            mul(mul(G, B), Expr.call(pow(), A, sub(B, Expr.c(1)))),
            Expr.where(b(logicalAnd(), b(eq(), A, Expr.c(0)), ge(B, Expr.c(0))), Expr.c(0), mul(mul(G, Y), u(log(), A))))).build();
    public static final OpDef MAXIMUM = binary("maximum", SAME, m(Fn.MAX, A, B), () -> {
        Expr half = Expr.where(b(eq(), A, B), div(G, Expr.c(2)), G);
        return List.of(Expr.where(lt(A, B), Expr.c(0), half), Expr.where(gt(A, B), Expr.c(0), half));
    });
    public static final OpDef MINIMUM = binary("minimum", SAME, m(Fn.MIN, A, B), () -> {
        Expr half = Expr.where(b(eq(), A, B), div(G, Expr.c(2)), G);
        return List.of(Expr.where(gt(A, B), Expr.c(0), half), Expr.where(lt(A, B), Expr.c(0), half));
    });
    /** {@code b <= 0 ? 0 : a}: ReLU's backward; a NaN {@code b} keeps the gradient. */
    public static final OpDef THRESHOLD_BACKWARD = binary("threshold_backward", SAME, m(Fn.THRESHOLD, A, B),
            () -> List.of(Expr.call(thresholdBackward(), G, B), new Expr.ZerosLike(B)));
    /**
     * {@code other > 0 ? self : self * negative_slope}: LeakyReLU's backward ({@code self} the output gradient,
     * {@code other} the input), one pass as PyTorch's, where the composite (a comparison, its cast to the gradient's
     * dtype, two products and a sum) made five and cost DCGAN's discriminator about 8% of its step.
     */
    public static final OpDef LEAKY_RELU_BACKWARD = OpDef.binary("leaky_relu_backward").rule(FLOAT)
            .signature(SELF, OTHER, Param.scalar("negative_slope", "Scalar", null))
            .formula(m(Fn.SELECT, m(Fn.GT, B, Expr.c(0)), A, m(Fn.MUL, A, P0)))
            .derivatives(() -> List.of(Expr.call(leakyReluBackward(), G, B, P0), new Expr.ZerosLike(B))).build();
    /**
     * GELU's gradient {@code grad_output (Phi(self) + self phi(self))} in one pass, as ATen's {@code gelu_backward}
     * (approximate='none'), where the composite (erf, exp, and products and sums) made eleven; the vector kernels take
     * the density and the distribution from one exponential. Differentiated as ATen's {@code gelu_double_backward}:
     * {@code d/dself = grad grad_output phi(self) (2 - self^2)}.
     */
    public static final OpDef GELU_BACKWARD = OpDef.binary("gelu_backward").rule(FLOAT)
            .signature(GRAD_OUTPUT, SELF, Param.scalar("approximate", "str", "'none'"))
            .formula(m(Fn.GELU_BACKWARD, GO, GX))
            .derivatives(() -> {
                Expr pdf = mul(u(exp(), mul(mul(GX, GX), Expr.c(-0.5))), Expr.c(1 / Math.sqrt(2 * Math.PI)));
                return List.of(Expr.call(geluBackward(), G, GX), mul(mul(G, GO), mul(pdf, sub(Expr.c(2), mul(GX, GX)))));
            }).build();
    /**
     * The tanh form's gradient in one pass ({@code gelu_backward} with approximate='tanh'): with {@code s = (1 +
     * tanh(inner)) / 2 = 1 / (1 + exp(-2 inner))}, {@code d gelu/dx = s + 2 x s (1 - s) beta (1 + 3 kappa x^2)}, which
     * does not cancel for negative x as {@code 1 + tanh} does (nor, with {@code 1 - s = exp(-2 inner) s}, for positive
     * x). Its own derivative is written with ops ({@link #geluTanhSecondDerivative}).
     */
    public static final OpDef GELU_TANH_BACKWARD = OpDef.binary("gelu_tanh_backward").py("gelu_backward").rule(FLOAT)
            .signature(GRAD_OUTPUT, SELF, Param.scalar("approximate", "str", "'tanh'"))
            .formula(m(Fn.MUL, GO, geluTanhDerivative()))
            .derivatives(() -> List.of(Expr.call(geluTanhBackward(), G, GX), mul(mul(G, GO), geluTanhSecondDerivative()))).build();
    /**
     * ELU's gradient from its input: {@code x > 0 ? grad : grad * alpha * (expm1(x) + 1)} ({@code exp(x)} written as the
     * forward's {@code expm1} plus one, as the composition it replaces differentiated it).
     */
    public static final OpDef ELU_BACKWARD = OpDef.binary("elu_backward").rule(FLOAT)
            .signature(Param.tensor("grad_output"), Param.tensor("self"), Param.scalar("alpha", "Scalar", null))
            .formula(m(Fn.SELECT, m(Fn.GT, B, Expr.c(0)), A, m(Fn.MUL, m(Fn.MUL, A, P0), m(Fn.ADD, m(Fn.EXPM1, B), Expr.c(1)))))
            .derivatives(() -> List.of(Expr.call(eluBackward(), G, B, P0),
                    mul(G, Expr.where(gt(B, Expr.c(0)), new Expr.ZerosLike(B), mul(mul(A, P0), u(exp(), B)))))).build();
    public static final OpDef EQ = binary("eq", BOOL, m(Fn.EQ, A, B), null);
    public static final OpDef NE = binary("ne", BOOL, m(Fn.NE, A, B), null);
    public static final OpDef LT = binary("lt", BOOL, m(Fn.LT, A, B), null);
    public static final OpDef LE = binary("le", BOOL, m(Fn.LE, A, B), null);
    public static final OpDef GT = binary("gt", BOOL, m(Fn.GT, A, B), null);
    public static final OpDef GE = binary("ge", BOOL, m(Fn.GE, A, B), null);
    public static final OpDef LOGICAL_AND = binary("logical_and", BOOL, m(Fn.MUL, nonzero(A), nonzero(B)), null);
    public static final OpDef LOGICAL_OR = binary("logical_or", BOOL, m(Fn.MAX, nonzero(A), nonzero(B)), null);
    public static final OpDef LOGICAL_XOR = binary("logical_xor", BOOL, m(Fn.NE, nonzero(A), nonzero(B)), null);
    public static final OpDef BITWISE_AND = binary("bitwise_and", INTEGRAL_OR_BOOL, m(Fn.BITWISE_AND, A, B), null);
    public static final OpDef BITWISE_OR = binary("bitwise_or", INTEGRAL_OR_BOOL, m(Fn.BITWISE_OR, A, B), null);
    public static final OpDef BITWISE_XOR = binary("bitwise_xor", INTEGRAL_OR_BOOL, m(Fn.BITWISE_XOR, A, B), null);
    public static final OpDef BITWISE_LEFT_SHIFT = binary("bitwise_left_shift", INTEGRAL_OR_BOOL, m(Fn.LEFT_SHIFT, A, B), null);
    public static final OpDef BITWISE_RIGHT_SHIFT = binary("bitwise_right_shift", INTEGRAL_OR_BOOL, m(Fn.RIGHT_SHIFT, A, B), null);

    // ---------------------------------------------------------------- added since the registry

    /** {@code log(z / (1 - z))}, {@code z = clamp(x, eps, 1 - eps)} when eps is given. */
    public static final OpDef LOGIT = OpDef.unary("logit").rule(FLOAT)
            .signature(SELF, Param.scalar("eps", "float?", "None"))
            .formula(logitFormula())
            .derivatives(() -> List.of(Expr.where(b(logicalOr(), lt(X, P0), gt(X, Expr.math(Fn.SUB, Expr.c(1), P0))),
                    Expr.c(0), div(G, mul(X, sub(Expr.c(1), X)))))).build();
    /** {@code min(x, 0) - log1p(exp(-|x|))}, which neither overflows nor cancels. */
    public static final OpDef LOGSIGMOID = OpDef.unary("log_sigmoid").rule(FLOATING_ONLY).signature(SELF)
            .formula(Expr.math(Fn.SUB, Expr.math(Fn.MIN, X, Expr.c(0)),
                    Expr.math(Fn.LOG1P, Expr.math(Fn.EXP, Expr.math(Fn.NEG, Expr.math(Fn.ABS, X))))))
            .derivatives(() -> List.of(mul(G, u(sigmoid(), neg(X))))).build();
    public static final OpDef HARDTANH = OpDef.unary("hardtanh").rule(SAME_NO_BOOL)
            .signature(SELF, Param.scalar("min_val", "Scalar", "-1"), Param.scalar("max_val", "Scalar", "1"))
            .formula(Expr.math(Fn.CLAMP, X, P0, P1))
            .derivatives(() -> List.of(Expr.where(b(logicalOr(), le(X, P0), ge(X, P1)), Expr.c(0), G))).build();
    public static final OpDef RELU6 = OpDef.unary("relu6").rule(SAME_NO_BOOL).signature(SELF)
            .formula(Expr.math(Fn.CLAMP, X, Expr.c(0), Expr.c(6)))
            .derivatives(() -> List.of(Expr.where(b(logicalOr(), le(X, Expr.c(0)), ge(X, Expr.c(6))), Expr.c(0), G))).build();
    /** {@code x * tanh(softplus(x))}, softplus without its threshold (as ATen's kernel). */
    public static final OpDef MISH = OpDef.unary("mish").rule(FLOATING_ONLY).signature(SELF)
            .formula(Expr.math(Fn.MUL, X, Expr.math(Fn.TANH, Expr.math(Fn.LOG1P, Expr.math(Fn.EXP, X)))))
            .derivatives(() -> {
                Expr tsp = u(tanh(), u(log1p(), u(exp(), X)));
                return List.of(mul(G, add(tsp, mul(mul(X, u(sigmoid(), X)), sub(Expr.c(1), mul(tsp, tsp))))));
            }).build();
    /** C's {@code fmod}: the remainder of truncating division, with the dividend's sign. */
    public static final OpDef FMOD = OpDef.binary("fmod").rule(SAME).integerDivision().signature(SELF, OTHER)
            .formula(Expr.math(Fn.FMOD, A, B))
            .derivatives(() -> List.of(G, neg(mul(G, Expr.call(DIV_TRUNC, A, B))))).build();
    /**
     * Floor division, as PyTorch 1.13's {@code floor_divide} (it rounded towards zero before 1.13); not
     * differentiable (PyTorch's backward raises).
     */
    public static final OpDef FLOOR_DIVIDE = OpDef.binary("floor_divide").kernel("div_floor").rule(SAME).integerDivision()
            .signature(SELF, OTHER).formula(m(Fn.DIV_FLOOR, A, B)).build();
    /** {@code clamp(self, min, max)} with tensor bounds, either of which may be None. */
    public static final OpDef CLAMP_TENSOR = OpDef.composite("clamp_tensor").py("clamp").rule(SAME_NO_BOOL)
            .signature(SELF, new Param("min", "Tensor?", "None"), new Param("max", "Tensor?", "None"))
            .composition(clampTensor())
            .derivatives(() -> {
                Expr lo = Expr.in(1, "min");
                Expr hi = Expr.in(2, "max");
                Expr inside = new Expr.IfPresent(1, new Expr.IfPresent(2, b(logicalAnd(), ge(X, lo), le(X, hi)), ge(X, lo)),
                        le(X, hi));
                // With both bounds and min > max the result is max: its gradient goes to max (as ATen's clamp_backward_min_max).
                Expr toMin = new Expr.IfPresent(2, b(logicalAnd(), lt(X, lo), lt(lo, hi)), lt(X, lo));
                Expr toMax = new Expr.IfPresent(1, b(logicalOr(), gt(X, hi), lt(hi, lo)), gt(X, hi));
                return List.of(Expr.where(inside, G, Expr.c(0)), Expr.where(toMin, G, Expr.c(0)), Expr.where(toMax, G, Expr.c(0)));
            }).build();

    /**
     * {@code self + value * tensor1 * tensor2}, the product formed as {@code (tensor1 * value) * tensor2} as ATen's CPU
     * kernel rounds it; differentiated through its parts.
     */
    public static final OpDef ADDCMUL = scaledCombination("addcmul", false);

    /** {@code self + value * tensor1 / tensor2}; its front end refuses integer division, as PyTorch. */
    public static final OpDef ADDCDIV = scaledCombination("addcdiv", true);

    private static OpDef scaledCombination(String name, boolean divide) {
        Expr scaled = Expr.call(MUL, Expr.in(1, "tensor1"), Expr.scalar(0, "value"));
        Expr combined = Expr.call(divide ? DIV : MUL, scaled, Expr.in(2, "tensor2"));
        return OpDef.composite(name).rule(SAME)
                .signature(SELF, Param.tensor("tensor1"), Param.tensor("tensor2"), Param.scalar("value", "Scalar", "1"))
                .autocast(Device.Type.CUDA, CastPolicy.PROMOTE)
                .composition(Expr.call(ADD, X, combined)).build();
    }

    // ---------------------------------------------------------------- helpers

    private static Expr logitFormula() {
        Expr z = Expr.math(Fn.CLAMP, X, P0, Expr.math(Fn.SUB, Expr.c(1), P0));
        return Expr.math(Fn.LOG, Expr.math(Fn.DIV, z, Expr.math(Fn.SUB, Expr.c(1), z)));
    }

    private static Expr clampTensor() {
        Expr lo = Expr.in(1, "min");
        Expr hi = Expr.in(2, "max");
        Expr low = new Expr.IfPresent(1, Expr.call(MAXIMUM, X, lo), X);
        return new Expr.IfPresent(2, Expr.call(MINIMUM, low, hi), low);
    }

    /** GELU's tanh form {@code 0.5 x (1 + tanh(inner))}, {@code inner = sqrt(2/pi) (x + 0.044715 x^3)}, written {@code x / (1 + exp(-2 inner))}: no cancellation for negative x. */
    private static Expr geluTanhFormula() {
        Expr cube = m(Fn.MUL, m(Fn.MUL, m(Fn.MUL, Expr.c(0.044715), X), X), X);
        Expr inner = m(Fn.MUL, Expr.c(Math.sqrt(2.0 / Math.PI)), m(Fn.ADD, X, cube));
        return m(Fn.DIV, X, m(Fn.ADD, Expr.c(1), m(Fn.EXP, m(Fn.MUL, Expr.c(-2), inner))));
    }

    /** {@code s + 2 x s (1 - s) beta (1 + 3 kappa x^2)}, {@code s = 1 / (1 + exp(-2 inner))}, as a formula of {@link #GX}. */
    private static Expr geluTanhDerivative() {
        Expr x2 = m(Fn.MUL, GX, GX);
        Expr inner = m(Fn.MUL, Expr.c(GELU_BETA), m(Fn.ADD, GX, m(Fn.MUL, m(Fn.MUL, Expr.c(GELU_KAPPA), x2), GX)));
        Expr e = m(Fn.EXP, m(Fn.MUL, Expr.c(-2), inner));
        Expr s = m(Fn.DIV, Expr.c(1), m(Fn.ADD, Expr.c(1), e));
        Expr q = m(Fn.ADD, Expr.c(1), m(Fn.MUL, Expr.c(3 * GELU_KAPPA), x2));
        // 1 - s = e s, which does not cancel where s nears 1 (1 - s itself does, by up to x q times an ulp of 1).
        Expr w = m(Fn.MUL, s, m(Fn.SELECT, m(Fn.GT, inner, Expr.c(0)), m(Fn.MUL, e, s), m(Fn.SUB, Expr.c(1), s)));
        return m(Fn.ADD, s, m(Fn.MUL, m(Fn.MUL, m(Fn.MUL, Expr.c(2 * GELU_BETA), GX), w), q));
    }

    /**
     * The tanh form's second derivative with ops: {@code 2 beta w (2 q + 2 beta x q^2 (1 - 2 s) + 6 kappa x^2)}, with
     * {@code w = s (1 - s)}, {@code q = 1 + 3 kappa x^2} and {@code ds/dx = 2 beta q w}.
     */
    private static Expr geluTanhSecondDerivative() {
        Expr x2 = mul(GX, GX);
        Expr inner = mul(add(GX, mul(mul(x2, GX), Expr.c(GELU_KAPPA))), Expr.c(GELU_BETA));
        Expr s = u(sigmoid(), mul(inner, Expr.c(2)));
        Expr w = mul(s, sub(Expr.c(1), s));
        Expr q = add(mul(x2, Expr.c(3 * GELU_KAPPA)), Expr.c(1));
        Expr middle = mul(mul(mul(GX, Expr.c(2 * GELU_BETA)), mul(q, q)), sub(Expr.c(1), mul(s, Expr.c(2))));
        Expr sum = add(add(mul(q, Expr.c(2)), middle), mul(x2, Expr.c(6 * GELU_KAPPA)));
        return mul(mul(w, Expr.c(2 * GELU_BETA)), sum);
    }

    private static Expr nonzero(Expr x) {
        return m(Fn.NE, x, Expr.c(0));
    }

    private static Expr m(Fn fn, Expr... args) {
        return Expr.math(fn, args);
    }

    private static OpDef unary(String name, DTypeRule rule, Expr formula, java.util.function.Supplier<List<Expr>> derivative) {
        return OpDef.unary(name).rule(rule).signature(SELF).formula(formula).derivatives(derivative).build();
    }

    private static OpDef unary(String name, DTypeRule rule, Expr formula, CastPolicy cuda, java.util.function.Supplier<List<Expr>> derivative) {
        return OpDef.unary(name).rule(rule).signature(SELF).formula(formula).derivatives(derivative).autocast(Device.Type.CUDA, cuda).build();
    }

    private static OpDef binary(String name, DTypeRule rule, Expr formula, java.util.function.Supplier<List<Expr>> derivative) {
        return OpDef.binary(name).rule(rule).signature(SELF, OTHER).formula(formula).derivatives(derivative).build();
    }

    private static List<Expr> zeroGrad() {
        return List.of(new Expr.ZerosLike(G));
    }

    // Derivatives name ops declared anywhere in this class (or the op itself), so they are built lazily.
    private static Expr u(OpDef op, Expr x) { return Expr.call(op, x); }
    private static Expr b(OpDef op, Expr x, Expr y) { return Expr.call(op, x, y); }
    private static Expr neg(Expr x) { return Expr.call(NEG, x); }
    private static Expr mul(Expr x, Expr y) { return Expr.call(MUL, x, y); }
    private static Expr div(Expr x, Expr y) { return Expr.call(DIV, x, y); }
    private static Expr add(Expr x, Expr y) { return Expr.call(ADD, x, y); }
    private static Expr sub(Expr x, Expr y) { return Expr.call(SUB, x, y); }
    private static Expr gt(Expr x, Expr y) { return Expr.call(GT, x, y); }
    private static Expr ge(Expr x, Expr y) { return Expr.call(GE, x, y); }
    private static Expr lt(Expr x, Expr y) { return Expr.call(LT, x, y); }
    private static Expr le(Expr x, Expr y) { return Expr.call(LE, x, y); }
    private static OpDef sign() { return SIGN; }
    private static OpDef cos() { return COS; }
    private static OpDef sin() { return SIN; }
    private static OpDef exp() { return EXP; }
    private static OpDef log() { return LOG; }
    private static OpDef log1p() { return LOG1P; }
    private static OpDef tanh() { return TANH; }
    private static OpDef sigmoid() { return SIGMOID; }
    private static OpDef pow() { return POW; }
    private static OpDef powScalar() { return POW_SCALAR; }
    private static OpDef eq() { return EQ; }
    private static OpDef logicalAnd() { return LOGICAL_AND; }
    private static OpDef logicalOr() { return LOGICAL_OR; }
    private static OpDef thresholdBackward() { return THRESHOLD_BACKWARD; }
    private static OpDef geluBackward() { return GELU_BACKWARD; }
    private static OpDef geluTanhBackward() { return GELU_TANH_BACKWARD; }
    private static OpDef leakyReluBackward() { return LEAKY_RELU_BACKWARD; }
    private static OpDef eluBackward() { return ELU_BACKWARD; }
}
