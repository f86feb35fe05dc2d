package org.jtorch.op;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A small expression tree: a pointwise op's formula ({@link Math} nodes over the op's inputs and scalar
 * parameters) and every op's derivative or composition ({@link Op} nodes: calls of declared ops, evaluated
 * through the dispatcher). The same tree is evaluated in Java ({@link #compileArrays}), rendered to CUDA C
 * ({@link #toC}) and printed for docs/OPS.md ({@link #toString}).
 */
public sealed interface Expr {
    /** The op's {@code index}-th tensor input. */
    record In(int index, String name) implements Expr {
        public String toString() { return name; }
    }

    /**
     * The op's tensor inputs from {@code from} on: a trailing list parameter ({@code Tensor?[] indices}, null entries for
     * None), spliced into a call's tensor arguments where it stands (as the last of them).
     */
    record Rest(int from, String name) implements Expr {
        public String toString() { return name; }
    }

    /**
     * The op's scalar parameters from {@code from} on, negated where {@code negate}: a trailing list parameter
     * ({@code int[] pad}), spliced into a call's scalars where it stands (as the last of them).
     */
    record ScalarRest(int from, boolean negate, String name) implements Expr {
        public String toString() { return negate ? "-" + name : name; }
    }

    /**
     * The sizes of tensor input {@code index} when the op ran (derivatives.yaml's {@code self.sizes()}), spliced into a
     * call's scalars where it stands (as the last of them): autograd keeps the input's shape, not the input, so a view's
     * backward holds no buffer alive (derivatives only).
     */
    record InputSizes(int index, String name) implements Expr {
        public String toString() { return name + ".sizes()"; }
    }

    /**
     * The geometry of a contiguous tensor of input {@code index}'s sizes when the op ran: its rank, sizes, row-major strides
     * and a storage offset of 0, spliced into a call's scalars where it stands ({@code as_strided_backward}'s input geometry
     * for an op whose result is laid out contiguously, {@code as_strided_scatter}; derivatives only).
     */
    record ContiguousGeometry(int index, String name) implements Expr {
        public String toString() { return "TensorGeometry(" + name + ".contiguous())"; }
    }

    /**
     * The inverse of the permutation in the op's scalars from {@code from} on ({@code permute}'s backward), spliced into a
     * call's scalars where it stands (as the last of them).
     */
    record InversePermutation(int from, String name) implements Expr {
        public String toString() { return "inverse(" + name + ")"; }
    }

    /**
     * The gradients of every output of a call that returned several views ({@code split}, {@code unbind}), null where an
     * output got none, spliced into a call's tensor arguments where it stands (as the last of them; derivatives only).
     */
    record OutputGrads() implements Expr {
        public String toString() { return "grads"; }
    }

    /** The op's {@code index}-th scalar parameter; where it is NaN (PyTorch's None), {@code ifNone} instead. */
    record Scalar(int index, String name, double ifNone) implements Expr {
        public String toString() { return name; }
    }

    record Const(double value) implements Expr {
        public String toString() {
            return value == java.lang.Math.rint(value) && java.lang.Math.abs(value) < 1e15 ? Long.toString((long) value)
                    : Double.toString(value);
        }
    }

    /** Scalar math of a pointwise formula. */
    record Math(Fn fn, List<Expr> args) implements Expr {
        public Math {
            args = List.copyOf(args);
            if (args.size() != fn.arity()) throw new IllegalArgumentException(fn + " takes " + fn.arity() + " arguments");
        }

        public String toString() {
            return fn.name().toLowerCase() + "(" + args.stream().map(Expr::toString).collect(Collectors.joining(", ")) + ")";
        }
    }

    /** A call of a declared op: tensor arguments first, then the op's scalar parameters. */
    record Op(OpDef op, List<Expr> args) implements Expr {
        public Op {
            args = List.copyOf(args);
        }

        public String toString() {
            return op.name() + "(" + args.stream().map(Expr::toString).collect(Collectors.joining(", ")) + ")";
        }
    }

    /** The gradient flowing into the op's output (derivatives only). */
    record Grad() implements Expr {
        public String toString() { return "grad"; }
    }

    /**
     * The gradient flowing into output {@code index} of a multi-output op whose first {@link OpDef#gradOutputs} outputs are
     * differentiable (an LSTM cell's {@code hy} and {@code cy}); null where that output got none (derivatives only).
     */
    record OutputGrad(int index, String name) implements Expr {
        public String toString() { return "grad_" + name; }
    }

    /**
     * Which tensor inputs need a gradient, bit {@code i} for input {@code i}: a scalar, derivatives.yaml's
     * {@code grad_input_mask}, which lets one fused backward call skip the gradients nobody reads (derivatives only).
     */
    record GradInputMask() implements Expr {
        public String toString() { return "grad_input_mask"; }
    }

    /** The op's forward result (derivatives only). */
    record Result() implements Expr {
        public String toString() { return "result"; }
    }

    /**
     * Output {@code index} of a multi-output op, which autograd saved for the backward (derivatives only; output 0 is
     * {@link #RESULT}): max pooling's indices, batch norm's saved statistics.
     */
    record Output(int index, String name) implements Expr {
        public String toString() { return name; }

        /** The same output whatever it is called here ({@link #reads} looks for it by index). */
        @Override
        public boolean equals(Object o) { return o instanceof Output other && other.index == index; }

        @Override
        public int hashCode() { return Integer.hashCode(index); }
    }

    /**
     * Output {@code output} of {@code call}, a multi-output op's call: the derivatives of one op that select different
     * outputs of the same call share one evaluation of it (batch norm's fused backward gives all three gradients).
     */
    record Select(Op call, int output) implements Expr {
        public String toString() { return call + "[" + output + "]"; }
    }

    /**
     * {@code then} when the backward records a graph of its own (grad mode on: {@code create_graph}), else
     * {@code otherwise}: a fused backward kernel with no derivative of its own beside a form differentiable through its parts.
     */
    record IfGrad(Expr then, Expr otherwise) implements Expr {
        public String toString() { return "(" + then + " if create_graph else " + otherwise + ")"; }
    }

    /**
     * The part of {@code value} (a variadic op's gradient) that belongs to the input being differentiated, along dimension
     * {@code scalars[dim]}: its slice there ({@code cat}: a narrow at the sizes of the inputs before it), or with
     * {@code select} its index, the dimension removed ({@code stack}). A variadic op declares one derivative, evaluated
     * once per input. With {@code sizesFrom} at 0 or above, the slices' sizes are the op's scalars from there on (a list
     * whose inputs may be missing: {@code split}'s backward), not the inputs' shapes.
     */
    record Part(Expr value, int dim, boolean select, int sizesFrom) implements Expr {
        /** The slices' sizes from the inputs' shapes. */
        public Part(Expr value, int dim, boolean select) {
            this(value, dim, select, -1);
        }

        public String toString() { return (select ? "select" : "narrow") + "(" + value + ", dim, this input's " + (select ? "index" : "slice") + ")"; }
    }

    /** {@code cond ? a : b} elementwise ({@code torch.where}). */
    record Where(Expr cond, Expr a, Expr b) implements Expr {
        public String toString() { return "where(" + cond + ", " + a + ", " + b + ")"; }
    }

    /** Zeros of {@code like}'s shape and dtype. */
    record ZerosLike(Expr like) implements Expr {
        public String toString() { return "zeros_like(" + like + ")"; }
    }

    /** {@code value} converted to {@code like}'s dtype. */
    record CastLike(Expr value, Expr like) implements Expr {
        public String toString() { return value + ".to(" + like + ".dtype)"; }
    }

    /** {@code then} when optional tensor input {@code index} is given, else {@code otherwise}. */
    record IfPresent(int index, Expr then, Expr otherwise) implements Expr {
        public String toString() { return "(" + then + " if " + "input" + index + " else " + otherwise + ")"; }
    }

    /** {@code then} when scalar parameter {@code index} equals {@code value}, else {@code otherwise}. */
    record IfScalar(int index, double value, Expr then, Expr otherwise) implements Expr {
        public String toString() { return "(" + then + " if p" + index + " == " + value + " else " + otherwise + ")"; }
    }

    /**
     * A reduction's result-shaped {@code value} broadcast back over the reduced dimensions to the input's shape
     * (derivatives of reductions). A reduction called inside a tree reduces over the differentiated call's
     * dimensions with its {@code keepdim}, so its value can be broadcast back the same way.
     */
    record Unreduce(Expr value) implements Expr {
        public String toString() { return "unreduce(" + value + ")"; }
    }

    /** The number of input elements each output of a reduction combines: a scalar. */
    record Count() implements Expr {
        public String toString() { return "count"; }
    }

    /**
     * {@code op} (a reduction) of {@code value} over its last {@code count} dimensions, keeping them, with {@code param}
     * as the op's scalar ({@code var}'s correction; null for none): how a composite normalises over trailing dimensions (layer norm,
     * group norm), where no call's dimensions are there to reduce over.
     */
    record ReduceTrailing(OpDef op, Expr value, Expr count, Expr param) implements Expr {
        public String toString() {
            return op.name() + "(" + value + ", dims=last " + count + (param == null ? "" : ", " + param) + ", keepdim=True)";
        }
    }

    /** {@code op} (a reduction) of {@code value} over all its dimensions: a 0-dim result (a loss's {@code mean} or {@code sum}). */
    record ReduceAll(OpDef op, Expr value) implements Expr {
        public String toString() { return op.name() + "(" + value + ")"; }
    }

    /** The size of tensor {@code of} along dimension {@code dim}: a scalar read from a shape, not from data. */
    record Size(Expr of, int dim) implements Expr {
        public String toString() { return of + ".size(" + dim + ")"; }
    }

    /** {@code value} reshaped to {@code like}'s shape. */
    record ReshapeLike(Expr value, Expr like) implements Expr {
        public String toString() { return value + ".reshape_as(" + like + ")"; }
    }

    /** {@code value} in float32 when it is float16 or bfloat16, else itself: a composite computing low precision widened. */
    record Widened(Expr value) implements Expr {
        public String toString() { return "widened(" + value + ")"; }
    }

    // ------------------------------------------------------------------ building

    static Expr in(int index, String name) { return new In(index, name); }
    static Expr rest(int from, String name) { return new Rest(from, name); }
    static Expr scalar(int index, String name) { return new Scalar(index, name, Double.NaN); }
    static Expr c(double v) { return new Const(v); }
    static Expr math(Fn fn, Expr... args) { return new Math(fn, List.of(args)); }
    static Expr call(OpDef op, Expr... args) { return new Op(op, List.of(args)); }
    static Expr where(Expr cond, Expr a, Expr b) { return new Where(cond, a, b); }
    static Expr unreduce(Expr value) { return new Unreduce(value); }
    static Expr output(int index, String name) { return new Output(index, name); }
    static Expr outputGrad(int index, String name) { return new OutputGrad(index, name); }
    Expr GRAD = new Grad();
    Expr RESULT = new Result();
    Expr GRAD_INPUT_MASK = new GradInputMask();

    // ------------------------------------------------------------------ analysis

    /** Whether the tree reads {@code node} (an input, the result, the gradient) anywhere. */
    default boolean reads(Expr node) {
        if (this.equals(node)) return true;
        return switch (this) {
            case Math m -> m.args().stream().anyMatch(a -> a.reads(node));
            case Op o -> o.args().stream().anyMatch(a -> a.reads(node));
            case Where w -> w.cond().reads(node) || w.a().reads(node) || w.b().reads(node);
            case ZerosLike z -> z.like().reads(node);
            case CastLike cl -> cl.value().reads(node) || cl.like().reads(node);
            case IfPresent p -> p.then().reads(node) || p.otherwise().reads(node);
            case IfScalar p -> p.then().reads(node) || p.otherwise().reads(node);
            case Unreduce u -> u.value().reads(node);
            case ReduceTrailing r -> r.value().reads(node);
            case ReduceAll r -> r.value().reads(node);
            case Size z -> z.of().reads(node);
            case ReshapeLike r -> r.value().reads(node) || r.like().reads(node);
            case Widened w -> w.value().reads(node);
            case Select sel -> sel.call().reads(node);
            case Part p -> p.value().reads(node);
            case IfGrad p -> p.then().reads(node) || p.otherwise().reads(node);
            default -> false;
        };
    }

    /** Whether the tree reads tensor input {@code index}. */
    default boolean readsInput(int index) {
        return switch (this) {
            case In i -> i.index() == index;
            case Rest r -> index >= r.from();
            case Math m -> m.args().stream().anyMatch(a -> a.readsInput(index));
            case Op o -> o.args().stream().anyMatch(a -> a.readsInput(index));
            case Where w -> w.cond().readsInput(index) || w.a().readsInput(index) || w.b().readsInput(index);
            case ZerosLike z -> z.like().readsInput(index);
            case CastLike cl -> cl.value().readsInput(index) || cl.like().readsInput(index);
            case IfPresent p -> p.then().readsInput(index) || p.otherwise().readsInput(index);
            case IfScalar p -> p.then().readsInput(index) || p.otherwise().readsInput(index);
            case Unreduce u -> u.value().readsInput(index);
            case ReduceTrailing r -> r.value().readsInput(index);
            case ReduceAll r -> r.value().readsInput(index);
            case Size z -> z.of().readsInput(index);
            case ReshapeLike r -> r.value().readsInput(index) || r.like().readsInput(index);
            case Widened w -> w.value().readsInput(index);
            case Select sel -> sel.call().readsInput(index);
            case Part p -> p.value().readsInput(index);
            case IfGrad p -> p.then().readsInput(index) || p.otherwise().readsInput(index);
            default -> false;
        };
    }

    /** Whether the tree is scalar only (constants, parameters and math on them): a number, not a tensor. */
    default boolean isScalar() {
        return switch (this) {
            case Const c -> true;
            case Scalar s -> true;
            case ScalarRest s -> true;
            case InputSizes s -> true;
            case ContiguousGeometry g -> true;
            case InversePermutation p -> true;
            case Count c -> true;
            case GradInputMask m -> true;
            case Size z -> true;
            case Math m -> m.args().stream().allMatch(Expr::isScalar);
            default -> false;
        };
    }

    /** The value of a scalar-only tree for parameters {@code params} ({@link Count} needs the call: the dispatcher's compiler). */
    default double scalarValue(double[] params) {
        return switch (this) {
            case Const c -> c.value();
            case Scalar s -> {
                double v = params[s.index()];
                yield v != v ? s.ifNone() : v;
            }
            case Math m -> m.fn().apply(m.args().get(0).scalarValue(params),
                    m.args().size() > 1 ? m.args().get(1).scalarValue(params) : 0,
                    m.args().size() > 2 ? m.args().get(2).scalarValue(params) : 0);
            default -> throw new IllegalStateException(this + " is not a scalar expression");
        };
    }

    // ------------------------------------------------------------------ Java reference

    /** A formula over any number of inputs and parameters in floating compute: a fused kernel's reference. */
    interface ArrayFormula {
        double eval(double[] x, double[] p);
    }

    /** Compiles a {@link Math} tree over inputs {@code x[i]} and parameters {@code p[j]} for floating compute. */
    default ArrayFormula compileArrays() {
        return switch (this) {
            case In i -> {
                int k = i.index();
                yield (x, p) -> x[k];
            }
            case Scalar s -> {
                int j = s.index();
                double none = s.ifNone();
                yield (x, p) -> p[j] != p[j] ? none : p[j];
            }
            case Const c -> {
                double v = c.value();
                yield (x, p) -> v;
            }
            case Math m -> {
                Fn fn = m.fn();
                ArrayFormula a = m.args().get(0).compileArrays();
                if (fn.arity() == 1) yield (x, p) -> fn.apply(a.eval(x, p), 0, 0);
                ArrayFormula b = m.args().get(1).compileArrays();
                if (fn.arity() == 2) yield (x, p) -> fn.apply(a.eval(x, p), b.eval(x, p), 0);
                ArrayFormula c = m.args().get(2).compileArrays();
                yield (x, p) -> fn.apply(a.eval(x, p), b.eval(x, p), c.eval(x, p));
            }
            default -> throw new IllegalStateException(this + " is not a pointwise formula");
        };
    }

    /** Whether the tree is a pointwise formula: inputs, parameters, constants and {@link Math} on them. */
    default boolean isFormula() {
        return switch (this) {
            case In i -> true;
            case Scalar s -> true;
            case Const c -> true;
            case Math m -> m.args().stream().allMatch(Expr::isFormula);
            default -> false;
        };
    }

    /** A formula over any number of inputs and parameters in integer compute (Java's {@code (long)} of each parameter). */
    interface LongArrayFormula {
        long eval(long[] x, long[] p);
    }

    /** Compiles a {@link Math} tree over inputs {@code x[i]} and parameters {@code p[j]} for integer compute. */
    default LongArrayFormula compileLongArrays() {
        return switch (this) {
            case In i -> {
                int k = i.index();
                yield (x, p) -> x[k];
            }
            case Scalar s -> {
                int j = s.index();
                yield (x, p) -> p[j];
            }
            case Const c -> {
                long v = (long) c.value();
                yield (x, p) -> v;
            }
            case Math m -> {
                Fn fn = m.fn();
                LongArrayFormula a = m.args().get(0).compileLongArrays();
                if (fn.arity() == 1) yield (x, p) -> fn.applyLong(a.eval(x, p), 0, 0);
                LongArrayFormula b = m.args().get(1).compileLongArrays();
                if (fn.arity() == 2) yield (x, p) -> fn.applyLong(a.eval(x, p), b.eval(x, p), 0);
                LongArrayFormula c = m.args().get(2).compileLongArrays();
                yield (x, p) -> fn.applyLong(a.eval(x, p), b.eval(x, p), c.eval(x, p));
            }
            default -> throw new IllegalStateException(this + " is not a pointwise formula");
        };
    }

    // ------------------------------------------------------------------ CUDA C

    /**
     * The formula as a C expression over compute type {@code A} (a floating type, or {@code jt_i64} for integer
     * compute), inputs named {@code x0, x1} and parameters {@code p0, p1} (doubles): what {@link #compileArrays} and
     * {@link #compileLongArrays} compute, a None parameter taking its {@link Scalar#ifNone} value in floating compute.
     */
    default String toC() {
        return switch (this) {
            case In i -> "x" + i.index();
            case Scalar s -> "jt::scalar_param<A>(p" + s.index() + ", " + cDouble(s.ifNone()) + ")";
            case Const c -> "A(" + cDouble(c.value()) + ")";
            // a +- b * c with one rounding (add/sub with alpha, as ATen's fmadd): contraction is the compiler's choice otherwise
            case Math m when (m.fn() == Fn.ADD || m.fn() == Fn.SUB) && m.args().get(1) instanceof Math p && p.fn() == Fn.MUL ->
                    (m.fn() == Fn.ADD ? "jt::mul_add(" : "jt::mul_sub(") + m.args().get(0).toC() + ", " + p.args().get(0).toC() + ", "
                            + p.args().get(1).toC() + ")";
            case Math m -> String.format(m.fn().c(), m.args().stream().map(Expr::toC).toArray());
            default -> throw new IllegalStateException(this + " is not a pointwise formula");
        };
    }

    private static String cDouble(double v) {
        if (Double.isNaN(v)) return "jt::quiet_nan<double>()";
        if (Double.isInfinite(v)) return v > 0 ? "(1.0 / 0.0)" : "(-1.0 / 0.0)";
        return Double.toString(v);
    }
}
