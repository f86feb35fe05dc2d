package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;

/**
 * The contiguous casts between float32, float64 and the 32- and 64-bit integers that {@link IntegerConversion} leaves
 * out, eight lanes at a time, storing exactly what the copy's double buffers store: a float widened or rounded once,
 * a float to int64 as Java's {@code (long)} cast (NaN to 0, saturating), to int32 as {@code (int) (long)}, and an
 * int64 to float32 through double, as the buffers round it.
 */
final class FloatConversion {
    private FloatConversion() {}

    private static final ByteOrder LE = ByteOrder.nativeOrder();
    private static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I8 = IntVector.SPECIES_256;
    private static final VectorSpecies<Double> D8 = DoubleVector.SPECIES_512;
    private static final VectorSpecies<Long> L8 = LongVector.SPECIES_512;
    private static final int LANES = 8;

    static boolean supports(DType src, DType dst) {
        if (LongVector.SPECIES_PREFERRED.vectorBitSize() < 512) return false;
        boolean floatSource = src == DType.FLOAT32 || src == DType.FLOAT64;
        boolean wideTarget = dst == DType.FLOAT32 || dst == DType.FLOAT64 || dst == DType.INT64 || dst == DType.INT32;
        return floatSource && wideTarget && src != dst || src == DType.INT64 && dst == DType.FLOAT32 || src == DType.INT32 && dst == DType.FLOAT64;
    }

    /** Converts {@code n} contiguous elements ({@link #supports}); offsets in bytes. */
    static void convert(DType st, MemorySegment s, long so, DType dt, MemorySegment d, long dOff, long n) {
        // One method per pair: with every loop in one method, the casts ran 20x slower in a JVM that had used several
        // pairs than in fresh JVMs (measured; the shared method's compiled code is the likely cause, not confirmed).
        long done = n - n % LANES;
        if (st == DType.FLOAT32 && dt == DType.FLOAT64) f32ToF64(s, so, d, dOff, done);
        else if (st == DType.FLOAT64 && dt == DType.FLOAT32) f64ToF32(s, so, d, dOff, done);
        else if (st == DType.FLOAT32 && dt == DType.INT64) f32ToI64(s, so, d, dOff, done);
        else if (st == DType.FLOAT64 && dt == DType.INT64) f64ToI64(s, so, d, dOff, done);
        else if (st == DType.FLOAT32 && dt == DType.INT32) f32ToI32(s, so, d, dOff, done);
        else if (st == DType.FLOAT64 && dt == DType.INT32) f64ToI32(s, so, d, dOff, done);
        else if (st == DType.INT64) i64ToF32(s, so, d, dOff, done);
        else i32ToF64(s, so, d, dOff, done);
        long ss = st.byteSize();
        for (long i = done; i < n; i++) {
            double v = st.isFloatingPoint() ? ElementCodec.getDouble(st, s, so + i * ss) : ElementCodec.getLong(st, s, so + i * ss);
            switch (dt) {
                case FLOAT32 -> d.set(ElementIO.F32, dOff + 4 * i, (float) v);
                case FLOAT64 -> d.set(ElementIO.F64, dOff + 8 * i, v);
                case INT64 -> d.set(ElementIO.I64, dOff + 8 * i, (long) v);
                default -> d.set(ElementIO.I32, dOff + 4 * i, (int) (long) v);
            }
        }
    }

    private static void f32ToF64(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) f32(s, so, i).convertShape(VectorOperators.F2D, D8, 0).intoMemorySegment(d, dOff + 8 * i, LE);
    }

    private static void f64ToF32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) f64(s, so, i).convertShape(VectorOperators.D2F, F8, 0).intoMemorySegment(d, dOff + 4 * i, LE);
    }

    private static void f32ToI64(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) f32(s, so, i).convertShape(VectorOperators.F2L, L8, 0).intoMemorySegment(d, dOff + 8 * i, LE);
    }

    private static void f64ToI64(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) f64(s, so, i).convertShape(VectorOperators.D2L, L8, 0).intoMemorySegment(d, dOff + 8 * i, LE);
    }

    private static void f32ToI32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) {
            f32(s, so, i).convertShape(VectorOperators.F2L, L8, 0).convertShape(VectorOperators.L2I, I8, 0).intoMemorySegment(d, dOff + 4 * i, LE);
        }
    }

    private static void f64ToI32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) {
            f64(s, so, i).convertShape(VectorOperators.D2L, L8, 0).convertShape(VectorOperators.L2I, I8, 0).intoMemorySegment(d, dOff + 4 * i, LE);
        }
    }

    private static void i64ToF32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) {
            LongVector.fromMemorySegment(L8, s, so + 8 * i, LE).convertShape(VectorOperators.L2D, D8, 0).convertShape(VectorOperators.D2F, F8, 0)
                    .intoMemorySegment(d, dOff + 4 * i, LE);
        }
    }

    private static void i32ToF64(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i += LANES) {
            IntVector.fromMemorySegment(I8, s, so + 4 * i, LE).convertShape(VectorOperators.I2D, D8, 0).intoMemorySegment(d, dOff + 8 * i, LE);
        }
    }

    private static FloatVector f32(MemorySegment s, long so, long i) {
        return FloatVector.fromMemorySegment(F8, s, so + 4 * i, LE);
    }

    private static DoubleVector f64(MemorySegment s, long so, long i) {
        return DoubleVector.fromMemorySegment(D8, s, so + 8 * i, LE);
    }
}
