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
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;

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
            bf16ToFloat(ShortVector.fromMemorySegment(SS, s, so + i * 2, LE)).intoMemorySegment(d, dOff + i * 4, LE);
        }
        for (; i < n; i++) d.set(ElementIO.F32, dOff + i * 4, ElementCodec.bf16ToFloat(s.get(I16, so + i * 2)));
    }

    static void f32ToBf16(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        long i = 0;
        long upper = FS.loopBound(n);
        for (; i < upper; i += FS.length()) {
            floatToBf16(FloatVector.fromMemorySegment(FS, s, so + i * 4, LE)).intoMemorySegment(d, dOff + i * 2, LE);
        }
        for (; i < n; i++) d.set(I16, dOff + i * 2, ElementCodec.floatToBf16(s.get(ElementIO.F32, so + i * 4)));
    }

    /** bfloat16 bits to float32, lane for lane: the high half of the float. */
    static FloatVector bf16ToFloat(ShortVector h) {
        IntVector w = (IntVector) h.convertShape(VectorOperators.S2I, IS, 0);
        return w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /** float32 to bfloat16 bits, rounded to nearest even, NaN kept quiet (as {@link ElementIO#floatToBf16}). */
    static ShortVector floatToBf16(FloatVector f) {
        IntVector bits = f.reinterpretAsInts();
        IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
        IntVector rounded = bits.add(high.and(1)).add(0x7fff).lanewise(VectorOperators.LSHR, 16);
        VectorMask<Integer> nan = f.test(VectorOperators.IS_NAN).cast(IS);
        IntVector r = rounded.blend(high.or(0x40), nan);
        return (ShortVector) r.convertShape(VectorOperators.I2S, SS, 0);
    }

    /**
     * float16 bits to float32, exactly: the exponent and mantissa shifted into place and scaled by 2^112 (which also
     * normalises subnormals), infinities and NaN (exponent 31) rebuilt with the float exponent all ones, NaN made quiet
 * (as the JDK's {@code Float.float16ToFloat}).
     */
    static FloatVector f16ToFloat(ShortVector h) {
        IntVector bits = ((IntVector) h.convertShape(VectorOperators.S2I, IS, 0)).and(0xffff);
        IntVector magnitude = bits.and(0x7fff);
        IntVector shifted = magnitude.lanewise(VectorOperators.LSHL, 13);
        IntVector finite = shifted.reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts();
        IntVector r = finite.blend(shifted.or(0x7f800000), magnitude.compare(VectorOperators.GE, 0x7c00))
                .blend(shifted.or(0x7fc00000), magnitude.compare(VectorOperators.GT, 0x7c00));
        return r.or(bits.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    /**
     * float32 to float16 bits, rounded to nearest even: subnormal results by adding a magic float that aligns the 10
     * kept mantissa bits at the bottom (the FPU rounds), normal ones by integer rounding of the rebiased bits;
     * overflow to infinity, NaN to the quiet NaN 0x7e00 (with the sign).
     */
    static ShortVector floatToF16(FloatVector f) {
        IntVector bits = f.reinterpretAsInts();
        IntVector magnitude = bits.and(0x7fffffff);
        IntVector subnormal = magnitude.reinterpretAsFloats().add(F16_DENORMAL_MAGIC).reinterpretAsInts().sub(F16_DENORMAL_MAGIC_BITS);
        IntVector odd = magnitude.lanewise(VectorOperators.LSHR, 13).and(1);
        IntVector normal = magnitude.add(((15 - 127) << 23) + 0xfff).add(odd).lanewise(VectorOperators.LSHR, 13);
        IntVector r = normal.blend(subnormal, magnitude.compare(VectorOperators.LT, 113 << 23))
                .blend(0x7c00, magnitude.compare(VectorOperators.GE, (127 + 16) << 23))
                .blend(0x7e00, magnitude.compare(VectorOperators.GT, 0x7f800000));
        r = r.or(bits.lanewise(VectorOperators.LSHR, 16).and(0x8000));
        return (ShortVector) r.convertShape(VectorOperators.I2S, SS, 0);
    }

    private static final int F16_DENORMAL_MAGIC_BITS = ((127 - 15) + (23 - 10) + 1) << 23;
    private static final float F16_DENORMAL_MAGIC = Float.intBitsToFloat(F16_DENORMAL_MAGIC_BITS);

    /** The 16-bit lanes of a half-precision row step: as many as {@code FloatVector.SPECIES_PREFERRED} has floats. */
    static VectorSpecies<Short> halfSpecies() {
        return SS;
    }

    static void f16ToF32(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i++) d.set(ElementIO.F32, dOff + i * 4, Float.float16ToFloat(s.get(I16, so + i * 2)));
    }

    static void f32ToF16(MemorySegment s, long so, MemorySegment d, long dOff, long n) {
        for (long i = 0; i < n; i++) d.set(I16, dOff + i * 2, Float.floatToFloat16(s.get(ElementIO.F32, so + i * 4)));
    }
}
