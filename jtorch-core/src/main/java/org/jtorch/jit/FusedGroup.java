package org.jtorch.jit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.OpDef;
import org.jtorch.op.RandomOps;

/**
 * A group of pointwise ops fused into one formula: the ops as a tree (each op's arguments are ops folded into it,
 * inputs of the group, or Java numbers baked in), the formula of the whole, and, for autograd, the formula of each
 * input's gradient. The gradients come from the registry's derivatives: each op's derivative, written with ops, is
 * turned into a formula by inlining the formulas of the ops it calls, with the op's inputs, result and incoming
 * gradient replaced by their formulas, and chained through the tree in reverse. Intermediates are recomputed in
 * the backward formula, never saved; a dropout's keep decisions are not (the forward writes its mask, the backward
 * reads it).
 */
final class FusedGroup {
    /** An op of the group and its arguments: each an {@link OpTree} folded in, or a leaf formula (a group input or a constant). */
    record OpTree(Graph.Node node, List<Object> args) {}

    /** Thrown where a derivative uses something a formula cannot express: the group's backward is not fused then. */
    static final class NotAFormula extends RuntimeException {
        NotAFormula(String message) {
            super(message, null, false, false);
        }
    }

    final OpTree root;
    final List<Graph.Value> inputs;
    /**
     * The group's training dropouts ({@link #isDropout}) in trace order: dropout {@code j}'s factor (1 / (1 - p) where
     * kept, else 0) is formula input {@code inputs.size() + j} of {@link #formula}, drawn inside the kernel
     * ({@link org.jtorch.op.FormulaKernel.Draws}), never stored, and input {@code inputs.size() + 1 + j} of each gradient
     * (after the incoming gradient), read there from the keep mask the forward's kernel wrote.
     */
    final List<Graph.Node> dropouts;
    final Expr formula;
    final int ops;
    /** The formula input of dropout 0's factor while a formula is built: after the inputs, and after the gradient in a backward. */
    private int drawBase;

    private FusedGroup(OpTree root, List<Graph.Value> inputs, List<Graph.Node> dropouts, int ops) {
        this.root = root;
        this.inputs = inputs;
        this.dropouts = dropouts;
        this.ops = ops;
        this.drawBase = inputs.size();
        this.formula = Program.fold(forward(root));
    }

    /**
     * A training dropout of float32 whose keep decisions a formula can draw: {@code native_dropout(x, p, train=1)} with
     * {@code 0 < p < 1} (the front end replaces p = 0 by an alias and p = 1 by a multiplication by zero).
     */
    static boolean isDropout(Graph.Node n) {
        return n.op == RandomOps.NATIVE_DROPOUT && n.scalars.length >= 3 && n.scalars[1] != 0 && n.scalars[0] > 0 && n.scalars[0] < 1;
    }

    /**
     * Dropout's factor, a formula input the kernel fills ({@link org.jtorch.op.FormulaKernel.Draws}): {@link #scale} where
     * the float32 uniform is below {@link #keepBelow}, else 0, as eager's kernel computes it; the output is {@code x}
     * times it, the gradient {@code grad} times it ({@code native_dropout_backward}).
     */
    private Expr dropoutFactor(Graph.Node n) {
        return new Expr.In(drawBase + dropouts.indexOf(n), "dropout" + n.id);
    }

    /** The float32 threshold of dropout {@code n}'s uniforms: kept below {@code 1 - p}. */
    static float keepBelow(Graph.Node n) {
        return (float) (1 - n.scalars[0]);
    }

    /** Dropout {@code n}'s factor where kept: {@code 1 / (1 - p)} rounded to float32. */
    static float scale(Graph.Node n) {
        return (float) (1.0 / (1 - n.scalars[0]));
    }

    /** The group ending at {@code root}, folding in the nodes {@code inlined} says are folded into their consumer. */
    static FusedGroup of(Graph.Node root, java.util.function.Predicate<Graph.Node> inlined) {
        Map<Graph.Value, Integer> index = new LinkedHashMap<>();
        OpTree tree = tree(root, inlined, index);
        // A node read twice by the group (x * x) appears twice in the tree but is one op.
        List<Graph.Node> distinct = new ArrayList<>();
        collect(tree, distinct);
        List<Graph.Node> dropouts = distinct.stream().distinct().filter(FusedGroup::isDropout)
                .sorted(java.util.Comparator.comparingInt(n -> n.id)).toList();
        return new FusedGroup(tree, new ArrayList<>(index.keySet()), dropouts, (int) distinct.stream().distinct().count());
    }

    private static OpTree tree(Graph.Node n, java.util.function.Predicate<Graph.Node> inlined, Map<Graph.Value, Integer> index) {
        List<Object> args = new ArrayList<>();
        for (Graph.Value v : n.inputs) {
            if (v instanceof Graph.Node p && inlined.test(p)) args.add(tree(p, inlined, index));
            else if (v instanceof Graph.Constant c && c.isNumber()) args.add(new Expr.Const((float) c.tensor.item()));
            else args.add(new Expr.In(index.computeIfAbsent(v, k -> index.size()), Graph.name(v)));
        }
        return new OpTree(n, args);
    }

    /** Every node of the group, producers first. */
    List<Graph.Node> nodes() {
        List<Graph.Node> out = new ArrayList<>();
        collect(root, out);
        return out;
    }

    private static void collect(OpTree t, List<Graph.Node> out) {
        for (Object a : t.args()) if (a instanceof OpTree sub) collect(sub, out);
        out.add(t.node());
    }

    // ------------------------------------------------------------------ forward

    private Expr arg(Object a) {
        return a instanceof OpTree t ? forward(t) : (Expr) a;
    }

    /** The formula of {@code t}: its op's formula over its arguments' formulas, its scalars baked in. */
    Expr forward(OpTree t) {
        List<Expr> args = t.args().stream().map(this::arg).toList();
        if (isDropout(t.node())) return new Expr.Math(Fn.MUL, List.of(args.get(0), dropoutFactor(t.node())));
        return substitute(t.node().op.formula(), args, t.node().scalars);
    }

    /** {@code formula} with input k replaced by {@code args[k]} and each scalar parameter by its value. */
    private static Expr substitute(Expr formula, List<Expr> args, double[] scalars) {
        return switch (formula) {
            case Expr.In in -> args.get(in.index());
            case Expr.Scalar s -> {
                double v = s.index() < scalars.length ? scalars[s.index()] : Double.NaN;
                yield new Expr.Const(v != v ? s.ifNone() : v);
            }
            case Expr.Math m -> new Expr.Math(m.fn(), m.args().stream().map(a -> substitute(a, args, scalars)).toList());
            default -> formula;
        };
    }

    // ------------------------------------------------------------------ backward

    /**
     * For each group input, the formula of its gradient over the group's inputs, the incoming gradient (group input
     * number {@code inputs.size()}) and the dropouts' factors after it (read from their masks), at the group's output shape; null where no
     * gradient flows.
     */
    Expr[] gradients() {
        Expr[] acc = new Expr[inputs.size()];
        drawBase = inputs.size() + 1;
        try {
            backprop(root, new Expr.In(inputs.size(), "grad"), acc);
        } finally {
            drawBase = inputs.size();
        }
        for (int k = 0; k < acc.length; k++) if (acc[k] != null) acc[k] = Program.fold(acc[k]);
        return acc;
    }

    private void backprop(OpTree t, Expr grad, Expr[] acc) {
        OpDef op = t.node().op;
        if (!op.isDifferentiable()) return;
        if (isDropout(t.node())) {
            // native_dropout_backward(grad, mask, 1 / (1 - p)), the mask the forward's kernel wrote.
            propagate(t.args().get(0), new Expr.Math(Fn.MUL, List.of(grad, dropoutFactor(t.node()))), acc);
            return;
        }
        List<Expr> derivatives = op.derivatives();
        Expr result = forward(t);
        for (int k = 0; k < t.args().size(); k++) {
            Object a = t.args().get(k);
            if (a instanceof Expr.Const || k >= derivatives.size() || derivatives.get(k) == null) continue;
            propagate(a, toFormula(derivatives.get(k), t, grad, result), acc);
        }
    }

    /** Sends gradient {@code g} into argument {@code a}: through its op, or added to a group input's. */
    private void propagate(Object a, Expr g, Expr[] acc) {
        if (a instanceof OpTree sub) {
            backprop(sub, g, acc);
        } else if (a instanceof Expr.In in) {
            int i = in.index();
            acc[i] = acc[i] == null ? g : new Expr.Math(Fn.ADD, List.of(acc[i], g));
        }
    }

    /** A derivative of {@code t}'s op (written with ops) as a formula. */
    private Expr toFormula(Expr d, OpTree t, Expr grad, Expr result) {
        double[] scalars = t.node().scalars;
        return switch (d) {
            case Expr.Grad g -> grad;
            case Expr.Result r -> result;
            case Expr.In in -> arg(t.args().get(in.index()));
            case Expr.Scalar s -> {
                double v = s.index() < scalars.length ? scalars[s.index()] : Double.NaN;
                yield new Expr.Const(v != v ? s.ifNone() : v);
            }
            case Expr.Const c -> c;
            case Expr.Math m -> new Expr.Math(m.fn(), m.args().stream().map(a -> toFormula(a, t, grad, result)).toList());
            case Expr.Where w -> new Expr.Math(Fn.SELECT,
                    List.of(toFormula(w.cond(), t, grad, result), toFormula(w.a(), t, grad, result), toFormula(w.b(), t, grad, result)));
            case Expr.ZerosLike z -> new Expr.Const(0);
            // Every value of a group is float32: a cast to the gradient's dtype is the value itself.
            case Expr.CastLike c -> toFormula(c.value(), t, grad, result);
            case Expr.IfScalar p -> {
                double v = p.index() < scalars.length ? scalars[p.index()] : Double.NaN;
                yield toFormula(v == p.value() ? p.then() : p.otherwise(), t, grad, result);
            }
            case Expr.Op o -> call(o, t, grad, result);
            default -> throw new NotAFormula(t.node().op.name() + "'s derivative uses " + d);
        };
    }

    /** A call of a pointwise op in a derivative: its formula, tensor arguments first, then its scalar parameters. */
    private Expr call(Expr.Op o, OpTree t, Expr grad, Expr result) {
        OpDef op = o.op();
        if (!op.kind().isPointwise() || op.formula() == null) throw new NotAFormula("a derivative calls " + op.name() + ", which has no formula");
        int tensors = op.kind() == OpDef.Kind.UNARY ? 1 : 2;
        List<Expr> args = new ArrayList<>();
        for (int k = 0; k < tensors; k++) args.add(toFormula(o.args().get(k), t, grad, result));
        // Scalar parameters as the dispatcher's derivative compiler passes them: a unary op's missing ones are 0,
        // a binary op's alpha is 1.
        double[] fixed = new double[2];
        List<Expr> scalarArgs = new ArrayList<>();
        for (int k = tensors; k < o.args().size(); k++) scalarArgs.add(toFormula(o.args().get(k), t, grad, result));
        if (tensors == 2) fixed[0] = 1;
        return substituteScalars(op.formula(), args, scalarArgs, fixed);
    }

    private static Expr substituteScalars(Expr formula, List<Expr> args, List<Expr> scalarArgs, double[] fixed) {
        return switch (formula) {
            case Expr.In in -> args.get(in.index());
            case Expr.Scalar s -> s.index() < scalarArgs.size() ? scalarArgs.get(s.index()) : new Expr.Const(fixed[s.index()]);
            case Expr.Math m -> new Expr.Math(m.fn(), m.args().stream().map(a -> substituteScalars(a, args, scalarArgs, fixed)).toList());
            default -> formula;
        };
    }
}
