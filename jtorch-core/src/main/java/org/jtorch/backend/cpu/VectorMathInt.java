package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.Fn;

/**
 * The integer Vector API form of the formula functions that have one, for generated int64, int32, int16, int8 and
 * uint8 rows ({@link PointwiseCodegen}): one overload per lane type of each function (the generator picks it by the
 * vector class in the call's descriptor), the loop helpers suffixed by the lane type. The lanes have the dtype's
 * width, so add, sub, mul, neg and the bitwise functions wrap around as PyTorch's integer kernels do. uint8 rows
 * use the int8 lanes with the unsigned forms of the functions that depend on the sign (suffix {@code U}: unsigned
 * comparisons, {@code UMAX}/{@code UMIN}). Which formulas the narrow lanes compute exactly as the long reference
 * does is {@link PointwiseCodegen#integerForm}'s question, not this class's.
 */
public final class VectorMathInt {
    private VectorMathInt() {}

    static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
    static final VectorSpecies<Short> SS = ShortVector.SPECIES_PREFERRED;
    static final VectorSpecies<Byte> BS = ByteVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    /** Whether {@code fn} has an integer vector form here (integer division, shifts and powers do not). */
    static boolean supports(Fn fn) {
        return switch (fn) {
            case NEG, ABS, ADD, SUB, MUL, RELU, THRESHOLD, SIGN, FLOOR, CEIL, RINT, TRUNC, GT, GE, LT, LE, EQ, NE, SELECT, MAX, MIN,
                 CLAMP, ISINF, ISFINITE, BITWISE_NOT, BITWISE_AND, BITWISE_OR, BITWISE_XOR -> true;
            default -> false;
        };
    }

    /** Whether uint8 lanes call {@code fn}'s unsigned form (its name suffixed {@code U}). */
    static boolean signSensitive(Fn fn) {
        return switch (fn) {
            case ABS, RELU, THRESHOLD, SIGN, GT, GE, LT, LE, MAX, MIN, CLAMP -> true;
            default -> false;
        };
    }

    // ---------------------------------------------------------------- loop helpers, one set per lane type

    public static long upperI64(long len) { return len - len % LS.length(); }
    public static long upperI32(long len) { return len - len % IS.length(); }
    public static long upperI16(long len) { return len - len % SS.length(); }
    public static long upperI8(long len) { return len - len % BS.length(); }

    public static VectorMask<Long> maskI64(long i, long len) { return LS.indexInRange(i, len); }
    public static VectorMask<Integer> maskI32(long i, long len) { return IS.indexInRange(i, len); }
    public static VectorMask<Short> maskI16(long i, long len) { return SS.indexInRange(i, len); }
    public static VectorMask<Byte> maskI8(long i, long len) { return BS.indexInRange(i, len); }

    // A parameter is Java's (long) of it, as the reference's; the caller checks it fits the lanes.
    public static LongVector paramI64(double[] p, int j, double ifNone) { return LongVector.broadcast(LS, (long) p[j]); }
    public static IntVector paramI32(double[] p, int j, double ifNone) { return IntVector.broadcast(IS, (int) (long) p[j]); }
    public static ShortVector paramI16(double[] p, int j, double ifNone) { return ShortVector.broadcast(SS, (short) (long) p[j]); }
    public static ByteVector paramI8(double[] p, int j, double ifNone) { return ByteVector.broadcast(BS, (byte) (long) p[j]); }

    public static LongVector constantI64(double c) { return LongVector.broadcast(LS, (long) c); }
    public static IntVector constantI32(double c) { return IntVector.broadcast(IS, (int) (long) c); }
    public static ShortVector constantI16(double c) { return ShortVector.broadcast(SS, (short) (long) c); }
    public static ByteVector constantI8(double c) { return ByteVector.broadcast(BS, (byte) (long) c); }

    public static LongVector loadI64(MemorySegment s, long off, long i) { return LongVector.fromMemorySegment(LS, s, off + 8 * i, LE); }
    public static IntVector loadI32(MemorySegment s, long off, long i) { return IntVector.fromMemorySegment(IS, s, off + 4 * i, LE); }
    public static ShortVector loadI16(MemorySegment s, long off, long i) { return ShortVector.fromMemorySegment(SS, s, off + 2 * i, LE); }
    public static ByteVector loadI8(MemorySegment s, long off, long i) { return ByteVector.fromMemorySegment(BS, s, off + i, LE); }

    public static LongVector loadI64Masked(MemorySegment s, long off, long i, VectorMask<Long> m) {
        return LongVector.fromMemorySegment(LS, s, off + 8 * i, LE, m);
    }
    public static IntVector loadI32Masked(MemorySegment s, long off, long i, VectorMask<Integer> m) {
        return IntVector.fromMemorySegment(IS, s, off + 4 * i, LE, m);
    }
    public static ShortVector loadI16Masked(MemorySegment s, long off, long i, VectorMask<Short> m) {
        return ShortVector.fromMemorySegment(SS, s, off + 2 * i, LE, m);
    }
    public static ByteVector loadI8Masked(MemorySegment s, long off, long i, VectorMask<Byte> m) {
        return ByteVector.fromMemorySegment(BS, s, off + i, LE, m);
    }

    public static void storeI64(LongVector v, MemorySegment s, long off, long i) { v.intoMemorySegment(s, off + 8 * i, LE); }
    public static void storeI32(IntVector v, MemorySegment s, long off, long i) { v.intoMemorySegment(s, off + 4 * i, LE); }
    public static void storeI16(ShortVector v, MemorySegment s, long off, long i) { v.intoMemorySegment(s, off + 2 * i, LE); }
    public static void storeI8(ByteVector v, MemorySegment s, long off, long i) { v.intoMemorySegment(s, off + i, LE); }

    public static void storeI64Masked(LongVector v, MemorySegment s, long off, long i, VectorMask<Long> m) {
        v.intoMemorySegment(s, off + 8 * i, LE, m);
    }
    public static void storeI32Masked(IntVector v, MemorySegment s, long off, long i, VectorMask<Integer> m) {
        v.intoMemorySegment(s, off + 4 * i, LE, m);
    }
    public static void storeI16Masked(ShortVector v, MemorySegment s, long off, long i, VectorMask<Short> m) {
        v.intoMemorySegment(s, off + 2 * i, LE, m);
    }
    public static void storeI8Masked(ByteVector v, MemorySegment s, long off, long i, VectorMask<Byte> m) {
        v.intoMemorySegment(s, off + i, LE, m);
    }

    public static LongVector splatAtI64(MemorySegment s, long off) { return LongVector.broadcast(LS, s.get(ElementIO.I64, off)); }
    public static IntVector splatAtI32(MemorySegment s, long off) { return IntVector.broadcast(IS, s.get(ElementIO.I32, off)); }
    public static ShortVector splatAtI16(MemorySegment s, long off) { return ShortVector.broadcast(SS, s.get(ElementIO.I16, off)); }
    public static ByteVector splatAtI8(MemorySegment s, long off) { return ByteVector.broadcast(BS, s.get(ElementIO.I8, off)); }

    // A bool row: one byte per lane, 1 where the value is nonzero.

    private static final VectorSpecies<Byte> BOOL_OF_LONGS = boolSpecies(LS);
    private static final VectorSpecies<Byte> BOOL_OF_INTS = boolSpecies(IS);
    private static final VectorSpecies<Byte> BOOL_OF_SHORTS = boolSpecies(SS);

    private static VectorSpecies<Byte> boolSpecies(VectorSpecies<?> lanes) {
        return VectorSpecies.of(byte.class, VectorShape.forBitSize(lanes.length() * 8));
    }

    private static ByteVector ones(VectorMask<?> nonzero, VectorSpecies<Byte> bytes) {
        return ByteVector.zero(bytes).blend((byte) 1, nonzero.cast(bytes));
    }

    public static void storeBool(LongVector v, MemorySegment s, long off, long i) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_LONGS).intoMemorySegment(s, off + i, LE);
    }
    public static void storeBool(IntVector v, MemorySegment s, long off, long i) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_INTS).intoMemorySegment(s, off + i, LE);
    }
    public static void storeBool(ShortVector v, MemorySegment s, long off, long i) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_SHORTS).intoMemorySegment(s, off + i, LE);
    }
    public static void storeBool(ByteVector v, MemorySegment s, long off, long i) {
        ones(v.compare(VectorOperators.NE, 0), BS).intoMemorySegment(s, off + i, LE);
    }

    public static void storeBoolMasked(LongVector v, MemorySegment s, long off, long i, VectorMask<Long> m) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_LONGS).intoMemorySegment(s, off + i, LE, m.cast(BOOL_OF_LONGS));
    }
    public static void storeBoolMasked(IntVector v, MemorySegment s, long off, long i, VectorMask<Integer> m) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_INTS).intoMemorySegment(s, off + i, LE, m.cast(BOOL_OF_INTS));
    }
    public static void storeBoolMasked(ShortVector v, MemorySegment s, long off, long i, VectorMask<Short> m) {
        ones(v.compare(VectorOperators.NE, 0), BOOL_OF_SHORTS).intoMemorySegment(s, off + i, LE, m.cast(BOOL_OF_SHORTS));
    }
    public static void storeBoolMasked(ByteVector v, MemorySegment s, long off, long i, VectorMask<Byte> m) {
        ones(v.compare(VectorOperators.NE, 0), BS).intoMemorySegment(s, off + i, LE, m);
    }

    // ---------------------------------------------------------------- the functions, one overload per lane type

    // LongVector
    public static LongVector neg(LongVector a) { return a.neg(); }
    public static LongVector abs(LongVector a) { return a.abs(); }
    public static LongVector add(LongVector a, LongVector b) { return a.add(b); }
    public static LongVector sub(LongVector a, LongVector b) { return a.sub(b); }
    public static LongVector mul(LongVector a, LongVector b) { return a.mul(b); }
    public static LongVector relu(LongVector a) { return a.blend(0, a.compare(VectorOperators.LE, 0)); }
    public static LongVector threshold(LongVector a, LongVector b) { return a.blend(0, b.compare(VectorOperators.LE, 0)); }
    public static LongVector sign(LongVector a) {
        return LongVector.zero(a.species()).blend(1, a.compare(VectorOperators.GT, 0)).blend(-1, a.compare(VectorOperators.LT, 0));
    }
    public static LongVector floor(LongVector a) { return a; }
    public static LongVector ceil(LongVector a) { return a; }
    public static LongVector rint(LongVector a) { return a; }
    public static LongVector trunc(LongVector a) { return a; }
    public static LongVector gt(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.GT, b)); }
    public static LongVector ge(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.GE, b)); }
    public static LongVector lt(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.LT, b)); }
    public static LongVector le(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.LE, b)); }
    public static LongVector eq(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.EQ, b)); }
    public static LongVector ne(LongVector a, LongVector b) { return ones(a, a.compare(VectorOperators.NE, b)); }
    public static LongVector select(LongVector cond, LongVector a, LongVector b) { return b.blend(a, cond.compare(VectorOperators.NE, 0)); }
    public static LongVector max(LongVector a, LongVector b) { return a.max(b); }
    public static LongVector min(LongVector a, LongVector b) { return a.min(b); }
    public static LongVector clamp(LongVector x, LongVector lo, LongVector hi) { return x.max(lo).min(hi); }
    public static LongVector isinf(LongVector a) { return LongVector.zero(a.species()); }
    public static LongVector isfinite(LongVector a) { return a.broadcast(1); }
    public static LongVector bitwise_not(LongVector a) { return a.not(); }
    public static LongVector bitwise_and(LongVector a, LongVector b) { return a.and(b); }
    public static LongVector bitwise_or(LongVector a, LongVector b) { return a.or(b); }
    public static LongVector bitwise_xor(LongVector a, LongVector b) { return a.lanewise(VectorOperators.XOR, b); }

    private static LongVector ones(LongVector like, VectorMask<Long> m) { return LongVector.zero(like.species()).blend(1, m); }

    // IntVector
    public static IntVector neg(IntVector a) { return a.neg(); }
    public static IntVector abs(IntVector a) { return a.abs(); }
    public static IntVector add(IntVector a, IntVector b) { return a.add(b); }
    public static IntVector sub(IntVector a, IntVector b) { return a.sub(b); }
    public static IntVector mul(IntVector a, IntVector b) { return a.mul(b); }
    public static IntVector relu(IntVector a) { return a.blend(0, a.compare(VectorOperators.LE, 0)); }
    public static IntVector threshold(IntVector a, IntVector b) { return a.blend(0, b.compare(VectorOperators.LE, 0)); }
    public static IntVector sign(IntVector a) {
        return IntVector.zero(a.species()).blend(1, a.compare(VectorOperators.GT, 0)).blend(-1, a.compare(VectorOperators.LT, 0));
    }
    public static IntVector floor(IntVector a) { return a; }
    public static IntVector ceil(IntVector a) { return a; }
    public static IntVector rint(IntVector a) { return a; }
    public static IntVector trunc(IntVector a) { return a; }
    public static IntVector gt(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.GT, b)); }
    public static IntVector ge(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.GE, b)); }
    public static IntVector lt(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.LT, b)); }
    public static IntVector le(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.LE, b)); }
    public static IntVector eq(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.EQ, b)); }
    public static IntVector ne(IntVector a, IntVector b) { return ones(a, a.compare(VectorOperators.NE, b)); }
    public static IntVector select(IntVector cond, IntVector a, IntVector b) { return b.blend(a, cond.compare(VectorOperators.NE, 0)); }
    public static IntVector max(IntVector a, IntVector b) { return a.max(b); }
    public static IntVector min(IntVector a, IntVector b) { return a.min(b); }
    public static IntVector clamp(IntVector x, IntVector lo, IntVector hi) { return x.max(lo).min(hi); }
    public static IntVector isinf(IntVector a) { return IntVector.zero(a.species()); }
    public static IntVector isfinite(IntVector a) { return a.broadcast(1); }
    public static IntVector bitwise_not(IntVector a) { return a.not(); }
    public static IntVector bitwise_and(IntVector a, IntVector b) { return a.and(b); }
    public static IntVector bitwise_or(IntVector a, IntVector b) { return a.or(b); }
    public static IntVector bitwise_xor(IntVector a, IntVector b) { return a.lanewise(VectorOperators.XOR, b); }

    private static IntVector ones(IntVector like, VectorMask<Integer> m) { return IntVector.zero(like.species()).blend(1, m); }

    // ShortVector
    public static ShortVector neg(ShortVector a) { return a.neg(); }
    public static ShortVector abs(ShortVector a) { return a.abs(); }
    public static ShortVector add(ShortVector a, ShortVector b) { return a.add(b); }
    public static ShortVector sub(ShortVector a, ShortVector b) { return a.sub(b); }
    public static ShortVector mul(ShortVector a, ShortVector b) { return a.mul(b); }
    public static ShortVector relu(ShortVector a) { return a.blend((short) 0, a.compare(VectorOperators.LE, (short) 0)); }
    public static ShortVector threshold(ShortVector a, ShortVector b) { return a.blend((short) 0, b.compare(VectorOperators.LE, (short) 0)); }
    public static ShortVector sign(ShortVector a) {
        return ShortVector.zero(a.species()).blend((short) 1, a.compare(VectorOperators.GT, (short) 0)).blend((short) -1, a.compare(VectorOperators.LT, (short) 0));
    }
    public static ShortVector floor(ShortVector a) { return a; }
    public static ShortVector ceil(ShortVector a) { return a; }
    public static ShortVector rint(ShortVector a) { return a; }
    public static ShortVector trunc(ShortVector a) { return a; }
    public static ShortVector gt(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.GT, b)); }
    public static ShortVector ge(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.GE, b)); }
    public static ShortVector lt(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.LT, b)); }
    public static ShortVector le(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.LE, b)); }
    public static ShortVector eq(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.EQ, b)); }
    public static ShortVector ne(ShortVector a, ShortVector b) { return ones(a, a.compare(VectorOperators.NE, b)); }
    public static ShortVector select(ShortVector cond, ShortVector a, ShortVector b) { return b.blend(a, cond.compare(VectorOperators.NE, (short) 0)); }
    public static ShortVector max(ShortVector a, ShortVector b) { return a.max(b); }
    public static ShortVector min(ShortVector a, ShortVector b) { return a.min(b); }
    public static ShortVector clamp(ShortVector x, ShortVector lo, ShortVector hi) { return x.max(lo).min(hi); }
    public static ShortVector isinf(ShortVector a) { return ShortVector.zero(a.species()); }
    public static ShortVector isfinite(ShortVector a) { return a.broadcast((short) 1); }
    public static ShortVector bitwise_not(ShortVector a) { return a.not(); }
    public static ShortVector bitwise_and(ShortVector a, ShortVector b) { return a.and(b); }
    public static ShortVector bitwise_or(ShortVector a, ShortVector b) { return a.or(b); }
    public static ShortVector bitwise_xor(ShortVector a, ShortVector b) { return a.lanewise(VectorOperators.XOR, b); }

    private static ShortVector ones(ShortVector like, VectorMask<Short> m) { return ShortVector.zero(like.species()).blend((short) 1, m); }

    // ByteVector
    public static ByteVector neg(ByteVector a) { return a.neg(); }
    public static ByteVector abs(ByteVector a) { return a.abs(); }
    public static ByteVector add(ByteVector a, ByteVector b) { return a.add(b); }
    public static ByteVector sub(ByteVector a, ByteVector b) { return a.sub(b); }
    public static ByteVector mul(ByteVector a, ByteVector b) { return a.mul(b); }
    public static ByteVector relu(ByteVector a) { return a.blend((byte) 0, a.compare(VectorOperators.LE, (byte) 0)); }
    public static ByteVector threshold(ByteVector a, ByteVector b) { return a.blend((byte) 0, b.compare(VectorOperators.LE, (byte) 0)); }
    public static ByteVector sign(ByteVector a) {
        return ByteVector.zero(a.species()).blend((byte) 1, a.compare(VectorOperators.GT, (byte) 0)).blend((byte) -1, a.compare(VectorOperators.LT, (byte) 0));
    }
    public static ByteVector floor(ByteVector a) { return a; }
    public static ByteVector ceil(ByteVector a) { return a; }
    public static ByteVector rint(ByteVector a) { return a; }
    public static ByteVector trunc(ByteVector a) { return a; }
    public static ByteVector gt(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.GT, b)); }
    public static ByteVector ge(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.GE, b)); }
    public static ByteVector lt(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.LT, b)); }
    public static ByteVector le(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.LE, b)); }
    public static ByteVector eq(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.EQ, b)); }
    public static ByteVector ne(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.NE, b)); }
    public static ByteVector select(ByteVector cond, ByteVector a, ByteVector b) { return b.blend(a, cond.compare(VectorOperators.NE, (byte) 0)); }
    public static ByteVector max(ByteVector a, ByteVector b) { return a.max(b); }
    public static ByteVector min(ByteVector a, ByteVector b) { return a.min(b); }
    public static ByteVector clamp(ByteVector x, ByteVector lo, ByteVector hi) { return x.max(lo).min(hi); }
    public static ByteVector isinf(ByteVector a) { return ByteVector.zero(a.species()); }
    public static ByteVector isfinite(ByteVector a) { return a.broadcast((byte) 1); }
    public static ByteVector bitwise_not(ByteVector a) { return a.not(); }
    public static ByteVector bitwise_and(ByteVector a, ByteVector b) { return a.and(b); }
    public static ByteVector bitwise_or(ByteVector a, ByteVector b) { return a.or(b); }
    public static ByteVector bitwise_xor(ByteVector a, ByteVector b) { return a.lanewise(VectorOperators.XOR, b); }

    private static ByteVector ones(ByteVector like, VectorMask<Byte> m) { return ByteVector.zero(like.species()).blend((byte) 1, m); }

    // uint8 in int8 lanes: the values are 0..255, so the sign-sensitive functions compare unsigned.
    public static ByteVector absU(ByteVector a) { return a; }
    public static ByteVector reluU(ByteVector a) { return a; }
    public static ByteVector thresholdU(ByteVector a, ByteVector b) { return a.blend((byte) 0, b.compare(VectorOperators.EQ, (byte) 0)); }
    public static ByteVector signU(ByteVector a) { return ones(a, a.compare(VectorOperators.NE, (byte) 0)); }
    public static ByteVector gtU(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.UGT, b)); }
    public static ByteVector geU(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.UGE, b)); }
    public static ByteVector ltU(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.ULT, b)); }
    public static ByteVector leU(ByteVector a, ByteVector b) { return ones(a, a.compare(VectorOperators.ULE, b)); }
    public static ByteVector maxU(ByteVector a, ByteVector b) { return a.lanewise(VectorOperators.UMAX, b); }
    public static ByteVector minU(ByteVector a, ByteVector b) { return a.lanewise(VectorOperators.UMIN, b); }
    public static ByteVector clampU(ByteVector x, ByteVector lo, ByteVector hi) {
        return x.lanewise(VectorOperators.UMAX, lo).lanewise(VectorOperators.UMIN, hi);
    }
}
