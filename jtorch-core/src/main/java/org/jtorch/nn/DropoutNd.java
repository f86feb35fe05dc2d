package org.jtorch.nn;

import org.jtorch.types.Generator;

/**
 * What the dropout modules share, as PyTorch's {@code _DropoutNd}: the probability {@code p}, checked
 * to lie in [0, 1], the generator masks are drawn from, {@code inplace}, and the printed form.
 */
public abstract class DropoutNd extends Module {
    private final double p;
    private final Generator gen;
    private final boolean inplace;

    protected DropoutNd(String name, double p, Generator gen) {
        this(name, p, gen, false);
    }

    /** With {@code inplace}, training masks the input itself (PyTorch's {@code inplace=True}). */
    protected DropoutNd(String name, double p, Generator gen, boolean inplace) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(name + ": dropout probability has to be between 0 and 1, but got " + p);
        }
        this.p = p;
        this.gen = gen;
        this.inplace = inplace;
    }

    public boolean inplace() {
        return inplace;
    }

    public double p() {
        return p;
    }

    protected Generator generator() {
        return gen;
    }

    @Override
    protected String extraRepr() {
        return "p=" + p + ", inplace=" + (inplace ? "True" : "False");
    }
}
