package org.jtorch.io;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;

/**
 * Converts a component's state (nested maps, lists, numbers, booleans, strings, nulls and tensors) to
 * JSON with the tensors stored separately by name, and back. JSON cannot say everything such a state
 * holds, so three tagged objects extend it: {@code {"$tensor": name}}, {@code {"$intmap": {...}}} for
 * maps with integer keys (an optimizer's per-parameter state) and {@code {"$double": "NaN"}} for
 * non-finite numbers. Integers come back as {@link Integer} when they fit, else {@link Long}; other
 * numbers as {@link Double}.
 */
final class StateCodec {
    private StateCodec() {}

    /** The JSON-ready form of {@code value}; its tensors are added to {@code tensors} under {@code path/...}. */
    static Object encode(Object value, String path, Map<String, Tensor> tensors) {
        if (value == null || value instanceof Boolean || value instanceof String) return value;
        if (value instanceof Tensor t) {
            tensors.put(path, t);
            return Map.of("$tensor", path);
        }
        if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            return Double.isFinite(d) ? d : Map.of("$double", Double.toString(d));
        }
        if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            for (int i = 0; i < list.size(); i++) out.add(encode(list.get(i), path + "/" + i, tensors));
            return out;
        }
        if (value instanceof Map<?, ?> map) {
            boolean intKeys = !map.isEmpty() && map.keySet().stream().allMatch(k -> k instanceof Integer || k instanceof Long);
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                Object k = e.getKey();
                if (!intKeys && !(k instanceof String)) {
                    throw new IllegalArgumentException("Checkpoint: map at '" + path + "' has a key of type "
                            + (k == null ? "null" : k.getClass().getSimpleName()) + " (keys must be strings or integers)");
                }
                String key = k.toString();
                if (!intKeys && key.startsWith("$")) {
                    throw new IllegalArgumentException("Checkpoint: key '" + key + "' at '" + path + "' starts with '$', which is reserved");
                }
                out.put(key, encode(e.getValue(), path + "/" + key, tensors));
            }
            return intKeys ? Map.of("$intmap", out) : out;
        }
        throw new IllegalArgumentException("Checkpoint: cannot store a " + value.getClass().getName() + " at '" + path + "'");
    }

    /** The state {@link #encode} was given, with tensors taken from {@code file} (views valid while it is open). */
    static Object decode(Object json, SafeTensors.Loaded file) {
        if (json == Json.NULL) return null;
        if (json instanceof Long l) {
            if (l == l.intValue()) return Integer.valueOf(l.intValue()); // not a ?: expression, which would widen it back to Long
            return l;
        }
        if (json instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            for (Object o : list) out.add(decode(o, file));
            return out;
        }
        if (json instanceof Map<?, ?> map) {
            if (map.size() == 1 && map.get("$tensor") instanceof String name) return file.get(name);
            if (map.size() == 1 && map.get("$double") instanceof String d) return Double.parseDouble(d);
            if (map.size() == 1 && map.get("$intmap") instanceof Map<?, ?> inner) {
                Map<Integer, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : inner.entrySet()) {
                    try {
                        out.put(Integer.parseInt((String) e.getKey()), decode(e.getValue(), file));
                    } catch (NumberFormatException ex) {
                        throw new IllegalArgumentException("Checkpoint: integer-keyed map has key '" + e.getKey() + "'");
                    }
                }
                return out;
            }
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) out.put((String) e.getKey(), decode(e.getValue(), file));
            return out;
        }
        return json;
    }

    /** Appends {@code value} (the output of {@link #encode}) as JSON. */
    static void writeJson(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            Json.writeString(out, s);
        } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer) {
            out.append(value);
        } else if (value instanceof Double d) {
            out.append(Double.toString(d)); // always has '.' or 'E', so it reads back as a Double
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) out.append(',');
                writeJson(out, list.get(i));
            }
            out.append(']');
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) out.append(',');
                first = false;
                Json.writeString(out, (String) e.getKey());
                out.append(':');
                writeJson(out, e.getValue());
            }
            out.append('}');
        } else {
            throw new IllegalArgumentException("Checkpoint: cannot write " + value.getClass().getName() + " as JSON");
        }
    }
}
