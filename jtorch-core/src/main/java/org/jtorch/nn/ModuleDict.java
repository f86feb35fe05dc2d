package org.jtorch.nn;

import java.util.Map;
import org.jtorch.Tensor;

/** Modules registered by name, in insertion order; no forward of its own, as PyTorch's {@code ModuleDict}. */
public class ModuleDict extends Module {
    public ModuleDict() {}

    public ModuleDict(Map<String, ? extends Module> modules) {
        modules.forEach(this::put);
    }

    public ModuleDict put(String name, Module module) {
        registerModule(name, module);
        return this;
    }

    public Module get(String name) {
        return child(name);
    }

    public boolean containsKey(String name) {
        return namedChildren().containsKey(name);
    }

    public int size() {
        return namedChildren().size();
    }

    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException("ModuleDict: has no forward(); call its modules by name instead");
    }
}
