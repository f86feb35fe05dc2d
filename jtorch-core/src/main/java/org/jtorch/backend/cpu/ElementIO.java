package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.DType;

/**
 * Loads strided elements of any dtype into double or long buffers and stores them back with
 * PyTorch's conversions (bool stores nonzero as 1, floats round to nearest even, float to integer
 * truncates). Public for CPU-side element access (scalars, printing); the generic kernels compute on these buffers; dtype switches happen once per row.
 */
public final class ElementIO {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

    private ElementIO() {}

    static void load(DType t, MemorySegment s, long off, long stride, int n, double[] dst) {
        switch (t) {
            case FLOAT32 -> { for (int i = 0; i < n; i++) dst[i] = s.get(F32, off + i * stride); }
            case FLOAT64 -> { for (int i = 0; i < n; i++) dst[i] = s.get(F64, off + i * stride); }
            case FLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = Float.float16ToFloat(s.get(I16, off + i * stride)); }
            case BFLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = bf16ToFloat(s.get(I16, off + i * stride)); }
            case INT64 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I64, off + i * stride); }
            case INT32 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I32, off + i * stride); }
            case INT16 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I16, off + i * stride); }
            case INT8 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I8, off + i * stride); }
            case UINT8, BOOL -> { for (int i = 0; i < n; i++) dst[i] = s.get(I8, off + i * stride) & 0xff; }
        }
    }

    static void load(DType t, MemorySegment s, long off, long stride, int n, long[] dst) {
        switch (t) {
            case FLOAT32 -> { for (int i = 0; i < n; i++) dst[i] = (long) s.get(F32, off + i * stride); }
            case FLOAT64 -> { for (int i = 0; i < n; i++) dst[i] = (long) s.get(F64, off + i * stride); }
            case FLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = (long) Float.float16ToFloat(s.get(I16, off + i * stride)); }
            case BFLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = (long) bf16ToFloat(s.get(I16, off + i * stride)); }
            case INT64 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I64, off + i * stride); }
            case INT32 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I32, off + i * stride); }
            case INT16 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I16, off + i * stride); }
            case INT8 -> { for (int i = 0; i < n; i++) dst[i] = s.get(I8, off + i * stride); }
            case UINT8, BOOL -> { for (int i = 0; i < n; i++) dst[i] = s.get(I8, off + i * stride) & 0xff; }
        }
    }

    static void store(DType t, MemorySegment s, long off, long stride, int n, double[] src) {
        switch (t) {
            case FLOAT32 -> { for (int i = 0; i < n; i++) s.set(F32, off + i * stride, (float) src[i]); }
            case FLOAT64 -> { for (int i = 0; i < n; i++) s.set(F64, off + i * stride, src[i]); }
            case FLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, Float.floatToFloat16((float) src[i])); }
            case BFLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, floatToBf16((float) src[i])); }
            case INT64 -> { for (int i = 0; i < n; i++) s.set(I64, off + i * stride, (long) src[i]); }
            case INT32 -> { for (int i = 0; i < n; i++) s.set(I32, off + i * stride, (int) (long) src[i]); }
            case INT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, (short) (long) src[i]); }
            case INT8, UINT8 -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, (byte) (long) src[i]); }
            case BOOL -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, src[i] != 0 ? (byte) 1 : 0); }
        }
    }

    static void store(DType t, MemorySegment s, long off, long stride, int n, long[] src) {
        switch (t) {
            case FLOAT32 -> { for (int i = 0; i < n; i++) s.set(F32, off + i * stride, (float) src[i]); }
            case FLOAT64 -> { for (int i = 0; i < n; i++) s.set(F64, off + i * stride, (double) src[i]); }
            case FLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, Float.floatToFloat16((float) src[i])); }
            case BFLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, floatToBf16((float) src[i])); }
            case INT64 -> { for (int i = 0; i < n; i++) s.set(I64, off + i * stride, src[i]); }
            case INT32 -> { for (int i = 0; i < n; i++) s.set(I32, off + i * stride, (int) src[i]); }
            case INT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, (short) src[i]); }
            case INT8, UINT8 -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, (byte) src[i]); }
            case BOOL -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, src[i] != 0 ? (byte) 1 : 0); }
        }
    }

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
