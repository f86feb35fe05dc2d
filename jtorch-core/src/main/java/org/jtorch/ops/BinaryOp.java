package org.jtorch.ops;

/**
 * The hand-written elementwise binary kernels, with broadcasting and PyTorch's type promotion done by the
 * dispatcher: each op's scalar definitions in double and long (the reference for every backend). Its
 * declaration (dtype rule, derivative, autocast policy) is the {@link org.jtorch.op.OpDef} of the same name in
 * {@link org.jtorch.op.PointwiseOps}. {@code ADD} and {@code SUB} take PyTorch's {@code alpha}.
 */
public enum BinaryOp {
    ADD("add") {
        public double apply(double a, double b, double alpha) { return a + alpha * b; }
        public long applyLong(long a, long b, long alpha) { return a + alpha * b; }
    },
    SUB("sub") {
        public double apply(double a, double b, double alpha) { return a - alpha * b; }
        public long applyLong(long a, long b, long alpha) { return a - alpha * b; }
    },
    MUL("mul") {
        public double apply(double a, double b, double alpha) { return a * b; }
        public long applyLong(long a, long b, long alpha) { return a * b; }
    },
    /** True division: integer inputs give the default float dtype. */
    DIV("div") {
        public double apply(double a, double b, double alpha) { return a / b; }
    },
    /** {@code div(rounding_mode='trunc')} */
    DIV_TRUNC("div_trunc") {
        public double apply(double a, double b, double alpha) {
            double q = a / b;
            return q < 0 ? Math.ceil(q) : Math.floor(q);
        }
        public long applyLong(long a, long b, long alpha) { return a / checkDivisor(b); }
    },
    /** {@code div(rounding_mode='floor')} */
    DIV_FLOOR("div_floor") {
        /** ATen's {@code div_floor_floating}: from fmod, so that {@code -0.001 // inf == -1} and {@code inf // 2 == nan}, as Python. */
        public double apply(double a, double b, double alpha) {
            if (b == 0) return a / b;
            double mod = a % b;
            double div = (a - mod) / b;
            if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
            if (div == 0) return Math.copySign(0.0, a / b);
            double floor = Math.floor(div);
            return div - floor > 0.5 ? floor + 1 : floor;
        }
        public long applyLong(long a, long b, long alpha) { return Math.floorDiv(a, checkDivisor(b)); }
    },
    /** Python's modulus: the result takes the divisor's sign ({@code torch.remainder}). */
    REMAINDER("remainder") {
        public double apply(double a, double b, double alpha) {
            double r = a % b;
            return r != 0 && (r < 0) != (b < 0) ? r + b : r;
        }
        public long applyLong(long a, long b, long alpha) { return Math.floorMod(a, checkDivisor(b)); }
    },
    POW("pow") {
        public double apply(double a, double b, double alpha) { return Math.pow(a, b); }
        public long applyLong(long a, long b, long alpha) { return intPow(a, b); }
    },
    /** NaN-propagating maximum ({@code torch.maximum}). */
    MAXIMUM("maximum") {
        public double apply(double a, double b, double alpha) { return a != a || b != b ? Double.NaN : Math.max(a, b); }
        public long applyLong(long a, long b, long alpha) { return Math.max(a, b); }
    },
    MINIMUM("minimum") {
        public double apply(double a, double b, double alpha) { return a != a || b != b ? Double.NaN : Math.min(a, b); }
        public long applyLong(long a, long b, long alpha) { return Math.min(a, b); }
    },
    /**
     * {@code b <= 0 ? 0 : a}: ReLU's backward ({@code threshold_backward(grad, result, 0)}); a NaN {@code b} keeps the
     * gradient, as PyTorch (and as the float32 vector loops).
     */
    THRESHOLD_BACKWARD("threshold_backward") {
        public double apply(double a, double b, double alpha) { return b <= 0 ? 0 : a; }
        public long applyLong(long a, long b, long alpha) { return b > 0 ? a : 0; }
    },
    EQ("eq") {
        public double apply(double a, double b, double alpha) { return a == b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a == b ? 1 : 0; }
    },
    NE("ne") {
        public double apply(double a, double b, double alpha) { return a != b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != b ? 1 : 0; }
    },
    LT("lt") {
        public double apply(double a, double b, double alpha) { return a < b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a < b ? 1 : 0; }
    },
    LE("le") {
        public double apply(double a, double b, double alpha) { return a <= b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a <= b ? 1 : 0; }
    },
    GT("gt") {
        public double apply(double a, double b, double alpha) { return a > b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a > b ? 1 : 0; }
    },
    GE("ge") {
        public double apply(double a, double b, double alpha) { return a >= b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a >= b ? 1 : 0; }
    },
    LOGICAL_AND("logical_and") {
        public double apply(double a, double b, double alpha) { return a != 0 && b != 0 ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != 0 && b != 0 ? 1 : 0; }
    },
    LOGICAL_OR("logical_or") {
        public double apply(double a, double b, double alpha) { return a != 0 || b != 0 ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != 0 || b != 0 ? 1 : 0; }
    },
    LOGICAL_XOR("logical_xor") {
        public double apply(double a, double b, double alpha) { return (a != 0) != (b != 0) ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return (a != 0) != (b != 0) ? 1 : 0; }
    },
    BITWISE_AND("bitwise_and") {
        public long applyLong(long a, long b, long alpha) { return a & b; }
    },
    BITWISE_OR("bitwise_or") {
        public long applyLong(long a, long b, long alpha) { return a | b; }
    },
    BITWISE_XOR("bitwise_xor") {
        public long applyLong(long a, long b, long alpha) { return a ^ b; }
    },
    BITWISE_LEFT_SHIFT("bitwise_left_shift") {
        public long applyLong(long a, long b, long alpha) { return b >= 64 || b < 0 ? 0 : a << b; }
    },
    BITWISE_RIGHT_SHIFT("bitwise_right_shift") {
        public long applyLong(long a, long b, long alpha) { return a >> Math.min(Math.max(b, 0), 63); }
    };

    private final String pyName;

    BinaryOp(String pyName) {
        this.pyName = pyName;
    }

    public String pyName() {
        return pyName;
    }

    public double apply(double a, double b, double alpha) {
        throw new UnsupportedOperationException(pyName + " is not defined for floating-point inputs");
    }

    public long applyLong(long a, long b, long alpha) {
        throw new UnsupportedOperationException(pyName + " is not defined for integer inputs");
    }

    /** PyTorch raises {@code ZeroDivisionError} for integer division by zero; the message names the op. */
    long checkDivisor(long b) {
        if (b == 0) throw new ArithmeticException(pyName + ": integer division by zero");
        return b;
    }

    /**
     * Integer power by squaring; negative exponents give 0 except for bases 1 and -1, as ATen's
     * {@code powi} (0 to a negative power is 0 too). Scalar negative exponents are rejected earlier,
     * by {@code Tensor.pow(long)}, as PyTorch's.
     */
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
}
