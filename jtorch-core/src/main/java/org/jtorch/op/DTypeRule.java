package org.jtorch.op;

import org.jtorch.DType;

/**
 * How a pointwise op's compute and result dtypes follow from its (promoted) input dtype: the meta
 * function of the pointwise family, computed without data.
 */
public enum DTypeRule {
    /** Same dtype as the input, any dtype. */
    SAME,
    /** Same dtype; bool rejected (as PyTorch for neg, abs, floor, ...). */
    SAME_NO_BOOL,
    /** Floating inputs keep their dtype; integers and bool compute in the default float dtype. */
    FLOAT,
    /** Floating inputs only (PyTorch's mish, log_sigmoid have no integer kernels). */
    FLOATING_ONLY,
    /** A bool result, computed in the input dtype (predicates, comparisons, logical ops). */
    BOOL,
    /** Integral and bool inputs only. */
    INTEGRAL_OR_BOOL;

    /** The dtype the op computes in for input dtype {@code in}, or an exception naming the op and dtype. */
    public DType computeType(String op, DType in, DType defaultFloat) {
        return switch (this) {
            case SAME, BOOL -> in;
            case SAME_NO_BOOL -> {
                if (in == DType.BOOL) {
                    throw new IllegalArgumentException(op + ": not supported for bool tensors"
                            + (op.equals("neg") ? "; use logical_not() instead" : ""));
                }
                yield in;
            }
            case FLOAT -> in.isFloatingPoint() ? in : defaultFloat;
            case FLOATING_ONLY -> {
                if (!in.isFloatingPoint()) {
                    throw new IllegalArgumentException(op + ": not implemented for " + in + " tensors (floating point only)");
                }
                yield in;
            }
            case INTEGRAL_OR_BOOL -> {
                if (in.isFloatingPoint()) {
                    throw new IllegalArgumentException(op + ": not supported for " + in + " tensors (integral or bool only)");
                }
                yield in;
            }
        };
    }

    /** The result dtype for compute dtype {@code compute}. */
    public DType resultType(DType compute) {
        return this == BOOL ? DType.BOOL : compute;
    }

    /** Whether results of this rule can carry gradients (floating results that are not masks). */
    public boolean isDifferentiable() {
        return this != BOOL && this != INTEGRAL_OR_BOOL;
    }

    /** Whether the rule admits compute dtype {@code t} (for docs and backends). */
    public boolean admits(DType t) {
        return switch (this) {
            case SAME, BOOL -> true;
            case SAME_NO_BOOL -> t != DType.BOOL;
            case FLOAT, FLOATING_ONLY -> t.isFloatingPoint();
            case INTEGRAL_OR_BOOL -> !t.isFloatingPoint();
        };
    }
}
