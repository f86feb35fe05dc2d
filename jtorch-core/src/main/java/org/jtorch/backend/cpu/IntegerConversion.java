package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;

/**
 * The common contiguous casts from integers in the Vector API (images in uint8 to float32, masks in bool to float32, as
 * dropout's, indices between int32 and int64, integers to the float of their width), storing what the copy's long/double
 * buffers store: uint8 and bool (bytes 0 and 1) zero-extended, int64 to int32 truncated (a store wraps around), int32
 * to float32 and int64 to float64 rounded once (the buffers' double is exact there). Each species is a constant, so
 * that C2 compiles the conversions to instructions; other casts keep the buffers.
 */
final class IntegerConversion {
    private IntegerConversion() {}

    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Float> FS = IS.withLanes(float.class);
    private static final VectorSpecies<Double> DS = LS.withLanes(double.class);
    /** As many bytes as IS has ints. */
    private static final VectorSpecies<Byte> BYTES_OF_INTS = VectorSpecies.of(byte.class, VectorShape.forBitSize(IS.length() * 8));
    /** As many ints as LS has longs. */
    private static final VectorSpecies<Integer> INTS_OF_LONGS = VectorSpecies.of(int.class, VectorShape.forBitSize(LS.length() * 32));

    static boolean supports(DType src, DType dst) {
        return (src == DType.UINT8 || src == DType.BOOL) && dst == DType.FLOAT32
                || src == DType.INT32 && (dst == DType.FLOAT32 || dst == DType.INT64)
                || src == DType.INT64 && (dst == DType.INT32 || dst == DType.FLOAT64);
    }

    /** Converts {@code n} contiguous elements ({@link #supports}); offsets in bytes. */
    static void convert(DType st, MemorySegment s, long so, DType dt, MemorySegment d, long dOff, long n) {
        long ss = st.byteSize();
        long ds = dt.byteSize();
        int lanes = st == DType.INT64 || dt == DType.INT64 ? LS.length() : IS.length();
        long i = 0;
        long upper = n - n % lanes;
        if (st == DType.UINT8 || st == DType.BOOL) {
            for (; i < upper; i += lanes) {
                ByteVector.fromMemorySegment(BYTES_OF_INTS, s, so + i, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, IS, 0)
                        .convertShape(VectorOperators.I2F, FS, 0).intoMemorySegment(d, dOff + 4 * i, LE);
            }
        } else if (st == DType.INT32 && dt == DType.FLOAT32) {
            for (; i < upper; i += lanes) {
                IntVector.fromMemorySegment(IS, s, so + 4 * i, LE).convertShape(VectorOperators.I2F, FS, 0)
                        .intoMemorySegment(d, dOff + 4 * i, LE);
            }
        } else if (st == DType.INT32) {
            for (; i < upper; i += lanes) {
                IntVector.fromMemorySegment(INTS_OF_LONGS, s, so + 4 * i, LE).convertShape(VectorOperators.I2L, LS, 0)
                        .intoMemorySegment(d, dOff + 8 * i, LE);
            }
        } else if (dt == DType.INT32) {
            for (; i < upper; i += lanes) {
                LongVector.fromMemorySegment(LS, s, so + 8 * i, LE).convertShape(VectorOperators.L2I, INTS_OF_LONGS, 0)
                        .intoMemorySegment(d, dOff + 4 * i, LE);
            }
        } else {
            for (; i < upper; i += lanes) {
                LongVector.fromMemorySegment(LS, s, so + 8 * i, LE).convertShape(VectorOperators.L2D, DS, 0)
                        .intoMemorySegment(d, dOff + 8 * i, LE);
            }
        }
        for (; i < n; i++) {
            long v = ElementCodec.getLong(st, s, so + i * ss);
            if (dt.isFloatingPoint()) ElementCodec.setDouble(dt, d, dOff + i * ds, v);
            else ElementCodec.setLong(dt, d, dOff + i * ds, v);
        }
    }
}
