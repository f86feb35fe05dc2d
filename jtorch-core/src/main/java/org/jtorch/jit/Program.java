package org.jtorch.jit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;

/**
 * A traced graph compiled into steps: chains of float32 pointwise ops fused into one generated kernel each (their
 * intermediates never reach memory), every other op replayed through the dispatcher. Dead ops are dropped.
 * Intermediates are closed after their last use.
 */
final class Program {
    /** One step: a fused group or one replayed op, producing the value of {@code node}. */
    private sealed interface Step permits Fused, Replayed {
        Graph.Node node();
    }

    /** A fused group: {@code formula} over {@code inputs}, computed at {@code node}'s shape by {@code kernel}. */
    private record Fused(Graph.Node node, Expr formula, List<Graph.Value> inputs, int ops, FormulaKernel kernel) implements Step {}

    private record Replayed(Graph.Node node) implements Step {}

    private final Graph graph;
    private final List<Step> steps = new ArrayList<>();
    /** For each node id, the index of the last step reading it (its value is closed after that step). */
    private final Map<Integer, Integer> lastUse = new HashMap<>();

    Program(Graph graph) {
        this.graph = graph;
        plan();
    }

    // ------------------------------------------------------------------ planning

    private void plan() {
        Map<Graph.Node, Integer> uses = new IdentityHashMap<>();
        Map<Graph.Node, Boolean> live = new IdentityHashMap<>();
        markLive(graph.output, live);
        if (graph.output instanceof Graph.Node out) uses.merge(out, 1, Integer::sum);
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n)) continue;
            for (Graph.Value v : n.inputs) if (v instanceof Graph.Node p) uses.merge(p, 1, Integer::sum);
        }
        // A fusable node is folded into its only consumer when that consumer is fusable and of the same size.
        Map<Graph.Node, Boolean> inlined = new IdentityHashMap<>();
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n) || !fusable(n)) continue;
            for (Graph.Value v : n.inputs) {
                if (v instanceof Graph.Node p && fusable(p) && uses.get(p) == 1 && Shapes.numel(p.shape) == Shapes.numel(n.shape)
                        && p.device.equals(n.device)) {
                    inlined.put(p, true);
                }
            }
        }
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n) || inlined.containsKey(n)) continue;
            Step step = fusable(n) ? fuse(n, inlined) : null;
            steps.add(step != null ? step : new Replayed(n));
        }
        for (int s = 0; s < steps.size(); s++) {
            for (Graph.Value v : reads(steps.get(s))) if (v instanceof Graph.Node p) lastUse.put(p.id, s);
        }
    }

    private static void markLive(Graph.Value v, Map<Graph.Node, Boolean> live) {
        if (!(v instanceof Graph.Node n) || live.containsKey(n)) return;
        live.put(n, true);
        for (Graph.Value in : n.inputs) if (in != null) markLive(in, live);
    }

    private static List<Graph.Value> reads(Step s) {
        return switch (s) {
            case Fused f -> f.inputs();
            case Replayed r -> r.node().inputs;
        };
    }

    /** A float32 pointwise op with a formula, on a device that compiles formulas. */
    private static boolean fusable(Graph.Node n) {
        if (!n.op.kind().isPointwise() || n.op.formula() == null || n.dtype != DType.FLOAT32) return false;
        if (KernelRegistry.formulaCompiler(n.device.type()) == null) return false;
        for (Graph.Value v : n.inputs) {
            if (v == null) return false;
            if (v instanceof Graph.Constant c && c.isNumber()) continue;
            if (v.dtype() != DType.FLOAT32) return false;
        }
        return true;
    }

    /** The group ending at {@code root}, or null when it is a single op (the eager kernel serves that as well). */
    private Fused fuse(Graph.Node root, Map<Graph.Node, Boolean> inlined) {
        Map<Graph.Value, Integer> inputIndex = new LinkedHashMap<>();
        int[] ops = {0};
        Expr formula = fold(tree(root, inlined, inputIndex, ops));
        if (ops[0] < 2) return null;
        List<Graph.Value> inputs = new ArrayList<>(inputIndex.keySet());
        FormulaKernel kernel = KernelRegistry.formulaCompiler(root.device.type()).compile(formula, inputs.size());
        return new Fused(root, formula, inputs, ops[0], kernel);
    }

    /** {@code n}'s formula with its scalars baked in and its inputs replaced by inlined producers or group inputs. */
    private Expr tree(Graph.Node n, Map<Graph.Node, Boolean> inlined, Map<Graph.Value, Integer> inputIndex, int[] ops) {
        ops[0]++;
        List<Expr> args = new ArrayList<>();
        for (Graph.Value v : n.inputs) {
            if (v instanceof Graph.Node p && inlined.containsKey(p)) args.add(tree(p, inlined, inputIndex, ops));
            else if (v instanceof Graph.Constant c && c.isNumber()) args.add(new Expr.Const((float) c.tensor.item()));
            else args.add(new Expr.In(inputIndex.computeIfAbsent(v, k -> inputIndex.size()), Graph.name(v)));
        }
        return substitute(n.op.formula(), args, n.scalars);
    }

    private static Expr substitute(Expr e, List<Expr> args, double[] scalars) {
        return switch (e) {
            case Expr.In in -> args.get(in.index());
            case Expr.Scalar s -> {
                double v = s.index() < scalars.length ? scalars[s.index()] : Double.NaN;
                yield new Expr.Const(v != v ? s.ifNone() : v);
            }
            case Expr.Math m -> new Expr.Math(m.fn(), m.args().stream().map(a -> substitute(a, args, scalars)).toList());
            default -> e;
        };
    }

    /** Constant folding: functions of constants become constants, and multiplying by one disappears. */
    static Expr fold(Expr e) {
        if (!(e instanceof Expr.Math m)) return e;
        List<Expr> args = m.args().stream().map(Program::fold).toList();
        if (args.stream().allMatch(a -> a instanceof Expr.Const)) {
            double[] v = args.stream().mapToDouble(a -> ((Expr.Const) a).value()).toArray();
            return new Expr.Const(m.fn().apply(v[0], v.length > 1 ? v[1] : 0, v.length > 2 ? v[2] : 0));
        }
        if (m.fn() == Fn.MUL) {
            if (isOne(args.get(0))) return args.get(1);
            if (isOne(args.get(1))) return args.get(0);
        }
        return new Expr.Math(m.fn(), args);
    }

    private static boolean isOne(Expr e) {
        return e instanceof Expr.Const c && c.value() == 1.0;
    }

    // ------------------------------------------------------------------ running

    Tensor run(Tensor[] inputs) {
        Tensor[] values = new Tensor[graph.nodes.size()];
        try {
            for (int s = 0; s < steps.size(); s++) {
                Step step = steps.get(s);
                Graph.Node node = step.node();
                values[node.id] = switch (step) {
                    case Fused f -> runFused(f, inputs, values);
                    case Replayed r -> replay(r.node(), inputs, values);
                };
                for (Graph.Value v : reads(step)) {
                    if (v instanceof Graph.Node p && lastUse.get(p.id) == s && p != graph.output && values[p.id] != null) {
                        values[p.id].close();
                        values[p.id] = null;
                    }
                }
            }
            Tensor out = resolve(graph.output, inputs, values);
            if (graph.output instanceof Graph.Node n) values[n.id] = null;
            return out;
        } finally {
            for (Tensor t : values) if (t != null) t.close();
        }
    }

    private static Tensor resolve(Graph.Value v, Tensor[] inputs, Tensor[] values) {
        return switch (v) {
            case null -> null;
            case Graph.Input i -> inputs[i.index()];
            case Graph.Constant c -> c.tensor;
            case Graph.Node n -> values[n.id];
        };
    }

    private static Tensor runFused(Fused f, Tensor[] inputs, Tensor[] values) {
        Graph.Node root = f.node();
        Tensor out = Tensor.empty(root.shape, DType.FLOAT32, root.device);
        List<Graph.Value> in = f.inputs();
        Tensor[] broadcast = new Tensor[in.size()];
        StridedView[] views = new StridedView[in.size()];
        try {
            for (int k = 0; k < views.length; k++) {
                Tensor source = resolve(in.get(k), inputs, values);
                Tensor b = source.broadcastTo(root.shape);
                // broadcastTo returns the tensor itself when the shape already matches: only a new view is closed here.
                if (b != source) broadcast[k] = b;
                views[k] = Dispatcher.view(b);
            }
            Backends.hold("jit", out, null, null);
            try {
                f.kernel().run(root.device.index(), DType.FLOAT32, Dispatcher.view(out), views, new double[0]);
            } finally {
                Backends.drop(out, null, null);
            }
        } finally {
            for (Tensor b : broadcast) if (b != null) b.close();
        }
        return out;
    }

    private static Tensor replay(Graph.Node n, Tensor[] inputs, Tensor[] values) {
        Tensor[] args = new Tensor[n.inputs.size()];
        for (int k = 0; k < args.length; k++) args[k] = resolve(n.inputs.get(k), inputs, values);
        double[] s = n.scalars;
        OpDef op = n.op;
        return switch (op.kind()) {
            case UNARY -> Dispatcher.unary(op, args[0], s.length > 0 ? s[0] : 0, s.length > 1 ? s[1] : 0);
            case BINARY -> Dispatcher.binary(op, args[0], args[1], s.length > 0 ? s[0] : 1);
            case REDUCTION -> Dispatcher.reduce(op, args[0], n.reduce, resultDtype(op, args[0], n.dtype), s.length > 0 ? s[0] : 0);
            case ALONG_DIM -> Dispatcher.alongDim(op, args[0], (int) s[0], null);
            case COMPOSITE -> Dispatcher.call(op, args, s);
        };
    }

    /** The dtype a reduction was asked for: null where the op's own rule gives the traced result type. */
    private static DType resultDtype(OpDef op, Tensor x, DType traced) {
        DType natural = op.resultType(op.computeType(x.dtype(), Torch.defaultDtype()));
        return natural == traced ? null : traced;
    }

    // ------------------------------------------------------------------ explaining

    int fusedGroups() {
        return (int) steps.stream().filter(s -> s instanceof Fused).count();
    }

    int kernelLaunches() {
        return steps.size();
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        for (Step step : steps) {
            switch (step) {
                case Fused f -> s.append(f.node()).append(" = fused ").append(f.ops()).append(" ops over (")
                        .append(String.join(", ", f.inputs().stream().map(Graph::name).toList())).append("): ")
                        .append(f.formula()).append('\n');
                case Replayed r -> s.append(r.node()).append(" = ").append(r.node().op.name()).append(" (eager)\n");
            }
        }
        return s.toString();
    }
}
