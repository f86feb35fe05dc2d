package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Arguments;

/** Modules applied in order, each to the previous one's output; children are named {@code 0, 1, ...} as in PyTorch. */
public class Sequential extends ModuleList {
    public Sequential(Module... modules) {
        Arguments.nonNullElements("Sequential", "modules", modules);
        super(modules);
    }

    /** Appends a module (named by its position). */
    @Override
    public Sequential add(Module module) {
        Arguments.nonNull("Sequential.add", "module", module);
        super.add(module);
        return this;
    }

    /** Runs the modules in order; intermediate results are closed as soon as the next module has consumed them. */
    @Override
    public Tensor forward(Tensor input) {
        Arguments.nonNull("Sequential.forward", "input", input);
        Tensor x = input;
        for (Module m : children()) {
            Tensor y = m.forward(x);
            if (x != input && x != y) x.close();
            x = y;
        }
        return x == input ? input.alias() : x;
    }
}
