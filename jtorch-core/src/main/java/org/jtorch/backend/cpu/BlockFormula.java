package org.jtorch.backend.cpu;

import java.util.IdentityHashMap;
import java.util.Map;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;

/**
 * A pointwise formula evaluated a block of elements at a time, in double (floating compute) or long (integer
 * compute): each node of the tree runs one loop over the block, so that an element costs one call of each function
 * (none for the arithmetic written out here), not a chain of calls through the tree. It computes what
 * {@link Expr#compileArrays} and {@link Expr#compileLongArrays} compute, element for element: the reference path of
 * {@link CpuFormulaKernel} (integer compute, strided rows, functions without a vector form).
 */
final class BlockFormula {
    private final Expr formula;
    /** The scratch row of each node that is not an input. */
    private final Map<Expr, Integer> rows = new IdentityHashMap<>();

    BlockFormula(Expr formula) {
        if (!formula.isFormula()) throw new IllegalArgumentException(formula + " is not a pointwise formula");
        this.formula = formula;
        number(formula);
    }

    private void number(Expr e) {
        if (!(e instanceof Expr.In)) rows.putIfAbsent(e, rows.size());
        if (e instanceof Expr.Math m) m.args().forEach(this::number);
    }

    /** Scratch rows {@link #eval} needs, each of the block's length. */
    int scratchRows() {
        return rows.size();
    }

    /** The formula over {@code n} elements of inputs {@code in[k]} (a row of {@code scratch}, or an input). */
    double[] eval(double[][] in, double[] p, int n, double[][] scratch) {
        return eval(formula, in, p, n, scratch);
    }

    /** The same in integer compute, parameters as Java's {@code (long)} of each. */
    long[] eval(long[][] in, long[] p, int n, long[][] scratch) {
        return eval(formula, in, p, n, scratch);
    }

    private double[] eval(Expr e, double[][] in, double[] p, int n, double[][] scratch) {
        if (e instanceof Expr.In i) return in[i.index()];
        double[] r = scratch[rows.get(e)];
        switch (e) {
            case Expr.Const c -> java.util.Arrays.fill(r, 0, n, c.value());
            case Expr.Scalar s -> {
                double v = p[s.index()];
                java.util.Arrays.fill(r, 0, n, v != v ? s.ifNone() : v);
            }
            case Expr.Math m -> {
                double[] a = eval(m.args().get(0), in, p, n, scratch);
                double[] b = m.args().size() > 1 ? eval(m.args().get(1), in, p, n, scratch) : null;
                double[] c = m.args().size() > 2 ? eval(m.args().get(2), in, p, n, scratch) : null;
                apply(m.fn(), a, b, c, n, r);
            }
            default -> throw new IllegalStateException(e + " is not a pointwise formula");
        }
        return r;
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

    private long[] eval(Expr e, long[][] in, long[] p, int n, long[][] scratch) {
        if (e instanceof Expr.In i) return in[i.index()];
        long[] r = scratch[rows.get(e)];
        switch (e) {
            case Expr.Const c -> java.util.Arrays.fill(r, 0, n, (long) c.value());
            case Expr.Scalar s -> java.util.Arrays.fill(r, 0, n, p[s.index()]);
            case Expr.Math m -> {
                long[] a = eval(m.args().get(0), in, p, n, scratch);
                long[] b = m.args().size() > 1 ? eval(m.args().get(1), in, p, n, scratch) : null;
                long[] c = m.args().size() > 2 ? eval(m.args().get(2), in, p, n, scratch) : null;
                apply(m.fn(), a, b, c, n, r);
            }
            default -> throw new IllegalStateException(e + " is not a pointwise formula");
        }
        return r;
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
