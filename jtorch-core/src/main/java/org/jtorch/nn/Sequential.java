package org.jtorch.nn;

import org.jtorch.Tensor;

/** Modules applied in order, each to the previous one's output; children are named {@code 0, 1, ...} as in PyTorch. */
public class Sequential extends ModuleList {
    public Sequential(Module... modules) {
        super(modules);
    }

    /** Appends a module (named by its position). */
    @Override
    public Sequential add(Module module) {
        super.add(module);
        return this;
    }

    /** Runs the modules in order; intermediate results are closed as soon as the next module has consumed them. */
    @Override
    public Tensor forward(Tensor input) {
        Tensor x = input;
        for (Module m : children()) {
            Tensor y = m.forward(x);
            if (x != input && x != y) x.close();
            x = y;
        }
        return x == input ? input.alias() : x;
    }
}
