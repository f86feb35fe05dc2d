package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code where(cond, a, b)} on rows where both sources have the output's dtype, so that selecting is copying bits:
 * the condition's bytes become a lane mask and one blend picks each lane. Sources may be contiguous rows or one
 * broadcast element (stride 0: {@code masked_fill}'s value, a scalar operand); the condition is a contiguous row of
 * bool bytes. Elements of 2, 4 and 8 bytes; anything else is the caller's.
 */
final class SelectRows {
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_512;
    private static final VectorSpecies<Byte> INT_CONDITIONS = ByteVector.SPECIES_128;
    private static final VectorSpecies<Long> LONGS = LongVector.SPECIES_512;
    private static final VectorSpecies<Byte> LONG_CONDITIONS = ByteVector.SPECIES_64;
    private static final VectorSpecies<Short> SHORTS = ShortVector.SPECIES_512;
    private static final VectorSpecies<Byte> SHORT_CONDITIONS = ByteVector.SPECIES_256;

    private SelectRows() {}

    /** Whether a row of {@code size}-byte elements with these byte strides runs here. */
    static boolean serves(long size, long out, long cond, long a, long b) {
        boolean sizeOk = size == 2 || size == 4 || size == 8;
        return sizeOk && LongVector.SPECIES_PREFERRED.vectorBitSize() >= 512 && out == size && cond == 1 && (a == size || a == 0)
                && (b == size || b == 0);
    }

    /** Per thread, a vector's worth of bytes for each source's broadcast element (see {@link #row}). */
    private static final ThreadLocal<MemorySegment[]> SPLATS = ThreadLocal.withInitial(
            () -> new MemorySegment[] {Arena.global().allocate(64, 64), Arena.global().allocate(64, 64)});

    /** This thread's scratch for {@link #row}: fetched once per task, not per row. */
    static MemorySegment[] splats() {
        return SPLATS.get();
    }

    /**
     * One row of {@code len} elements; {@code a}/{@code b} strides are {@code size} or 0.
     *
     * <p>A broadcast source (stride 0) is read as a vector of copies of its element at a fixed address, so that every
     * pattern of broadcasts runs the same loop, a load per step. A loop choosing per step between a broadcast vector
     * and a load had C2 merge the two into one value, which it boxed once its profile had seen both patterns: every
     * {@code where} then ran 50x slower in a JVM that had run one with a scalar operand ({@code tril}'s zero) before.
     * {@code splats} is this thread's {@link #splats()}.
     */
    static void row(long size, MemorySegment cs, long c0, MemorySegment as, long a0, long aStride, MemorySegment bs, long b0,
                    long bStride, MemorySegment os, long o0, long len, MemorySegment[] splats) {
        if (aStride == 0 || bStride == 0) {
            if (aStride == 0) {
                as = splat(splats[0], as, a0, size);
                a0 = 0;
            }
            if (bStride == 0) {
                bs = splat(splats[1], bs, b0, size);
                b0 = 0;
            }
        }
        // A piece at a time: a long first row would otherwise compile the loop on stack (OSR) before the method, and
        // those compilations trapped on profiled loop predicates (PointwiseCodegen#ROW_PIECE says more).
        for (long done = 0; done < len; done += PIECE) {
            long n = Math.min(PIECE, len - done);
            long c = c0 + done, a = a0 + aStride * done, b = b0 + bStride * done, o = o0 + size * done;
            if (size == 4) ints(cs, c, as, a, aStride, bs, b, bStride, os, o, n);
            else if (size == 8) longs(cs, c, as, a, aStride, bs, b, bStride, os, o, n);
            else shorts(cs, c, as, a, aStride, bs, b, bStride, os, o, n);
        }
    }

    /** Elements per call of a typed loop: a multiple of every lane count here. */
    private static final long PIECE = 1024;

    /**
     * {@code scratch} filled with copies of the {@code size}-byte element at {@code s[offset]}: one broadcast vector
     * store, as this runs once per row (a broadcast condition over attention scores calls it for every row).
     */
    private static MemorySegment splat(MemorySegment scratch, MemorySegment s, long offset, long size) {
        if (size == 4) IntVector.broadcast(INTS, s.get(ElementIO.I32, offset)).intoMemorySegment(scratch, 0, LE);
        else if (size == 8) LongVector.broadcast(LONGS, s.get(ElementIO.I64, offset)).intoMemorySegment(scratch, 0, LE);
        else ShortVector.broadcast(SHORTS, s.get(ElementIO.I16, offset)).intoMemorySegment(scratch, 0, LE);
        return scratch;
    }

    private static void ints(MemorySegment cs, long c0, MemorySegment as, long a0, long aStride, MemorySegment bs, long b0, long bStride,
                             MemorySegment os, long o0, long len) {
        int n = INTS.length();
        long i = 0;
        for (; i + n <= len; i += n) {
            VectorMask<Integer> take = ByteVector.fromMemorySegment(INT_CONDITIONS, cs, c0 + i, LE).compare(VectorOperators.NE, 0).cast(INTS);
            IntVector a = IntVector.fromMemorySegment(INTS, as, a0 + aStride * i, LE);
            IntVector b = IntVector.fromMemorySegment(INTS, bs, b0 + bStride * i, LE);
            b.blend(a, take).intoMemorySegment(os, o0 + 4 * i, LE);
        }
        for (; i < len; i++) {
            boolean c = cs.get(ElementIO.I8, c0 + i) != 0;
            os.set(ElementIO.I32, o0 + 4 * i, c ? as.get(ElementIO.I32, a0 + aStride * i) : bs.get(ElementIO.I32, b0 + bStride * i));
        }
    }

    private static void longs(MemorySegment cs, long c0, MemorySegment as, long a0, long aStride, MemorySegment bs, long b0, long bStride,
                              MemorySegment os, long o0, long len) {
        int n = LONGS.length();
        long i = 0;
        for (; i + n <= len; i += n) {
            VectorMask<Long> take = ByteVector.fromMemorySegment(LONG_CONDITIONS, cs, c0 + i, LE).compare(VectorOperators.NE, 0).cast(LONGS);
            LongVector a = LongVector.fromMemorySegment(LONGS, as, a0 + aStride * i, LE);
            LongVector b = LongVector.fromMemorySegment(LONGS, bs, b0 + bStride * i, LE);
            b.blend(a, take).intoMemorySegment(os, o0 + 8 * i, LE);
        }
        for (; i < len; i++) {
            boolean c = cs.get(ElementIO.I8, c0 + i) != 0;
            os.set(ElementIO.I64, o0 + 8 * i, c ? as.get(ElementIO.I64, a0 + aStride * i) : bs.get(ElementIO.I64, b0 + bStride * i));
        }
    }

    private static void shorts(MemorySegment cs, long c0, MemorySegment as, long a0, long aStride, MemorySegment bs, long b0, long bStride,
                               MemorySegment os, long o0, long len) {
        int n = SHORTS.length();
        long i = 0;
        for (; i + n <= len; i += n) {
            VectorMask<Short> take = ByteVector.fromMemorySegment(SHORT_CONDITIONS, cs, c0 + i, LE).compare(VectorOperators.NE, 0).cast(SHORTS);
            ShortVector a = ShortVector.fromMemorySegment(SHORTS, as, a0 + aStride * i, LE);
            ShortVector b = ShortVector.fromMemorySegment(SHORTS, bs, b0 + bStride * i, LE);
            b.blend(a, take).intoMemorySegment(os, o0 + 2 * i, LE);
        }
        for (; i < len; i++) {
            boolean c = cs.get(ElementIO.I8, c0 + i) != 0;
            os.set(ElementIO.I16, o0 + 2 * i, c ? as.get(ElementIO.I16, a0 + aStride * i) : bs.get(ElementIO.I16, b0 + bStride * i));
        }
    }
}
