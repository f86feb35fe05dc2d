package org.jtorch.io;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON (RFC 8259) reader and string writer, for file headers such as safetensors'.
 *
 * <p>Values read: objects as {@link LinkedHashMap} (key order kept; a duplicate key is an error),
 * arrays as {@link List}, strings, integers as {@link Long} (an integer outside the long range is an
 * error), other numbers as {@link Double}, {@link Boolean}, and {@link #NULL} for {@code null}.
 * Nesting is limited to {@value #MAX_DEPTH} levels so that hostile input cannot overflow the stack.
 * Errors are {@link IllegalArgumentException}s that give the character position.
 */
final class Json {
    /** The value of a JSON {@code null}. */
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    static final int MAX_DEPTH = 64;

    private final String s;
    private int pos;

    private Json(String s) {
        this.s = s;
    }

    /** Parses one JSON value; only whitespace may follow it. */
    static Object parse(String text) {
        Json p = new Json(text);
        p.skipWhitespace();
        Object v = p.value(0);
        p.skipWhitespace();
        if (p.pos != text.length()) throw p.error("unexpected " + p.describe() + " after the value");
        return v;
    }

    private IllegalArgumentException error(String message) {
        return new IllegalArgumentException("invalid JSON at character " + pos + ": " + message);
    }

    private String describe() {
        if (pos >= s.length()) return "end of input";
        char c = s.charAt(pos);
        return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format("character U+%04X", (int) c);
    }

    private void skipWhitespace() {
        while (pos < s.length()) {
            char c = s.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            pos++;
        }
    }

    private Object value(int depth) {
        if (depth >= MAX_DEPTH) throw error("nesting deeper than " + MAX_DEPTH + " levels");
        if (pos >= s.length()) throw error("unexpected end of input, expected a value");
        char c = s.charAt(pos);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", NULL);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) yield number();
                throw error("unexpected " + describe() + ", expected a value");
            }
        };
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, pos)) throw error("unexpected " + describe() + ", expected a value");
        pos += word.length();
        return v;
    }

    private void expect(char c) {
        if (pos >= s.length() || s.charAt(pos) != c) throw error("expected '" + c + "' but found " + describe());
        pos++;
    }

    private Map<String, Object> object(int depth) {
        expect('{');
        Map<String, Object> m = new LinkedHashMap<>();
        skipWhitespace();
        if (pos < s.length() && s.charAt(pos) == '}') {
            pos++;
            return m;
        }
        while (true) {
            skipWhitespace();
            int keyPos = pos;
            if (pos >= s.length() || s.charAt(pos) != '"') throw error("expected a string key but found " + describe());
            String key = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            Object v = value(depth + 1);
            if (m.containsKey(key)) {
                pos = keyPos;
                throw error("duplicate key \"" + key + "\"");
            }
            m.put(key, v);
            skipWhitespace();
            if (pos < s.length() && s.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect('}');
            return m;
        }
    }

    private List<Object> array(int depth) {
        expect('[');
        List<Object> a = new ArrayList<>();
        skipWhitespace();
        if (pos < s.length() && s.charAt(pos) == ']') {
            pos++;
            return a;
        }
        while (true) {
            skipWhitespace();
            a.add(value(depth + 1));
            skipWhitespace();
            if (pos < s.length() && s.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect(']');
            return a;
        }
    }

    private String string() {
        expect('"');
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (pos >= s.length()) throw error("unterminated string");
            char c = s.charAt(pos++);
            if (c == '"') return sb.toString();
            if (c < 0x20) {
                pos--;
                throw error("unescaped control character in string");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (pos >= s.length()) throw error("unterminated string");
            char e = s.charAt(pos++);
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (pos + 4 > s.length()) throw error("truncated \\u escape");
                    int v = 0;
                    for (int i = 0; i < 4; i++) {
                        int d = Character.digit(s.charAt(pos + i), 16);
                        if (d < 0) throw error("invalid hex digit in \\u escape");
                        v = v * 16 + d;
                    }
                    pos += 4;
                    sb.append((char) v);
                }
                default -> {
                    pos--;
                    throw error("invalid escape '\\" + e + "'");
                }
            }
        }
    }

    private Object number() {
        int start = pos;
        if (s.charAt(pos) == '-') pos++;
        if (pos >= s.length()) throw error("truncated number");
        if (s.charAt(pos) == '0') {
            pos++;
        } else if (s.charAt(pos) >= '1' && s.charAt(pos) <= '9') {
            while (pos < s.length() && Character.isDigit(s.charAt(pos)) && s.charAt(pos) < 0x80) pos++;
        } else {
            throw error("invalid number");
        }
        boolean integral = true;
        if (pos < s.length() && s.charAt(pos) == '.') {
            integral = false;
            pos++;
            digits();
        }
        if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
            integral = false;
            pos++;
            if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) pos++;
            digits();
        }
        String text = s.substring(start, pos);
        if (integral) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException ex) {
                pos = start;
                throw error("integer " + text + " is out of range");
            }
        }
        return Double.parseDouble(text);
    }

    private void digits() {
        int start = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') pos++;
        if (pos == start) throw error("invalid number: expected a digit");
    }

    /**
     * Appends {@code value} as a JSON string with the escapes of serde_json and of Python's
     * {@code json.dumps(ensure_ascii=False)}: quote, backslash, {@code \b \f \n \r \t}, other control
     * characters as lower-case <code>&#92;u00XX</code>; everything else, non-ASCII included, as is.
     */
    static void writeString(StringBuilder out, String value) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }
}
