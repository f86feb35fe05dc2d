package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;

import java.util.Arrays;
import java.util.List;
import org.jtorch.types.DType;

/**
 * The random ops ({@link OpDef#isRandom}), with PyTorch's names: the in-place fills {@code uniform_}, {@code normal_} and
 * {@code random_} (under {@code Torch.rand}, {@code randn}, {@code randint}, {@code nn.Init} and {@code Tensor}'s methods),
 * {@code bernoulli} (of a tensor of probabilities, or of one probability, also run in place as {@code bernoulli_.float}),
 * {@code bernoulli_.Tensor}, {@code exponential_}, {@code geometric_}, {@code log_normal_} and {@code cauchy_} (float64
 * draws transformed by one formula per op, {@link #sample}), {@code randperm}'s shuffle into a tensor, {@code multinomial},
 * and dropout's {@code native_dropout} (output and mask) with its gradient {@code native_dropout_backward}; the factories
 * as front ends traced as one op.
 *
 * <p>Each names its generator among its scalars by id ({@code Generator.id}), as PyTorch's {@code Generator? generator}
 * argument. The dispatcher reserves the Philox blocks the call draws ({@link OpDef.Draws}) when the op runs and passes
 * the generator's state to the kernel after the call's scalars ({@link #seed}, {@link #firstBlock}): element {@code i}
 * of a fill is a pure function of that state and {@code i}, on every backend. The trace records the id, not the state,
 * so a replayed trace draws fresh numbers and advances the generator as the eager call does.
 *
 * <p>Autocast leaves them as they are (none is on PyTorch's autocast lists).
 */
public final class RandomOps {
    private RandomOps() {}

    private static final Param SELF = Param.tensor("self");
    private static final Param GENERATOR = new Param("generator", "Generator?", "None");

    /** Blocks of four 32-bit words that a uniform fill of {@code numel} elements of {@code dtype} draws (two per float64). */
    public static long uniformBlocks(long numel, DType dtype) {
        return ceilDiv(numel, dtype == DType.FLOAT64 ? 2 : 4);
    }

    /**
     * {@code self.uniform_(from, to)}: uniform in {@code [from, to)}, element {@code i} from word {@code i % 4} of block
     * {@code i / 4} (float64: half of block {@code i / 2}). The old values get a zero gradient.
     */
    public static final OpDef UNIFORM = OpDef.structured("uniform").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("from", "float", "0"), Param.scalar("to", "float", "1"), GENERATOR)
            .meta((in, g) -> {
                if (!(g[0] <= g[1])) {
                    throw new IllegalArgumentException("uniform_ expects to return a [from, to) range, but found from=" + fmt(g[0]) + " > to="
                            + fmt(g[1]));
                }
                return floatingFill("uniform_", in[0]);
            })
            .random(2, (n, t, in, g) -> uniformBlocks(n, t))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("UniformBackward0")
            .doc("uniform in [from, to), in place (`Torch.rand`, `Init.uniform_`)").build();

    /** {@code self.normal_(mean, std)}: Box-Muller pairs, two elements from half a block. The old values get a zero gradient. */
    public static final OpDef NORMAL = OpDef.structured("normal").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("mean", "float", "0"), Param.scalar("std", "float", "1"), GENERATOR)
            .meta((in, g) -> {
                if (!(g[1] >= 0)) throw new IllegalArgumentException("normal_: expects std >= 0.0, but found std " + g[1]);
                return floatingFill("normal_", in[0]);
            })
            .random(2, (n, t, in, g) -> ceilDiv(n, 4))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("NormalBackward0")
            .doc("normal samples of mean and std, in place (`Torch.randn`, `Init.normal_`)").build();

    /**
     * {@code self.random_(from, to)}: integers uniform in {@code [from, to)}, element {@code i} from half of block {@code i / 2}.
     * Scalars: {@code from}, {@code to} and the generator as doubles, then the bounds' exact int64 halves ({@link #randomScalars}).
     * The old values get a zero gradient (so autograd refuses it on a leaf that requires grad, as PyTorch's).
     */
    public static final OpDef RANDOM = OpDef.structured("random_from").py("random").rule(DTypeRule.SAME)
            .signature(SELF, Param.scalar("from", "int", null), Param.scalar("to", "int?", null), GENERATOR)
            .meta((in, g) -> {
                long low = exact(g, 3), high = exact(g, 5);
                if (high <= low) {
                    throw new IllegalArgumentException("random_: expects 'from' < 'to', but got from=" + low + " and to=" + high
                            + " (tensor of shape " + Shapes.format(in[0].shape()) + ", " + in[0].dtype() + ")");
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .random(2, (n, t, in, g) -> ceilDiv(n, 2))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("RandomBackward0")
            .doc("integers uniform in [from, to), in place (`Torch.randint`)").build();

    /** {@code torch.bernoulli(self)}: 1 where a float64 uniform draw is below the probability, in self's dtype. */
    public static final OpDef BERNOULLI = OpDef.structured("bernoulli").rule(DTypeRule.FLOATING_ONLY).signature(SELF, GENERATOR)
            .meta((in, g) -> {
                if (!in[0].dtype().isFloatingPoint()) {
                    throw new IllegalArgumentException("bernoulli(): expected a floating tensor of probabilities, got " + in[0].dtype()
                            + " of shape " + Shapes.format(in[0].shape()));
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .random(0, (n, t, in, g) -> ceilDiv(n, 2)).checksValues()
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("BernoulliBackward0")
            .doc("1 with probability self, elementwise (float64 draws); self outside [0, 1] refused inside the kernel").build();

    /** {@code torch.bernoulli(self, p)}: a tensor of self's shape and dtype, 1 with probability p (float64 draws). */
    public static final OpDef BERNOULLI_P = OpDef.structured("bernoulli_p").py("bernoulli").rule(DTypeRule.SAME)
            .signature(SELF, Param.scalar("p", "float", null), GENERATOR)
            .meta((in, g) -> {
                if (!(g[0] >= 0 && g[0] <= 1)) {
                    throw new IllegalArgumentException("bernoulli: expects p to be in [0, 1], but got p=" + g[0] + " (tensor of shape "
                            + Shapes.format(in[0].shape()) + ", " + in[0].dtype() + ")");
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .random(1, (n, t, in, g) -> ceilDiv(n, 2))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("BernoulliBackward1")
            .doc("1 with probability p, elementwise, in self's dtype (float64 draws)").build();

    /**
     * {@code native_dropout(input, p, train)}: in training, {@code mask} (bool) keeps an element where a uniform draw of
     * input's dtype is below {@code 1 - p}, and {@code output = input * (mask * (1 / (1 - p)))} with the factor in
     * input's dtype (zero where p = 1); out of training, the input unchanged and an all-true mask, drawing nothing.
     * jtorch's signature names the generator as the other random ops do.
     */
    public static final OpDef NATIVE_DROPOUT = OpDef.structured("native_dropout").rule(DTypeRule.FLOATING_ONLY)
            .outputs((in, g) -> {
                StridedView x = in[0];
                if (!x.dtype().isFloatingPoint()) {
                    throw new IllegalArgumentException("native_dropout: expected a floating point input, got " + x.dtype() + " of shape "
                            + Shapes.format(x.shape()));
                }
                if (!(g[0] >= 0 && g[0] <= 1)) {
                    throw new IllegalArgumentException("native_dropout: dropout probability has to be between 0 and 1, but got " + g[0]
                            + " (input of shape " + Shapes.format(x.shape()) + ", " + x.dtype() + ")");
                }
                return new Meta.Output[] {new Meta.Output(x.shape().clone(), x.dtype()), new Meta.Output(x.shape().clone(), DType.BOOL)};
            }, "output", "mask")
            .signature(Param.tensor("input"), Param.scalar("p", "float", null), Param.scalar("train", "bool?", null), GENERATOR)
            .random(2, (n, t, in, g) -> g[1] != 0 ? uniformBlocks(n, t) : 0)
            .skipsUnreadOutputs()
            .derivatives(() -> List.of(new Expr.IfScalar(1, 0,
                    Expr.call(RandomOps.NATIVE_DROPOUT_BACKWARD, GRAD, Expr.output(1, "mask"), Expr.c(1)),
                    Expr.call(RandomOps.NATIVE_DROPOUT_BACKWARD, GRAD, Expr.output(1, "mask"),
                            Expr.math(Fn.DIV, Expr.c(1), Expr.math(Fn.SUB, Expr.c(1), Expr.scalar(0, "p")))))))
            .doc("dropout's output and mask (`F.dropout`)").build();

    /**
     * {@code native_dropout_backward(grad_output, mask, scale)}: {@code grad_output * (mask * scale)}, the factor in
     * grad_output's dtype; an infinite scale (dropout's {@code 1 / (1 - p)} at p = 1) counts as zero, as PyTorch's.
     */
    public static final OpDef NATIVE_DROPOUT_BACKWARD = OpDef.structured("native_dropout_backward").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_output"), Param.tensor("mask"), Param.scalar("scale", "float", null))
            .meta((in, g) -> {
                StridedView grad = in[0], mask = in[1];
                if (mask == null || mask.dtype() != DType.BOOL || !Arrays.equals(mask.shape(), grad.shape())) {
                    throw new IllegalArgumentException("native_dropout_backward: expected a bool mask of grad_output's shape "
                            + Shapes.format(grad.shape()) + ", got " + (mask == null ? "None" : mask.dtype() + " of shape "
                            + Shapes.format(mask.shape())));
                }
                if (!grad.dtype().isFloatingPoint()) {
                    throw new IllegalArgumentException("native_dropout_backward: expected a floating point grad_output, got " + grad.dtype());
                }
                return new Meta.Output(grad.shape().clone(), grad.dtype());
            })
            .derivatives(() -> Arrays.asList(Expr.call(RandomOps.NATIVE_DROPOUT_BACKWARD, GRAD, Expr.in(1, "mask"), Expr.scalar(0, "scale")),
                    null))
            .doc("grad_output * mask * scale").build();

    // ------------------------------------------------------------------ the dropout family (front ends)

    /** The dropout family's signature, as native_functions.yaml's {@code (Tensor input, float p, bool train)}, and the generator. */
    private static Param[] dropoutSignature() {
        return new Param[] {Param.tensor("input"), Param.scalar("p", "float", null), Param.scalar("train", "bool", null), GENERATOR};
    }

    /**
     * {@code dropout(input, p, train)}: {@link #NATIVE_DROPOUT}'s output in training with {@code 0 < p < 1}, zeros at p = 1,
     * the input itself (an alias) out of training or at p = 0 ({@code ops.Dropouts}). The trace records what it runs,
     * {@code native_dropout}, which the JIT fuses into its pointwise kernels: recorded as this op, it would be an opaque node.
     */
    public static final OpDef DROPOUT = OpDef.frontEnd("dropout", true).rule(DTypeRule.SAME).signature(dropoutSignature()).random(2)
            .doc("`ops.Dropouts.dropout` (`native_dropout` in training, floating inputs; traced as what it runs)").build();

    /**
     * {@code feature_dropout(input, p, train)}: one keep decision per {@code (n, c)} channel of an input of at least two
     * dimensions, kept channels divided by {@code 1 - p} (PyTorch's {@code _dropout_impl}; {@code F.dropout1d/2d/3d}).
     * Traced as one random op: a replay draws anew.
     */
    public static final OpDef FEATURE_DROPOUT = OpDef.frontEnd("feature_dropout", true).rule(DTypeRule.SAME).signature(dropoutSignature())
            .random(2).doc("`ops.Dropouts.featureDropout` (a uniform draw per channel, lt, div, mul; floating inputs in training)").build();

    /**
     * {@code alpha_dropout(input, p, train)}: SELU's dropout, keeping the mean and variance: kept elements {@code a x + alpha a
     * p}, dropped ones {@code alpha a (p - 1)}, with {@code alpha = 1.7580993408473766} and {@code a = 1 / sqrt((alpha^2 p + 1)
     * (1 - p))} (PyTorch's {@code _dropout_impl}). Traced as one random op.
     */
    public static final OpDef ALPHA_DROPOUT = OpDef.frontEnd("alpha_dropout", true).rule(DTypeRule.SAME).signature(dropoutSignature())
            .random(2).doc("`ops.Dropouts.alphaDropout` (a uniform draw per element, then mul and add; floating inputs in training)").build();

    /** {@link #ALPHA_DROPOUT} with one keep decision per {@code (n, c)} channel, as {@link #FEATURE_DROPOUT}'s. Traced as one random op. */
    public static final OpDef FEATURE_ALPHA_DROPOUT = OpDef.frontEnd("feature_alpha_dropout", true).rule(DTypeRule.SAME)
            .signature(dropoutSignature()).random(2)
            .doc("`ops.Dropouts.featureAlphaDropout` (a uniform draw per channel, then mul and add; floating inputs in training)").build();

    // ------------------------------------------------------------------ in-place fills of other distributions

    /** The draws a fill's {@link #sample} formula transforms: input 0, float64, uniform in [0, 1) (normal for log_normal_). */
    private static final Expr DRAW = Expr.in(0, "u");
    private static final Expr P0 = Expr.scalar(0, "p0");
    private static final Expr P1 = Expr.scalar(1, "p1");

    /** Blocks of float64 uniforms for {@code numel} elements: two per block, as {@link #uniformBlocks} of float64. */
    private static final OpDef.Draws FLOAT64_UNIFORMS = (n, t, in, g) -> uniformBlocks(n, DType.FLOAT64);

    /**
     * {@code self.bernoulli_(p)} with a tensor of probabilities broadcast to self ({@code bernoulli_.Tensor}): 1 where a
     * float64 uniform draw is below p, in self's dtype; a probability outside [0, 1] (or NaN) is refused by the kernel,
     * as PyTorch's. The scalar form {@code bernoulli_.float} is {@link #BERNOULLI_P} run in place.
     */
    public static final OpDef BERNOULLI_TENSOR = OpDef.structured("bernoulli_Tensor").py("bernoulli").rule(DTypeRule.SAME)
            .signature(SELF, Param.tensor("p"), GENERATOR)
            .meta((in, g) -> {
                StridedView self = in[0], p = in[1];
                if (!p.dtype().isFloatingPoint()) {
                    throw new IllegalArgumentException("bernoulli_: expected a floating tensor of probabilities, got " + p.dtype() + " of shape "
                            + Shapes.format(p.shape()) + " (self of shape " + Shapes.format(self.shape()) + ")");
                }
                checkExpands(p.shape(), self.shape());
                return new Meta.Output(self.shape().clone(), self.dtype());
            })
            .random(0, (n, t, in, g) -> ceilDiv(n, 2))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD), null)).node("BernoulliBackward2")
            .doc("self filled with 1 where a float64 uniform is below p (broadcast), else 0").build();

    /** {@code self.exponential_(lambd)}: {@code -1 / lambd * log(1 - u)} for float64 uniforms u (PyTorch's CPU transformation). */
    public static final OpDef EXPONENTIAL = OpDef.structured("exponential").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("lambd", "float", "1"), GENERATOR)
            .meta((in, g) -> {
                if (!(g[0] >= 0)) throw new IllegalArgumentException("exponential_ expects lambda >= 0.0, but found lambda=" + fmt(g[0]));
                return floatingFill("exponential_", in[0]);
            })
            .random(1, FLOAT64_UNIFORMS)
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("ExponentialBackward0")
            .doc("exponential samples of rate lambd, in place").build();

    /** {@code self.geometric_(p)}: trials to the first success, {@code ceil(log(1 - u) / log1p(-p))} (at least 1). */
    public static final OpDef GEOMETRIC = OpDef.structured("geometric").rule(DTypeRule.SAME_NO_BOOL)
            .signature(SELF, Param.scalar("p", "float", null), GENERATOR)
            .meta((in, g) -> {
                if (!(g[0] > 0 && g[0] < 1)) throw new IllegalArgumentException("geometric_ expects p to be in (0, 1), but got p=" + fmt(g[0]));
                if (in[0].dtype() == DType.BOOL) {
                    throw new IllegalArgumentException("geometric_: not implemented for torch.bool (self of shape " + Shapes.format(in[0].shape()) + ")");
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .random(1, FLOAT64_UNIFORMS)
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("GeometricBackward0")
            .doc("geometric samples (trials to the first success of probability p), in place").build();

    /** {@code self.log_normal_(mean, std)}: {@code exp} of float64 normal draws of mean and std. */
    public static final OpDef LOG_NORMAL = OpDef.structured("log_normal").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("mean", "float", "1"), Param.scalar("std", "float", "2"), GENERATOR)
            .meta((in, g) -> {
                if (!(g[1] > 0)) throw new IllegalArgumentException("log_normal_: expects std > 0.0, but found std=" + fmt(g[1]));
                return floatingFill("log_normal_", in[0]);
            })
            .random(2, (n, t, in, g) -> ceilDiv(n, 4))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("LogNormalBackward0")
            .doc("log-normal samples (exp of normal(mean, std)), in place").build();

    /** {@code self.cauchy_(median, sigma)}: {@code median + sigma * tan(pi * (u - 1/2))} for float64 uniforms u. */
    public static final OpDef CAUCHY = OpDef.structured("cauchy").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("median", "float", "0"), Param.scalar("sigma", "float", "1"), GENERATOR)
            .meta((in, g) -> floatingFill("cauchy_", in[0]))
            .random(2, FLOAT64_UNIFORMS)
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("CauchyBackward0")
            .doc("Cauchy samples of median and sigma, in place").build();

    /**
     * The pointwise formula that turns a fill's draws (input 0) into its samples, with the call's scalars as parameters
     * p0 and p1: one formula per op, compiled by each backend ({@code FormulaKernel}).
     */
    public static Expr sample(OpDef op) {
        return sample(op, P0, P1);
    }

    private static Expr sample(OpDef op, Expr p0, Expr p1) {
        if (op == EXPONENTIAL) return Expr.math(Fn.MUL, Expr.math(Fn.DIV, Expr.c(-1), p0), Expr.math(Fn.LOG, Expr.math(Fn.SUB, Expr.c(1), DRAW)));
        if (op == GEOMETRIC) {
            // 1 - u is in (0, 1]: u = 0 would give ceil(0) = 0 trials, outside the support; max(., 1) keeps it there.
            return Expr.math(Fn.MAX, Expr.math(Fn.CEIL, Expr.math(Fn.DIV, Expr.math(Fn.LOG, Expr.math(Fn.SUB, Expr.c(1), DRAW)),
                    Expr.math(Fn.LOG1P, Expr.math(Fn.NEG, p0)))), Expr.c(1));
        }
        if (op == LOG_NORMAL) return Expr.math(Fn.EXP, DRAW);
        if (op == CAUCHY) {
            Expr angle = Expr.math(Fn.MUL, Expr.c(Math.PI), Expr.math(Fn.SUB, DRAW, Expr.c(0.5)));
            return Expr.math(Fn.ADD, p0, Expr.math(Fn.MUL, p1, Expr.math(Fn.DIV, Expr.math(Fn.SIN, angle), Expr.math(Fn.COS, angle))));
        }
        throw new IllegalArgumentException(op.name() + " is not a fill transformed from draws");
    }

    /**
     * {@code randperm.generator_out(n, *, generator, out)}: {@code out} (1-D of n elements) filled with a random
     * permutation of {@code 0..n-1} by a Fisher-Yates shuffle; step {@code i} (from n - 1 down to 1) draws 64 bits from
     * half of block {@code i / 2} (one block when n is 0 or 1). PyTorch's dtype checks: n - 1 must fit the dtype, and
     * float16, float32 and float64 must hold every integer up to n exactly.
     */
    public static final OpDef RANDPERM_OUT = OpDef.structured("randperm_generator_out").py("randperm").rule(DTypeRule.SAME_NO_BOOL)
            .signature(Param.tensor("out"), new Param("n", "int", null), GENERATOR)
            .meta((in, g) -> {
                long n = (long) g[0];
                StridedView out = in[0];
                if (n < 0) throw new IllegalArgumentException("randperm: n must be non-negative, got " + n);
                if (out.shape().length != 1 || out.shape()[0] != n) {
                    throw new IllegalArgumentException("randperm: expected out of shape [" + n + "], got " + Shapes.format(out.shape()));
                }
                checkPermutationFits(n, out.dtype());
                return new Meta.Output(out.shape().clone(), out.dtype());
            })
            .random(1, (n, t, in, g) -> Math.max(1, ceilDiv(n, 2)))
            .doc("a random permutation of 0..n-1 written into out (`Torch.randperm`)").build();

    /** PyTorch's error where {@code bernoulli_}'s p does not broadcast to self's shape (its {@code expand}'s). */
    private static void checkExpands(long[] from, long[] to) {
        boolean fits = from.length <= to.length;
        for (int i = 0; fits && i < from.length; i++) {
            long have = from[from.length - 1 - i], want = to[to.length - 1 - i];
            if (have != want && have != 1) {
                throw new IllegalArgumentException("bernoulli_: The expanded size of the tensor (" + want + ") must match the existing size ("
                        + have + ") at non-singleton dimension " + (to.length - 1 - i) + ".  Target sizes: " + Shapes.format(to)
                        + ".  Tensor sizes: " + Shapes.format(from));
            }
        }
        if (!fits) {
            throw new IllegalArgumentException("bernoulli_: the number of sizes provided (" + to.length + ") must be greater or equal to the "
                    + "number of dimensions in the tensor (" + from.length + ")");
        }
    }

    private static void checkPermutationFits(long n, DType t) {
        long max = switch (t) {
            case BOOL -> throw new IllegalArgumentException("randperm: \"randperm\" not implemented for 'Bool'");
            case UINT8 -> 255;
            case INT8 -> 127;
            case INT16 -> Short.MAX_VALUE;
            case INT32 -> Integer.MAX_VALUE;
            default -> Long.MAX_VALUE;
        };
        if (n - 1 > max) {
            throw new IllegalArgumentException("randperm: n is too large for result tensor type " + t + ": value cannot be converted to type "
                    + t + " without overflow (n = " + n + ")");
        }
        if (t == DType.FLOAT16 && n > (1L << 11) + 1) throw new IllegalArgumentException("randperm: n cannot be greater than 2049 for Half type.");
        if (t == DType.FLOAT32 && n > (1L << 24) + 1) throw new IllegalArgumentException("randperm: n cannot be greater than 2^24+1 for Float type.");
        if (t == DType.FLOAT64 && n > (1L << 53) + 1) throw new IllegalArgumentException("randperm: n cannot be greater than 2^53+1 for Double type.");
    }

    /**
     * {@code torch.multinomial(self, num_samples, replacement, *, generator)}: int64 category indices drawn from each row
     * of the 1-D or 2-D non-negative weights (any floating dtype, read as float64). With replacement: inverse-CDF sampling
     * of float64 uniforms (category = upper bound of {@code u * total} in the cumulative weights, capped at the last
     * positive one), so zero weights are never drawn; without: the {@code num_samples} largest of {@code p / E} for
     * exponential E ({@code -log(1 - u)}, zero weights last), as PyTorch 1.13. Its kernel checks the weights (negative,
     * infinite or NaN entries, rows summing to zero) with PyTorch's messages, naming the shape; a refused call has
     * already reserved its draws (as PyTorch's CPU kernel, which draws as it checks).
     */
    public static final OpDef MULTINOMIAL = OpDef.structured("multinomial").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("num_samples", "int", null), new Param("replacement", "bool", "False"), GENERATOR)
            .meta((in, g) -> {
                StridedView p = in[0];
                long k = (long) g[0];
                int dim = p.shape().length;
                if (dim != 1 && dim != 2) {
                    throw new IllegalArgumentException("multinomial(): prob_dist must be 1 or 2 dim, got shape " + Shapes.format(p.shape()));
                }
                if (!p.dtype().isFloatingPoint()) {
                    throw new IllegalArgumentException("multinomial only supports floating-point dtypes for input, got: " + p.dtype()
                            + " (shape " + Shapes.format(p.shape()) + ")");
                }
                if (k <= 0) throw new IllegalArgumentException("multinomial(): cannot sample n_sample <= 0 samples (n_sample = " + k + ")");
                long categories = p.shape()[dim - 1];
                if (g[1] == 0 && k > categories) {
                    throw new IllegalArgumentException("multinomial(): cannot sample n_sample > prob_dist.size(-1) samples without replacement"
                            + " (n_sample = " + k + ", categories = " + categories + ")");
                }
                if (categories > (1L << 24)) throw new IllegalArgumentException("multinomial(): number of categories cannot exceed 2^24");
                return new Meta.Output(dim == 1 ? new long[] {k} : new long[] {p.shape()[0], k}, DType.INT64);
            })
            .random(2, (n, t, in, g) -> {
                long[] shape = in[0].shape();
                long rows = shape.length == 1 ? 1 : shape[0];
                return uniformBlocks(g[1] != 0 ? n : rows * shape[shape.length - 1], DType.FLOAT64);
            })
            .doc("category indices drawn from each row of weights (float64 uniform draws: inverse CDF, or exponential keys)").build();

    // ------------------------------------------------------------------ factories (front ends traced as one op)

    private static final Param SIZE = new Param("size", "SymInt[]", null);
    private static final Param DTYPE = new Param("dtype", "ScalarType?", "None");
    private static final Param DEVICE = new Param("device", "Device?", "None");

    /**
     * {@code torch.rand(size)}: a new tensor filled by {@link #UNIFORM} in [0, 1). Traced scalars: the generator's id,
     * dtype, device type and index, then the size (see {@code ops.FrontEnds}).
     */
    public static final OpDef RAND = OpDef.frontEnd("rand", false).rule(DTypeRule.FLOATING_ONLY).signature(SIZE, GENERATOR, DTYPE, DEVICE)
            .random(0).doc("`Torch.rand`, `Torch.randLike`").build();

    /** {@code torch.randn(size)}: a new tensor filled by {@link #NORMAL}; traced scalars as {@link #RAND}'s. */
    public static final OpDef RANDN = OpDef.frontEnd("randn", false).rule(DTypeRule.FLOATING_ONLY).signature(SIZE, GENERATOR, DTYPE, DEVICE)
            .random(0).doc("`Torch.randn`, `Torch.randnLike`").build();

    /**
     * {@code torch.randint(low, high, size)}: a new tensor filled by {@link #RANDOM}; traced scalars: the generator's id,
     * dtype, device type and index, the bounds' exact halves (low, then high), then the size.
     */
    public static final OpDef RANDINT = OpDef.frontEnd("randint", false).rule(DTypeRule.SAME)
            .signature(new Param("low", "int", "0"), new Param("high", "int", null), SIZE, GENERATOR, DTYPE, DEVICE)
            .random(0).doc("`Torch.randint`, `Torch.randintLike`").build();

    /**
     * {@code torch.randperm(n)}: a new tensor filled by {@link #RANDPERM_OUT}; traced scalars: the generator's id, dtype,
     * device type and index, then n.
     */
    public static final OpDef RANDPERM = OpDef.frontEnd("randperm", false).rule(DTypeRule.SAME_NO_BOOL)
            .signature(new Param("n", "int", null), GENERATOR, DTYPE, DEVICE)
            .random(0).doc("`Torch.randperm`").build();


    // ------------------------------------------------------------------ scalars

    /** {@link #RANDOM}'s scalars for {@code [low, high)} drawn from the generator with id {@code generator}. */
    public static double[] randomScalars(long low, long high, long generator) {
        return new double[] {low, high, generator, low >> 32, low & 0xFFFF_FFFFL, high >> 32, high & 0xFFFF_FFFFL};
    }

    /** The int64 whose exact halves are scalars {@code at} and {@code at + 1}. */
    public static long exact(double[] g, int at) {
        return ((long) g[at] << 32) | (long) g[at + 1];
    }

    /** The kernel's scalars: the call's, then the generator's seed and first reserved block (as exact 32-bit halves). */
    public static double[] withState(double[] scalars, long seed, long firstBlock) {
        double[] k = Arrays.copyOf(scalars, scalars.length + 4);
        int n = scalars.length;
        k[n] = seed >> 32;
        k[n + 1] = seed & 0xFFFF_FFFFL;
        k[n + 2] = firstBlock >> 32;
        k[n + 3] = firstBlock & 0xFFFF_FFFFL;
        return k;
    }

    /** The generator's seed a random op's kernel got ({@link #withState}). */
    public static long seed(double[] kernelScalars) {
        return exact(kernelScalars, kernelScalars.length - 4);
    }

    /** The first Philox block reserved for the call ({@link #withState}). */
    public static long firstBlock(double[] kernelScalars) {
        return exact(kernelScalars, kernelScalars.length - 2);
    }

    private static Meta.Output floatingFill(String op, StridedView self) {
        if (!self.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected a floating point tensor, got " + self.dtype() + " of shape "
                    + Shapes.format(self.shape()));
        }
        return new Meta.Output(self.shape().clone(), self.dtype());
    }

    /** A scalar as PyTorch prints it in messages: integral values without a fraction. */
    private static String fmt(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
