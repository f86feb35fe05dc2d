package org.jtorch.io;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.op.Shapes;

/**
 * Typed reads from a loaded state dict (an optimizer's, a scheduler's, a checkpoint's), for the
 * {@code loadStateDict} methods: a missing entry or one of the wrong kind is an
 * {@link IllegalArgumentException} naming the loader, the entry's path, what was expected and what was
 * found, raised while loading rather than as a {@link ClassCastException} at the next step.
 *
 * <pre>{@code
 * StateReader r = new StateReader("StepLR.loadStateDict", stateDict);
 * int lastEpoch = r.intOr("last_epoch", this.lastEpoch);    // absent: keeps the value
 * List<Double> baseLrs = r.doublesOr("base_lrs", this.baseLrs, groups);
 * }</pre>
 *
 * <p>An absent key takes the fallback of the {@code ...Or} methods; a key present with a null value or a
 * value of another kind is an error. Integers accept any integral number (a JSON {@code 3} or {@code 3.0}).
 */
public final class StateReader {
    private final String op;
    private final String prefix;
    private final Map<?, ?> map;

    /** A reader of {@code map} for the loader {@code op} (e.g. {@code "SGD.loadStateDict"}). */
    public StateReader(String op, Map<?, ?> map) {
        this(op, "", map);
    }

    private StateReader(String op, String prefix, Map<?, ?> map) {
        if (map == null) {
            throw new IllegalArgumentException(op + ": " + (prefix.isEmpty() ? "the state dict" : "'" + prefix + "'") + " is null");
        }
        this.op = op;
        this.prefix = prefix;
        this.map = map;
    }

    /** The loader's name, as given. */
    public String op() {
        return op;
    }

    /** The path of {@code key} in the whole state dict, as errors name it ({@code param_groups[0].lr}). */
    public String path(String key) {
        return prefix + key;
    }

    public boolean has(String key) {
        return map.containsKey(key);
    }

    /** The raw value of {@code key} (null if absent). */
    public Object get(String key) {
        return map.get(key);
    }

    /** The entries of the map (keys of any kind, as loaded). */
    public Map<?, ?> entries() {
        return Collections.unmodifiableMap(map);
    }

    // ------------------------------------------------------------------ required entries

    /** The value of {@code key}, which must be present ({@code expected} describes it for the error). */
    public Object require(String key, String expected) {
        if (!map.containsKey(key)) {
            throw new IllegalArgumentException(op + ": the state dict has no '" + path(key) + "' (expected " + expected + ")");
        }
        return map.get(key);
    }

    public long requireLong(String key) {
        return asLong(path(key), require(key, "an integer"));
    }

    public int requireInt(String key) {
        return asInt(path(key), require(key, "an integer"));
    }

    public double requireDouble(String key) {
        return asDouble(path(key), require(key, "a number"));
    }

    public boolean requireBoolean(String key) {
        Object v = require(key, "a boolean");
        if (v instanceof Boolean b) return b;
        throw error(path(key), "a boolean", v);
    }

    public List<?> requireList(String key) {
        Object v = require(key, "a list");
        if (v instanceof List<?> l) return l;
        throw error(path(key), "a list", v);
    }

    /** A reader of the map at {@code key}. */
    public StateReader requireMap(String key) {
        Object v = require(key, "a map");
        if (v instanceof Map<?, ?> m) return new StateReader(op, path(key) + ".", m);
        throw error(path(key), "a map", v);
    }

    /** A reader of {@code value}, the map found at {@code path} (an element of a list, say). */
    public StateReader map(String path, Object value) {
        if (value instanceof Map<?, ?> m) return new StateReader(op, path + ".", m);
        throw error(path, "a map", value);
    }

    // ------------------------------------------------------------------ optional entries

    public int intOr(String key, int fallback) {
        return map.containsKey(key) ? asInt(path(key), map.get(key)) : fallback;
    }

    public double doubleOr(String key, double fallback) {
        return map.containsKey(key) ? asDouble(path(key), map.get(key)) : fallback;
    }

    public String stringOr(String key, String fallback) {
        if (!map.containsKey(key)) return fallback;
        Object v = map.get(key);
        if (v instanceof String s) return s;
        throw error(path(key), "a string", v);
    }

    /** A list of numbers; with {@code size >= 0}, of exactly that length. */
    public List<Double> doublesOr(String key, List<Double> fallback, int size) {
        if (!map.containsKey(key)) return fallback;
        return doubles(path(key), map.get(key), size);
    }

    /** A list of integers. */
    public List<Integer> intsOr(String key, List<Integer> fallback) {
        if (!map.containsKey(key)) return fallback;
        Object v = map.get(key);
        if (!(v instanceof List<?> l)) throw error(path(key), "a list of integers", v);
        List<Integer> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) out.add(asInt(path(key) + "[" + i + "]", l.get(i)));
        return List.copyOf(out);
    }

    // ------------------------------------------------------------------ values

    /** {@code value} found at {@code path} as a list of numbers (of {@code size} elements when {@code size >= 0}). */
    public List<Double> doubles(String path, Object value, int size) {
        if (!(value instanceof List<?> l)) throw error(path, size >= 0 ? "a list of " + size + " numbers" : "a list of numbers", value);
        if (size >= 0 && l.size() != size) throw error(path, "a list of " + size + " numbers", value);
        List<Double> out = new ArrayList<>(l.size());
        for (int i = 0; i < l.size(); i++) out.add(asDouble(path + "[" + i + "]", l.get(i)));
        return List.copyOf(out);
    }

    /** {@code value} found at {@code path} as a long: any integral number. */
    public long asLong(String path, Object value) {
        if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof Number n) {
            double d = n.doubleValue();
            if (d == Math.rint(d) && Math.abs(d) < 0x1p63) return (long) d;
        }
        throw error(path, "an integer", value);
    }

    public int asInt(String path, Object value) {
        long l = asLong(path, value);
        if (l != (int) l) throw error(path, "an integer of 32 bits", value);
        return (int) l;
    }

    public double asDouble(String path, Object value) {
        if (value instanceof Number n) return n.doubleValue();
        throw error(path, "a number", value);
    }

    // ------------------------------------------------------------------ errors

    /** The error for {@code found} at {@code path} where {@code expected} (e.g. "a number") belongs. */
    public IllegalArgumentException error(String path, String expected, Object found) {
        return new IllegalArgumentException(op + ": '" + path + "' must be " + expected + ", found " + describe(found));
    }

    /** A short description of a loaded value for error messages: its kind and, when short, the value. */
    public static String describe(Object v) {
        if (v == null || v == Json.NULL) return "null";
        if (v instanceof String s) return "the string \"" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "\"";
        if (v instanceof Boolean b) return "the boolean " + b;
        if (v instanceof Number n) return "the " + n.getClass().getSimpleName() + " " + n;
        if (v instanceof Tensor t) return "a tensor of shape " + Shapes.format(t.shape());
        if (v instanceof List<?> l) return "a list of " + l.size() + (l.size() == 1 ? " element" : " elements");
        if (v instanceof Map<?, ?> m) return "a map of " + m.size() + (m.size() == 1 ? " entry" : " entries");
        return "a " + v.getClass().getName();
    }
}
