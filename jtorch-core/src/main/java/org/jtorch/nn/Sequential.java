package org.jtorch.nn;

import java.util.Iterator;
import org.jtorch.Tensor;

/** Modules applied in order, each to the previous one's output; children are named {@code 0, 1, ...} as in PyTorch. */
public class Sequential extends Module implements Iterable<Module> {
    private int count;

    public Sequential(Module... modules) {
        for (Module m : modules) add(m);
    }

    /** Appends a module (named by its position). */
    public Sequential add(Module module) {
        registerModule(Integer.toString(count++), module);
        return this;
    }

    /** The module at {@code index} (negative counts from the end). */
    public Module get(int index) {
        int n = size();
        int i = index < 0 ? index + n : index;
        if (i < 0 || i >= n) throw new IndexOutOfBoundsException("Sequential: index " + index + " is out of range for " + n + " modules");
        return children().get(i);
    }

    public int size() {
        return count;
    }

    @Override
    public Iterator<Module> iterator() {
        return children().iterator();
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
