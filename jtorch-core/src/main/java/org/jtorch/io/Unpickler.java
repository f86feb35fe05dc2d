package org.jtorch.io;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A Python pickle virtual machine (protocols 0 to 5, the binary opcodes; the text opcodes of protocol
 * 0 for numbers and strings are not read) that never runs code from the file: every global the pickle
 * names goes through a {@link Resolver}, which returns a {@link Callable} or a constant for the names it
 * allows and refuses the rest; persistent ids go to the resolver too.
 *
 * <p>Python values become Java ones: {@code None} null, {@code bool} Boolean, {@code int} Long (or
 * BigInteger beyond 64 bits), {@code float} Double, {@code str} String, {@code bytes} byte[],
 * {@code list} a mutable ArrayList, {@code tuple} an unmodifiable List, {@code dict} a LinkedHashMap
 * (insertion order, as Python's), {@code set}/{@code frozenset} a LinkedHashSet.
 *
 * <p>Every length and memo index is checked against the input, so a corrupt or hostile pickle fails
 * with a {@link Failure} naming the opcode and its offset, never with an out-of-memory or a crash.
 */
final class Unpickler {
    /** Something a pickle may call (REDUCE, NEWOBJ): the allowed globals that build values. */
    @FunctionalInterface
    interface Callable {
        Object call(List<Object> args);
    }

    /** Decides what the globals and persistent ids of a pickle mean. */
    interface Resolver {
        /** The value of {@code module.name}; throws {@link Failure} for a global that is not allowed. */
        Object global(String module, String name);

        /** The object a persistent id (BINPERSID) stands for. */
        Object persistentLoad(Object pid);
    }

    /** A pickle that cannot be read: malformed, or naming something not allowed. */
    static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    private static final Object MARK = new Object() {
        @Override
        public String toString() {
            return "MARK";
        }
    };

    private final byte[] in;
    private final Resolver resolver;
    private int pos;
    private final List<Object> stack = new ArrayList<>();
    private final List<Integer> marks = new ArrayList<>();
    private final Map<Long, Object> memo = new HashMap<>();

    private Unpickler(byte[] in, int start, Resolver resolver) {
        this.in = in;
        this.pos = start;
        this.resolver = resolver;
    }

    /** The object of the pickle starting at {@code start}; {@code end[0]} receives the offset after its STOP. */
    static Object load(byte[] in, int start, Resolver resolver, int[] end) {
        Unpickler u = new Unpickler(in, start, resolver);
        Object result = u.run();
        if (end != null) end[0] = u.pos;
        return result;
    }

    static Object load(byte[] in, Resolver resolver) {
        return load(in, 0, resolver, null);
    }

    private Object run() {
        while (true) {
            int at = pos;
            int op = u8();
            switch (op) {
                case 0x80 -> { // PROTO
                    int proto = u8();
                    if (proto > 5) throw fail(at, "PROTO", "pickle protocol " + proto + " is newer than 5");
                }
                case 0x95 -> skip(8); // FRAME: a length hint
                case '.' -> { // STOP
                    if (stack.size() != 1 || !marks.isEmpty()) {
                        throw fail(at, "STOP", "the stack holds " + stack.size() + " items and " + marks.size() + " marks, expected one object");
                    }
                    return stack.get(0);
                }
                case '(' -> marks.add(stack.size()); // MARK
                case '0' -> pop(at, "POP");
                case '1' -> popMark(at, "POP_MARK");
                case '2' -> push(top(at, "DUP"));
                case 'N' -> push(null);
                case 0x88 -> push(Boolean.TRUE);
                case 0x89 -> push(Boolean.FALSE);
                case 'J' -> push((long) i32());                    // BININT
                case 'K' -> push((long) u8());                     // BININT1
                case 'M' -> push((long) (u8() | u8() << 8));       // BININT2
                case 0x8a -> push(longOf(at, u8()));               // LONG1
                case 0x8b -> push(longOf(at, length(at, "LONG4", i32()))); // LONG4
                case 'G' -> push(Double.longBitsToDouble(beLong())); // BINFLOAT
                case 'X' -> push(utf8(at, length(at, "BINUNICODE", i32())));
                case 0x8c -> push(utf8(at, u8()));                 // SHORT_BINUNICODE
                case 0x8d -> push(utf8(at, length(at, "BINUNICODE8", i64()))); // BINUNICODE8
                case 'T' -> push(latin1(at, length(at, "BINSTRING", i32()))); // Python 2 str
                case 'U' -> push(latin1(at, u8()));                // SHORT_BINSTRING
                case 'B' -> push(bytes(at, length(at, "BINBYTES", i32())));
                case 'C' -> push(bytes(at, u8()));                 // SHORT_BINBYTES
                case 0x8e -> push(bytes(at, length(at, "BINBYTES8", i64())));
                case 0x96 -> push(bytes(at, length(at, "BYTEARRAY8", i64())));
                case ')' -> push(tuple(List.of()));                // EMPTY_TUPLE
                case 0x85 -> push(tuple(popN(at, "TUPLE1", 1)));
                case 0x86 -> push(tuple(popN(at, "TUPLE2", 2)));
                case 0x87 -> push(tuple(popN(at, "TUPLE3", 3)));
                case 't' -> push(tuple(popMark(at, "TUPLE")));
                case ']' -> push(new ArrayList<>());               // EMPTY_LIST
                case 'l' -> push(new ArrayList<>(popMark(at, "LIST")));
                case 'a' -> { // APPEND
                    Object v = pop(at, "APPEND");
                    list(at, "APPEND", top(at, "APPEND")).add(v);
                }
                case 'e' -> { // APPENDS
                    List<Object> items = popMark(at, "APPENDS");
                    list(at, "APPENDS", top(at, "APPENDS")).addAll(items);
                }
                case '}' -> push(new LinkedHashMap<>());           // EMPTY_DICT
                case 'd' -> push(dictOf(at, "DICT", popMark(at, "DICT"), new LinkedHashMap<>()));
                case 's' -> { // SETITEM
                    Object v = pop(at, "SETITEM");
                    Object k = pop(at, "SETITEM");
                    dict(at, "SETITEM", top(at, "SETITEM")).put(k, v);
                }
                case 'u' -> { // SETITEMS
                    List<Object> kv = popMark(at, "SETITEMS");
                    dictOf(at, "SETITEMS", kv, dict(at, "SETITEMS", top(at, "SETITEMS")));
                }
                case 0x8f -> push(new LinkedHashSet<>());          // EMPTY_SET
                case 0x90 -> { // ADDITEMS
                    List<Object> items = popMark(at, "ADDITEMS");
                    if (!(top(at, "ADDITEMS") instanceof Set<?> s)) throw fail(at, "ADDITEMS", "the target is not a set");
                    @SuppressWarnings("unchecked") Set<Object> set = (Set<Object>) s;
                    set.addAll(items);
                }
                case 0x91 -> push(Collections.unmodifiableSet(new LinkedHashSet<>(popMark(at, "FROZENSET"))));
                case 'q' -> memo.put((long) u8(), top(at, "BINPUT"));
                case 'r' -> memo.put(Integer.toUnsignedLong(i32()), top(at, "LONG_BINPUT"));
                case 0x94 -> memo.put((long) memo.size(), top(at, "MEMOIZE"));
                case 'h' -> push(memo(at, "BINGET", u8()));
                case 'j' -> push(memo(at, "LONG_BINGET", Integer.toUnsignedLong(i32())));
                case 'c' -> { // GLOBAL "module\nname\n"
                    String module = line(at);
                    String name = line(at);
                    push(resolver.global(module, name));
                }
                case 0x93 -> { // STACK_GLOBAL
                    Object name = pop(at, "STACK_GLOBAL");
                    Object module = pop(at, "STACK_GLOBAL");
                    if (!(module instanceof String m) || !(name instanceof String n)) throw fail(at, "STACK_GLOBAL", "module and name must be strings");
                    push(resolver.global(m, n));
                }
                case 'R' -> { // REDUCE
                    Object args = pop(at, "REDUCE");
                    Object f = pop(at, "REDUCE");
                    push(call(at, "REDUCE", f, args));
                }
                case 0x81 -> { // NEWOBJ: cls.__new__(cls, *args)
                    Object args = pop(at, "NEWOBJ");
                    Object cls = pop(at, "NEWOBJ");
                    push(call(at, "NEWOBJ", cls, args));
                }
                case 'b' -> { // BUILD
                    Object state = pop(at, "BUILD");
                    build(at, top(at, "BUILD"), state);
                }
                case 'Q' -> push(resolver.persistentLoad(pop(at, "BINPERSID")));
                default -> throw fail(at, String.format("0x%02x", op), "unsupported opcode"
                        + (op >= 0x20 && op < 0x7f ? " '" + (char) op + "'" : "") + " (a pickle from outside torch.save?)");
            }
        }
    }

    /**
     * BUILD sets an object's state. The only objects here that carry state are dicts (an OrderedDict
     * with attributes, as a state dict with its {@code _metadata}): jtorch has nowhere to keep instance
     * attributes of a dict, so they are dropped.
     */
    private void build(int at, Object target, Object state) {
        if (target instanceof Map<?, ?> && (state instanceof Map<?, ?> || state == null)) return;
        throw fail(at, "BUILD", "cannot set the state of " + describe(target) + " (only dicts with attributes are supported)");
    }

    private Object call(int at, String op, Object f, Object args) {
        if (!(f instanceof Callable c)) throw fail(at, op, describe(f) + " is not callable");
        if (!(args instanceof List<?> a)) throw fail(at, op, "the arguments are " + describe(args) + ", not a tuple");
        @SuppressWarnings("unchecked") List<Object> list = (List<Object>) a;
        return c.call(list);
    }

    // ------------------------------------------------------------------ stack

    private void push(Object v) {
        stack.add(v);
    }

    private Object pop(int at, String op) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() <= floor) throw fail(at, op, "stack underflow");
        return stack.remove(stack.size() - 1);
    }

    private Object top(int at, String op) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() <= floor) throw fail(at, op, "stack underflow");
        return stack.get(stack.size() - 1);
    }

    private List<Object> popN(int at, String op, int n) {
        int floor = marks.isEmpty() ? 0 : marks.get(marks.size() - 1);
        if (stack.size() - floor < n) throw fail(at, op, "stack underflow");
        List<Object> sub = stack.subList(stack.size() - n, stack.size());
        List<Object> out = new ArrayList<>(sub);
        sub.clear();
        return out;
    }

    private List<Object> popMark(int at, String op) {
        if (marks.isEmpty()) throw fail(at, op, "no MARK on the stack");
        int m = marks.remove(marks.size() - 1);
        List<Object> sub = stack.subList(m, stack.size());
        List<Object> out = new ArrayList<>(sub);
        sub.clear();
        return out;
    }

    private Object memo(int at, String op, long index) {
        if (!memo.containsKey(index)) throw fail(at, op, "memo index " + index + " was never stored");
        return memo.get(index);
    }

    private static List<Object> tuple(List<Object> items) {
        return Collections.unmodifiableList(new ArrayList<>(items));
    }

    @SuppressWarnings("unchecked")
    private List<Object> list(int at, String op, Object target) {
        // A tuple is an unmodifiable list: only ArrayList is a Python list here.
        if (target instanceof ArrayList<?> l) return (List<Object>) l;
        throw fail(at, op, "the target is " + describe(target) + ", not a list");
    }

    @SuppressWarnings("unchecked")
    private Map<Object, Object> dict(int at, String op, Object target) {
        if (target instanceof LinkedHashMap<?, ?> m) return (Map<Object, Object>) m;
        throw fail(at, op, "the target is " + describe(target) + ", not a dict");
    }

    private Map<Object, Object> dictOf(int at, String op, List<Object> kv, Map<Object, Object> into) {
        if (kv.size() % 2 != 0) throw fail(at, op, "an odd number of keys and values");
        for (int i = 0; i < kv.size(); i += 2) {
            Object k = kv.get(i);
            if (k instanceof ArrayList<?> || k instanceof Map<?, ?>) throw fail(at, op, "unhashable key " + describe(k));
            into.put(k, kv.get(i + 1));
        }
        return into;
    }

    // ------------------------------------------------------------------ input

    private int u8() {
        if (pos >= in.length) throw fail(pos, "read", "unexpected end of the pickle (no STOP)");
        return in[pos++] & 0xff;
    }

    private void need(int n) {
        if (n < 0 || in.length - pos < n) throw fail(pos, "read", "unexpected end of the pickle: " + n + " bytes needed, " + (in.length - pos) + " left");
    }

    private void skip(int n) {
        need(n);
        pos += n;
    }

    private int i32() {
        need(4);
        int v = (in[pos] & 0xff) | (in[pos + 1] & 0xff) << 8 | (in[pos + 2] & 0xff) << 16 | (in[pos + 3] & 0xff) << 24;
        pos += 4;
        return v;
    }

    private long i64() {
        long lo = Integer.toUnsignedLong(i32());
        long hi = Integer.toUnsignedLong(i32());
        return lo | hi << 32;
    }

    private long beLong() {
        need(8);
        long v = 0;
        for (int i = 0; i < 8; i++) v = v << 8 | (in[pos++] & 0xff);
        return v;
    }

    /** A length read as signed (or unsigned 64-bit), checked against what is left. */
    private int length(int at, String op, long n) {
        if (n < 0 || n > in.length - pos) throw fail(at, op, "length " + Long.toUnsignedString(n) + " exceeds the " + (in.length - pos) + " bytes left");
        return (int) n;
    }

    private byte[] bytes(int at, int n) {
        need(n);
        byte[] b = Arrays.copyOfRange(in, pos, pos + n);
        pos += n;
        return b;
    }

    private String utf8(int at, int n) {
        need(n);
        String s = new String(in, pos, n, StandardCharsets.UTF_8);
        pos += n;
        return s;
    }

    private String latin1(int at, int n) {
        need(n);
        String s = new String(in, pos, n, StandardCharsets.ISO_8859_1);
        pos += n;
        return s;
    }

    private String line(int at) {
        int start = pos;
        while (pos < in.length && in[pos] != '\n') pos++;
        if (pos >= in.length) throw fail(at, "GLOBAL", "unterminated module or name");
        String s = new String(in, start, pos - start, StandardCharsets.UTF_8);
        pos++;
        return s;
    }

    /** LONG1/LONG4: {@code n} bytes of little-endian two's complement. */
    private Object longOf(int at, int n) {
        need(n);
        if (n == 0) return 0L;
        byte[] be = new byte[n];
        for (int i = 0; i < n; i++) be[i] = in[pos + n - 1 - i];
        pos += n;
        BigInteger v = new BigInteger(be);
        return v.bitLength() < 64 ? (Object) v.longValue() : v;
    }

    private static Failure fail(int at, String op, String message) {
        return new Failure(op + " at offset " + at + ": " + message);
    }

    /** A short description of a value for error messages. */
    static String describe(Object v) {
        if (v == null) return "None";
        if (v instanceof String s) return "the string '" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "'";
        if (v instanceof Callable) return "the global " + v;
        return "a " + v.getClass().getSimpleName();
    }
}
