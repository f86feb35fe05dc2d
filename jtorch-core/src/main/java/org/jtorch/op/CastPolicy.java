package org.jtorch.op;

/** What autocast does to an op's floating-point inputs on one device type (PyTorch's autocast policies). */
public enum CastPolicy {
    /** Cast to the autocast dtype (float16 or bfloat16): the ops tensor cores and bf16 GEMMs speed up. */
    LOWER_PRECISION,
    /** Cast to float32: ops whose range or accumulated error needs it. */
    FP32,
    /**
     * Reductions with a {@code dtype} argument ({@code sum}, {@code prod}, {@code softmax}, {@code cumsum} ...):
     * float32 when no dtype is given, untouched when one is (ATen's {@code fp32_set_opt_dtype}).
     */
    FP32_SET_OPT_DTYPE,
    /** Cast to the widest eligible input type: float32 if any input is float32, else the autocast dtype. */
    PROMOTE,
    /** Refused under autocast (CUDA {@code binary_cross_entropy}: unsafe in float16). */
    BANNED,
    /**
     * Not a PyTorch policy: inputs untouched and autocast suspended inside, for ops that PyTorch runs as
     * one kernel but jtorch composes from covered ops (CPU {@code mv} and {@code dot}: jtorch's call
     * {@code mm}), so their results keep PyTorch's dtype and precision.
     */
    AS_IS
}
