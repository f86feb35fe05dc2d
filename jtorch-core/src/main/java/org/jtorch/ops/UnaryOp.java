package org.jtorch.ops;

/**
 * The front end's handles of the unary pointwise ops ({@code Tensor.exp()} calls {@code Elementwise.unary(EXP, ...)}):
 * names only. Each is declared, with its formula, by the {@link org.jtorch.op.OpDef} of the same name in
 * {@link org.jtorch.op.PointwiseOps}, from which every backend's kernel is generated.
 */
public enum UnaryOp {
    NEG("neg"),
    ABS("abs"),
    SIGN("sign"),
    FLOOR("floor"),
    CEIL("ceil"),
    ROUND("round"),
    TRUNC("trunc"),
    RELU("relu"),
    LEAKY_RELU("leaky_relu"),
    CLAMP("clamp"),
    EXP("exp"),
    LOG("log"),
    LOG1P("log1p"),
    EXPM1("expm1"),
    SQRT("sqrt"),
    RSQRT("rsqrt"),
    RECIPROCAL("reciprocal"),
    SIN("sin"),
    COS("cos"),
    TANH("tanh"),
    SIGMOID("sigmoid"),
    GELU("gelu"),
    GELU_TANH("gelu_tanh"),
    SILU("silu"),
    SOFTPLUS("softplus"),
    ERF("erf"),
    POW_SCALAR("pow"),
    LOGICAL_NOT("logical_not"),
    BITWISE_NOT("bitwise_not"),
    ISNAN("isnan"),
    ISINF("isinf"),
    ISFINITE("isfinite");

    private final String pyName;

    UnaryOp(String pyName) {
        this.pyName = pyName;
    }

    public String pyName() {
        return pyName;
    }
}
