package org.jtorch.op;

/**
 * The scalar math a pointwise formula ({@link Expr.Math}) is written with. Each function is defined once
 * per target: here in Java ({@link #apply}, {@link #applyLong}; the reference) and as a C expression
 * template over the compute type {@code A} for the CUDA renderer ({@link #c}; the {@code jt::} helpers are in
 * jtorch-cuda's {@code elementwise.cuh}, each computing as the Java reference for floating and integer compute). Integer compute uses
 * {@link #applyLong}; a function without an integer form throws there.
 */
public enum Fn {
    NEG(1, "jt::java_neg(%s)") {
        public double apply(double a, double b, double c) { return -a; }
        public long applyLong(long a, long b, long c) { return -a; }
    },
    ABS(1, "jt::java_abs(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.abs(a); }
        public long applyLong(long a, long b, long c) { return java.lang.Math.abs(a); }
    },
    ADD(2, "(%s + %s)") {
        public double apply(double a, double b, double c) { return a + b; }
        public long applyLong(long a, long b, long c) { return a + b; }
    },
    SUB(2, "(%s - %s)") {
        public double apply(double a, double b, double c) { return a - b; }
        public long applyLong(long a, long b, long c) { return a - b; }
    },
    MUL(2, "(%s * %s)") {
        public double apply(double a, double b, double c) { return a * b; }
        public long applyLong(long a, long b, long c) { return a * b; }
    },
    DIV(2, "(%s / %s)") {
        public double apply(double a, double b, double c) { return a / b; }
    },
    EXP(1, "exp(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.exp(a); }
    },
    LOG(1, "log(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.log(a); }
    },
    LOG1P(1, "log1p(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.log1p(a); }
    },
    TANH(1, "tanh(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.tanh(a); }
    },
    EXPM1(1, "expm1(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.expm1(a); }
    },
    SQRT(1, "sqrt(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.sqrt(a); }
    },
    SIN(1, "sin(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.sin(a); }
    },
    COS(1, "cos(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.cos(a); }
    },
    /** {@code 1 / (1 + exp(-x))}. */
    SIGMOID(1, "(A(1) / (A(1) + exp(-(%s))))") {
        public double apply(double a, double b, double c) { return 1.0 / (1.0 + java.lang.Math.exp(-a)); }
    },
    ERF(1, "erf(%s)") {
        public double apply(double a, double b, double c) { return SpecialFunctions.erf(a); }
    },
    /** The exact GELU {@code x/2 erfc(-x / sqrt 2)}: the complement does not cancel for negative x, as {@code 1 + erf} would. */
    GELU(1, "(A(0.5) * (%1$s) * erfc(-(%1$s) * A(0.7071067811865476)))") {
        public double apply(double a, double b, double c) { return 0.5 * a * SpecialFunctions.erfc(-a / java.lang.Math.sqrt(2.0)); }
    },
    /**
     * GELU's derivative times the gradient {@code g}: {@code g (Phi(x) + x phi(x))} with {@code Phi(x) = erfc(-x / sqrt 2) / 2}
     * and {@code phi(x) = exp(-x^2 / 2) / sqrt(2 pi)} (ATen's {@code gelu_backward}, approximate='none'); the vector forms
     * take both from one exponential.
     */
    GELU_BACKWARD(2, "jt::gelu_backward(%s, %s)") {
        public double apply(double g, double x, double c) {
            return g * (0.5 * SpecialFunctions.erfc(-x / java.lang.Math.sqrt(2.0)) + x * java.lang.Math.exp(-0.5 * x * x) / java.lang.Math.sqrt(2 * java.lang.Math.PI));
        }
    },
    /** C's (and so ATen's) {@code pow} ({@link #cPow}); integers by squaring ({@link #intPow}). */
    POW(2, "jt::pow_any(%s, %s)") {
        public double apply(double a, double b, double c) { return cPow(a, b); }
        public long applyLong(long a, long b, long c) { return intPow(a, b); }
    },
    /**
     * {@code pow(x, e)} for a scalar exponent: the exponents ATen special-cases go through the same functions as
     * ATen's ({@code pow(-inf, 0.5)} is {@code sqrt(-inf) = nan}, not C's {@code inf}); integers by squaring.
     */
    POW_SCALAR(2, "jt::pow_scalar(%s, %s)") {
        public double apply(double x, double e, double c) {
            if (e == 0.5) return java.lang.Math.sqrt(x);
            if (e == -0.5) return 1.0 / java.lang.Math.sqrt(x);
            if (e == 2) return x * x;
            if (e == 3) return x * x * x;
            if (e == -1) return 1.0 / x;
            if (e == -2) return 1.0 / (x * x);
            return cPow(x, e);
        }
        public long applyLong(long a, long b, long c) { return intPow(a, b); }
    },
    /** {@code x <= 0 ? 0 : x}: a NaN input stays NaN (torch.relu). */
    RELU(1, "((%1$s) <= A(0) ? A(0) : (%1$s))") {
        public double apply(double a, double b, double c) { return a <= 0 ? 0 : a; }
        public long applyLong(long a, long b, long c) { return java.lang.Math.max(a, 0); }
    },
    /** {@code b <= 0 ? 0 : a}: ReLU's backward (threshold_backward at 0); a NaN {@code b} keeps {@code a}. */
    THRESHOLD(2, "((%2$s) <= A(0) ? A(0) : (%1$s))") {
        public double apply(double a, double b, double c) { return b <= 0 ? 0 : a; }
        public long applyLong(long a, long b, long c) { return b > 0 ? a : 0; }
    },
    /** {@code (0 < x) - (x < 0)}: NaN gives 0, as ATen. */
    SIGN(1, "(A((%1$s) > A(0)) - A((%1$s) < A(0)))") {
        public double apply(double a, double b, double c) { return a > 0 ? 1 : a < 0 ? -1 : 0; }
        public long applyLong(long a, long b, long c) { return Long.signum(a); }
    },
    FLOOR(1, "jt::round_floor(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.floor(a); }
        public long applyLong(long a, long b, long c) { return a; }
    },
    CEIL(1, "jt::round_ceil(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.ceil(a); }
        public long applyLong(long a, long b, long c) { return a; }
    },
    /** Round half to even ({@code torch.round}). */
    RINT(1, "jt::round_rint(%s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.rint(a); }
        public long applyLong(long a, long b, long c) { return a; }
    },
    TRUNC(1, "jt::round_trunc(%s)") {
        public double apply(double a, double b, double c) { return a < 0 ? java.lang.Math.ceil(a) : java.lang.Math.floor(a); }
        public long applyLong(long a, long b, long c) { return a; }
    },
    // Comparisons give 1 or 0 in the compute type: a formula selects with them ({@link #SELECT}).
    GT(2, "A((%s) > (%s))") {
        public double apply(double a, double b, double c) { return a > b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a > b ? 1 : 0; }
    },
    GE(2, "A((%s) >= (%s))") {
        public double apply(double a, double b, double c) { return a >= b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a >= b ? 1 : 0; }
    },
    LT(2, "A((%s) < (%s))") {
        public double apply(double a, double b, double c) { return a < b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a < b ? 1 : 0; }
    },
    LE(2, "A((%s) <= (%s))") {
        public double apply(double a, double b, double c) { return a <= b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a <= b ? 1 : 0; }
    },
    EQ(2, "A((%s) == (%s))") {
        public double apply(double a, double b, double c) { return a == b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a == b ? 1 : 0; }
    },
    NE(2, "A((%s) != (%s))") {
        public double apply(double a, double b, double c) { return a != b ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return a != b ? 1 : 0; }
    },
    /** {@code cond != 0 ? a : b} ({@code torch.where}). */
    SELECT(3, "((%s) != A(0) ? (%s) : (%s))") {
        public double apply(double cond, double a, double b) { return cond != 0 ? a : b; }
        public long applyLong(long cond, long a, long b) { return cond != 0 ? a : b; }
    },
    /** NaN-propagating maximum (Java's {@code Math.max}; {@code jt::nan_max} in C). */
    MAX(2, "jt::nan_max(%s, %s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.max(a, b); }
        public long applyLong(long a, long b, long c) { return java.lang.Math.max(a, b); }
    },
    /** NaN-propagating minimum (Java's {@code Math.min}; {@code jt::nan_min} in C). */
    MIN(2, "jt::nan_min(%s, %s)") {
        public double apply(double a, double b, double c) { return java.lang.Math.min(a, b); }
        public long applyLong(long a, long b, long c) { return java.lang.Math.min(a, b); }
    },
    /** {@code clamp(x, lo, hi)}: a NaN bound is no bound, a NaN input stays NaN (as {@code torch.clamp}). */
    CLAMP(3, "jt::clamp_opt(%s, %s, %s)") {
        public double apply(double x, double lo, double hi) {
            if (x != x) return x;
            if (lo == lo && x < lo) x = lo;
            if (hi == hi && x > hi) x = hi;
            return x;
        }
        public long applyLong(long x, long lo, long hi) { return java.lang.Math.min(java.lang.Math.max(x, lo), hi); }
    },
    /** {@code div(rounding_mode='trunc')}: the quotient rounded towards zero. */
    DIV_TRUNC(2, "jt::div_trunc(%s, %s)") {
        public double apply(double a, double b, double c) {
            double q = a / b;
            return q < 0 ? java.lang.Math.ceil(q) : java.lang.Math.floor(q);
        }
        public long applyLong(long a, long b, long c) { return a / divisor(b); }
    },
    /**
     * Python's floor division ({@code div(rounding_mode='floor')}): ATen's {@code div_floor_floating}, from fmod, so
     * that {@code -0.001 // inf == -1} and {@code inf // 2 == nan}, as Python.
     */
    DIV_FLOOR(2, "jt::div_floor(%s, %s)") {
        public double apply(double a, double b, double c) {
            if (b == 0) return a / b;
            double mod = a % b;
            double div = (a - mod) / b;
            if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
            if (div == 0) return java.lang.Math.copySign(0.0, a / b);
            double floor = java.lang.Math.floor(div);
            return div - floor > 0.5 ? floor + 1 : floor;
        }
        public long applyLong(long a, long b, long c) { return java.lang.Math.floorDiv(a, divisor(b)); }
    },
    /** Python's modulus: the result takes the divisor's sign ({@code torch.remainder}). */
    REMAINDER(2, "jt::remainder(%s, %s)") {
        public double apply(double a, double b, double c) {
            double r = a % b;
            return r != 0 && (r < 0) != (b < 0) ? r + b : r;
        }
        public long applyLong(long a, long b, long c) { return java.lang.Math.floorMod(a, divisor(b)); }
    },
    /** 1 where {@code x} is infinite; integers never are. */
    ISINF(1, "jt::is_inf(%s)") {
        public double apply(double a, double b, double c) { return Double.isInfinite(a) ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return 0; }
    },
    /** 1 where {@code x} is neither infinite nor NaN; integers always are. */
    ISFINITE(1, "jt::is_finite_01(%s)") {
        public double apply(double a, double b, double c) { return Double.isFinite(a) ? 1 : 0; }
        public long applyLong(long a, long b, long c) { return 1; }
    },
    // Bitwise ops and shifts: integer and bool compute only, on the 64-bit values.
    BITWISE_NOT(1, "(~(%s))") {
        public long applyLong(long a, long b, long c) { return ~a; }
    },
    BITWISE_AND(2, "((%s) & (%s))") {
        public long applyLong(long a, long b, long c) { return a & b; }
    },
    BITWISE_OR(2, "((%s) | (%s))") {
        public long applyLong(long a, long b, long c) { return a | b; }
    },
    BITWISE_XOR(2, "((%s) ^ (%s))") {
        public long applyLong(long a, long b, long c) { return a ^ b; }
    },
    /** A count outside [0, 64) shifts everything out (0). */
    LEFT_SHIFT(2, "jt::shift_left(%s, %s)") {
        public long applyLong(long a, long b, long c) { return b >= 64 || b < 0 ? 0 : a << b; }
    },
    /** Arithmetic shift with the count clamped to [0, 63]: a large count leaves the sign. */
    RIGHT_SHIFT(2, "jt::shift_right(%s, %s)") {
        public long applyLong(long a, long b, long c) { return a >> java.lang.Math.min(java.lang.Math.max(b, 0), 63); }
    },
    /** C's {@code fmod}: the remainder takes the dividend's sign ({@code torch.fmod}); Java's {@code %}. */
    FMOD(2, "jt::java_fmod(%s, %s)") {
        public double apply(double a, double b, double c) { return a % b; }
        public long applyLong(long a, long b, long c) { return a % divisor(b); }
    };

    private final int arity;
    private final String c;

    Fn(int arity, String c) {
        this.arity = arity;
        this.c = c;
    }

    public int arity() {
        return arity;
    }

    /** The C expression template, one {@code %s} per argument. */
    public String c() {
        return c;
    }

    /** The function in double (floating compute); unused arguments are ignored. */
    public double apply(double a, double b, double c) {
        throw new UnsupportedOperationException(name().toLowerCase() + " has no floating-point form");
    }

    /** Whether the function has an integer form only (the bitwise functions and shifts): no floating compute reaches it. */
    public boolean integerOnly() {
        return switch (this) {
            case BITWISE_NOT, BITWISE_AND, BITWISE_OR, BITWISE_XOR, LEFT_SHIFT, RIGHT_SHIFT -> true;
            default -> false;
        };
    }

    /** PyTorch raises {@code ZeroDivisionError} for integer division by zero; the message names the function. */
    long divisor(long b) {
        if (b == 0) throw new ArithmeticException(name().toLowerCase() + ": integer division by zero");
        return b;
    }

    /**
     * Integer power by squaring; negative exponents give 0 except for bases 1 and -1, as ATen's {@code powi} (0 to a
     * negative power is 0 too). Scalar negative exponents are rejected earlier, by {@code Tensor.pow(long)}, as PyTorch's.
     */
    /**
     * C's {@code pow}, which PyTorch's CPU and CUDA kernels inherit: {@code Math.pow} except that a base of 1 gives 1
     * whatever the exponent (NaN included), and so does -1 to an infinite power (Java gives NaN for both).
     */
    public static double cPow(double base, double exponent) {
        if (base == 1 || (base == -1 && Double.isInfinite(exponent))) return 1;
        return java.lang.Math.pow(base, exponent);
    }

    static long intPow(long base, long exp) {
        if (exp < 0) {
            if (base == 1) return 1;
            if (base == -1) return (exp & 1) == 0 ? 1 : -1;
            return 0;
        }
        long result = 1;
        while (exp > 0) {
            if ((exp & 1) != 0) result *= base;
            base *= base;
            exp >>= 1;
        }
        return result;
    }

    /** The function in long (integer and bool compute). */
    public long applyLong(long a, long b, long c) {
        throw new UnsupportedOperationException(name().toLowerCase() + " has no integer form");
    }
}
