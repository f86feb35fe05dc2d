package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;

/**
 * Loads strided elements of any dtype into double or long buffers and stores them back with
 * PyTorch's conversions (bool stores nonzero as 1, floats round to nearest even, float to integer
 * truncates), one element at a time as {@link ElementCodec}. The generic kernels compute on these buffers; dtype
 * switches happen once per row.
 */
final class ElementIO {
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
            case BFLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = ElementCodec.bf16ToFloat(s.get(I16, off + i * stride)); }
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
            case BFLOAT16 -> { for (int i = 0; i < n; i++) dst[i] = (long) ElementCodec.bf16ToFloat(s.get(I16, off + i * stride)); }
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
            case BFLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, ElementCodec.floatToBf16((float) src[i])); }
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
            case BFLOAT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, ElementCodec.floatToBf16((float) src[i])); }
            case INT64 -> { for (int i = 0; i < n; i++) s.set(I64, off + i * stride, src[i]); }
            case INT32 -> { for (int i = 0; i < n; i++) s.set(I32, off + i * stride, (int) src[i]); }
            case INT16 -> { for (int i = 0; i < n; i++) s.set(I16, off + i * stride, (short) src[i]); }
            case INT8, UINT8 -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, (byte) src[i]); }
            case BOOL -> { for (int i = 0; i < n; i++) s.set(I8, off + i * stride, src[i] != 0 ? (byte) 1 : 0); }
        }
    }
}
