package org.jtorch.io;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes Python pickles of protocol 2 (what {@code torch.save} uses), for Java values: null, Boolean,
 * Integer/Long/BigInteger, Float/Double, String, byte[] (as {@code _codecs.encode}, protocol 2's form of
 * bytes), Lists (Python lists), Object[] (tuples) and Maps (dicts), plus what a {@code special} function
 * writes itself (tensors). An object met twice (by identity) is written once and fetched from the memo
 * afterwards, so shared containers stay shared.
 */
final class Pickler {
    /** Writes an object it knows (returning true), or declines (false) so the plain rules apply. */
    @FunctionalInterface
    interface Special {
        boolean write(Pickler p, Object value);
    }

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final IdentityHashMap<Object, Integer> memo = new IdentityHashMap<>();
    private final Special special;

    Pickler(Special special) {
        this.special = special;
        out.write(0x80);
        out.write(2);
    }

    /** The pickle of {@code value}, ending with STOP. */
    byte[] finish(Object value) {
        write(value);
        out.write('.');
        return out.toByteArray();
    }

    void write(Object v) {
        if (v == null) {
            out.write('N');
        } else if (v instanceof Boolean b) {
            out.write(b ? 0x88 : 0x89);
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            writeInt(((Number) v).longValue());
        } else if (v instanceof BigInteger b) {
            writeBig(b);
        } else if (v instanceof Double || v instanceof Float) {
            out.write('G');
            long bits = Double.doubleToRawLongBits(((Number) v).doubleValue());
            for (int i = 7; i >= 0; i--) out.write((int) (bits >>> (8 * i)));
        } else if (v instanceof String s) {
            writeString(s);
        } else if (memoized(v)) {
            return;
        } else if (special != null && special.write(this, v)) {
            memoize(v);
        } else if (v instanceof byte[] b) {
            // Protocol 2 has no bytes opcode: Python writes _codecs.encode(latin-1 text, 'latin1').
            global("_codecs", "encode");
            writeString(new String(b, StandardCharsets.ISO_8859_1));
            writeString("latin1");
            out.write(0x86); // TUPLE2
            out.write('R');
            memoize(v);
        } else if (v instanceof Object[] items) {
            tuple(java.util.Arrays.asList(items), this::write);
            memoize(v);
        } else if (v instanceof List<?> list) {
            out.write(']');
            memoize(v);
            for (int i = 0; i < list.size(); i += 1000) { // batched as Python's pickler
                out.write('(');
                for (Object x : list.subList(i, Math.min(list.size(), i + 1000))) write(x);
                out.write('e');
            }
        } else if (v instanceof Map<?, ?> map) {
            out.write('}');
            memoize(v);
            int n = 0;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (n % 1000 == 0) {
                    if (n > 0) out.write('u');
                    out.write('(');
                }
                write(e.getKey());
                write(e.getValue());
                n++;
            }
            if (n > 0) out.write('u');
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass().getName()
                    + " (supported: tensors, null, Boolean, integers, Float/Double, String, byte[], List, Object[] as a tuple, Map)");
        }
    }

    /** GLOBAL {@code module.name}. */
    void global(String module, String name) {
        out.write('c');
        byte[] b = (module + "\n" + name + "\n").getBytes(StandardCharsets.UTF_8);
        out.write(b, 0, b.length);
    }

    /** A tuple of {@code items}, each written by {@code each}. */
    <T> void tuple(List<T> items, java.util.function.Consumer<T> each) {
        if (items.isEmpty()) {
            out.write(')');
            return;
        }
        if (items.size() > 3) out.write('(');
        for (T x : items) each.accept(x);
        out.write(switch (items.size()) {
            case 1 -> 0x85;
            case 2 -> 0x86;
            case 3 -> 0x87;
            default -> 't';
        });
    }

    /** A tuple of longs (a shape or strides). */
    void longTuple(long[] values) {
        Long[] boxed = new Long[values.length];
        for (int i = 0; i < values.length; i++) boxed[i] = values[i];
        tuple(List.of(boxed), this::write);
    }

    void reduce() {
        out.write('R');
    }

    void persistentId() {
        out.write('Q');
    }

    /** An empty {@code collections.OrderedDict()}. */
    void emptyOrderedDict() {
        global("collections", "OrderedDict");
        out.write(')');
        out.write('R');
    }

    /** BINGET of {@code v} when it was written before. */
    private boolean memoized(Object v) {
        Integer index = memo.get(v);
        if (index == null) return false;
        memoOp('h', 'j', index);
        return true;
    }

    /** BINPUT of the value just written. */
    private void memoize(Object v) {
        int index = memo.size();
        memo.put(v, index);
        memoOp('q', 'r', index);
    }

    /** A memo opcode with a one-byte index, or its four-byte form. */
    private void memoOp(int shortForm, int longForm, int index) {
        if (index < 256) {
            out.write(shortForm);
            out.write(index);
        } else {
            out.write(longForm);
            writeLe32(index);
        }
    }

    private void writeInt(long v) {
        if (v >= 0 && v < 256) {
            out.write('K');
            out.write((int) v);
        } else if (v >= 0 && v < 65536) {
            out.write('M');
            out.write((int) v);
            out.write((int) (v >>> 8));
        } else if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            out.write('J');
            writeLe32((int) v);
        } else {
            writeBig(BigInteger.valueOf(v));
        }
    }

    private void writeBig(BigInteger b) {
        byte[] be = b.toByteArray(); // minimal two's complement, big-endian
        if (be.length > 255) throw new IllegalArgumentException("cannot write an integer of " + be.length + " bytes");
        out.write(0x8a); // LONG1
        out.write(be.length);
        for (int i = be.length - 1; i >= 0; i--) out.write(be[i]);
    }

    private void writeString(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.write('X');
        writeLe32(b.length);
        out.write(b, 0, b.length);
    }

    private void writeLe32(int v) {
        out.write(v);
        out.write(v >>> 8);
        out.write(v >>> 16);
        out.write(v >>> 24);
    }
}
