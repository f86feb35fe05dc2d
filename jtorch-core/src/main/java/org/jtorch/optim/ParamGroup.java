package org.jtorch.optim;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.io.StateReader;
import org.jtorch.types.Arguments;

/**
 * A parameter group, as an entry of PyTorch's {@code optimizer.param_groups}: parameters and the
 * options that apply to them. Before it is added to an optimizer a group holds only its overrides;
 * the optimizer then fills in its defaults. Schedulers read and write options here ({@code lr},
 * {@code momentum}, {@code betas}) and may add their own ({@code initial_lr}), as in PyTorch.
 *
 * <p>Not thread-safe; a group belongs to one optimizer.
 */
public final class ParamGroup {
    private final List<Tensor> params;
    private final LinkedHashMap<String, Object> options = new LinkedHashMap<>();

    private ParamGroup(List<Tensor> params, Map<String, Object> overrides) {
        this.params = Collections.unmodifiableList(new ArrayList<>(params));
        options.putAll(overrides);
    }

    /** A group using the optimizer's defaults. */
    public static ParamGroup of(List<Tensor> params) {
        Arguments.nonNull("ParamGroup.of", "params", params);
        return new ParamGroup(params, Map.of());
    }

    /** A group whose explicitly set options override the optimizer's defaults. */
    public static ParamGroup of(List<Tensor> params, OptimizerOptions<?> overrides) {
        Arguments.nonNull("ParamGroup.of", "params", params);
        Arguments.nonNull("ParamGroup.of", "overrides", overrides);
        return new ParamGroup(params, overrides.explicitValues());
    }

    public List<Tensor> params() {
        return params;
    }

    /** The options by PyTorch name (a read-only view). */
    public Map<String, Object> options() {
        return Collections.unmodifiableMap(options);
    }

    public boolean has(String name) {
        Arguments.nonNull("ParamGroup.has", "name", name);
        return options.containsKey(name);
    }

    public Object get(String name) {
        Arguments.nonNull("ParamGroup.get", "name", name);
        Object v = options.get(name);
        if (v == null && !options.containsKey(name)) {
            throw new IllegalArgumentException("param group has no option '" + name + "'; it has " + options.keySet());
        }
        return v;
    }

    /** A numeric option; an {@link IllegalArgumentException} names it when it holds something else. */
    public double getDouble(String name) {
        Arguments.nonNull("ParamGroup.getDouble", "name", name);
        Object v = get(name);
        if (v instanceof Number n) return n.doubleValue();
        throw new IllegalArgumentException("param group option '" + name + "' must be a number, found " + StateReader.describe(v));
    }

    public boolean getBoolean(String name) {
        Arguments.nonNull("ParamGroup.getBoolean", "name", name);
        Object v = get(name);
        if (v instanceof Boolean b) return b;
        throw new IllegalArgumentException("param group option '" + name + "' must be a boolean, found " + StateReader.describe(v));
    }

    /** The two coefficients of {@code betas}. */
    public double beta(int index) {
        Object v = get("betas");
        if (v instanceof List<?> l && l.size() == 2 && l.get(index) instanceof Number n) return n.doubleValue();
        throw new IllegalArgumentException("param group option 'betas' must be a list of 2 numbers, found " + StateReader.describe(v));
    }

    /** Sets an option (numbers are stored as {@code Double}, pairs as {@code List<Double>}). */
    public void set(String name, Object value) {
        Arguments.nonNull("ParamGroup.set", "name", name);
        if (value instanceof Number n) {
            value = n.doubleValue();
        } else if (value instanceof List<?> l) {
            List<Double> numbers = new ArrayList<>(l.size());
            for (Object x : l) {
                if (!(x instanceof Number n)) {
                    throw new IllegalArgumentException("ParamGroup.set: option '" + name + "' is a list holding " + StateReader.describe(x)
                            + "; lists must hold numbers");
                }
                numbers.add(n.doubleValue());
            }
            value = List.copyOf(numbers);
        }
        options.put(name, value);
    }

    public double lr() {
        return getDouble("lr");
    }

    public void setLr(double lr) {
        set("lr", lr);
    }

    void putIfAbsent(String name, Object value) {
        options.putIfAbsent(name, value);
    }

    void replaceOptions(Map<String, Object> saved) {
        options.clear();
        for (Map.Entry<String, Object> e : saved.entrySet()) {
            if (!e.getKey().equals("params")) set(e.getKey(), e.getValue());
        }
    }
}
