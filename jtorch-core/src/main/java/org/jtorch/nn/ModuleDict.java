package org.jtorch.nn;

import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/** Modules registered by name, in insertion order; no forward of its own, as PyTorch's {@code ModuleDict}. */
public class ModuleDict extends Module {
    public ModuleDict() {}

    public ModuleDict(Map<String, ? extends Module> modules) {
        Arguments.nonNull("ModuleDict", "modules", modules);
        modules.forEach(this::put);
    }

    public ModuleDict put(String name, Module module) {
        Arguments.nonNull("ModuleDict.put", "name", name);
        Arguments.nonNull("ModuleDict.put", "module", module);
        registerModule(name, module);
        return this;
    }

    public Module get(String name) {
        Arguments.nonNull("ModuleDict.get", "name", name);
        return child(name);
    }

    public boolean containsKey(String name) {
        Arguments.nonNull("ModuleDict.containsKey", "name", name);
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
