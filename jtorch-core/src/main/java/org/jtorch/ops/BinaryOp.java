package org.jtorch.ops;

/**
 * The front end's handles of the binary pointwise ops ({@code Tensor.add()} calls {@code Elementwise.binary(ADD, ...)}):
 * names only. Each is declared, with its formula, by the {@link org.jtorch.op.OpDef} of the same name in
 * {@link org.jtorch.op.PointwiseOps}, from which every backend's kernel is generated.
 */
public enum BinaryOp {
    ADD("add"),
    SUB("sub"),
    MUL("mul"),
    DIV("div"),
    DIV_TRUNC("div_trunc"),
    DIV_FLOOR("div_floor"),
    REMAINDER("remainder"),
    POW("pow"),
    MAXIMUM("maximum"),
    MINIMUM("minimum"),
    THRESHOLD_BACKWARD("threshold_backward"),
    EQ("eq"),
    NE("ne"),
    LT("lt"),
    LE("le"),
    GT("gt"),
    GE("ge"),
    LOGICAL_AND("logical_and"),
    LOGICAL_OR("logical_or"),
    LOGICAL_XOR("logical_xor"),
    BITWISE_AND("bitwise_and"),
    BITWISE_OR("bitwise_or"),
    BITWISE_XOR("bitwise_xor"),
    BITWISE_LEFT_SHIFT("bitwise_left_shift"),
    BITWISE_RIGHT_SHIFT("bitwise_right_shift");

    private final String pyName;

    BinaryOp(String pyName) {
        this.pyName = pyName;
    }

    public String pyName() {
        return pyName;
    }
}
