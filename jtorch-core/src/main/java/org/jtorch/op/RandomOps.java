package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;

import java.util.Arrays;
import java.util.List;
import org.jtorch.DType;

/**
 * The random ops ({@link OpDef#isRandom}), with PyTorch's names: the in-place fills {@code uniform_}, {@code normal_} and
 * {@code random_} (under {@code Torch.rand}, {@code randn}, {@code randint} and {@code nn.Init}), {@code bernoulli} (of a
 * tensor of probabilities, or of one probability), and dropout's {@code native_dropout} (output and mask) with its
 * gradient {@code native_dropout_backward}; the factories as front ends traced as one op.
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
            .meta((in, g) -> floatingFill("uniform_", in[0]))
            .random(2, (n, t, g) -> uniformBlocks(n, t))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("UniformBackward0")
            .doc("uniform in [from, to), in place (`Torch.rand`, `Init.uniform_`)").build();

    /** {@code self.normal_(mean, std)}: Box-Muller pairs, two elements from half a block. The old values get a zero gradient. */
    public static final OpDef NORMAL = OpDef.structured("normal").rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, Param.scalar("mean", "float", "0"), Param.scalar("std", "float", "1"), GENERATOR)
            .meta((in, g) -> {
                if (!(g[1] >= 0)) throw new IllegalArgumentException("normal_: expects std >= 0.0, but found std " + g[1]);
                return floatingFill("normal_", in[0]);
            })
            .random(2, (n, t, g) -> ceilDiv(n, 4))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("NormalBackward0")
            .doc("normal samples of mean and std, in place (`Torch.randn`, `Init.normal_`)").build();

    /**
     * {@code self.random_(from, to)}: integers uniform in {@code [from, to)}, element {@code i} from half of block {@code i / 2}.
     * Scalars: {@code from}, {@code to} and the generator as doubles, then the bounds' exact int64 halves ({@link #randomScalars}).
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
            .random(2, (n, t, g) -> ceilDiv(n, 2))
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
            .random(0, (n, t, g) -> ceilDiv(n, 2))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("BernoulliBackward0")
            .doc("1 with probability self, elementwise (float64 draws)").build();

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
            .random(1, (n, t, g) -> ceilDiv(n, 2))
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
            .random(2, (n, t, g) -> g[1] != 0 ? uniformBlocks(n, t) : 0)
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
                if (!grad.device().equals(mask.device())) {
                    throw new IllegalArgumentException("native_dropout_backward: expected all tensors on one device, got grad_output on "
                            + grad.device() + " and mask on " + mask.device());
                }
                return new Meta.Output(grad.shape().clone(), grad.dtype());
            })
            .derivatives(() -> Arrays.asList(Expr.call(RandomOps.NATIVE_DROPOUT_BACKWARD, GRAD, Expr.in(1, "mask"), Expr.scalar(0, "scale")),
                    null))
            .doc("grad_output * mask * scale").build();

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

    /** {@code torch.randperm(n)} on the CPU (a Fisher-Yates shuffle); traced scalars: the generator's id, then n. */
    public static final OpDef RANDPERM = OpDef.frontEnd("randperm", false).rule(DTypeRule.INTEGRAL_OR_BOOL)
            .signature(new Param("n", "int", null), GENERATOR)
            .random(0).doc("`Torch.randperm`").build();

    /**
     * {@code torch.multinomial(self, num_samples, replacement)}: category indices drawn from each row; traced scalars:
     * num_samples, replacement, the generator's id.
     */
    public static final OpDef MULTINOMIAL = OpDef.frontEnd("multinomial", false).rule(DTypeRule.FLOATING_ONLY)
            .signature(SELF, new Param("num_samples", "int", null), new Param("replacement", "bool", "False"), GENERATOR)
            .random(2).doc("`Tensor.multinomial` (float64 uniform draws: inverse CDF, or exponential keys)").build();

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

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
