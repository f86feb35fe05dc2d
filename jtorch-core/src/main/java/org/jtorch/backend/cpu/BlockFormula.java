package org.jtorch.backend.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;

/**
 * A pointwise formula evaluated a block of elements at a time, in double (floating compute) or long (integer
 * compute): the tree is flattened once into steps, each one loop over the block, so that an element costs one call
 * of each function (none for the arithmetic written out here), not a chain of calls through the tree. It computes
 * what {@link Expr#compileArrays} and {@link Expr#compileLongArrays} compute, element for element: the reference path
 * of {@link CpuFormulaKernel} (integer compute, strided rows, functions without a vector form).
 */
final class BlockFormula {
    /**
     * One node: a constant, a parameter (None: {@code ifNone}) or a function of earlier steps' values. Values are
     * numbered inputs first ({@code 0..inputs-1}), then steps; {@code args} holds value numbers.
     */
    private record Step(Fn fn, int[] args, double constant, int param, double ifNone) {}

    private final int inputs;
    private final Step[] steps;
    /** The value number of the formula's result. */
    private final int result;

    BlockFormula(Expr formula, int inputs) {
        if (!formula.isFormula()) throw new IllegalArgumentException(formula + " is not a pointwise formula");
        this.inputs = inputs;
        List<Step> list = new ArrayList<>();
        this.result = flatten(formula, list, new IdentityHashMap<>());
        this.steps = list.toArray(new Step[0]);
    }

    private int flatten(Expr e, List<Step> list, Map<Expr, Integer> done) {
        if (e instanceof Expr.In i) return i.index();
        Integer seen = done.get(e);
        if (seen != null) return seen;
        Step s = switch (e) {
            case Expr.Const c -> new Step(null, null, c.value(), -1, 0);
            case Expr.Scalar p -> new Step(null, null, 0, p.index(), p.ifNone());
            case Expr.Math m -> {
                int[] args = new int[m.args().size()];
                for (int k = 0; k < args.length; k++) args[k] = flatten(m.args().get(k), list, done);
                yield new Step(m.fn(), args, 0, -1, 0);
            }
            default -> throw new IllegalStateException(e + " is not a pointwise formula");
        };
        list.add(s);
        int value = inputs + list.size() - 1;
        done.put(e, value);
        return value;
    }

    /** Scratch rows {@link #eval} needs, each of the block's length. */
    int scratchRows() {
        return steps.length;
    }

    /** The formula over {@code n} elements of inputs {@code in[k]}: a row of {@code scratch} (or an input). */
    double[] eval(double[][] in, double[] p, int n, double[][] scratch) {
        for (int j = 0; j < steps.length; j++) {
            Step s = steps[j];
            double[] r = scratch[j];
            if (s.fn() == null) {
                double v = s.param() < 0 ? s.constant() : p[s.param()];
                Arrays.fill(r, 0, n, v != v && s.param() >= 0 ? s.ifNone() : v);
                continue;
            }
            int[] a = s.args();
            double[] x = value(a[0], in, scratch);
            double[] y = a.length > 1 ? value(a[1], in, scratch) : null;
            double[] z = a.length > 2 ? value(a[2], in, scratch) : null;
            apply(s.fn(), x, y, z, n, r);
        }
        return value(result, in, scratch);
    }

    /** The same in integer compute, parameters as Java's {@code (long)} of each. */
    long[] eval(long[][] in, long[] p, int n, long[][] scratch) {
        for (int j = 0; j < steps.length; j++) {
            Step s = steps[j];
            long[] r = scratch[j];
            if (s.fn() == null) {
                Arrays.fill(r, 0, n, s.param() < 0 ? (long) s.constant() : p[s.param()]);
                continue;
            }
            int[] a = s.args();
            long[] x = value(a[0], in, scratch);
            long[] y = a.length > 1 ? value(a[1], in, scratch) : null;
            long[] z = a.length > 2 ? value(a[2], in, scratch) : null;
            apply(s.fn(), x, y, z, n, r);
        }
        return value(result, in, scratch);
    }

    private <T> T value(int v, T[] in, T[] scratch) {
        return v < inputs ? in[v] : scratch[v - inputs];
    }

    private static void apply(Fn fn, double[] a, double[] b, double[] c, int n, double[] r) {
        switch (fn) {
            case ADD -> { for (int i = 0; i < n; i++) r[i] = a[i] + b[i]; }
            case SUB -> { for (int i = 0; i < n; i++) r[i] = a[i] - b[i]; }
            case MUL -> { for (int i = 0; i < n; i++) r[i] = a[i] * b[i]; }
            case DIV -> { for (int i = 0; i < n; i++) r[i] = a[i] / b[i]; }
            case NEG -> { for (int i = 0; i < n; i++) r[i] = -a[i]; }
            default -> {
                switch (fn.arity()) {
                    case 1 -> { for (int i = 0; i < n; i++) r[i] = fn.apply(a[i], 0, 0); }
                    case 2 -> { for (int i = 0; i < n; i++) r[i] = fn.apply(a[i], b[i], 0); }
                    default -> { for (int i = 0; i < n; i++) r[i] = fn.apply(a[i], b[i], c[i]); }
                }
            }
        }
    }

    private static void apply(Fn fn, long[] a, long[] b, long[] c, int n, long[] r) {
        switch (fn) {
            case ADD -> { for (int i = 0; i < n; i++) r[i] = a[i] + b[i]; }
            case SUB -> { for (int i = 0; i < n; i++) r[i] = a[i] - b[i]; }
            case MUL -> { for (int i = 0; i < n; i++) r[i] = a[i] * b[i]; }
            case NEG -> { for (int i = 0; i < n; i++) r[i] = -a[i]; }
            default -> {
                switch (fn.arity()) {
                    case 1 -> { for (int i = 0; i < n; i++) r[i] = fn.applyLong(a[i], 0, 0); }
                    case 2 -> { for (int i = 0; i < n; i++) r[i] = fn.applyLong(a[i], b[i], 0); }
                    default -> { for (int i = 0; i < n; i++) r[i] = fn.applyLong(a[i], b[i], c[i]); }
                }
            }
        }
    }
}
