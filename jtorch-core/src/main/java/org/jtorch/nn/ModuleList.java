package org.jtorch.nn;

import java.util.Iterator;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** A list of registered modules (named {@code 0, 1, ...}); it has no forward of its own, as PyTorch's {@code ModuleList}. */
public class ModuleList extends Module implements Iterable<Module> {
    private int count;

    public ModuleList(Module... modules) {
        Arguments.nonNullElements("ModuleList", "modules", modules);
        for (Module m : modules) add(m);
    }

    public ModuleList add(Module module) {
        Arguments.nonNull("ModuleList.add", "module", module);
        registerModule(Integer.toString(count++), module);
        return this;
    }

    public Module get(int index) {
        int n = size();
        int i = index < 0 ? index + n : index;
        if (i < 0 || i >= n) {
            throw new IndexOutOfBoundsException(getClass().getSimpleName() + ": index " + index + " is out of range for " + n
                    + " modules");
        }
        return children().get(i);
    }

    public int size() {
        return count;
    }

    @Override
    public Iterator<Module> iterator() {
        return children().iterator();
    }

    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException("ModuleList: has no forward(); iterate over its modules instead");
    }
}
