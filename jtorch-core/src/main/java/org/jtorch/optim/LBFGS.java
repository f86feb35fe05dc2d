package org.jtorch.optim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.io.StateReader;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * L-BFGS, as {@code torch.optim.LBFGS} (PyTorch 1.13, after minFunc): each {@link #step(Supplier)} runs up
 * to {@code max_iter} quasi-Newton iterations on the loss the closure computes, with a fixed step
 * {@code lr} or a strong-Wolfe line search ({@code lineSearchFn("strong_wolfe")}).
 * <pre>{@code
 * var opt = new LBFGS(model.parameters(), LBFGS.options().lr(1).lineSearchFn("strong_wolfe"));
 * Tensor loss = opt.step(() -> {
 *     opt.zeroGrad();
 *     Tensor l = F.mseLoss(model.forward(x), y);
 *     l.backward();
 *     return l;
 * });
 * }</pre>
 *
 * <p><b>The closure</b> re-evaluates the model: it clears the gradients, computes the loss with graph
 * recording on (the step turns it on for the call), calls {@code backward()} and returns the one-element
 * loss. It is called several times per step. Each call runs in its own {@link MemoryScope}: the tensors it
 * creates (the graph, the loss) are released once the loss and gradients have been read, except the
 * first call's loss, which {@code step} returns to the caller. Gradients set on the parameters are not
 * released; a tensor the closure stores elsewhere to use after the call must be passed to
 * {@link MemoryScope#keep}. {@link #step()} without a closure is refused, as in PyTorch.
 *
 * <p>One parameter group only; all parameters on one device with one floating dtype. The parameters are
 * treated as one flat vector. The scalars PyTorch keeps as 0-d tensors of the parameters' dtype (the
 * directional derivatives, the step length in some branches) are rounded to that dtype where PyTorch
 * rounds them, so that float32 runs take the same line-search decisions as PyTorch's.
 *
 * <p><b>State</b>, held on the first parameter as PyTorch does, under PyTorch's names: {@code func_evals}
 * and {@code n_iter} (totals over all steps), {@code d} (the last direction), {@code t} (the last step
 * length), {@code old_dirs} and {@code old_stps} (the history of gradient differences y and steps s, flat
 * tensors), {@code ro} (1 / y·s), {@code H_diag} (the initial inverse Hessian scale), {@code prev_flat_grad},
 * {@code prev_loss} and {@code al} (scratch of the two-loop recursion). Scalars are numbers or 0-d tensors
 * as in PyTorch; {@link #stateDict()} and {@link #loadStateDict(Map)} carry all of it, so a resumed run
 * continues the same trajectory.
 */
public final class LBFGS extends Optimizer {
    private static final String STRONG_WOLFE = "strong_wolfe";

    /**
     * Options: {@code lr} (1), {@code max_iter} (20), {@code max_eval} (null: {@code max_iter * 5 / 4}, resolved
     * when the optimizer is built), {@code tolerance_grad} (1e-7), {@code tolerance_change} (1e-9),
     * {@code history_size} (100), {@code line_search_fn} (null, or {@code "strong_wolfe"}). Integer options
     * are stored as {@code Double}, as every number of an options map.
     */
    public static final class Options extends OptimizerOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1.0);
            d.put("max_iter", 20.0);
            d.put("max_eval", null);
            d.put("tolerance_grad", 1e-7);
            d.put("tolerance_change", 1e-9);
            d.put("history_size", 100.0);
            d.put("line_search_fn", null);
            return d;
        }

        /** The most iterations per {@link LBFGS#step(Supplier)}. */
        public Options maxIter(int maxIter) {
            return set("max_iter", maxIter);
        }

        /** The most closure evaluations per step; null for {@code maxIter * 5 / 4}. */
        public Options maxEval(Integer maxEval) {
            return set("max_eval", maxEval);
        }

        /** A step ends when the largest gradient entry is at most this. */
        public Options toleranceGrad(double toleranceGrad) {
            return set("tolerance_grad", toleranceGrad);
        }

        /** A step ends when the loss or the parameters change by at most this. */
        public Options toleranceChange(double toleranceChange) {
            return set("tolerance_change", toleranceChange);
        }

        /** How many (y, s) pairs the inverse Hessian estimate keeps. */
        public Options historySize(int historySize) {
            return set("history_size", historySize);
        }

        /** Null for a fixed step of {@code lr}, or {@code "strong_wolfe"}. */
        public Options lineSearchFn(String lineSearchFn) {
            return set("line_search_fn", lineSearchFn);
        }
    }

    public static Options options() {
        return new Options();
    }

    public LBFGS(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("LBFGS", "params", params);
        Arguments.nonNull("LBFGS", "options", options);
        super("LBFGS", singleGroup(params), withMaxEval(options));
        List<Tensor> ps = paramGroups().get(0).params();
        Tensor first = ps.get(0);
        for (Tensor p : ps) {
            if (!p.dtype().isFloatingPoint() || p.dtype() != first.dtype() || !p.device().equals(first.device())) {
                throw new IllegalArgumentException("LBFGS: all parameters must have one floating dtype and one device; found "
                        + first.dtype() + " on " + first.device() + " and " + p.dtype() + " on " + p.device());
            }
        }
    }

    /** A copy of {@code options} with {@code max_eval} resolved, as PyTorch's constructor does. */
    private static Options withMaxEval(Options options) {
        Options copy = new Options();
        options.explicitValues().forEach(copy::set);
        Map<String, Object> resolved = copy.resolved();
        if (resolved.get("max_eval") == null && resolved.get("max_iter") instanceof Double maxIter) {
            copy.set("max_eval", Math.floor(maxIter * 5 / 4));
        }
        return copy;
    }

    @Override
    protected void validate(Map<String, Object> o) {
        require(isCount(o.get("max_iter"), 0), "max_iter must be a non-negative integer, not " + StateReader.describe(o.get("max_iter")));
        require(isCount(o.get("max_eval"), 0), "max_eval must be a non-negative integer, not " + StateReader.describe(o.get("max_eval")));
        require(isCount(o.get("history_size"), 1), "history_size must be a positive integer, not " + StateReader.describe(o.get("history_size")));
        for (String key : List.of("lr", "tolerance_grad", "tolerance_change")) {
            require(!Double.isNaN(num(o, key)), key + " must be a number, not " + StateReader.describe(o.get(key)));
        }
        Object ls = o.get("line_search_fn");
        require(ls == null || STRONG_WOLFE.equals(ls), "only 'strong_wolfe' is supported as line_search_fn (or null), not " + StateReader.describe(ls));
    }

    private static boolean isCount(Object v, double min) {
        return v instanceof Number n && n.doubleValue() >= min && n.doubleValue() == Math.rint(n.doubleValue()) && n.doubleValue() <= Integer.MAX_VALUE;
    }

    /** Refused after construction: LBFGS has one group, as PyTorch's. */
    @Override
    public void addParamGroup(ParamGroup group) {
        require(paramGroups().isEmpty(), "LBFGS doesn't support per-parameter options (parameter groups)");
        super.addParamGroup(group);
    }

    /** Refused: LBFGS re-evaluates the loss, so it needs {@link #step(Supplier)}. */
    @Override
    public void step() {
        throw new IllegalStateException("LBFGS.step needs a closure that re-evaluates the loss: call step(closure)");
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        throw new IllegalStateException("LBFGS.step needs a closure that re-evaluates the loss: call step(closure)");
    }

    /**
     * Runs one L-BFGS step (up to {@code max_iter} iterations, {@code max_eval} closure calls) and returns
     * the loss of the closure's first call, owned by the caller.
     */
    @Override
    public Tensor step(Supplier<Tensor> closure) {
        Arguments.nonNull("LBFGS.step", "closure", closure);
        ParamGroup group = paramGroups().get(0);
        Map<String, Object> state = stateOf(group.params().get(0));
        Set<Tensor> before = tensorsIn(state.values());
        Tensor loss;
        try (var noGrad = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            loss = new Run(group, state, closure).step();
            for (Tensor t : tensorsIn(state.values())) own(t);
            scope.keep(loss);
        }
        Set<Tensor> after = tensorsIn(state.values());
        for (Tensor t : before) {
            if (!after.contains(t)) t.close();
        }
        return loss;
    }

    private static Set<Tensor> tensorsIn(Iterable<?> values) {
        Set<Tensor> out = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Object v : values) {
            if (v instanceof Tensor t) out.add(t);
            else if (v instanceof List<?> l) out.addAll(tensorsIn(l));
        }
        return out;
    }

    // ------------------------------------------------------------------ state dicts

    @Override
    protected void checkStateValue(StateReader r, int id, String key, Object value, Tensor param) {
        String path = "state[" + id + "]." + key;
        long numel = 0;
        for (Tensor p : paramGroups().get(0).params()) numel += p.numel();
        switch (key) {
            case "func_evals", "n_iter" -> {
                if (!(value instanceof Number)) throw r.error(path, "a number", value);
            }
            case "t", "H_diag", "prev_loss" -> checkScalar(r, path, value, true);
            case "d", "prev_flat_grad" -> {
                if (value != null) checkFlat(r, path, value, numel);
            }
            case "old_dirs", "old_stps", "ro", "al" -> {
                if (!(value instanceof List<?> l)) throw r.error(path, "a list", value);
                for (int i = 0; i < l.size(); i++) {
                    if (key.startsWith("old_")) checkFlat(r, path + "[" + i + "]", l.get(i), numel);
                    else checkScalar(r, path + "[" + i + "]", l.get(i), key.equals("al"));
                }
            }
            default -> throw new IllegalArgumentException(r.op() + ": LBFGS has no state '" + key + "' (state keys are func_evals, n_iter,"
                    + " d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al); was a state dict of another optimizer loaded?");
        }
    }

    private static void checkScalar(StateReader r, String path, Object value, boolean nullable) {
        if (value == null && nullable || value instanceof Number) return;
        if (value instanceof Tensor t) {
            t.checkOpen(r.op());
            if (t.numel() == 1) return;
        }
        throw r.error(path, "a number or a one-element tensor", value);
    }

    private static void checkFlat(StateReader r, String path, Object value, long numel) {
        if (!(value instanceof Tensor t)) throw r.error(path, "a tensor", value);
        t.checkOpen(r.op());
        if (t.dim() != 1 || t.numel() != numel) {
            throw new IllegalArgumentException(r.op() + ": " + path + " has shape " + Shapes.format(t.shape())
                    + " but LBFGS's flat vectors have shape [" + numel + "] (the parameters' total size)");
        }
    }

    // ------------------------------------------------------------------ one step

    /** One {@link #step(Supplier)}: PyTorch 1.13's {@code LBFGS.step}, transcribed. */
    private final class Run {
        private final List<Tensor> params;
        private final Map<String, Object> state;
        private final Supplier<Tensor> closure;
        private final Scalars s;
        private final DType dtype;
        private final Device device;

        Run(ParamGroup group, Map<String, Object> state, Supplier<Tensor> closure) {
            this.params = group.params();
            this.state = state;
            this.closure = closure;
            this.dtype = params.get(0).dtype();
            this.device = params.get(0).device();
            this.s = new Scalars(dtype == DType.FLOAT32);
        }

        Tensor step() {
            ParamGroup group = paramGroups().get(0);
            double lr = group.lr();
            int maxIter = (int) group.getDouble("max_iter");
            int maxEval = (int) group.getDouble("max_eval");
            double toleranceGrad = group.getDouble("tolerance_grad");
            double toleranceChange = group.getDouble("tolerance_change");
            boolean strongWolfe = STRONG_WOLFE.equals(group.get("line_search_fn"));
            int historySize = (int) group.getDouble("history_size");

            state.putIfAbsent("func_evals", 0L);
            state.putIfAbsent("n_iter", 0L);

            Tensor origLoss = evaluate();
            double loss = origLoss.item();
            int currentEvals = 1;
            state.put("func_evals", count("func_evals") + 1);
            Tensor flatGrad = gatherFlatGrad();
            boolean optCond = s.le(maxAbs(flatGrad), s.py(toleranceGrad));
            if (optCond) return origLoss;

            Tensor d = (Tensor) state.get("d");
            Num t = Num.of(state.get("t"));
            List<Tensor> oldDirs = tensors(state.get("old_dirs"));
            List<Tensor> oldStps = tensors(state.get("old_stps"));
            List<Object> roStored = state.get("ro") instanceof List<?> l ? new ArrayList<>(l) : null;
            List<Num> ro = roStored == null ? null : new ArrayList<>(roStored.stream().map(Num::of).toList());
            Num hDiag = Num.of(state.get("H_diag"));
            Tensor prevFlatGrad = (Tensor) state.get("prev_flat_grad");
            Double prevLoss = state.get("prev_loss") instanceof Number n ? n.doubleValue() : null;
            Num[] al = null;
            if (state.get("al") instanceof List<?> l) al = l.stream().map(Num::of).toArray(Num[]::new);

            int nIter = 0;
            while (nIter < maxIter) {
                nIter++;
                state.put("n_iter", count("n_iter") + 1);

                // the descent direction
                if (count("n_iter") == 1) {
                    d = flatGrad.neg();
                    oldDirs = new ArrayList<>();
                    oldStps = new ArrayList<>();
                    ro = new ArrayList<>();
                    roStored = new ArrayList<>();
                    hDiag = s.py(1);
                } else {
                    Tensor y = flatGrad.sub(prevFlatGrad);
                    Tensor step = d.mul(t.v());
                    Num ys = dot(y, step);
                    if (s.gt(ys, s.py(1e-10))) {
                        if (oldDirs.size() == historySize) {
                            oldDirs.remove(0);
                            oldStps.remove(0);
                            ro.remove(0);
                            roStored.remove(0);
                        }
                        oldDirs.add(y);
                        oldStps.add(step);
                        Num rho = s.div(s.py(1.), ys);
                        ro.add(rho);
                        roStored.add(stored(rho));
                        hDiag = s.div(ys, dot(y, y));
                    }
                    int numOld = oldDirs.size();
                    if (al == null) al = new Num[historySize];
                    // the two-loop recursion: d = -H g
                    Tensor q = flatGrad.neg();
                    for (int i = numOld - 1; i >= 0; i--) {
                        al[i] = s.mul(dot(oldStps.get(i), q), ro.get(i));
                        q.add_(oldDirs.get(i), -al[i].v());
                    }
                    d = q.mul(hDiag.v());
                    for (int i = 0; i < numOld; i++) {
                        Num beta = s.mul(dot(oldDirs.get(i), d), ro.get(i));
                        d.add_(oldStps.get(i), s.sub(al[i], beta).v());
                    }
                }
                if (prevFlatGrad == null) prevFlatGrad = flatGrad.clone();
                else prevFlatGrad.copy_(flatGrad);
                prevLoss = loss;

                // the step length
                if (count("n_iter") == 1) {
                    t = s.mul(s.min(s.py(1.), s.div(s.py(1.), sumAbs(flatGrad))), s.py(lr));
                } else {
                    t = s.py(lr);
                }
                Num gtd = dot(flatGrad, d);
                if (s.gt(gtd, s.py(-toleranceChange))) break;

                int lsFuncEvals = 0;
                if (strongWolfe) {
                    List<Tensor> xInit = new ArrayList<>();
                    for (Tensor p : params) xInit.add(p.clone());
                    LineSearch ls = strongWolfe(xInit, t, d, loss, flatGrad, gtd, toleranceChange);
                    loss = ls.loss;
                    flatGrad = ls.grad;
                    t = ls.t;
                    lsFuncEvals = ls.evals;
                    addGrad(t, d);
                    optCond = s.le(maxAbs(flatGrad), s.py(toleranceGrad));
                } else {
                    addGrad(t, d);
                    if (nIter != maxIter) {
                        // Not in the last iteration: in a stochastic setting a re-evaluation there is of no use.
                        loss = evaluateLoss();
                        flatGrad = gatherFlatGrad();
                        optCond = s.le(maxAbs(flatGrad), s.py(toleranceGrad));
                        lsFuncEvals = 1;
                    }
                }
                currentEvals += lsFuncEvals;
                state.put("func_evals", count("func_evals") + lsFuncEvals);

                // stopping conditions
                if (nIter == maxIter) break;
                if (currentEvals >= maxEval) break;
                if (optCond) break;
                try (Tensor change = d.mul(t.v())) {
                    if (s.le(maxAbs(change), s.py(toleranceChange))) break;
                }
                if (Math.abs(loss - prevLoss) < toleranceChange) break;
            }

            if (al != null) {
                List<Object> alStored = new ArrayList<>(al.length);
                for (Num a : al) alStored.add(stored(a));
                state.put("al", alStored);
            }
            state.put("d", d);
            state.put("t", stored(t));
            state.put("old_dirs", oldDirs);
            state.put("old_stps", oldStps);
            state.put("ro", roStored);
            state.put("H_diag", stored(hDiag));
            state.put("prev_flat_grad", prevFlatGrad);
            state.put("prev_loss", prevLoss);
            return origLoss;
        }

        private record LineSearch(double loss, Tensor grad, Num t, int evals) {}

        /**
         * PyTorch's {@code _strong_wolfe} (after minFunc's lswolfe): brackets a step length satisfying the
         * strong Wolfe conditions, then zooms in on it by cubic interpolation; at most 25 evaluations.
         */
        private LineSearch strongWolfe(List<Tensor> x, Num t, Tensor d, double f, Tensor g, Num gtd, double toleranceChange) {
            final double c1 = 1e-4;
            final double c2 = 0.9;
            final int maxLs = 25;
            Num dNorm = maxAbs(d);
            g = g.clone();
            double[] eval = new double[1];
            Tensor gNew = directionalEvaluate(x, t, d, eval);
            double fNew = eval[0];
            int lsFuncEvals = 1;
            Num gtdNew = dot(gNew, d);

            // bracket an interval containing a point satisfying the Wolfe criteria
            Num tPrev = s.py(0);
            double fPrev = f;
            Tensor gPrev = g;
            Num gtdPrev = gtd;
            boolean done = false;
            int lsIter = 0;
            Num[] bracket = null;
            double[] bracketF = null;
            Tensor[] bracketG = null;
            Num[] bracketGtd = null;
            while (lsIter < maxLs) {
                if (s.gt(s.py(fNew), armijo(f, c1, t, gtd)) || (lsIter > 1 && fNew >= fPrev)) {
                    bracket = new Num[] {tPrev, t};
                    bracketF = new double[] {fPrev, fNew};
                    bracketG = new Tensor[] {gPrev, gNew.clone()};
                    bracketGtd = new Num[] {gtdPrev, gtdNew};
                    break;
                }
                if (s.le(s.abs(gtdNew), s.mul(s.py(-c2), gtd))) {
                    bracket = new Num[] {t};
                    bracketF = new double[] {fNew};
                    bracketG = new Tensor[] {gNew};
                    done = true;
                    break;
                }
                if (s.ge(gtdNew, s.py(0))) {
                    bracket = new Num[] {tPrev, t};
                    bracketF = new double[] {fPrev, fNew};
                    bracketG = new Tensor[] {gPrev, gNew.clone()};
                    bracketGtd = new Num[] {gtdPrev, gtdNew};
                    break;
                }
                // extrapolate
                Num minStep = s.add(t, s.mul(s.py(0.01), s.sub(t, tPrev)));
                Num maxStep = s.mul(t, s.py(10));
                Num tmp = t;
                t = cubicInterpolate(tPrev, s.py(fPrev), gtdPrev, t, s.py(fNew), gtdNew, minStep, maxStep);
                tPrev = tmp;
                fPrev = fNew;
                gPrev = gNew.clone();
                gtdPrev = gtdNew;
                gNew = directionalEvaluate(x, t, d, eval);
                fNew = eval[0];
                lsFuncEvals++;
                gtdNew = dot(gNew, d);
                lsIter++;
            }
            if (lsIter == maxLs) {
                bracket = new Num[] {s.py(0), t};
                bracketF = new double[] {f, fNew};
                bracketG = new Tensor[] {g, gNew};
            }

            // zoom: refine the bracket until a point satisfies the criteria
            boolean insufficientProgress = false;
            int low = bracketF[0] <= bracketF[bracketF.length - 1] ? 0 : 1;
            int high = 1 - low;
            while (!done && lsIter < maxLs) {
                if (s.lt(s.mul(s.abs(s.sub(bracket[1], bracket[0])), dNorm), s.py(toleranceChange))) break;
                t = cubicInterpolate(bracket[0], s.py(bracketF[0]), bracketGtd[0], bracket[1], s.py(bracketF[1]), bracketGtd[1], null, null);
                // Near a bracket end (twice in a row, or outside it), move to 0.1 of the bracket's width inside.
                Num bMax = s.max(bracket[0], bracket[1]);
                Num bMin = s.min(bracket[0], bracket[1]);
                Num eps = s.mul(s.py(0.1), s.sub(bMax, bMin));
                if (s.lt(s.min(s.sub(bMax, t), s.sub(t, bMin)), eps)) {
                    if (insufficientProgress || s.ge(t, bMax) || s.le(t, bMin)) {
                        t = s.lt(s.abs(s.sub(t, bMax)), s.abs(s.sub(t, bMin))) ? s.sub(bMax, eps) : s.add(bMin, eps);
                        insufficientProgress = false;
                    } else {
                        insufficientProgress = true;
                    }
                } else {
                    insufficientProgress = false;
                }
                gNew = directionalEvaluate(x, t, d, eval);
                fNew = eval[0];
                lsFuncEvals++;
                gtdNew = dot(gNew, d);
                lsIter++;
                if (s.gt(s.py(fNew), armijo(f, c1, t, gtd)) || fNew >= bracketF[low]) {
                    // not sufficiently lower, or not lower than the lowest point: the new high end
                    bracket[high] = t;
                    bracketF[high] = fNew;
                    bracketG[high] = gNew.clone();
                    bracketGtd[high] = gtdNew;
                    low = bracketF[0] <= bracketF[1] ? 0 : 1;
                    high = 1 - low;
                } else {
                    if (s.le(s.abs(gtdNew), s.mul(s.py(-c2), gtd))) {
                        done = true;
                    } else if (s.ge(s.mul(gtdNew, s.sub(bracket[high], bracket[low])), s.py(0))) {
                        // the old high end becomes the new low end
                        bracket[high] = bracket[low];
                        bracketF[high] = bracketF[low];
                        bracketG[high] = bracketG[low];
                        bracketGtd[high] = bracketGtd[low];
                    }
                    bracket[low] = t;
                    bracketF[low] = fNew;
                    bracketG[low] = gNew.clone();
                    bracketGtd[low] = gtdNew;
                }
            }
            return new LineSearch(bracketF[low], bracketG[low], bracket[low], lsFuncEvals);
        }

        /** {@code f + c1 * t * gtd}, the sufficient-decrease bound, in PyTorch's evaluation order. */
        private Num armijo(double f, double c1, Num t, Num gtd) {
            return s.add(s.py(f), s.mul(s.mul(s.py(c1), t), gtd));
        }

        /**
         * The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to the
         * bounds (by default the interval between x1 and x2); their midpoint when the cubic has no minimum.
         */
        private Num cubicInterpolate(Num x1, Num f1, Num g1, Num x2, Num f2, Num g2, Num lowBound, Num highBound) {
            Num xmin = lowBound;
            Num xmax = highBound;
            if (lowBound == null) {
                boolean ordered = s.le(x1, x2);
                xmin = ordered ? x1 : x2;
                xmax = ordered ? x2 : x1;
            }
            Num d1 = s.sub(s.add(g1, g2), s.div(s.mul(s.py(3), s.sub(f1, f2)), s.sub(x1, x2)));
            Num d2Square = s.sub(s.mul(d1, d1), s.mul(g1, g2));
            if (s.ge(d2Square, s.py(0))) {
                Num d2 = s.sqrt(d2Square);
                Num minPos = s.le(x1, x2)
                        ? s.sub(x2, s.mul(s.sub(x2, x1), s.div(s.sub(s.add(g2, d2), d1), s.add(s.sub(g2, g1), s.mul(s.py(2), d2)))))
                        : s.sub(x1, s.mul(s.sub(x1, x2), s.div(s.sub(s.add(g1, d2), d1), s.add(s.sub(g1, g2), s.mul(s.py(2), d2)))));
                return s.min(s.max(minPos, xmin), xmax);
            }
            return s.div(s.add(xmin, xmax), s.py(2.));
        }

        // -------------------------------------------------------------- flat-vector helpers

        /** The first evaluation's loss, kept for the caller. */
        private Tensor evaluate() {
            try (var enable = Grad.enableGrad(); MemoryScope scope = new MemoryScope()) {
                return scope.keep(callClosure());
            }
        }

        /** A further evaluation's loss value; what the closure created is released. */
        private double evaluateLoss() {
            try (var enable = Grad.enableGrad(); MemoryScope scope = new MemoryScope()) {
                return callClosure().item();
            }
        }

        private Tensor callClosure() {
            Tensor loss = closure.get();
            if (loss == null) throw new IllegalStateException("LBFGS.step: the closure returned null; it must return the loss");
            if (loss.numel() != 1) {
                throw new IllegalStateException("LBFGS.step: the closure must return a one-element loss, not a tensor of shape "
                        + Shapes.format(loss.shape()));
            }
            return loss;
        }

        /** The gradients as one flat vector, zeros for parameters without one. */
        private Tensor gatherFlatGrad() {
            List<Tensor> views = new ArrayList<>(params.size());
            for (Tensor p : params) {
                Tensor g = p.grad();
                views.add(g == null ? Torch.zeros(new long[] {p.numel()}, p.dtype(), p.device()) : g.reshape(-1));
            }
            return Torch.cat(views, 0);
        }

        /** {@code params += t * update}, the flat update split into the parameters' shapes. */
        private void addGrad(Num t, Tensor update) {
            long offset = 0;
            for (Tensor p : params) {
                long n = p.numel();
                p.add_(update.narrow(0, offset, n).view(p.shape()), t.v());
                offset += n;
            }
        }

        /** The loss and flat gradient at {@code x + t * d}; the parameters are reset to {@code x}. */
        private Tensor directionalEvaluate(List<Tensor> x, Num t, Tensor d, double[] loss) {
            addGrad(t, d);
            loss[0] = evaluateLoss();
            Tensor flatGrad = gatherFlatGrad();
            for (int i = 0; i < params.size(); i++) params.get(i).copy_(x.get(i));
            return flatGrad;
        }

        /** {@code a · b} as a product summed: Tensor.dot runs a 1 x n x 1 GEMM, about 10x slower on long vectors. */
        /** As PyTorch's {@code a.dot(b)}: one fused kernel, not a product and a sum (the two-loop recursion runs hundreds a step). */
        private Num dot(Tensor a, Tensor b) {
            try (Tensor r = a.dot(b)) {
                return s.tensor(r.item());
            }
        }

        private Num maxAbs(Tensor v) {
            try (Tensor a = v.abs(); Tensor m = a.max()) {
                return s.tensor(m.item());
            }
        }

        private Num sumAbs(Tensor v) {
            try (Tensor a = v.abs(); Tensor m = a.sum()) {
                return s.tensor(m.item());
            }
        }

        private long count(String key) {
            return ((Number) state.get(key)).longValue();
        }

        /** A scalar as PyTorch keeps it in the state: a 0-d tensor of the parameters' dtype, or a number. */
        private Object stored(Num n) {
            if (n == null) return null;
            return n.tensor() ? Torch.full(new long[0], n.v(), dtype, device) : (Object) n.v();
        }

        private static List<Tensor> tensors(Object v) {
            if (!(v instanceof List<?> l)) return null;
            List<Tensor> out = new ArrayList<>(l.size());
            for (Object x : l) out.add((Tensor) x);
            return out;
        }
    }

    /** A scalar of LBFGS's arithmetic: a Python float ({@code tensor} false) or a 0-d tensor of the parameters' dtype. */
    private record Num(double v, boolean tensor) {
        /** A state value: a one-element tensor, a number, or null. */
        static Num of(Object stored) {
            if (stored instanceof Tensor t) return new Num(t.item(), true);
            if (stored instanceof Number n) return new Num(n.doubleValue(), false);
            return null;
        }
    }

    /**
     * PyTorch's scalar promotion for {@link Num}: an operation with a tensor operand is computed in the
     * tensor's dtype (the Python float cast to it first) and gives a tensor; between Python floats it is
     * double arithmetic. Comparisons with a tensor operand compare in its dtype. For float64 parameters all
     * of this is plain double arithmetic.
     */
    private static final class Scalars {
        private final boolean float32;

        Scalars(boolean float32) {
            this.float32 = float32;
        }

        private double round(double x) {
            return float32 ? (double) (float) x : x;
        }

        Num py(double v) {
            return new Num(v, false);
        }

        Num tensor(double v) {
            return new Num(round(v), true);
        }

        private Num op(Num a, Num b, java.util.function.DoubleBinaryOperator f) {
            if (a.tensor() || b.tensor()) return tensor(f.applyAsDouble(round(a.v()), round(b.v())));
            return py(f.applyAsDouble(a.v(), b.v()));
        }

        Num add(Num a, Num b) {
            return op(a, b, Double::sum);
        }

        Num sub(Num a, Num b) {
            return op(a, b, (x, y) -> x - y);
        }

        Num mul(Num a, Num b) {
            return op(a, b, (x, y) -> x * y);
        }

        Num div(Num a, Num b) {
            return op(a, b, (x, y) -> x / y);
        }

        Num abs(Num a) {
            return new Num(Math.abs(a.v()), a.tensor());
        }

        Num sqrt(Num a) {
            return a.tensor() ? tensor(Math.sqrt(a.v())) : py(Math.sqrt(a.v()));
        }

        private int compare(Num a, Num b) {
            boolean t = a.tensor() || b.tensor();
            double x = t ? round(a.v()) : a.v();
            double y = t ? round(b.v()) : b.v();
            return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2; // 2: unordered (NaN), false for every comparison
        }

        boolean lt(Num a, Num b) {
            return compare(a, b) == -1;
        }

        boolean le(Num a, Num b) {
            int c = compare(a, b);
            return c == -1 || c == 0;
        }

        boolean gt(Num a, Num b) {
            return compare(a, b) == 1;
        }

        boolean ge(Num a, Num b) {
            int c = compare(a, b);
            return c == 1 || c == 0;
        }

        /** Python's {@code min(a, b)}: {@code b} only when {@code b < a}. */
        Num min(Num a, Num b) {
            return lt(b, a) ? b : a;
        }

        /** Python's {@code max(a, b)}: {@code b} only when {@code b > a}. */
        Num max(Num a, Num b) {
            return gt(b, a) ? b : a;
        }
    }
}
