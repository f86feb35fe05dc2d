package org.jtorch.optim;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builder-style options of an optimizer, as PyTorch's keyword arguments: {@code SGD.options().lr(0.1).momentum(0.9)}.
 *
 * <p>The same object serves as an optimizer's defaults and as a parameter group's overrides: only the
 * options set explicitly override (see {@link ParamGroup#of(List, OptimizerOptions)}); the optimizer's
 * defaults are the explicit values on top of the built-in defaults. Values are stored under
 * PyTorch's option names ({@code "lr"}, {@code "weight_decay"}, {@code "betas"}...) as {@code Double},
 * {@code Boolean}, {@code List<Double>}, {@code String} or null (where PyTorch's keyword takes
 * {@code None}: {@code foreach}, LBFGS's {@code line_search_fn}), which is how they appear in
 * {@link ParamGroup#options()} and in state dicts. Integer options ({@code max_iter}) are stored as
 * {@code Double} too. Values are validated when the optimizer is built, with PyTorch's messages.
 *
 * @param <O> the concrete options type, returned by the setters for chaining
 */
public abstract class OptimizerOptions<O extends OptimizerOptions<O>> {
    /** Marks an option without a default that every group must set ({@code lr} of SGD). */
    public static final Object REQUIRED = new Object() {
        @Override
        public String toString() {
            return "<required parameter>";
        }
    };

    private final LinkedHashMap<String, Object> explicit = new LinkedHashMap<>();

    /** PyTorch's defaults for every option of this optimizer, in PyTorch's order. */
    protected abstract Map<String, Object> builtinDefaults();

    @SuppressWarnings("unchecked")
    private O self() {
        return (O) this;
    }

    /** Sets an option by its PyTorch name (for options read from files); unknown names are rejected. */
    public O set(String name, Object value) {
        Map<String, Object> known = builtinDefaults();
        if (!known.containsKey(name)) {
            throw new IllegalArgumentException(getClass().getEnclosingClass().getSimpleName() + ": unknown option '" + name
                    + "'; known options are " + known.keySet());
        }
        explicit.put(name, normalise(name, value));
        return self();
    }

    /** Learning rate. */
    public O lr(double lr) {
        return set("lr", lr);
    }

    /** Weight decay (an L2 penalty added to the gradient; decoupled in AdamW). */
    public O weightDecay(double weightDecay) {
        return set("weight_decay", weightDecay);
    }

    /** Maximises the objective instead of minimising it. */
    public O maximize(boolean maximize) {
        return set("maximize", maximize);
    }

    /**
     * PyTorch's implementation choice: null (the default) or true lets jtorch take its fused multi-tensor
     * kernels where it has them; false forces the per-tensor loop of composed tensor ops. Results agree
     * to rounding either way.
     */
    public O foreach(Boolean foreach) {
        return set("foreach", foreach);
    }

    /** The options set explicitly, by PyTorch name. */
    public Map<String, Object> explicitValues() {
        return Collections.unmodifiableMap(explicit);
    }

    /** Built-in defaults overridden by the explicit values. */
    public Map<String, Object> resolved() {
        LinkedHashMap<String, Object> all = new LinkedHashMap<>(builtinDefaults());
        all.putAll(explicit);
        return all;
    }

    private static Object normalise(String name, Object value) {
        if (value instanceof Number n) return n.doubleValue();
        if (value instanceof double[] d) return List.of(d[0], d[1]);
        if (value instanceof List<?> l) return l.stream().map(x -> ((Number) x).doubleValue()).toList();
        if (value == null || value instanceof Boolean || value instanceof String || value == REQUIRED) return value;
        throw new IllegalArgumentException("option '" + name + "': unsupported value " + value);
    }
}
