package org.jtorch.ops;

import org.jtorch.op.SpecialFunctions;

/**
 * The hand-written elementwise unary kernels: each op's scalar definition in double (floating inputs) and,
 * where integers are accepted, in long. Its declaration (dtype rule, derivative, autocast policy) is the
 * {@link org.jtorch.op.OpDef} of the same name in {@link org.jtorch.op.PointwiseOps}. Backends may vectorise the common ones; the scalar forms are the reference.
 * Parameterised ops ({@code CLAMP}, {@code POW_SCALAR}, {@code SOFTPLUS}, {@code LEAKY_RELU}) read
 * {@code p0}, {@code p1}.
 */
public enum UnaryOp {
    NEG("neg") {
        public double apply(double x, double p0, double p1) { return -x; }
        public long applyLong(long x, long p0, long p1) { return -x; }
    },
    ABS("abs") {
        public double apply(double x, double p0, double p1) { return Math.abs(x); }
        public long applyLong(long x, long p0, long p1) { return Math.abs(x); }
    },
    /** {@code (0 < x) - (x < 0)}, as ATen: NaN gives 0. */
    SIGN("sign") {
        public double apply(double x, double p0, double p1) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
        public long applyLong(long x, long p0, long p1) { return Long.signum(x); }
    },
    FLOOR("floor") {
        public double apply(double x, double p0, double p1) { return Math.floor(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
    },
    CEIL("ceil") {
        public double apply(double x, double p0, double p1) { return Math.ceil(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
    },
    /** Round half to even, as {@code torch.round}. */
    ROUND("round") {
        public double apply(double x, double p0, double p1) { return Math.rint(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
    },
    TRUNC("trunc") {
        public double apply(double x, double p0, double p1) { return x < 0 ? Math.ceil(x) : Math.floor(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
    },
    RELU("relu") {
        public double apply(double x, double p0, double p1) { return x > 0 ? x : x == x ? 0 : x; }
        public long applyLong(long x, long p0, long p1) { return Math.max(x, 0); }
    },
    /** {@code leaky_relu(x, negative_slope=p0)} */
    LEAKY_RELU("leaky_relu") {
        public double apply(double x, double p0, double p1) { return x > 0 ? x : x * p0; }
    },
    /** {@code clamp(x, min=p0, max=p1)}; NaN bounds mean "no bound". NaN inputs stay NaN. */
    CLAMP("clamp") {
        public double apply(double x, double p0, double p1) {
            if (x != x) return x;
            if (p0 == p0 && x < p0) x = p0;
            if (p1 == p1 && x > p1) x = p1;
            return x;
        }
        public long applyLong(long x, long p0, long p1) { return Math.min(Math.max(x, p0), p1); }
    },
    EXP("exp") {
        public double apply(double x, double p0, double p1) { return Math.exp(x); }
    },
    LOG("log") {
        public double apply(double x, double p0, double p1) { return Math.log(x); }
    },
    LOG1P("log1p") {
        public double apply(double x, double p0, double p1) { return Math.log1p(x); }
    },
    EXPM1("expm1") {
        public double apply(double x, double p0, double p1) { return Math.expm1(x); }
    },
    SQRT("sqrt") {
        public double apply(double x, double p0, double p1) { return Math.sqrt(x); }
    },
    RSQRT("rsqrt") {
        public double apply(double x, double p0, double p1) { return 1.0 / Math.sqrt(x); }
    },
    RECIPROCAL("reciprocal") {
        public double apply(double x, double p0, double p1) { return 1.0 / x; }
    },
    SIN("sin") {
        public double apply(double x, double p0, double p1) { return Math.sin(x); }
    },
    COS("cos") {
        public double apply(double x, double p0, double p1) { return Math.cos(x); }
    },
    TANH("tanh") {
        public double apply(double x, double p0, double p1) { return Math.tanh(x); }
    },
    SIGMOID("sigmoid") {
        public double apply(double x, double p0, double p1) { return 1.0 / (1.0 + Math.exp(-x)); }
    },
    /** {@code x * Phi(x)} with the exact normal CDF (PyTorch's default {@code approximate='none'}). */
    GELU("gelu") {
        // 1 + erf(t) = erfc(-t): the complement does not cancel for negative x.
        public double apply(double x, double p0, double p1) { return 0.5 * x * SpecialFunctions.erfc(-x / Math.sqrt(2.0)); }
    },
    /** GELU's tanh approximation ({@code approximate='tanh'}). */
    GELU_TANH("gelu_tanh") {
        public double apply(double x, double p0, double p1) {
            double inner = Math.sqrt(2.0 / Math.PI) * (x + 0.044715 * x * x * x);
            // 0.5 x (1 + tanh z) written as x / (1 + exp(-2z)), which does not cancel for negative x.
            return x / (1.0 + Math.exp(-2.0 * inner));
        }
    },
    SILU("silu") {
        public double apply(double x, double p0, double p1) { return x / (1.0 + Math.exp(-x)); }
    },
    /** {@code softplus(x, beta=p0, threshold=p1)}: linear above the threshold, as PyTorch. */
    SOFTPLUS("softplus") {
        public double apply(double x, double p0, double p1) {
            return x * p0 > p1 ? x : Math.log1p(Math.exp(x * p0)) / p0;
        }
    },
    ERF("erf") {
        public double apply(double x, double p0, double p1) { return SpecialFunctions.erf(x); }
    },
    /**
     * {@code pow(x, exponent=p0)} with a scalar exponent. The exponents ATen special-cases go through
     * the same functions as ATen ({@code pow(-inf, 0.5)} is {@code sqrt(-inf) = nan}, not C's {@code inf}).
     */
    POW_SCALAR("pow") {
        public double apply(double x, double p0, double p1) {
            if (p0 == 0.5) return Math.sqrt(x);
            if (p0 == -0.5) return 1.0 / Math.sqrt(x);
            if (p0 == 2) return x * x;
            if (p0 == 3) return x * x * x;
            if (p0 == -1) return 1.0 / x;
            if (p0 == -2) return 1.0 / (x * x);
            return Math.pow(x, p0);
        }
        public long applyLong(long x, long p0, long p1) { return BinaryOp.intPow(x, p0); }
    },
    LOGICAL_NOT("logical_not") {
        public double apply(double x, double p0, double p1) { return x == 0 ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return x == 0 ? 1 : 0; }
    },
    BITWISE_NOT("bitwise_not") {
        public long applyLong(long x, long p0, long p1) { return ~x; }
    },
    ISNAN("isnan") {
        public double apply(double x, double p0, double p1) { return x != x ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 0; }
    },
    ISINF("isinf") {
        public double apply(double x, double p0, double p1) { return Double.isInfinite(x) ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 0; }
    },
    ISFINITE("isfinite") {
        public double apply(double x, double p0, double p1) { return Double.isFinite(x) ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 1; }
    };

    private final String pyName;

    UnaryOp(String pyName) {
        this.pyName = pyName;
    }

    public String pyName() {
        return pyName;
    }

    /** Scalar definition for floating compute. */
    public double apply(double x, double p0, double p1) {
        throw new UnsupportedOperationException(pyName + " is not defined for floating-point inputs");
    }

    /** Scalar definition for integral and bool compute. */
    public long applyLong(long x, long p0, long p1) {
        throw new UnsupportedOperationException(pyName + " is not defined for integer inputs");
    }

}
