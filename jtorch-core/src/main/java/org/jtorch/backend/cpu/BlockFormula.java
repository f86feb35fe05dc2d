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
    /** Per step: the same for every element (a constant, a parameter, or math on them only). */
    private final boolean[] uniform;

    BlockFormula(Expr formula, int inputs) {
        if (!formula.isFormula()) throw new IllegalArgumentException(formula + " is not a pointwise formula");
        this.inputs = inputs;
        List<Step> list = new ArrayList<>();
        this.result = flatten(formula, list, new IdentityHashMap<>());
        this.steps = list.toArray(new Step[0]);
        this.uniform = new boolean[steps.length];
        for (int j = 0; j < steps.length; j++) {
            int[] args = steps[j].args();
            boolean u = true;
            if (args != null) for (int k : args) u &= uniform(k);
            uniform[j] = u;
        }
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

    /** Whether value {@code v} is the same for every element (a constant, a parameter, math on them): held in [0]. */
    private boolean uniform(int v) {
        return v >= inputs && uniform[v - inputs];
    }

    /** Values {@link #eval} numbers: its {@code values} argument's length. */
    int values() {
        return inputs + steps.length;
    }

    /**
     * The formula over {@code n} elements of inputs {@code in[k]}: a row of {@code scratch} (or an input);
     * {@code v} ({@link #values} long) is the caller's, reused from block to block.
     */
    double[] eval(double[][] in, double[] p, int n, double[][] scratch, double[][] v) {
        System.arraycopy(in, 0, v, 0, inputs);
        for (int j = 0; j < steps.length; j++) {
            Step s = steps[j];
            double[] r = scratch[j];
            v[inputs + j] = r;
            if (s.fn() == null) {
                double x = s.param() < 0 ? s.constant() : p[s.param()];
                r[0] = x != x && s.param() >= 0 ? s.ifNone() : x;
                continue;
            }
            int[] a = s.args();
            if (uniform[j]) {
                r[0] = s.fn().apply(v[a[0]][0], a.length > 1 ? v[a[1]][0] : 0, a.length > 2 ? v[a[2]][0] : 0);
                continue;
            }
            double[] x = v[a[0]];
            double[] y = a.length > 1 ? v[a[1]] : null;
            if (s.fn() == Fn.MUL && (uniform(a[0]) && x[0] == 1 || uniform(a[1]) && y[0] == 1)) {
                // x * 1 is x, bit for bit: add's and sub's alpha of 1 costs no pass.
                v[inputs + j] = uniform(a[0]) && x[0] == 1 ? y : x;
                continue;
            }
            if (y != null && a.length == 2 && uniform(a[1]) && arithmetic(s.fn())) {
                applyScalar(s.fn(), x, y[0], n, r);
                continue;
            }
            for (int k : a) if (uniform(k)) Arrays.fill(v[k], 1, n, v[k][0]);
            apply(s.fn(), x, y, a.length > 2 ? v[a[2]] : null, n, r);
        }
        double[] r = v[result];
        if (uniform(result)) Arrays.fill(r, 1, n, r[0]);
        return r;
    }

    /** The same in integer compute, parameters as Java's {@code (long)} of each. */
    long[] eval(long[][] in, long[] p, int n, long[][] scratch, long[][] v) {
        System.arraycopy(in, 0, v, 0, inputs);
        for (int j = 0; j < steps.length; j++) {
            Step s = steps[j];
            long[] r = scratch[j];
            v[inputs + j] = r;
            if (s.fn() == null) {
                r[0] = s.param() < 0 ? (long) s.constant() : p[s.param()];
                continue;
            }
            int[] a = s.args();
            if (uniform[j]) {
                r[0] = s.fn().applyLong(v[a[0]][0], a.length > 1 ? v[a[1]][0] : 0, a.length > 2 ? v[a[2]][0] : 0);
                continue;
            }
            long[] x = v[a[0]];
            long[] y = a.length > 1 ? v[a[1]] : null;
            if (s.fn() == Fn.MUL && (uniform(a[0]) && x[0] == 1 || uniform(a[1]) && y[0] == 1)) {
                v[inputs + j] = uniform(a[0]) && x[0] == 1 ? y : x;
                continue;
            }
            for (int k : a) if (uniform(k)) Arrays.fill(v[k], 1, n, v[k][0]);
            apply(s.fn(), x, y, a.length > 2 ? v[a[2]] : null, n, r);
        }
        long[] r = v[result];
        if (uniform(result)) Arrays.fill(r, 1, n, r[0]);
        return r;
    }

    private static boolean arithmetic(Fn fn) {
        return fn == Fn.ADD || fn == Fn.SUB || fn == Fn.MUL || fn == Fn.DIV;
    }

    /** {@code r = a fn c} with {@code c} the same for every element. */
    private static void applyScalar(Fn fn, double[] a, double c, int n, double[] r) {
        switch (fn) {
            case ADD -> { for (int i = 0; i < n; i++) r[i] = a[i] + c; }
            case SUB -> { for (int i = 0; i < n; i++) r[i] = a[i] - c; }
            case MUL -> { for (int i = 0; i < n; i++) r[i] = a[i] * c; }
            default -> { for (int i = 0; i < n; i++) r[i] = a[i] / c; }
        }
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
