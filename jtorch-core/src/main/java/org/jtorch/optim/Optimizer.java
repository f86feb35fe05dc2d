package org.jtorch.optim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.io.StateReader;
import org.jtorch.io.Stateful;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * Base class of the optimizers, as {@code torch.optim.Optimizer}: parameter groups with per-group
 * options, per-parameter state, {@link #step()}, {@link #zeroGrad()} and state dicts.
 *
 * <p><b>Update rules</b> follow PyTorch 1.13's single-tensor (for-loop) implementations exactly.
 * Steps run without recording a graph; parameters whose {@code grad()} is null are skipped (their
 * state is neither created nor advanced). Contiguous float32 CPU parameters take a fused
 * one-pass kernel where the optimizer has one (SGD, Adam, AdamW) unless their group sets
 * {@code foreach} to false; every other case composes tensor ops, for any floating dtype and any strides.
 *
 * <p><b>Ownership.</b> The optimizer owns its state tensors (momentum buffers, moment estimates):
 * they are never released by an enclosing {@link MemoryScope} and are released by {@link #close()}.
 * Parameters and gradients stay owned by their tensors. {@link #stateDict()} returns deep copies
 * that the caller owns (release them with {@link #closeStateDict(Map)}).
 *
 * <p>Not thread-safe: one thread steps an optimizer.
 */
public abstract class Optimizer implements AutoCloseable, Stateful {
    private final String name;
    private final Map<String, Object> defaults;
    private final Set<String> nullableOptions = new HashSet<>();
    private final List<ParamGroup> groups = new ArrayList<>();
    private final IdentityHashMap<Tensor, Map<String, Object>> state = new IdentityHashMap<>();
    private boolean fusedKernels = true;
    private boolean groupAllowsFused = true;

    protected Optimizer(String name, List<ParamGroup> paramGroups, OptimizerOptions<?> options) {
        this.name = name;
        Map<String, Object> d = options.resolved();
        options.builtinDefaults().forEach((k, v) -> {
            if (v == null) nullableOptions.add(k);
        });
        validateOptions(d);
        this.defaults = Collections.unmodifiableMap(d);
        if (paramGroups.isEmpty()) throw new IllegalArgumentException(name + ": optimizer got an empty parameter list");
        for (ParamGroup g : paramGroups) addParamGroup(g);
    }

    /** One group holding all {@code params}. */
    protected static List<ParamGroup> singleGroup(Iterable<Tensor> params) {
        List<Tensor> list = new ArrayList<>();
        for (Tensor p : params) list.add(p);
        if (list.isEmpty()) return List.of();
        return List.of(ParamGroup.of(list));
    }

    /** Checks option values, throwing {@link IllegalArgumentException} with PyTorch's message. */
    protected abstract void validate(Map<String, Object> options);

    /** Checks the options every optimizer shares, then the optimizer's own ({@link #validate}). */
    private void validateOptions(Map<String, Object> options) {
        validate(options);
        Object foreach = options.get("foreach");
        require(foreach == null || foreach instanceof Boolean, "foreach must be null, true or false, not " + StateReader.describe(foreach));
    }

    /** Updates the parameters of one group that have a gradient (called without graph recording). */
    protected abstract void updateGroup(ParamGroup group);

    /** Called once for each parameter of a newly added group (Adagrad initialises its state here). */
    protected void initState(ParamGroup group, Tensor param) {}

    // ------------------------------------------------------------------ groups

    /** Adds a group; options it does not set take the optimizer's defaults, as {@code add_param_group}. */
    public void addParamGroup(ParamGroup group) {
        Arguments.nonNull("Optimizer.addParamGroup", "group", group);
        List<Tensor> params = group.params();
        IdentityHashMap<Tensor, Boolean> seen = new IdentityHashMap<>();
        for (Tensor p : params) {
            if (p == null) throw new IllegalArgumentException(name + ": optimizer can only optimize Tensors, but one of the params is null");
            if (!p.isLeaf()) throw new IllegalArgumentException(name + ": can't optimize a non-leaf Tensor");
            if (seen.put(p, Boolean.TRUE) != null) {
                throw new IllegalArgumentException(name + ": optimizer contains a parameter group with duplicate parameters");
            }
        }
        for (Map.Entry<String, Object> e : defaults.entrySet()) {
            if (e.getValue() == OptimizerOptions.REQUIRED && !group.has(e.getKey())) {
                throw new IllegalArgumentException(name + ": parameter group didn't specify a value of required optimization parameter "
                        + e.getKey());
            }
            group.putIfAbsent(e.getKey(), e.getValue());
        }
        validateOptions(group.options());
        for (ParamGroup g : groups) {
            for (Tensor p : g.params()) {
                if (seen.containsKey(p)) throw new IllegalArgumentException(name + ": some parameters appear in more than one parameter group");
            }
        }
        groups.add(group);
        for (Tensor p : params) initState(group, p);
    }

    /** The parameter groups (read-only list; the groups' options may be changed, as schedulers do). */
    public List<ParamGroup> paramGroups() {
        return Collections.unmodifiableList(groups);
    }

    /** The defaults by PyTorch option name ({@code optimizer.defaults}). */
    public Map<String, Object> defaults() {
        return defaults;
    }

    /** The state of one parameter (read-only view; empty before its first step). */
    public Map<String, Object> state(Tensor param) {
        Arguments.nonNull("Optimizer.state", "param", param);
        Map<String, Object> s = state.get(param);
        return s == null ? Map.of() : Collections.unmodifiableMap(s);
    }

    // ------------------------------------------------------------------ stepping

    /** Performs one optimization step. */
    public void step() {
        try (var g = Grad.noGrad()) {
            for (ParamGroup group : groups) {
                groupAllowsFused = !Boolean.FALSE.equals(group.options().get("foreach"));
                updateGroup(group);
            }
        }
    }

    /** Evaluates {@code closure} with gradients enabled (it should compute the loss and call backward), then steps; returns the loss. */
    public Tensor step(Supplier<Tensor> closure) {
        Arguments.nonNull("Optimizer.step", "closure", closure);
        Tensor loss;
        try (var g = Grad.enableGrad()) {
            loss = closure.get();
        }
        step();
        return loss;
    }

    /**
     * Clears the gradients: sets them to null and releases them. This is PyTorch 2's default
     * ({@code set_to_none=True}); PyTorch 1.13's default was to zero them in place, which is
     * {@link #zeroGrad(boolean) zeroGrad(false)}.
     */
    public void zeroGrad() {
        zeroGrad(true);
    }

    /** With {@code setToNone} false, zeroes each gradient in place (detaching it from any graph) instead of releasing it. */
    public void zeroGrad(boolean setToNone) {
        for (ParamGroup group : groups) {
            for (Tensor p : group.params()) {
                Tensor g = p.grad();
                if (g == null) continue;
                if (setToNone) {
                    p.setGrad(null);
                    g.close();
                } else {
                    if (g.gradFn() != null) g.detach_();
                    else g.requiresGrad_(false);
                    g.zero_();
                }
            }
        }
    }

    // ------------------------------------------------------------------ helpers for the update rules

    /** The live state map of {@code param}, created empty on first use. */
    protected Map<String, Object> stateOf(Tensor param) {
        return state.computeIfAbsent(param, k -> new LinkedHashMap<>());
    }

    /** A state tensor of {@code param}'s shape, dtype and device filled with {@code value}, owned by the optimizer. */
    protected static Tensor newState(Tensor param, double value) {
        return own(Torch.full(param.shape(), value, param.dtype(), param.device()));
    }

    /** A 0-d float32 step counter, as PyTorch's {@code torch.tensor(0.)}. */
    protected static Tensor newStepCounter() {
        return own(Torch.full(new long[0], 0.0, DType.FLOAT32, org.jtorch.types.Device.cpu()));
    }

    /** A step whose update depends on its step count, captured in a CUDA graph, would replay that count's update forever. */
    private void refuseDuringGraphCapture() {
        org.jtorch.backend.GraphCapture.refuseDuringAnyCapture(getClass().getSimpleName() + ".step()", "its step count is a"
                + " number on the host, which a replay would not advance (PyTorch's capturable=True, a step count on the"
                + " device, is not supported yet); SGD steps can be captured");
    }

    /** Increments a step counter (a 0-d tensor or, from older state dicts, a number) and returns its new value. */
    protected double incrementStep(Map<String, Object> st) {
        refuseDuringGraphCapture();
        Object s = st.get("step");
        Tensor t;
        if (s instanceof Tensor tensor) {
            t = tensor;
        } else {
            t = newStepCounter();
            if (s instanceof Number n) t.fill_(n.doubleValue());
            st.put("step", t);
        }
        t.fill_(t.item() + 1);
        return t.item();
    }

    /**
     * Increments a step kept as a number (RMSprop and Adadelta, as PyTorch 1.13; a loaded one-element
     * tensor is converted, a missing one starts at 0) and returns its new value.
     */
    protected long incrementCount(Map<String, Object> st) {
        refuseDuringGraphCapture();
        Object s = st.get("step");
        long next = 1 + (s instanceof Tensor t ? (long) t.item() : s instanceof Number n ? n.longValue() : 0);
        if (s instanceof Tensor t) t.close();
        st.put("step", next);
        return next;
    }

    /** A required state tensor; a clear error if a loaded state dict lacked it. */
    protected Tensor stateTensor(Map<String, Object> st, String key, Tensor param) {
        Object v = st.get(key);
        if (v instanceof Tensor t) return t;
        throw new IllegalStateException(name + ": the state of a parameter of shape " + Shapes.format(param.shape())
                + " has no tensor '" + key + "' (state keys: " + st.keySet() + "); was a state dict of another optimizer loaded?");
    }

    /** Detaches {@code t} from every enclosing memory scope: the optimizer releases it. */
    protected static Tensor own(Tensor t) {
        for (MemoryScope s = t.scope(); s != null; s = t.scope()) s.keep(t);
        return t;
    }

    /**
     * True when the fused step {@code op} ({@link org.jtorch.op.OptimizerOps}) applies to all of {@code tensors}:
     * contiguous float32 on one device (null entries are ignored) whose backend registers a kernel for it, and the
     * group being stepped does not set {@code foreach} to false.
     */
    protected boolean fusable(org.jtorch.op.OpDef op, Tensor... tensors) {
        if (!fusedKernels || !groupAllowsFused) return false;
        org.jtorch.types.Device device = null;
        for (Tensor t : tensors) {
            if (t == null) continue;
            if (t.dtype() != DType.FLOAT32 || !t.isContiguous()) return false;
            if (device == null) device = t.device();
            else if (!device.equals(t.device())) return false;
        }
        return device != null && org.jtorch.op.KernelRegistry.hasMutating(op, device.type());
    }

    /** Turns the fused kernels off, to test them against the composed path. */
    void useFusedKernels(boolean enabled) {
        fusedKernels = enabled;
    }

    // ------------------------------------------------------------------ state dicts

    /**
     * The state as PyTorch's {@code state_dict()}: {@code "state"} maps a parameter's index (counted
     * across groups in order) to its state ({@code Map<String, Object>} of tensors and numbers);
     * {@code "param_groups"} lists each group's options with {@code "params"}, the list of its
     * parameter indices. Tensors are deep copies owned by the caller.
     */
    @Override
    public Map<String, Object> stateDict() {
        Map<Integer, Map<String, Object>> packedState = new LinkedHashMap<>();
        List<Map<String, Object>> packedGroups = new ArrayList<>();
        int index = 0;
        for (ParamGroup g : groups) {
            Map<String, Object> packed = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : g.options().entrySet()) packed.put(e.getKey(), deepCopy(e.getValue()));
            List<Integer> ids = new ArrayList<>();
            for (Tensor p : g.params()) {
                Map<String, Object> s = state.get(p);
                if (s != null && !s.isEmpty()) {
                    Map<String, Object> copy = new LinkedHashMap<>();
                    for (Map.Entry<String, Object> e : s.entrySet()) copy.put(e.getKey(), deepCopy(e.getValue()));
                    packedState.put(index, copy);
                }
                ids.add(index++);
            }
            packed.put("params", ids);
            packedGroups.add(packed);
        }
        Map<String, Object> sd = new LinkedHashMap<>();
        sd.put("state", packedState);
        sd.put("param_groups", packedGroups);
        return sd;
    }

    /**
     * Loads a state dict of the structure {@link #stateDict()} returns (deep-copying it), as PyTorch's
     * {@code load_state_dict}: groups are matched in order and must have the same sizes; the saved
     * options replace the groups' options; state tensors are cast to their parameter's dtype (except
     * {@code step}). Everything is checked before anything changes: a mismatch, or an entry of the
     * wrong kind (a string learning rate, a string parameter index), throws
     * {@link IllegalArgumentException} naming the entry, what was expected and what was found.
     */
    @Override
    public void loadStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull(name + ".loadStateDict", "stateDict", stateDict);
        StateReader r = new StateReader(name + ".loadStateDict", stateDict);
        List<?> savedGroups = r.requireList("param_groups");
        StateReader savedState = r.requireMap("state");
        if (savedGroups.size() != groups.size()) {
            throw new IllegalArgumentException(r.op() + ": loaded state dict has a different number of parameter groups ("
                    + savedGroups.size() + ", the optimizer has " + groups.size() + ")");
        }
        Map<Integer, Tensor> idMap = new LinkedHashMap<>();
        List<Map<String, Object>> savedOptions = new ArrayList<>();
        for (int gi = 0; gi < groups.size(); gi++) {
            String at = "param_groups[" + gi + "]";
            StateReader sg = r.map(at, savedGroups.get(gi));
            List<?> ids = sg.requireList("params");
            List<Tensor> params = groups.get(gi).params();
            if (ids.size() != params.size()) {
                throw new IllegalArgumentException(r.op() + ": loaded state dict contains a parameter group that doesn't match the"
                        + " size of optimizer's group (group " + gi + ": " + ids.size() + " saved, " + params.size() + " in the optimizer)");
            }
            for (String option : defaults.keySet()) {
                // As PyTorch's __setstate__, a state dict from before foreach existed gets its default.
                if (!sg.has(option) && !option.equals("foreach")) {
                    throw new IllegalArgumentException(r.op() + ": parameter group " + gi + " has no option '" + option
                            + "' (was the state dict saved from another optimizer?)");
                }
            }
            Map<String, Object> options = groupOptions(sg);
            if (defaults.containsKey("foreach")) options.putIfAbsent("foreach", defaults.get("foreach"));
            try {
                validateOptions(options);
            } catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException(r.op() + ": parameter group " + gi + ": " + ex.getMessage(), ex);
            }
            savedOptions.add(options);
            for (int i = 0; i < ids.size(); i++) {
                int id = r.asInt(at + ".params[" + i + "]", ids.get(i));
                if (idMap.put(id, params.get(i)) != null) {
                    throw new IllegalArgumentException(r.op() + ": parameter index " + id + " appears twice in 'param_groups'");
                }
            }
        }
        Map<Tensor, Map<String, Object>> loaded = new IdentityHashMap<>();
        for (Map.Entry<?, ?> e : savedState.entries().entrySet()) {
            if (!(e.getKey() instanceof Integer || e.getKey() instanceof Long)) {
                throw r.error("state", "keyed by integer parameter indices", e.getKey());
            }
            int id = r.asInt("state", e.getKey());
            Tensor p = idMap.get(id);
            if (p == null) {
                throw new IllegalArgumentException(r.op() + ": the state dict has state for parameter " + id
                        + " which no parameter group lists");
            }
            String at = "state[" + id + "]";
            StateReader ps = r.map(at, e.getValue());
            Map<String, Object> values = new LinkedHashMap<>();
            for (Map.Entry<?, ?> s : ps.entries().entrySet()) {
                if (!(s.getKey() instanceof String key)) throw r.error(at, "keyed by strings", s.getKey());
                checkStateValue(r, id, key, s.getValue(), p);
                values.put(key, s.getValue());
            }
            loaded.put(p, values);
        }
        // Validated: replace the state and the groups' options.
        clearState();
        for (Map.Entry<Tensor, Map<String, Object>> e : loaded.entrySet()) {
            Map<String, Object> s = new LinkedHashMap<>();
            for (Map.Entry<String, Object> v : e.getValue().entrySet()) s.put(v.getKey(), castToParam(e.getKey(), v.getKey(), v.getValue()));
            state.put(e.getKey(), s);
        }
        for (int gi = 0; gi < groups.size(); gi++) groups.get(gi).replaceOptions(savedOptions.get(gi));
    }

    /**
     * A saved group's options, each of the kind of this optimizer's default for it (a number, a
     * boolean, a list of numbers of the same length, or null or a string where PyTorch's default is
     * None: {@code foreach}, {@code line_search_fn}); options the optimizer does not know (a scheduler's
     * {@code initial_lr}, a user's {@code name}) may be numbers, booleans, strings, lists of numbers or null.
     */
    private Map<String, Object> groupOptions(StateReader sg) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : sg.entries().entrySet()) {
            if (!(e.getKey() instanceof String key)) throw sg.error(sg.path(""), "keyed by strings", e.getKey());
            if (key.equals("params")) continue;
            Object v = e.getValue();
            Object d = defaults.get(key);
            String path = sg.path(key);
            if (nullableOptions.contains(key) && (v == null || v instanceof String)) {
                out.put(key, v); // what the option accepts is the optimizer's validate()'s to say
            } else if (d instanceof Boolean || (d == null && v instanceof Boolean)) {
                if (!(v instanceof Boolean)) throw sg.error(path, "a boolean", v);
                out.put(key, v);
            } else if (d instanceof List<?> l) {
                out.put(key, sg.doubles(path, v, l.size()));
            } else if (d != null || v instanceof Number) {
                out.put(key, sg.asDouble(path, v));
            } else if (v instanceof List<?>) {
                out.put(key, sg.doubles(path, v, -1));
            } else if (v == null || v instanceof String) {
                out.put(key, v);
            } else {
                throw sg.error(path, "a number, a boolean, a string, a list of numbers or null", v);
            }
        }
        return out;
    }

    /**
     * Checks one loaded state value of {@code param} before anything changes: by default a tensor of the
     * parameter's shape, or {@code step} as a number or one-element tensor. Optimizers whose state has
     * other shapes (LBFGS's flat history) override this.
     */
    protected void checkStateValue(StateReader r, int id, String key, Object value, Tensor param) {
        String path = "state[" + id + "]." + key;
        if (value instanceof Tensor t) {
            t.checkOpen(r.op());
            if (isScalarState(key)) {
                if (t.numel() != 1) throw r.error(path, "a number or a one-element tensor", value);
            } else if (!java.util.Arrays.equals(t.shape(), param.shape())) {
                throw new IllegalArgumentException(r.op() + ": state '" + key + "' of parameter " + id
                        + " has shape " + Shapes.format(t.shape()) + " but the parameter has shape " + Shapes.format(param.shape()));
            }
        } else if (!acceptsStateValue(key, value)) {
            throw r.error(path, isScalarState(key) ? "a number or a one-element tensor" : "a tensor", value);
        }
    }

    /**
     * Whether a loaded state value that is not a tensor suits this optimizer: by default {@code step} may
     * be a number and any other entry null (SGD's momentum buffer without momentum). Optimizers that keep
     * other kinds of state override this.
     */
    protected boolean acceptsStateValue(String key, Object value) {
        return isScalarState(key) ? value instanceof Number : value == null;
    }

    /**
     * Whether state entry {@code key} is a scalar counter rather than a tensor of the parameter's shape: a
     * number or a one-element tensor that keeps its saved dtype and device when loaded. {@code step}, as
     * PyTorch 1.13; NAdam adds {@code mu_product}.
     */
    protected boolean isScalarState(String key) {
        return key.equals("step");
    }

    /** A deep copy of a loaded state value whose tensors (in lists too, as PyTorch's {@code cast}) take {@code p}'s dtype and device. */
    private Object castToParam(Tensor p, String key, Object value) {
        if (value instanceof Tensor t) {
            boolean keep = isScalarState(key);
            if (!keep && p.dtype().isFloatingPoint() && t.dtype() != p.dtype()) {
                try (Tensor moved = t.to(p.device())) {
                    return own(moved.to(p.dtype()).contiguous());
                }
            }
            try (Tensor moved = t.to(keep ? t.device() : p.device())) {
                return own(moved.clone());
            }
        }
        if (value instanceof List<?> l) {
            List<Object> copy = new ArrayList<>(l.size());
            for (Object x : l) copy.add(castToParam(p, key, x));
            return copy;
        }
        return deepCopy(value);
    }

    private static Object deepCopy(Object v) {
        if (v instanceof Tensor t) return t.clone();
        if (v instanceof List<?> l) {
            List<Object> copy = new ArrayList<>();
            for (Object x : l) copy.add(deepCopy(x));
            return copy;
        }
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> copy = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) copy.put(e.getKey(), deepCopy(e.getValue()));
            return copy;
        }
        return v;
    }

    /** {@link #closeStateDict}: the tensors of a state dict are copies. */
    @Override
    public void releaseStateDict(Map<String, Object> stateDict) {
        closeStateDict(stateDict);
    }

    /** Releases every tensor in a state dict (nested maps and lists included). */
    public static void closeStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull("Optimizer.closeStateDict", "stateDict", stateDict);
        closeAll(stateDict);
    }

    private static void closeAll(Object v) {
        if (v instanceof Tensor t) t.close();
        else if (v instanceof List<?> l) l.forEach(Optimizer::closeAll);
        else if (v instanceof Map<?, ?> m) m.values().forEach(Optimizer::closeAll);
    }

    private void clearState() {
        for (Map<String, Object> s : state.values()) closeAll(s);
        state.clear();
    }

    /** Releases the optimizer's state tensors (not the parameters). */
    @Override
    public void close() {
        clearState();
    }

    /** The optimizer's name and its groups' options, as PyTorch's {@code repr}. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(name).append(" (");
        for (int i = 0; i < groups.size(); i++) {
            sb.append("\nParameter Group ").append(i).append('\n');
            groups.get(i).options().entrySet().stream().sorted(Map.Entry.comparingByKey())
                    .forEach(e -> sb.append("    ").append(e.getKey()).append(": ").append(e.getValue()).append('\n'));
        }
        return sb.append(')').toString();
    }

    /** A numeric option of a validated options map. */
    protected static double num(Map<String, Object> options, String key) {
        Object v = options.get(key);
        return v instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    /** Throws {@code IllegalArgumentException(name + ": " + message)} unless {@code ok}. */
    protected void require(boolean ok, String message) {
        if (!ok) throw new IllegalArgumentException(name + ": " + message);
    }

    protected String name() {
        return name;
    }
}
