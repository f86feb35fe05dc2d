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
    /** C's {@code fmod}: the remainder takes the dividend's sign ({@code torch.fmod}); Java's {@code %}. */
    FMOD(2, "jt::java_fmod(%s, %s)") {
        public double apply(double a, double b, double c) { return a % b; }
        public long applyLong(long a, long b, long c) {
            if (b == 0) throw new ArithmeticException("fmod: integer division by zero");
            return a % b;
        }
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
    public abstract double apply(double a, double b, double c);

    /** The function in long (integer and bool compute). */
    public long applyLong(long a, long b, long c) {
        throw new UnsupportedOperationException(name().toLowerCase() + " has no integer form");
    }
}
