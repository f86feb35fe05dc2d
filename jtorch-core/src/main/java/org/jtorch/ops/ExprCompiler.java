package org.jtorch.ops;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.autograd.Gradients;
import org.jtorch.op.Expr;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.types.DType;

/**
 * Compiles a derivative or composition tree ({@link Expr} with {@link Expr.Op} nodes) once into nested
 * closures that dispatch its ops, so that a backward or a composite call walks no tree and tests no node
 * type: the declared form stays the one source, this is only how the dispatcher runs it.
 */
final class ExprCompiler {
    private ExprCompiler() {}

    /**
     * What a tree reads: the op's inputs (null where not saved), which optional inputs were given, its
     * result, the incoming gradient, its scalar parameters (NaN for None), for a reduction its call, and the values of
     * the subtrees a composition uses more than once, once computed ({@link #compileComposition}; null elsewhere), and a
     * multi-output op's outputs that its derivatives read ({@link Expr.Output}; null elsewhere), and the inputs' shapes
     * when the op ran ({@link Expr.InputSizes}; null where no derivative is evaluated).
     */
    record Values(Tensor[] inputs, boolean[] present, Tensor result, Tensor grad, double[] scalars, ReduceCall reduction,
                  Object[] shared, Tensor[] outputs, Part part, Tensor[] grads, long gradInputMask, long[][] inputShapes) {
        /** Without the gradients of further outputs (an op whose first output alone is differentiable), every input's gradient asked. */
        Values(Tensor[] inputs, boolean[] present, Tensor result, Tensor grad, double[] scalars, ReduceCall reduction,
               Object[] shared, Tensor[] outputs, Part part) {
            this(inputs, present, result, grad, scalars, reduction, shared, outputs, part, null, -1L, null);
        }

        Values(Tensor[] inputs, boolean[] present, Tensor result, Tensor grad, double[] scalars, ReduceCall reduction) {
            this(inputs, present, result, grad, scalars, reduction, null, null, null);
        }

        Values(Tensor[] inputs, boolean[] present, Tensor result, Tensor grad, double[] scalars) {
            this(inputs, present, result, grad, scalars, null, null, null, null);
        }
    }

    /** The input a variadic op's derivative is evaluated for ({@link Expr.Part}): its position and every input's shape. */
    record Part(int index, long[][] shapes) {}

    /**
     * One reduction call, resolved: its dimensions as given, {@code keepdim}, the input's shape, which
     * dimensions it reduces and how many elements each output combines.
     */
    record ReduceCall(ReduceArgs args, long[] inputShape, boolean[] reduced, long count) {
        static ReduceCall of(String op, long[] shape, ReduceArgs args) {
            boolean[] reduced = Reductions.reducedDims(op, shape, args.dims());
            long count = 1;
            for (int d = 0; d < shape.length; d++) if (reduced[d]) count *= shape[d];
            return new ReduceCall(args, shape, reduced, count);
        }

        long[] resultShape() {
            return Reductions.resultShape(inputShape, reduced, args.keepdim());
        }

        /** A result-shaped {@code value} broadcast back over the reduced dimensions to the input's shape. */
        Tensor unreduce(Tensor value) {
            try (Tensor k = value.reshape(Reductions.resultShape(inputShape, reduced, true))) {
                return k.expand(inputShape);
            }
        }
    }

    private static final ReduceArgs ALL_DIMS = new ReduceArgs(null, false);

    /** A compiled tensor-valued tree. */
    interface TensorFn {
        Tensor eval(Values v);
    }

    /** A compiled scalar-valued tree (constants, parameters, a reduction's count and math on them). */
    interface ScalarFn {
        double eval(Values v);
    }

    /** The subtrees of the composition being compiled that are evaluated once per call, by slot (see {@link #compileComposition}). */
    private static final ThreadLocal<Map<Expr, Integer>> SHARED = ThreadLocal.withInitial(Map::of);

    /**
     * Compiles a composition so that a tensor subtree it uses more than once (layer norm's input minus its mean, a loss's
     * difference) is evaluated once per call: its value is kept in the call's {@link Values#shared} slot.
     */
    static TensorFn compileComposition(Expr e) {
        Map<Expr, Integer> uses = new HashMap<>();
        countUses(e, uses);
        Map<Expr, Integer> slots = new HashMap<>();
        for (Map.Entry<Expr, Integer> u : uses.entrySet()) {
            Expr t = u.getKey();
            boolean leaf = t instanceof Expr.In || t instanceof Expr.Output || t instanceof Expr.Grad || t instanceof Expr.OutputGrad || t instanceof Expr.Result || t.isScalar();
            if (u.getValue() > 1 && !leaf) slots.put(t, slots.size());
        }
        if (slots.isEmpty()) return compile(e);
        SHARED.set(slots);
        TensorFn root;
        try {
            root = compile(e);
        } finally {
            SHARED.remove();
        }
        int n = slots.size();
        return v -> root.eval(new Values(v.inputs(), v.present(), v.result(), v.grad(), v.scalars(), v.reduction(), new Object[n], v.outputs(), v.part(), v.grads(),
                v.gradInputMask(), v.inputShapes()));
    }

    /** An op's derivatives, compiled together: {@code slots} is the length of the {@link Values#shared} array they need. */
    record Derivatives(TensorFn[] fns, int slots) {}

    /**
     * Compiles an op's derivatives (null where an input gets none) so that a multi-output call several of them select from
     * ({@link Expr.Select}: batch norm's fused backward), or a scalar's choice several of them read ({@link Expr.IfScalar}),
     * runs once per backward, in a {@link Values#shared} slot.
     */
    static Derivatives compileDerivatives(List<Expr> derivatives) {
        Map<Expr, Integer> uses = new HashMap<>();
        for (Expr e : derivatives) if (e != null) countUses(e, uses);
        Map<Expr, Integer> slots = new HashMap<>();
        for (Map.Entry<Expr, Integer> u : uses.entrySet()) {
            // A gradient chosen by a scalar that several derivatives read (_linear_activation's activation gradient) is shared too.
            boolean shared = u.getKey() instanceof Expr.Op o && o.op().outputCount() > 1 || u.getKey() instanceof Expr.IfScalar;
            if (u.getValue() > 1 && shared) slots.put(u.getKey(), slots.size());
        }
        TensorFn[] fns = new TensorFn[derivatives.size()];
        SHARED.set(slots);
        try {
            for (int i = 0; i < fns.length; i++) if (derivatives.get(i) != null) fns[i] = compile(derivatives.get(i));
        } finally {
            SHARED.remove();
        }
        return new Derivatives(fns, slots.size());
    }

    /** How often each subtree occurs in {@code e} (a branch of a conditional counts as it is written). */
    private static void countUses(Expr e, Map<Expr, Integer> uses) {
        if (uses.merge(e, 1, Integer::sum) > 1) return;
        switch (e) {
            case Expr.Op o -> o.args().forEach(a -> countUses(a, uses));
            case Expr.Where w -> List.of(w.cond(), w.a(), w.b()).forEach(a -> countUses(a, uses));
            case Expr.ZerosLike z -> countUses(z.like(), uses);
            case Expr.CastLike c -> List.of(c.value(), c.like()).forEach(a -> countUses(a, uses));
            case Expr.IfPresent p -> List.of(p.then(), p.otherwise()).forEach(a -> countUses(a, uses));
            case Expr.IfScalar p -> List.of(p.then(), p.otherwise()).forEach(a -> countUses(a, uses));
            case Expr.Unreduce u -> countUses(u.value(), uses);
            case Expr.ReduceTrailing r -> countUses(r.value(), uses);
            case Expr.ReduceAll r -> countUses(r.value(), uses);
            case Expr.ReshapeLike r -> List.of(r.value(), r.like()).forEach(a -> countUses(a, uses));
            case Expr.Widened w -> countUses(w.value(), uses);
            case Expr.Size z -> countUses(z.of(), uses);
            case Expr.Select sel -> countUses(sel.call(), uses);
            case Expr.Part p -> countUses(p.value(), uses);
            case Expr.IfGrad p -> List.of(p.then(), p.otherwise()).forEach(a -> countUses(a, uses));
            default -> { }
        }
    }

    static TensorFn compile(Expr e) {
        Integer slot = SHARED.get().get(e);
        if (slot == null) return compileOnce(e);
        TensorFn once = compileOnce(e);
        int i = slot;
        return v -> {
            Object[] shared = v.shared();
            if (shared == null) return once.eval(v);
            Tensor t = (Tensor) shared[i];
            if (t == null) shared[i] = t = once.eval(v);
            return t;
        };
    }

    private static TensorFn compileOnce(Expr e) {
        return switch (e) {
            case Expr.In in -> {
                int i = in.index();
                yield v -> v.inputs()[i];
            }
            case Expr.Result r -> Values::result;
            case Expr.Output o -> {
                int k = o.index();
                yield v -> v.outputs()[k];
            }
            case Expr.Grad g -> Values::grad;
            case Expr.OutputGrad g -> {
                int k = g.index();
                yield v -> v.grads()[k];
            }
            case Expr.Op o -> compileOp(o);
            case Expr.Select sel -> compileSelect(sel);
            case Expr.Part p -> compilePart(p);
            case Expr.IfGrad p -> {
                TensorFn then = compile(p.then());
                TensorFn otherwise = compile(p.otherwise());
                yield v -> org.jtorch.autograd.Grad.isEnabled() ? then.eval(v) : otherwise.eval(v);
            }
            case Expr.Where w -> compileWhere(w);
            case Expr.ZerosLike z -> {
                TensorFn like = compile(z.like());
                yield v -> Gradients.zerosLike(like.eval(v));
            }
            case Expr.CastLike c -> {
                TensorFn value = compile(c.value());
                TensorFn like = compile(c.like());
                yield v -> Elementwise.castTo(value.eval(v), like.eval(v).dtype());
            }
            case Expr.IfPresent p -> {
                int i = p.index();
                TensorFn then = compile(p.then());
                TensorFn otherwise = compile(p.otherwise());
                yield v -> i < v.present().length && v.present()[i] ? then.eval(v) : otherwise.eval(v);
            }
            case Expr.Unreduce u -> {
                TensorFn value = compile(u.value());
                yield v -> v.reduction().unreduce(value.eval(v));
            }
            case Expr.ReduceTrailing r -> compileReduceTrailing(r);
            case Expr.ReduceAll r -> {
                OpDef op = r.op();
                TensorFn value = compile(r.value());
                yield v -> Dispatcher.reduce(op, value.eval(v), ALL_DIMS, null, 0);
            }
            case Expr.ReshapeLike r -> {
                TensorFn value = compile(r.value());
                TensorFn like = compile(r.like());
                yield v -> value.eval(v).reshape(like.eval(v).shape());
            }
            case Expr.Widened w -> {
                TensorFn value = compile(w.value());
                yield v -> {
                    Tensor t = value.eval(v);
                    return t.dtype() == DType.FLOAT16 || t.dtype() == DType.BFLOAT16 ? t.to(DType.FLOAT32) : t;
                };
            }
            case Expr.IfScalar p -> {
                int i = p.index();
                double value = p.value();
                TensorFn then = compile(p.then());
                TensorFn otherwise = compile(p.otherwise());
                yield v -> v.scalars()[i] == value ? then.eval(v) : otherwise.eval(v);
            }
            default -> throw new IllegalStateException(e + " is not a tensor expression");
        };
    }

    static ScalarFn compileScalar(Expr e) {
        return switch (e) {
            case Expr.Const c -> {
                double value = c.value();
                yield v -> value;
            }
            case Expr.Count c -> v -> v.reduction().count();
            case Expr.GradInputMask m -> v -> v.gradInputMask();
            case Expr.Size z -> {
                TensorFn of = compile(z.of());
                int dim = z.dim();
                yield v -> of.eval(v).size(dim);
            }
            case Expr.Math m when m.args().stream().anyMatch(ExprCompiler::readsCall) -> {
                ScalarFn a = compileScalar(m.args().get(0));
                ScalarFn b = m.args().size() > 1 ? compileScalar(m.args().get(1)) : v -> 0;
                ScalarFn c = m.args().size() > 2 ? compileScalar(m.args().get(2)) : v -> 0;
                yield v -> m.fn().apply(a.eval(v), b.eval(v), c.eval(v));
            }
            default -> v -> e.scalarValue(v.scalars());
        };
    }

    /** Whether a scalar tree reads the call (a reduction's count, a tensor's size), not only its parameters. */
    private static boolean readsCall(Expr e) {
        return e instanceof Expr.Count || e instanceof Expr.Size || e instanceof Expr.GradInputMask
                || e instanceof Expr.Math m && m.args().stream().anyMatch(ExprCompiler::readsCall);
    }

    /** A reduction over the last dimensions of its value, keeping them ({@link Expr.ReduceTrailing}). */
    private static TensorFn compileReduceTrailing(Expr.ReduceTrailing r) {
        OpDef op = r.op();
        TensorFn x = compile(r.value());
        ScalarFn count = compileScalar(r.count());
        ScalarFn param = r.param() == null ? v -> 0 : compileScalar(r.param());
        return v -> {
            Tensor t = x.eval(v);
            int k = (int) count.eval(v);
            int[] dims = new int[k];
            for (int i = 0; i < k; i++) dims[i] = t.dim() - k + i;
            return Dispatcher.reduce(op, t, new ReduceArgs(dims, true), null, param.eval(v));
        };
    }

    /**
     * The differentiated input's part of a variadic op's gradient: {@code cat}'s slice (zeros for an input {@code cat}
     * skipped, an empty 1-d tensor) or {@code stack}'s index.
     */
    private static TensorFn compilePart(Expr.Part p) {
        TensorFn value = compile(p.value());
        int dim = p.dim();
        boolean select = p.select();
        int sizesFrom = p.sizesFrom();
        if (sizesFrom >= 0) {
            return v -> {
                Tensor g = value.eval(v);
                int i = v.part().index();
                int d = org.jtorch.op.Shapes.wrapDim("part", (int) v.scalars()[dim], g.dim());
                long start = 0;
                for (int j = 0; j < i; j++) start += (long) v.scalars()[sizesFrom + j];
                return g.narrow(d, start, (long) v.scalars()[sizesFrom + i]);
            };
        }
        return v -> {
            Tensor g = value.eval(v);
            int i = v.part().index();
            long[][] shapes = v.part().shapes();
            if (!select && org.jtorch.op.JoiningOps.skippedByCat(shapes[i])) return org.jtorch.Torch.zeros(shapes[i], g.dtype(), g.device());
            int d = org.jtorch.op.Shapes.wrapDim("part", (int) v.scalars()[dim], g.dim());
            if (select) return g.select(d, i);
            long start = 0;
            for (int j = 0; j < i; j++) if (!org.jtorch.op.JoiningOps.skippedByCat(shapes[j])) start += shapes[j][d];
            return g.narrow(d, start, shapes[i][d]);
        };
    }

    /**
     * A call's arguments, compiled: its tensor arguments, then the op's scalars (a view's dimensions, addmm's beta and alpha);
     * {@code rest}, where the last tensor argument is an {@link Expr.Rest}, the first of the differentiated op's inputs it
     * splices in (else -1). A list spliced elsewhere than last ({@link Expr.ContiguousGeometry} before the op's own list)
     * makes {@code lists}, every scalar argument as a list (else null).
     */
    private record CallArgs(TensorFn[] in, ScalarFn[] sc, int rest, boolean grads, ListFn scalarRest, ListFn[] lists) {
        static CallArgs of(List<Expr> args) {
            int tensors = 0;
            while (tensors < args.size() && !args.get(tensors).isScalar()) tensors++;
            Expr lastTensor = tensors > 0 ? args.get(tensors - 1) : null;
            int rest = lastTensor instanceof Expr.Rest r ? r.from() : -1;
            boolean grads = lastTensor instanceof Expr.OutputGrads;
            TensorFn[] in = new TensorFn[rest >= 0 || grads ? tensors - 1 : tensors];
            for (int i = 0; i < in.length; i++) in[i] = compile(args.get(i));
            boolean inner = false;
            for (int i = tensors; i < args.size() - 1; i++) inner |= compileList(args.get(i)) != null;
            if (inner) {
                ListFn[] lists = new ListFn[args.size() - tensors];
                for (int i = 0; i < lists.length; i++) {
                    ListFn list = compileList(args.get(tensors + i));
                    if (list == null) {
                        ScalarFn one = compileScalar(args.get(tensors + i));
                        list = v -> new double[] {one.eval(v)};
                    }
                    lists[i] = list;
                }
                return new CallArgs(in, null, rest, grads, null, lists);
            }
            ListFn scalarRest = args.size() > tensors ? compileList(args.getLast()) : null;
            ScalarFn[] sc = new ScalarFn[args.size() - tensors - (scalarRest == null ? 0 : 1)];
            for (int i = 0; i < sc.length; i++) sc[i] = compileScalar(args.get(tensors + i));
            return new CallArgs(in, sc, rest, grads, scalarRest, null);
        }

        Tensor[] tensors(Values v) {
            Tensor[] list = grads ? v.grads() : v.inputs();
            int from = grads ? 0 : rest;
            int spliced = from < 0 ? 0 : Math.max(0, list.length - from);
            Tensor[] t = new Tensor[in.length + spliced];
            for (int i = 0; i < in.length; i++) t[i] = in[i].eval(v);
            if (spliced > 0) System.arraycopy(list, from, t, in.length, spliced);
            return t;
        }

        double[] scalars(Values v) {
            if (lists != null) {
                double[][] parts = new double[lists.length][];
                int n = 0;
                for (int i = 0; i < parts.length; i++) n += (parts[i] = lists[i].eval(v)).length;
                double[] s = new double[n];
                for (int i = 0, at = 0; i < parts.length; at += parts[i].length, i++) System.arraycopy(parts[i], 0, s, at, parts[i].length);
                return s;
            }
            double[] spliced = scalarRest == null ? NONE : scalarRest.eval(v);
            double[] s = new double[sc.length + spliced.length];
            for (int i = 0; i < sc.length; i++) s[i] = sc[i].eval(v);
            System.arraycopy(spliced, 0, s, sc.length, spliced.length);
            return s;
        }
    }

    private static final double[] NONE = {};

    /** A compiled list of scalars spliced into a call's scalars ({@link Expr.ScalarRest} and the like). */
    private interface ListFn {
        double[] eval(Values v);
    }

    /** {@code e} as a list spliced into a call's scalars, or null where it is one scalar. */
    private static ListFn compileList(Expr e) {
        return switch (e) {
            case Expr.ScalarRest r -> v -> {
                double[] s = new double[Math.max(0, v.scalars().length - r.from())];
                for (int i = 0; i < s.length; i++) s[i] = r.negate() ? -v.scalars()[r.from() + i] : v.scalars()[r.from() + i];
                return s;
            };
            case Expr.InputSizes z -> {
                int i = z.index();
                yield v -> {
                    long[] shape = v.inputShapes()[i];
                    double[] s = new double[shape.length];
                    for (int k = 0; k < s.length; k++) s[k] = shape[k];
                    return s;
                };
            }
            case Expr.ContiguousGeometry z -> {
                int i = z.index();
                yield v -> org.jtorch.op.ViewOps.geometryScalars(v.inputShapes()[i], org.jtorch.op.Shapes.contiguousStrides(v.inputShapes()[i]), 0);
            }
            case Expr.InversePermutation p -> v -> {
                double[] s = new double[Math.max(0, v.scalars().length - p.from())];
                for (int i = 0; i < s.length; i++) {
                    int d = (int) v.scalars()[p.from() + i];
                    s[d < 0 ? d + s.length : d] = i;
                }
                return s;
            };
            default -> null;
        };
    }

    /** Output {@code output} of a multi-output call, the call run once per {@link Values} where it has a shared slot. */
    private static TensorFn compileSelect(Expr.Select sel) {
        Integer slot = SHARED.get().get(sel.call());
        OpDef op = sel.call().op();
        CallArgs args = CallArgs.of(sel.call().args());
        int k = sel.output();
        return v -> {
            Object[] shared = v.shared();
            Tensor[] outs = slot == null || shared == null ? null : (Tensor[]) shared[slot];
            if (outs == null) {
                outs = Dispatcher.callAll(op, args.tensors(v), args.scalars(v));
                if (slot != null && shared != null) shared[slot] = outs;
            }
            return outs[k];
        };
    }

    private static TensorFn compileOp(Expr.Op o) {
        OpDef op = o.op();
        List<Expr> args = o.args();
        switch (op.kind()) {
            case UNARY -> {
                TensorFn x = compile(args.get(0));
                ScalarFn p0 = args.size() > 1 ? compileScalar(args.get(1)) : p -> 0;
                ScalarFn p1 = args.size() > 2 ? compileScalar(args.get(2)) : p -> 0;
                return v -> Dispatcher.unary(op, x.eval(v), p0.eval(v), p1.eval(v));
            }
            case BINARY -> {
                Expr ea = args.get(0);
                Expr eb = args.get(1);
                if (ea.isScalar()) {
                    ScalarFn a = compileScalar(ea);
                    TensorFn b = compile(eb);
                    return v -> {
                        Tensor tb = b.eval(v);
                        return Dispatcher.binary(op, scalarLike(tb, a.eval(v)), tb, 1);
                    };
                }
                TensorFn a = compile(ea);
                if (eb.isScalar()) {
                    ScalarFn b = compileScalar(eb);
                    boolean isMul = op.name().equals("mul");
                    return v -> {
                        Tensor ta = a.eval(v);
                        double s = b.eval(v);
                        return isMul && s == 1 ? ta : Dispatcher.binary(op, ta, scalarLike(ta, s), 1);
                    };
                }
                TensorFn b = compile(eb);
                if (args.size() > 2) {
                    // A third argument is the op's scalar parameter (leaky_relu_backward's slope).
                    ScalarFn p0 = compileScalar(args.get(2));
                    return v -> Dispatcher.binary(op, a.eval(v), b.eval(v), p0.eval(v));
                }
                return v -> Dispatcher.binary(op, a.eval(v), b.eval(v), 1);
            }
            case REDUCTION -> {
                // A reduction inside a tree reduces like the call being evaluated (see Expr.Unreduce).
                TensorFn x = compile(args.get(0));
                return v -> Dispatcher.reduce(op, x.eval(v), v.reduction().args(), null, 0);
            }
            case ALONG_DIM -> {
                // An op along a dimension inside a tree runs along the call's one (reduced, kept) dimension.
                TensorFn x = compile(args.get(0));
                return v -> Dispatcher.alongDim(op, x.eval(v), v.reduction().args().dims()[0], null);
            }
            case FRONT_END, STRUCTURED -> {
                CallArgs call = CallArgs.of(args);
                return v -> Dispatcher.call(op, call.tensors(v), call.scalars(v));
            }
            case COMPOSITE -> {
                // a structured op's decomposition calls the composite with the op's scalars (a loss's reduction)
                CallArgs call = CallArgs.of(args);
                return v -> Dispatcher.composite(op, call.tensors(v), call.scalars(v));
            }
            default -> {
                TensorFn[] in = new TensorFn[args.size()];
                for (int i = 0; i < in.length; i++) in[i] = compile(args.get(i));
                return v -> {
                    Tensor[] t = new Tensor[in.length];
                    for (int i = 0; i < t.length; i++) t[i] = in[i].eval(v);
                    return Dispatcher.composite(op, t, new double[0]);
                };
            }
        }
    }

    private static TensorFn compileWhere(Expr.Where w) {
        TensorFn cond = compile(w.cond());
        boolean aScalar = w.a().isScalar();
        boolean bScalar = w.b().isScalar();
        if (aScalar && bScalar) throw new IllegalStateException(w + ": where() of two scalars has no shape");
        TensorFn a = aScalar ? null : compile(w.a());
        TensorFn b = bScalar ? null : compile(w.b());
        ScalarFn sa = aScalar ? compileScalar(w.a()) : null;
        ScalarFn sb = bScalar ? compileScalar(w.b()) : null;
        return v -> {
            Tensor c = cond.eval(v);
            Tensor ta = a == null ? null : a.eval(v);
            Tensor tb = b == null ? null : b.eval(v);
            if (ta == null) ta = scalarLike(tb, sa.eval(v));
            if (tb == null) tb = scalarLike(ta, sb.eval(v));
            return Elementwise.where(c, ta, tb);
        };
    }

    /** A Java double as PyTorch's wrapped number next to {@code like} (what {@code t.mul(2.0)} makes of the 2.0). */
    static Tensor scalarLike(Tensor like, double value) {
        return Elementwise.wrappedScalar(like, value, (long) value, DType.FLOAT64);
    }
}
