package org.jtorch.op;

/**
 * The accumulating reductions a backend implements over any set of dimensions. Each declares its
 * PyTorch name, its identity (the value of an empty reduction before {@link #finish}) and its scalar
 * definition in double (floating inputs) and long (integral inputs, where accepted). Composite
 * reductions (mean, logsumexp's rescaling) are written in terms of these (see {@link ReductionOps}).
 * {@code NORM} reads its order {@code p}.
 */
public enum ReduceOp {
    SUM("sum", 0, 0) {
        public double combine(double acc, double x, double p) { return acc + x; }
        public long combineLong(long acc, long x) { return acc + x; }
    },
    PROD("prod", 1, 1) {
        public double combine(double acc, double x, double p) { return acc * x; }
        public long combineLong(long acc, long x) { return acc * x; }
    },
    /** NaN propagates ({@link Math#max} semantics), as PyTorch's {@code amax}. */
    MAX("amax", Double.NEGATIVE_INFINITY, Long.MIN_VALUE) {
        public double combine(double acc, double x, double p) { return Math.max(acc, x); }
        public long combineLong(long acc, long x) { return Math.max(acc, x); }
    },
    MIN("amin", Double.POSITIVE_INFINITY, Long.MAX_VALUE) {
        public double combine(double acc, double x, double p) { return Math.min(acc, x); }
        public long combineLong(long acc, long x) { return Math.min(acc, x); }
    },
    /** Any nonzero element (NaN counts as nonzero). */
    ANY("any", 0, 0) {
        public double combine(double acc, double x, double p) { return acc != 0 || x != 0 ? 1 : 0; }
        public long combineLong(long acc, long x) { return acc != 0 || x != 0 ? 1 : 0; }
    },
    ALL("all", 1, 1) {
        public double combine(double acc, double x, double p) { return acc != 0 && x != 0 ? 1 : 0; }
        public long combineLong(long acc, long x) { return acc != 0 && x != 0 ? 1 : 0; }
    },
    /**
     * The vector p-norm: {@code (sum |x|^p)^(1/p)}; p = inf is {@code max |x|}, -inf {@code min |x|}, 0
     * the count of nonzeros. An empty norm is 0 for every p, as PyTorch 1.13's {@code torch.norm}.
     */
    NORM("norm", 0, 0) {
        public double identity(double p) { return p == Double.NEGATIVE_INFINITY ? Double.POSITIVE_INFINITY : 0; }
        public double combine(double acc, double x, double p) {
            double a = Math.abs(x);
            if (p == 2) return acc + a * a;
            if (p == 1) return acc + a;
            if (p == Double.POSITIVE_INFINITY) return Math.max(acc, a);
            if (p == Double.NEGATIVE_INFINITY) return Math.min(acc, a);
            if (p == 0) return acc + (x != 0 ? 1 : 0);
            return acc + Math.pow(a, p);
        }
        public double finish(double acc, long count, double p) {
            if (count == 0) return 0;
            if (p == 2) return Math.sqrt(acc);
            if (p == 1 || p == 0 || Double.isInfinite(p)) return acc;
            return Math.pow(acc, 1.0 / p);
        }
    };

    private final String pyName;
    private final double identity;
    private final long identityLong;

    ReduceOp(String pyName, double identity, long identityLong) {
        this.pyName = pyName;
        this.identity = identity;
        this.identityLong = identityLong;
    }

    public String pyName() {
        return pyName;
    }

    /** Whether reducing zero elements is an error (max and min have no identity), as PyTorch's amax. */
    public boolean emptyIsError() {
        return this == MAX || this == MIN;
    }

    /** The accumulator's start value for floating compute. */
    public double identity(double p) {
        return identity;
    }

    public long identityLong() {
        return identityLong;
    }

    /** Folds one element into the accumulator (floating compute). */
    public abstract double combine(double acc, double x, double p);

    /** Folds one element into the accumulator (integral compute; wraps on overflow, as PyTorch). */
    public long combineLong(long acc, long x) {
        throw new UnsupportedOperationException(pyName + " is not defined for integer inputs");
    }

    /** The result from the accumulator and the number of elements reduced. */
    public double finish(double acc, long count, double p) {
        return acc;
    }
}
