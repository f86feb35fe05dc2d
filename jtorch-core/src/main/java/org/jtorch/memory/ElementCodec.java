package org.jtorch.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.types.DType;

/**
 * One element of any dtype read from or written to memory, with PyTorch's conversions: bool stores nonzero as 1,
 * floats round to nearest even, float to integer truncates toward zero. Scalar reads ({@code item()}), printing and
 * host-side fills use it; CPU kernels convert whole rows through their own buffers in the same arithmetic.
 */
public final class ElementCodec {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

    private ElementCodec() {}

    /** One element as a double. */
    public static double getDouble(DType t, MemorySegment s, long byteOffset) {
        return switch (t) {
            case FLOAT32 -> s.get(F32, byteOffset);
            case FLOAT64 -> s.get(F64, byteOffset);
            case FLOAT16 -> Float.float16ToFloat(s.get(I16, byteOffset));
            case BFLOAT16 -> bf16ToFloat(s.get(I16, byteOffset));
            case INT64 -> s.get(I64, byteOffset);
            case INT32 -> s.get(I32, byteOffset);
            case INT16 -> s.get(I16, byteOffset);
            case INT8 -> s.get(I8, byteOffset);
            case UINT8, BOOL -> s.get(I8, byteOffset) & 0xff;
        };
    }

    /** One element as a long (floats truncate toward zero). */
    public static long getLong(DType t, MemorySegment s, long byteOffset) {
        return switch (t) {
            case INT64 -> s.get(I64, byteOffset);
            case INT32 -> s.get(I32, byteOffset);
            case INT16 -> s.get(I16, byteOffset);
            case INT8 -> s.get(I8, byteOffset);
            case UINT8, BOOL -> s.get(I8, byteOffset) & 0xff;
            default -> (long) getDouble(t, s, byteOffset);
        };
    }

    /** Stores {@code v} converted to {@code t}. */
    public static void setDouble(DType t, MemorySegment s, long byteOffset, double v) {
        switch (t) {
            case FLOAT32 -> s.set(F32, byteOffset, (float) v);
            case FLOAT64 -> s.set(F64, byteOffset, v);
            case FLOAT16 -> s.set(I16, byteOffset, Float.floatToFloat16((float) v));
            case BFLOAT16 -> s.set(I16, byteOffset, floatToBf16((float) v));
            case INT64 -> s.set(I64, byteOffset, (long) v);
            case INT32 -> s.set(I32, byteOffset, (int) (long) v);
            case INT16 -> s.set(I16, byteOffset, (short) (long) v);
            case INT8, UINT8 -> s.set(I8, byteOffset, (byte) (long) v);
            case BOOL -> s.set(I8, byteOffset, v != 0 ? (byte) 1 : 0);
        }
    }

    /** Stores {@code v} converted to {@code t} (exactly for integer dtypes). */
    public static void setLong(DType t, MemorySegment s, long byteOffset, long v) {
        switch (t) {
            case INT64 -> s.set(I64, byteOffset, v);
            case INT32 -> s.set(I32, byteOffset, (int) v);
            case INT16 -> s.set(I16, byteOffset, (short) v);
            case INT8, UINT8 -> s.set(I8, byteOffset, (byte) v);
            case BOOL -> s.set(I8, byteOffset, v != 0 ? (byte) 1 : 0);
            default -> setDouble(t, s, byteOffset, v);
        }
    }

    /** A bfloat16's bits widened to float (exact). */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    /** Rounds to the nearest bfloat16, ties to even; NaN stays a quiet NaN. */
    public static short floatToBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (f != f) return (short) ((bits >>> 16) | 0x0040);
        int rounded = bits + 0x7fff + ((bits >>> 16) & 1);
        return (short) (rounded >>> 16);
    }
}
