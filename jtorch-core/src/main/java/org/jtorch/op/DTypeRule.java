package org.jtorch.op;

import org.jtorch.types.DType;

/**
 * How an op's compute and result dtypes follow from its (promoted) input dtype: the dtype half of the meta
 * function of the pointwise and reduction families, computed without data.
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
    INTEGRAL_OR_BOOL,
    /** Accumulating reductions ({@code sum}, {@code prod}): floating inputs keep their dtype, bool and integers give int64. */
    INT64_FOR_INTEGRAL,
    /** Floating results only, as {@code mean}: an integer input needs an explicit floating {@code dtype}. */
    FLOATING_RESULT,
    /** {@code any}/{@code all}: a bool result, uint8 for a uint8 input (PyTorch 1.13). */
    LOGICAL,
    /** float32 only (the fused optimizer steps' kernels). */
    FLOAT32_ONLY;

    /** The dtype the op computes in for input dtype {@code in}, or an exception naming the op and dtype. */
    public DType computeType(String op, DType in, DType defaultFloat) {
        return switch (this) {
            case SAME, BOOL, LOGICAL -> in;
            case INT64_FOR_INTEGRAL -> in.isFloatingPoint() ? in : DType.INT64;
            case FLOATING_RESULT -> {
                if (!in.isFloatingPoint()) {
                    throw new IllegalArgumentException(op + "(): could not infer output dtype. Input dtype must be either a"
                            + " floating point or complex dtype. Got: " + in);
                }
                yield in;
            }
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
            case FLOAT32_ONLY -> {
                if (in != DType.FLOAT32) throw new IllegalArgumentException(op + ": not implemented for " + in + " tensors (float32 only)");
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
        return switch (this) {
            case BOOL -> DType.BOOL;
            case LOGICAL -> compute == DType.UINT8 ? DType.UINT8 : DType.BOOL;
            default -> compute;
        };
    }

    /** Whether results of this rule can carry gradients (floating results that are not masks). */
    public boolean isDifferentiable() {
        return this != BOOL && this != INTEGRAL_OR_BOOL && this != LOGICAL;
    }

    /** Whether the rule admits compute dtype {@code t} (for docs and backends). */
    public boolean admits(DType t) {
        return switch (this) {
            case SAME, BOOL, LOGICAL, INT64_FOR_INTEGRAL -> true;
            case SAME_NO_BOOL -> t != DType.BOOL;
            case FLOAT, FLOATING_ONLY, FLOATING_RESULT -> t.isFloatingPoint();
            case INTEGRAL_OR_BOOL -> !t.isFloatingPoint();
            case FLOAT32_ONLY -> t == DType.FLOAT32;
        };
    }
}
