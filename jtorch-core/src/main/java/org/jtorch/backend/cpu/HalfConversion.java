package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.DType;

/**
 * Contiguous float32 &lt;-&gt; bfloat16/float16 conversion, the glue of half-precision compute (bf16
 * matmul converts its operands once and runs the float32 GEMM; autocast casts weights and activations).
 * bfloat16 uses the Vector API (a bfloat16 is the high half of a float32: widen and shift; narrowing
 * rounds to nearest even, NaN kept quiet, as {@link ElementIO#floatToBf16}); float16 uses the JDK's
 * intrinsic scalar conversions.
 */
final class HalfConversion {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
    /** As many 16-bit lanes as FS has floats. */
    private static final VectorSpecies<Short> SS = VectorSpecies.of(short.class, VectorShape.forBitSize(FS.vectorBitSize() / 2));
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private HalfConversion() {}

    static boolean supports(DType src, DType dst) {
        return (src == DType.FLOAT32 && (dst == DType.BFLOAT16 || dst == DType.FLOAT16))
                || (dst == DType.FLOAT32 && (src == DType.BFLOAT16 || src == DType.FLOAT16));
    }

    /** Converts {@code n} contiguous elements; offsets in bytes. */
    static void convert(DType st, MemorySegment s, long so, DType dt, MemorySegment d, long dOff, long n) {
        if (st == DType.BFLOAT16) bf16ToF32(s, so, d, dOff, n);
        else if (dt == DType.BFLOAT16) f32ToBf16(s, so, d, dOff, n);
        else if (st == DType.FLOAT16) f16ToF32(s, so, d, dOff, n);
        else f32ToF16(s, so, d, dOff, n);
    }

    static void bf16ToF32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        long i = 0;
        long upper = FS.loopBound(n);
        for (; i < upper; i += FS.length()) {
            ShortVector h = ShortVector.fromMemorySegment(SS, s, so + i * 2, LE);
            IntVector w = (IntVector) h.convertShape(VectorOperators.S2I, IS, 0);
            w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoMemorySegment(d, dOff + i * 4, LE);
        }
        for (; i < n; i++) d.set(ElementIO.F32, dOff + i * 4, ElementIO.bf16ToFloat(s.get(I16, so + i * 2)));
    }

    static void f32ToBf16(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        long i = 0;
        long upper = FS.loopBound(n);
        for (; i < upper; i += FS.length()) {
            FloatVector f = FloatVector.fromMemorySegment(FS, s, so + i * 4, LE);
            IntVector bits = f.reinterpretAsInts();
            IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
            IntVector rounded = bits.add(high.and(1)).add(0x7fff).lanewise(VectorOperators.LSHR, 16);
            VectorMask<Integer> nan = f.test(VectorOperators.IS_NAN).cast(IS);
            IntVector r = rounded.blend(high.or(0x40), nan);
            ((ShortVector) r.convertShape(VectorOperators.I2S, SS, 0)).intoMemorySegment(d, dOff + i * 2, LE);
        }
        for (; i < n; i++) d.set(I16, dOff + i * 2, ElementIO.floatToBf16(s.get(ElementIO.F32, so + i * 4)));
    }

    static void f16ToF32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i++) d.set(ElementIO.F32, dOff + i * 4, Float.float16ToFloat(s.get(I16, so + i * 2)));
    }

    static void f32ToF16(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i++) d.set(I16, dOff + i * 2, Float.floatToFloat16(s.get(ElementIO.F32, so + i * 4)));
    }
}
