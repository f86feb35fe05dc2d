package org.jtorch.nn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.io.StateReader;
import org.jtorch.io.TensorState;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Base class of neural-network layers, as {@code torch.nn.Module}: a tree of named parameters,
 * buffers and child modules, registered explicitly and kept in insertion order, which gives
 * PyTorch's traversal order and dotted state-dict names ({@code layers.1.bias}).
 *
 * <p>Ownership: a module owns its parameters and buffers; {@link #close()} releases them and those of
 * every child. {@link #to(DType)} and {@link #to(Device)} replace the tensors (closing the old ones),
 * so subclasses read their parameters through {@link #parameter(String)} rather than caching them.
 * Tensors returned by {@link #stateDict()} are new views that the caller closes. A parameter is
 * a leaf tensor that requires grad; its gradient lives in {@link Tensor#grad()}.
 *
 * <p>Thread safety: none; a module is configured and trained from one thread at a time.
 */
public abstract class Module implements AutoCloseable, Cloneable, TensorState<Module.LoadResult> {
    // Values may be null: PyTorch registers None for an absent parameter (Linear without bias), which
    // then takes part in neither traversal nor the state dict. Not final only so that deepCopy can give a copy its own.
    private LinkedHashMap<String, Tensor> parameters = new LinkedHashMap<>();
    private LinkedHashMap<String, Tensor> buffers = new LinkedHashMap<>();
    private Set<String> nonPersistentBuffers = new LinkedHashSet<>();
    private LinkedHashMap<String, Module> children = new LinkedHashMap<>();
    private boolean training = true;

    /** Maps one input tensor to one output; the caller owns the result. */
    public abstract Tensor forward(Tensor input);

    // ------------------------------------------------------------------ registration

    /**
     * Registers {@code tensor} (or null for an absent parameter) as parameter {@code name}; the module
     * takes ownership and marks it as requiring grad. Replacing a parameter closes the previous tensor.
     */
    public Tensor registerParameter(String name, Tensor tensor) {
        return registerParameter(name, tensor, true);
    }

    /** As {@link #registerParameter(String, Tensor)}, with {@code requiresGrad} false for a frozen parameter. */
    public Tensor registerParameter(String name, Tensor tensor, boolean requiresGrad) {
        Arguments.nonNull("registerParameter", "name", name);
        checkName("registerParameter", name, parameters);
        if (tensor != null) {
            if (requiresGrad && !tensor.dtype().isFloatingPoint()) {
                throw new IllegalArgumentException("registerParameter: parameter '" + name
                        + "' must have a floating point dtype to require grad, got " + tensor.dtype());
            }
            if (!tensor.isLeaf()) {
                throw new IllegalArgumentException("registerParameter: cannot assign a non-leaf tensor (the result of an op"
                        + " that requires grad) to parameter '" + name + "'; detach() it first");
            }
            tensor.requiresGrad_(requiresGrad);
            tensor.untrack(); // the module owns it now: a scope around the module's construction must not close it
        }
        Tensor old = parameters.put(name, tensor);
        if (old != null && old != tensor) old.close();
        return tensor;
    }

    /**
     * Registers a buffer: state that is not trained (running statistics, masks). Persistent buffers
     * appear in the state dict. The module takes ownership; replacing a buffer closes the previous one.
     */
    public Tensor registerBuffer(String name, Tensor tensor, boolean persistent) {
        Arguments.nonNull("registerBuffer", "name", name);
        checkName("registerBuffer", name, buffers);
        if (tensor != null) tensor.untrack(); // owned by the module, as parameters
        Tensor old = buffers.put(name, tensor);
        if (old != null && old != tensor) old.close();
        if (persistent) nonPersistentBuffers.remove(name);
        else nonPersistentBuffers.add(name);
        return tensor;
    }

    public Tensor registerBuffer(String name, Tensor tensor) {
        return registerBuffer(name, tensor, true);
    }

    /** Registers a child module under {@code name}; its parameters appear as {@code name.<param>}. */
    public <M extends Module> M registerModule(String name, M module) {
        Arguments.nonNull("registerModule", "name", name);
        checkName("registerModule", name, children);
        if (module == this) throw new IllegalArgumentException("registerModule: a module cannot be its own child ('" + name + "')");
        children.put(name, module);
        return module;
    }

    private void checkName(String op, String name, Map<String, ?> own) {
        if (name == null || name.isEmpty()) throw new IllegalArgumentException(op + ": name can't be empty");
        if (name.contains(".")) throw new IllegalArgumentException(op + ": name can't contain \".\", got '" + name + "'");
        boolean taken = (own != parameters && parameters.containsKey(name)) || (own != buffers && buffers.containsKey(name))
                || (own != children && children.containsKey(name));
        if (taken) throw new IllegalArgumentException(op + ": attribute '" + name + "' already exists");
    }

    /** The parameter registered as {@code name} in this module (not its children); null if registered as absent. */
    public Tensor parameter(String name) {
        Arguments.nonNull("parameter", "name", name);
        if (!parameters.containsKey(name)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + " has no parameter '" + name + "'");
        }
        return parameters.get(name);
    }

    /** The buffer registered as {@code name} in this module; null if registered as absent. */
    public Tensor buffer(String name) {
        Arguments.nonNull("buffer", "name", name);
        if (!buffers.containsKey(name)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + " has no buffer '" + name + "'");
        }
        return buffers.get(name);
    }

    /** The child registered as {@code name}. */
    public Module child(String name) {
        Arguments.nonNull("child", "name", name);
        Module m = children.get(name);
        if (m == null) throw new IllegalArgumentException(getClass().getSimpleName() + " has no submodule '" + name + "'");
        return m;
    }

    // ------------------------------------------------------------------ traversal

    /** Parameters of this module and its descendants, each once, in registration order (depth first). */
    public List<Tensor> parameters() {
        return new ArrayList<>(namedParameters().values());
    }

    /** Parameters by dotted name ({@code 0.weight}, {@code layers.1.bias}); a shared parameter appears once, under its first name. */
    public Map<String, Tensor> namedParameters() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        Set<Tensor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Map.Entry<String, Module> e : namedModules().entrySet()) {
            String prefix = e.getKey().isEmpty() ? "" : e.getKey() + ".";
            for (Map.Entry<String, Tensor> p : e.getValue().parameters.entrySet()) {
                if (p.getValue() != null && seen.add(p.getValue())) out.put(prefix + p.getKey(), p.getValue());
            }
        }
        return out;
    }

    public List<Tensor> buffers() {
        return new ArrayList<>(namedBuffers().values());
    }

    /** Buffers (persistent or not) by dotted name. */
    public Map<String, Tensor> namedBuffers() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        Set<Tensor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Map.Entry<String, Module> e : namedModules().entrySet()) {
            String prefix = e.getKey().isEmpty() ? "" : e.getKey() + ".";
            for (Map.Entry<String, Tensor> b : e.getValue().buffers.entrySet()) {
                if (b.getValue() != null && seen.add(b.getValue())) out.put(prefix + b.getKey(), b.getValue());
            }
        }
        return out;
    }

    /** Direct children in registration order. */
    public List<Module> children() {
        return new ArrayList<>(children.values());
    }

    public Map<String, Module> namedChildren() {
        return Collections.unmodifiableMap(new LinkedHashMap<>(children));
    }

    /** This module and all descendants, pre-order, each once. */
    public List<Module> modules() {
        return new ArrayList<>(namedModules().values());
    }

    /** This module (name "") and all descendants by dotted path, pre-order, each once. */
    public Map<String, Module> namedModules() {
        Map<String, Module> out = new LinkedHashMap<>();
        collectModules("", this, out, Collections.newSetFromMap(new IdentityHashMap<>()));
        return out;
    }

    private static void collectModules(String prefix, Module m, Map<String, Module> out, Set<Module> seen) {
        if (!seen.add(m)) return;
        out.put(prefix, m);
        for (Map.Entry<String, Module> c : m.children.entrySet()) {
            collectModules(prefix.isEmpty() ? c.getKey() : prefix + "." + c.getKey(), c.getValue(), out, seen);
        }
    }

    /** Calls {@code fn} on every descendant (children first, depth first) and then on this module, as PyTorch's {@code apply}. */
    public Module apply(Consumer<Module> fn) {
        Arguments.nonNull("apply", "fn", fn);
        for (Module c : children.values()) c.apply(fn);
        fn.accept(this);
        return this;
    }

    // ------------------------------------------------------------------ modes

    /** Sets training mode on this module and its descendants (affects Dropout, for example). */
    public Module train(boolean mode) {
        training = mode;
        for (Module c : children.values()) c.train(mode);
        return this;
    }

    public Module train() {
        return train(true);
    }

    public Module eval() {
        return train(false);
    }

    public boolean isTraining() {
        return training;
    }

    /** Releases every parameter's gradient (PyTorch's {@code zero_grad(set_to_none=True)}). */
    public void zeroGrad() {
        for (Tensor p : parameters()) {
            Tensor g = p.grad();
            if (g != null) {
                p.setGrad(null);
                g.close();
            }
        }
    }

    // ------------------------------------------------------------------ conversion

    /** Moves parameters, their gradients and buffers to {@code device}, replacing (and closing) the old tensors. */
    public Module to(Device device) {
        Arguments.nonNull("to", "device", device);
        return convert(t -> t.to(device));
    }

    /** {@code to(Device.cuda())}: parameters, gradients and buffers on {@code cuda:0}. */
    public Module cuda() {
        return to(Device.cuda());
    }

    /** {@code to(Device.cpu())}. */
    public Module cpu() {
        return to(Device.cpu());
    }

    /** Casts floating-point parameters, gradients and buffers to the floating dtype {@code dtype}; others stay as they are. */
    public Module to(DType dtype) {
        Arguments.nonNull("to", "dtype", dtype);
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("Module.to: only floating point dtypes are accepted, got " + dtype);
        }
        return convert(t -> t.dtype().isFloatingPoint() ? t.to(dtype) : t.alias());
    }

    private Module convert(UnaryOperator<Tensor> fn) {
        for (Module m : modules()) {
            try (Grad.Mode g = Grad.noGrad()) {
                for (Map.Entry<String, Tensor> e : m.parameters.entrySet()) {
                    Tensor old = e.getValue();
                    if (old == null) continue;
                    Tensor moved = fn.apply(old);
                    if (moved == old || moved.storage() == old.storage()) {
                        // Already on that device and dtype: keep the parameter itself (an alias would not be the autograd leaf).
                        if (moved != old) moved.close();
                        continue;
                    }
                    moved.requiresGrad_(old.requiresGrad());
                    Tensor grad = old.grad();
                    if (grad != null) moved.setGrad(fn.apply(grad));
                    e.setValue(moved);
                    old.close();
                }
                for (Map.Entry<String, Tensor> e : m.buffers.entrySet()) {
                    Tensor old = e.getValue();
                    if (old == null) continue;
                    Tensor moved = fn.apply(old);
                    if (moved == old || moved.storage() == old.storage()) {
                        if (moved != old) moved.close();
                        continue;
                    }
                    e.setValue(moved);
                    old.close();
                }
            }
        }
        return this;
    }

    // ------------------------------------------------------------------ state dict

    /**
     * Parameters and persistent buffers by dotted name, in traversal order, as detached views sharing
     * the module's storage (writing into them changes the module). The caller closes the returned tensors.
     */
    @Override
    public Map<String, Tensor> stateDict() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : stateTensors().entrySet()) out.put(e.getKey(), e.getValue().detach());
        return out;
    }

    /** The module's own tensors that a state dict holds, by name (not copies). */
    private Map<String, Tensor> stateTensors() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        collectState("", this, out, Collections.newSetFromMap(new IdentityHashMap<>()));
        return out;
    }

    private static void collectState(String prefix, Module m, Map<String, Tensor> out, Set<Module> seen) {
        if (!seen.add(m)) return;
        for (Map.Entry<String, Tensor> p : m.parameters.entrySet()) {
            if (p.getValue() != null) out.put(prefix + p.getKey(), p.getValue());
        }
        for (Map.Entry<String, Tensor> b : m.buffers.entrySet()) {
            if (b.getValue() != null && !m.nonPersistentBuffers.contains(b.getKey())) out.put(prefix + b.getKey(), b.getValue());
        }
        for (Map.Entry<String, Module> c : m.children.entrySet()) collectState(prefix + c.getKey() + ".", c.getValue(), out, seen);
    }

    /** The keys a {@link #loadStateDict} call found missing from, or unexpected in, the given state dict. */
    public record LoadResult(List<String> missingKeys, List<String> unexpectedKeys) {
        public LoadResult {
            Arguments.nonNull("LoadResult", "missingKeys", missingKeys);
            Arguments.nonNull("LoadResult", "unexpectedKeys", unexpectedKeys);
        }
    }

    /**
     * Copies {@code state} into this module's parameters and persistent buffers (converting dtype and
     * device; without recording gradients). A shape mismatch always fails; with {@code strict},
     * missing and unexpected keys fail too (nothing is copied then). The message lists every problem,
     * in PyTorch's wording.
     */
    @Override
    public LoadResult loadStateDict(Map<String, Tensor> state, boolean strict) {
        Arguments.nonNull("loadStateDict", "state", state);
        Map<String, Tensor> own = stateTensors();
        List<String> missing = new ArrayList<>();
        List<String> unexpected = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        for (Map.Entry<String, Tensor> e : own.entrySet()) {
            Object value = ((Map<?, ?>) state).get(e.getKey()); // a raw map may hold anything
            if (value != null && !(value instanceof Tensor)) {
                throw new IllegalArgumentException("loadStateDict: '" + e.getKey() + "' must be a tensor, found " + StateReader.describe(value));
            }
            Tensor src = (Tensor) value;
            if (src != null) src.checkOpen("loadStateDict('" + e.getKey() + "')");
            if (src == null) {
                missing.add(e.getKey());
            } else if (!Arrays.equals(src.shape(), e.getValue().shape())) {
                errors.add("size mismatch for " + e.getKey() + ": copying a param with shape " + Shapes.format(src.shape())
                        + " from checkpoint, the shape in current model is " + Shapes.format(e.getValue().shape()) + ".");
            }
        }
        for (Object k : state.keySet()) {
            if (!(k instanceof String key)) throw new IllegalArgumentException("loadStateDict: keys must be strings, found " + StateReader.describe(k));
            if (!own.containsKey(key)) unexpected.add(key);
        }
        if (strict) {
            if (!unexpected.isEmpty()) errors.add(0, "Unexpected key(s) in state_dict: " + quoted(unexpected) + ".");
            if (!missing.isEmpty()) errors.add(0, "Missing key(s) in state_dict: " + quoted(missing) + ".");
        }
        if (!errors.isEmpty()) {
            throw new IllegalArgumentException("loadStateDict: Error(s) in loading state_dict for " + getClass().getSimpleName()
                    + ":\n\t" + String.join("\n\t", errors));
        }
        try (Grad.Mode g = Grad.noGrad()) {
            for (Map.Entry<String, Tensor> e : own.entrySet()) {
                Tensor src = state.get(e.getKey());
                if (src != null) e.getValue().copy_(src);
            }
        }
        return new LoadResult(List.copyOf(missing), List.copyOf(unexpected));
    }

    /** Strict loading: every key must match. */
    public LoadResult loadStateDict(Map<String, Tensor> state) {
        return loadStateDict(state, true);
    }

    private static String quoted(List<String> keys) {
        StringBuilder sb = new StringBuilder();
        for (String k : keys) {
            if (!sb.isEmpty()) sb.append(", ");
            sb.append('"').append(k).append('"');
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ copying

    /**
     * A deep copy, as Python's {@code copy.deepcopy(module)}: a module of the same class with its own parameters, buffers
     * and submodules (new storage with equal values, on the same device and dtype), the same training flag, each
     * parameter's {@code requiresGrad} and a copy of its {@code .grad}. What is shared inside this module stays shared
     * in the copy (tied weights, a submodule registered twice). The copy is owned by the caller, outside any
     * {@link org.jtorch.memory.MemoryScope}.
     *
     * <p>Fields of subclasses are copied by reflection: fields holding modules or tensors (also in arrays, lists and
     * maps) point to their copies, so they must not be final (a final one is refused, naming it: writing final fields
     * through reflection is what JEP 500 takes away; declare such a field without {@code final}, or look the child up
     * with {@link #child(String)}); every other field value (options, sizes, functions) is shared with the original, so
     * such state must be immutable, and a lambda that captured the original module keeps calling it. Hooks are not
     * copied: tensor hooks (such as those {@link org.jtorch.nn.parallel.DistributedDataParallel} installs) belong to the
     * original's tensors, and a module has no forward hooks.
     *
     * @throws UnsupportedOperationException for a module that cannot be meaningfully copied (DDP: copy its module)
     */
    public Module deepCopy() {
        // Refused before anything is cloned, so that a refusal leaves no half-made copy behind.
        for (Module m : modules()) m.checkNoFinalState();
        try (Grad.Mode g = Grad.noGrad()) {
            return copyInto(new IdentityHashMap<>());
        }
    }

    /** Throws for a final field whose value deepCopy would have to replace (a module or tensor, or a container of them). */
    private void checkNoFinalState() {
        for (Class<?> c = getClass(); c != Module.class; c = c.getSuperclass()) {
            for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                int mod = f.getModifiers();
                if (java.lang.reflect.Modifier.isStatic(mod) || !java.lang.reflect.Modifier.isFinal(mod)) continue;
                Object value;
                try {
                    f.setAccessible(true);
                    value = f.get(this);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    continue; // unreadable: the copy loop reports it
                }
                if (needsCopy(value)) throw finalStateField(c, f);
            }
        }
    }

    private UnsupportedOperationException finalStateField(Class<?> c, java.lang.reflect.Field f) {
        // Writing a final field through reflection is what JEP 500 takes away; say what to change instead.
        return new UnsupportedOperationException("deepCopy: field " + c.getSimpleName() + "." + f.getName() + " of "
                + getClass().getSimpleName() + " is final and holds a module or tensor, which the copy must replace with its own: "
                + "declare the field without final, or look the child up with child(name)");
    }

    /** {@link #deepCopy()} typed as its argument: {@code LSTM copy = Module.deepCopy(lstm)}. */
    @SuppressWarnings("unchecked")
    public static <M extends Module> M deepCopy(M module) {
        Arguments.nonNull("deepCopy", "module", module);
        return (M) module.deepCopy();
    }

    /** {@code memo} maps each original module and tensor to its copy, as deepcopy's memo. */
    private Module copyInto(IdentityHashMap<Object, Object> memo) {
        Object done = memo.get(this);
        if (done != null) return (Module) done;
        Module copy;
        try {
            copy = (Module) super.clone();
        } catch (CloneNotSupportedException e) {
            throw new AssertionError(e); // Module is Cloneable
        }
        memo.put(this, copy);
        copy.parameters = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : parameters.entrySet()) copy.parameters.put(e.getKey(), copyTensor(e.getValue(), memo));
        copy.buffers = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : buffers.entrySet()) copy.buffers.put(e.getKey(), copyTensor(e.getValue(), memo));
        copy.nonPersistentBuffers = new LinkedHashSet<>(nonPersistentBuffers);
        copy.children = new LinkedHashMap<>();
        for (Map.Entry<String, Module> e : children.entrySet()) copy.children.put(e.getKey(), e.getValue().copyInto(memo));
        for (Class<?> c = getClass(); c != Module.class; c = c.getSuperclass()) {
            for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) continue;
                try {
                    f.setAccessible(true);
                    Object value = f.get(copy);
                    Object mapped = copyField(value, memo);
                    if (mapped == value) continue;
                    if (java.lang.reflect.Modifier.isFinal(f.getModifiers())) throw finalStateField(c, f);
                    f.set(copy, mapped);
                } catch (UnsupportedOperationException e) {
                    throw e;
                } catch (ReflectiveOperationException | RuntimeException e) {
                    throw new UnsupportedOperationException("deepCopy: cannot copy field " + c.getSimpleName() + "." + f.getName()
                            + " of " + getClass().getSimpleName() + ": " + e.getMessage(), e);
                }
            }
        }
        return copy;
    }

    /** A field's value in the copy: modules and tensors copied (through the memo), containers of them rebuilt, the rest shared. */
    private static Object copyField(Object value, IdentityHashMap<Object, Object> memo) {
        return switch (value) {
            case Module m -> m.copyInto(memo);
            case Tensor t -> copyTensor(t, memo);
            case Object[] items when needsCopy(items) -> {
                Object[] out = items.clone();
                for (int i = 0; i < out.length; i++) out[i] = copyField(items[i], memo);
                yield out;
            }
            case List<?> items when needsCopy(items) -> {
                List<Object> out = new ArrayList<>();
                for (Object item : items) out.add(copyField(item, memo));
                yield out;
            }
            case Map<?, ?> map when needsCopy(map) -> {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : map.entrySet()) out.put(e.getKey(), copyField(e.getValue(), memo));
                yield out;
            }
            case null, default -> value;
        };
    }

    /** Whether {@link #copyField} gives the copy another value: a module or tensor, or a container holding one (at any depth). */
    private static boolean needsCopy(Object value) {
        return switch (value) {
            case Module m -> true;
            case Tensor t -> true;
            case Object[] items -> Arrays.stream(items).anyMatch(Module::needsCopy);
            case List<?> items -> items.stream().anyMatch(Module::needsCopy);
            case Map<?, ?> map -> map.values().stream().anyMatch(Module::needsCopy);
            case null, default -> false;
        };
    }

    private static Tensor copyTensor(Tensor t, IdentityHashMap<Object, Object> memo) {
        if (t == null) return null;
        Object done = memo.get(t);
        if (done != null) return (Tensor) done;
        t.checkOpen("deepCopy");
        Tensor copy = t.clone();
        copy.untrack(); // owned by the copy, as registered tensors are
        copy.requiresGrad_(t.requiresGrad());
        if (t.grad() != null) {
            Tensor grad = t.grad().clone();
            grad.untrack();
            copy.setGrad(grad);
        }
        memo.put(t, copy);
        return copy;
    }

    // ------------------------------------------------------------------ lifetime and printing

    /** Closes every parameter and buffer of this module and its descendants. */
    @Override
    public void close() {
        for (Module m : modules()) {
            for (Tensor p : m.parameters.values()) if (p != null) p.close();
            for (Tensor b : m.buffers.values()) if (b != null) b.close();
        }
    }

    /** The arguments shown between the parentheses of {@link #toString()}, as PyTorch's {@code extra_repr}. */
    protected String extraRepr() {
        return "";
    }

    /** PyTorch's module repr: {@code Linear(in_features=4, out_features=3, bias=True)}, children indented. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(getClass().getSimpleName()).append('(');
        String extra = extraRepr();
        if (children.isEmpty()) return sb.append(extra).append(')').toString();
        sb.append('\n');
        if (!extra.isEmpty()) sb.append("  ").append(extra).append('\n');
        for (Map.Entry<String, Module> c : children.entrySet()) {
            String inner = c.getValue().toString().replace("\n", "\n  ");
            sb.append("  (").append(c.getKey()).append("): ").append(inner).append('\n');
        }
        return sb.append(')').toString();
    }
}
