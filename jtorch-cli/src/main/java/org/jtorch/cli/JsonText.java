package org.jtorch.cli;

import java.util.List;
import java.util.Map;

/** Pretty-printed JSON for the command's reports (maps, lists, strings, numbers, booleans, null). */
final class JsonText {
    private JsonText() {}

    static String of(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, "");
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v, String indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String s) {
            sb.append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                    }
                }
            }
            sb.append('"');
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            sb.append(Double.isFinite(d) ? Double.toString(d) : "null"); // JSON has no NaN or infinity
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> m) {
            if (m.isEmpty()) {
                sb.append("{}");
                return;
            }
            sb.append("{\n");
            int i = 0;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                sb.append(indent).append("  ");
                write(sb, String.valueOf(e.getKey()), "");
                sb.append(": ");
                write(sb, e.getValue(), indent + "  ");
                sb.append(++i < m.size() ? ",\n" : "\n");
            }
            sb.append(indent).append('}');
        } else if (v instanceof List<?> l) {
            if (l.isEmpty()) {
                sb.append("[]");
                return;
            }
            sb.append("[\n");
            for (int i = 0; i < l.size(); i++) {
                sb.append(indent).append("  ");
                write(sb, l.get(i), indent + "  ");
                sb.append(i + 1 < l.size() ? ",\n" : "\n");
            }
            sb.append(indent).append(']');
        } else {
            throw new IllegalArgumentException("JsonText: cannot write " + v.getClass().getName());
        }
    }
}
