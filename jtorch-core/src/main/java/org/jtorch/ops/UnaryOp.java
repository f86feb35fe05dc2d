package org.jtorch.ops;

import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradients;

/**
 * The elementwise unary primitives. Each declares its PyTorch name, how its result dtype follows from
 * the input's, and its scalar definition in double (floating inputs) and, where integers are
 * accepted, in long. Backends may vectorise the common ones; the scalar forms are the reference.
 * Parameterised ops ({@code CLAMP}, {@code POW_SCALAR}, {@code SOFTPLUS}, {@code LEAKY_RELU}) read
 * {@code p0}, {@code p1}.
 */
public enum UnaryOp {
    NEG("neg", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return -x; }
        public long applyLong(long x, long p0, long p1) { return -x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.neg();
        }
    },
    ABS("abs", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return Math.abs(x); }
        public long applyLong(long x, long p0, long p1) { return Math.abs(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(x.sign());
        }
    },
    /** {@code (0 < x) - (x < 0)}, as ATen: NaN gives 0. */
    SIGN("sign", Result.SAME) {
        public double apply(double x, double p0, double p1) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
        public long applyLong(long x, long p0, long p1) { return Long.signum(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Gradients.zerosLike(g);
        }
    },
    FLOOR("floor", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return Math.floor(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Gradients.zerosLike(g);
        }
    },
    CEIL("ceil", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return Math.ceil(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Gradients.zerosLike(g);
        }
    },
    /** Round half to even, as {@code torch.round}. */
    ROUND("round", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return Math.rint(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Gradients.zerosLike(g);
        }
    },
    TRUNC("trunc", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return x < 0 ? Math.ceil(x) : Math.floor(x); }
        public long applyLong(long x, long p0, long p1) { return x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Gradients.zerosLike(g);
        }
    },
    RELU("relu", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) { return x > 0 ? x : x == x ? 0 : x; }
        public long applyLong(long x, long p0, long p1) { return Math.max(x, 0); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return Elementwise.binary(BinaryOp.THRESHOLD_BACKWARD, g, y, 1);
        }
    },
    /** {@code leaky_relu(x, negative_slope=p0)} */
    LEAKY_RELU("leaky_relu", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return x > 0 ? x : x * p0; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(x.gt(0.0).to(g.dtype()).mul(1 - p0).add(p0));
        }
    },
    /** {@code clamp(x, min=p0, max=p1)}; NaN bounds mean "no bound". NaN inputs stay NaN. */
    CLAMP("clamp", Result.SAME_NO_BOOL) {
        public double apply(double x, double p0, double p1) {
            if (x != x) return x;
            if (p0 == p0 && x < p0) x = p0;
            if (p1 == p1 && x > p1) x = p1;
            return x;
        }
        public long applyLong(long x, long p0, long p1) { return Math.min(Math.max(x, p0), p1); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            Tensor lo = p0 == p0 ? x.ge(p0) : Torch.onesLike(x).to(DType.BOOL);
            Tensor hi = p1 == p1 ? x.le(p1) : Torch.onesLike(x).to(DType.BOOL);
            return g.mul(lo.logicalAnd(hi));
        }
    },
    EXP("exp", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.exp(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y);
        }
    },
    LOG("log", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.log(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.div(x);
        }
    },
    LOG1P("log1p", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.log1p(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.div(x.add(1.0));
        }
    },
    EXPM1("expm1", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.expm1(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y.add(1.0));
        }
    },
    SQRT("sqrt", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.sqrt(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.div(y.mul(2.0));
        }
    },
    RSQRT("rsqrt", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return 1.0 / Math.sqrt(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y.pow(3.0).mul(-0.5));
        }
    },
    RECIPROCAL("reciprocal", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return 1.0 / x; }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y.mul(y).neg());
        }
    },
    SIN("sin", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.sin(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(x.cos());
        }
    },
    COS("cos", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.cos(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(x.sin().neg());
        }
    },
    TANH("tanh", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return Math.tanh(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y.mul(y).rsub(1.0));
        }
    },
    SIGMOID("sigmoid", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return 1.0 / (1.0 + Math.exp(-x)); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(y.mul(y.rsub(1.0)));
        }
    },
    /** {@code x * Phi(x)} with the exact normal CDF (PyTorch's default {@code approximate='none'}). */
    GELU("gelu", Result.FLOAT) {
        // 1 + erf(t) = erfc(-t): the complement does not cancel for negative x.
        public double apply(double x, double p0, double p1) { return 0.5 * x * SpecialFunctions.erfc(-x / Math.sqrt(2.0)); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            Tensor cdf = x.mul(1.0 / Math.sqrt(2.0)).erf().add(1.0).mul(0.5);
            Tensor pdf = x.mul(x).mul(-0.5).exp().mul(1.0 / Math.sqrt(2.0 * Math.PI));
            return g.mul(cdf.add(x.mul(pdf)));
        }
    },
    /** GELU's tanh approximation ({@code approximate='tanh'}). */
    GELU_TANH("gelu_tanh", Result.FLOAT) {
        public double apply(double x, double p0, double p1) {
            double inner = Math.sqrt(2.0 / Math.PI) * (x + 0.044715 * x * x * x);
            // 0.5 x (1 + tanh z) written as x / (1 + exp(-2z)), which does not cancel for negative x.
            return x / (1.0 + Math.exp(-2.0 * inner));
        }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            double beta = Math.sqrt(2.0 / Math.PI);
            double kappa = 0.044715;
            Tensor x2 = x.mul(x);
            Tensor t = x.add(x2.mul(x).mul(kappa)).mul(beta).tanh();
            Tensor left = t.add(1.0).mul(0.5);
            Tensor right = x.mul(0.5).mul(t.mul(t).rsub(1.0)).mul(x2.mul(3 * kappa).add(1.0).mul(beta));
            return g.mul(left.add(right));
        }
    },
    SILU("silu", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return x / (1.0 + Math.exp(-x)); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            Tensor sig = x.sigmoid();
            return g.mul(sig.mul(x.mul(sig.rsub(1.0)).add(1.0)));
        }
    },
    /** {@code softplus(x, beta=p0, threshold=p1)}: linear above the threshold, as PyTorch. */
    SOFTPLUS("softplus", Result.FLOAT) {
        public double apply(double x, double p0, double p1) {
            return x * p0 > p1 ? x : Math.log1p(Math.exp(x * p0)) / p0;
        }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            Tensor z = x.mul(p0).exp();
            Tensor d = z.div(z.add(1.0));
            return g.mul(Torch.where(x.mul(p0).gt(p1), Torch.onesLike(d), d));
        }
    },
    ERF("erf", Result.FLOAT) {
        public double apply(double x, double p0, double p1) { return SpecialFunctions.erf(x); }
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return g.mul(x.mul(x).neg().exp().mul(2.0 / Math.sqrt(Math.PI)));
        }
    },
    /**
     * {@code pow(x, exponent=p0)} with a scalar exponent. The exponents ATen special-cases go through
     * the same functions as ATen ({@code pow(-inf, 0.5)} is {@code sqrt(-inf) = nan}, not C's {@code inf}).
     */
    POW_SCALAR("pow", Result.SAME_NO_BOOL) {
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
        public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
            return p0 == 0 ? Gradients.zerosLike(g) : g.mul(x.pow(p0 - 1).mul(p0));
        }
    },
    LOGICAL_NOT("logical_not", Result.BOOL) {
        public double apply(double x, double p0, double p1) { return x == 0 ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return x == 0 ? 1 : 0; }
    },
    BITWISE_NOT("bitwise_not", Result.INTEGRAL_OR_BOOL) {
        public long applyLong(long x, long p0, long p1) { return ~x; }
    },
    ISNAN("isnan", Result.BOOL) {
        public double apply(double x, double p0, double p1) { return x != x ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 0; }
    },
    ISINF("isinf", Result.BOOL) {
        public double apply(double x, double p0, double p1) { return Double.isInfinite(x) ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 0; }
    },
    ISFINITE("isfinite", Result.BOOL) {
        public double apply(double x, double p0, double p1) { return Double.isFinite(x) ? 1 : 0; }
        public long applyLong(long x, long p0, long p1) { return 1; }
    };

    /** How the result dtype follows from the input dtype. */
    public enum Result {
        /** Same dtype as the input, any dtype. */
        SAME,
        /** Same dtype; bool rejected (as PyTorch for neg, abs, floor, ...). */
        SAME_NO_BOOL,
        /** Floating inputs keep their dtype; integers and bool compute in the default float dtype. */
        FLOAT,
        /** A bool mask. */
        BOOL,
        /** Integral and bool inputs only. */
        INTEGRAL_OR_BOOL
    }

    private final String pyName;
    private final Result result;

    UnaryOp(String pyName, Result result) {
        this.pyName = pyName;
        this.result = result;
    }

    public String pyName() {
        return pyName;
    }

    public Result result() {
        return result;
    }

    /** Scalar definition for floating compute. */
    public double apply(double x, double p0, double p1) {
        throw new UnsupportedOperationException(pyName + " is not defined for floating-point inputs");
    }

    /** Scalar definition for integral and bool compute. */
    public long applyLong(long x, long p0, long p1) {
        throw new UnsupportedOperationException(pyName + " is not defined for integer inputs");
    }

    /** What the backward formula reads: the input, the result, or neither. */
    public enum Saves { NONE, INPUT, RESULT }

    /** Which forward value {@link #gradient} needs (saved by the front end). */
    public Saves saves() {
        return switch (this) {
            case NEG, SIGN, FLOOR, CEIL, ROUND, TRUNC -> Saves.NONE;
            case RELU, EXP, EXPM1, SQRT, RSQRT, RECIPROCAL, TANH, SIGMOID -> Saves.RESULT;
            default -> Saves.INPUT;
        };
    }

    /**
     * Backward formula: the gradient with respect to the input, given the output gradient {@code g},
     * the input {@code x} and result {@code y} (whichever {@link #saves()} names; the other is null).
     */
    public Tensor gradient(Tensor g, Tensor x, Tensor y, double p0, double p1) {
        throw new UnsupportedOperationException(pyName + " is not differentiable");
    }

    /** Result dtype for an input dtype, or an exception naming the op and dtype. */
    public DType resultType(DType in, DType defaultFloat) {
        return switch (result) {
            case SAME -> in;
            case SAME_NO_BOOL -> {
                if (in == DType.BOOL) {
                    throw new IllegalArgumentException(pyName + ": not supported for bool tensors"
                            + (this == NEG ? "; use logical_not() instead" : ""));
                }
                yield in;
            }
            case FLOAT -> in.isFloatingPoint() ? in : defaultFloat;
            case BOOL -> DType.BOOL;
            case INTEGRAL_OR_BOOL -> {
                if (in.isFloatingPoint()) throw new IllegalArgumentException(pyName + ": not supported for " + in
                        + " tensors (integral or bool only)");
                yield in;
            }
        };
    }

    /** The dtype the kernel computes in: the result's, except for predicates, which compute in the input's. */
    public DType computeType(DType in, DType out) {
        return result == Result.BOOL ? in : out;
    }
}
