package org.jtorch.ops;

import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradients;

/**
 * The elementwise binary primitives, with broadcasting and PyTorch's type promotion done by
 * {@link Elementwise}. Each declares its name, result kind and scalar definitions in double and long
 * (the reference for every backend). {@code ADD} and {@code SUB} take PyTorch's {@code alpha}.
 */
public enum BinaryOp {
    ADD("add", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return a + alpha * b; }
        public long applyLong(long a, long b, long alpha) { return a + alpha * b; }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {g, alpha == 1 ? g : g.mul(alpha)};
        }
    },
    SUB("sub", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return a - alpha * b; }
        public long applyLong(long a, long b, long alpha) { return a - alpha * b; }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {g, g.mul(-alpha)};
        }
    },
    MUL("mul", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return a * b; }
        public long applyLong(long a, long b, long alpha) { return a * b; }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {b == null ? null : g.mul(b), a == null ? null : g.mul(a)};
        }
    },
    /** True division: integer inputs give the default float dtype. */
    DIV("div", Result.FLOAT) {
        public double apply(double a, double b, double alpha) { return a / b; }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {g.div(b), g.mul(y).div(b).neg()};
        }
    },
    /** {@code div(rounding_mode='trunc')} */
    DIV_TRUNC("div_trunc", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) {
            double q = a / b;
            return q < 0 ? Math.ceil(q) : Math.floor(q);
        }
        public long applyLong(long a, long b, long alpha) { return a / checkDivisor(b); }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {Gradients.zerosLike(g), Gradients.zerosLike(g)};
        }
    },
    /** {@code div(rounding_mode='floor')} */
    DIV_FLOOR("div_floor", Result.PROMOTED) {
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
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {Gradients.zerosLike(g), Gradients.zerosLike(g)};
        }
    },
    /** Python's modulus: the result takes the divisor's sign ({@code torch.remainder}). */
    REMAINDER("remainder", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) {
            double r = a % b;
            return r != 0 && (r < 0) != (b < 0) ? r + b : r;
        }
        public long applyLong(long a, long b, long alpha) { return Math.floorMod(a, checkDivisor(b)); }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {g, g.mul(a.div(b, "floor")).neg()};
        }
    },
    POW("pow", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return Math.pow(a, b); }
        public long applyLong(long a, long b, long alpha) { return intPow(a, b); }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            Tensor ga = g.mul(b).mul(a.pow(b.sub(1.0)));
            Tensor gb = g.mul(y).mul(a.log()).maskedFill(a.eq(0.0).logicalAnd(b.ge(0.0)), 0.0);
            return new Tensor[] {ga, gb};
        }
    },
    /** NaN-propagating maximum ({@code torch.maximum}). */
    MAXIMUM("maximum", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return a != a || b != b ? Double.NaN : Math.max(a, b); }
        public long applyLong(long a, long b, long alpha) { return Math.max(a, b); }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            Tensor half = Torch.where(a.eq(b), g.div(2.0), g);
            return new Tensor[] {half.maskedFill(a.lt(b), 0.0), half.maskedFill(a.gt(b), 0.0)};
        }
    },
    MINIMUM("minimum", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return a != a || b != b ? Double.NaN : Math.min(a, b); }
        public long applyLong(long a, long b, long alpha) { return Math.min(a, b); }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            Tensor half = Torch.where(a.eq(b), g.div(2.0), g);
            return new Tensor[] {half.maskedFill(a.gt(b), 0.0), half.maskedFill(a.lt(b), 0.0)};
        }
    },
    /**
     * {@code b <= 0 ? 0 : a}: ReLU's backward ({@code threshold_backward(grad, result, 0)}); a NaN {@code b} keeps the
     * gradient, as PyTorch (and as the float32 vector loops).
     */
    THRESHOLD_BACKWARD("threshold_backward", Result.PROMOTED) {
        public double apply(double a, double b, double alpha) { return b <= 0 ? 0 : a; }
        public long applyLong(long a, long b, long alpha) { return b > 0 ? a : 0; }
        public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
            return new Tensor[] {Elementwise.binary(THRESHOLD_BACKWARD, g, b, 1), Gradients.zerosLike(b)};
        }
    },
    EQ("eq", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a == b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a == b ? 1 : 0; }
    },
    NE("ne", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a != b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != b ? 1 : 0; }
    },
    LT("lt", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a < b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a < b ? 1 : 0; }
    },
    LE("le", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a <= b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a <= b ? 1 : 0; }
    },
    GT("gt", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a > b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a > b ? 1 : 0; }
    },
    GE("ge", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a >= b ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a >= b ? 1 : 0; }
    },
    LOGICAL_AND("logical_and", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a != 0 && b != 0 ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != 0 && b != 0 ? 1 : 0; }
    },
    LOGICAL_OR("logical_or", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return a != 0 || b != 0 ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return a != 0 || b != 0 ? 1 : 0; }
    },
    LOGICAL_XOR("logical_xor", Result.BOOL) {
        public double apply(double a, double b, double alpha) { return (a != 0) != (b != 0) ? 1 : 0; }
        public long applyLong(long a, long b, long alpha) { return (a != 0) != (b != 0) ? 1 : 0; }
    },
    BITWISE_AND("bitwise_and", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long a, long b, long alpha) { return a & b; }
    },
    BITWISE_OR("bitwise_or", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long a, long b, long alpha) { return a | b; }
    },
    BITWISE_XOR("bitwise_xor", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long a, long b, long alpha) { return a ^ b; }
    },
    BITWISE_LEFT_SHIFT("bitwise_left_shift", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long a, long b, long alpha) { return b >= 64 || b < 0 ? 0 : a << b; }
    },
    BITWISE_RIGHT_SHIFT("bitwise_right_shift", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long a, long b, long alpha) { return a >> Math.min(Math.max(b, 0), 63); }
    };

    /** How the result dtype follows from the promoted input dtype. */
    public enum Result {
        /** The promoted dtype. */
        PROMOTED,
        /** The promoted dtype if floating, else the default float dtype. */
        FLOAT,
        /** A bool tensor (comparisons, logical ops); computed in the promoted dtype. */
        BOOL,
        /** The promoted dtype, which must be integral or bool. */
        INTEGRAL_OR_BOOL
    }

    private final String pyName;
    private final Result result;

    BinaryOp(String pyName, Result result) {
        this.pyName = pyName;
        this.result = result;
    }

    public String pyName() {
        return pyName;
    }

    public Result result() {
        return result;
    }

    public double apply(double a, double b, double alpha) {
        throw new UnsupportedOperationException(pyName + " is not defined for floating-point inputs");
    }

    public long applyLong(long a, long b, long alpha) {
        throw new UnsupportedOperationException(pyName + " is not defined for integer inputs");
    }

    /** Whether a backward formula exists (comparisons, logical and bitwise ops have none). */
    public boolean isDifferentiable() {
        return result == Result.PROMOTED || result == Result.FLOAT;
    }

    /** Whether the formula reads the inputs / the result (saved by the front end). */
    public boolean savesInputs() {
        return this != ADD && this != SUB && this != DIV_TRUNC && this != DIV_FLOOR;
    }

    public boolean savesResult() {
        return this == DIV || this == POW;
    }

    /**
     * Backward formula: gradients with respect to both inputs (before summing over broadcast
     * dimensions), given the output gradient {@code g}, the inputs and the result.
     */
    public Tensor[] gradient(Tensor g, Tensor a, Tensor b, Tensor y, double alpha) {
        throw new UnsupportedOperationException(pyName + " is not differentiable");
    }

    /** The dtype computation happens in, given the promoted input dtype. */
    public DType computeType(DType promoted, DType defaultFloat) {
        if (result == Result.FLOAT && !promoted.isFloatingPoint()) return defaultFloat;
        if (result == Result.INTEGRAL_OR_BOOL && promoted.isFloatingPoint()) {
            throw new IllegalArgumentException(pyName + ": not supported for " + promoted + " inputs (integral or bool only)");
        }
        if (promoted == DType.BOOL && (this == SUB)) {
            throw new IllegalArgumentException("sub: subtraction of bool tensors is not supported; use logical_xor() instead");
        }
        return promoted;
    }

    /** The result dtype, given the compute dtype. */
    public DType resultType(DType compute) {
        return result == Result.BOOL ? DType.BOOL : compute;
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
