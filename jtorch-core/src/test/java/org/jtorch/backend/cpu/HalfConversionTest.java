package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** The vectorised half conversions give bit-for-bit the scalar reference ({@link ElementIO}, the JDK's float16 conversions). */
class HalfConversionTest {

    /** Every bfloat16 bit pattern widens exactly; float32 patterns (random, and special values) narrow as ElementIO rounds. */
    @Test
    void bfloat16MatchesTheScalarConversionBitForBit() {
        int n = 65536 + 13; // every 16-bit pattern, plus a tail shorter than a vector
        try (Tensor h = Torch.empty(new long[] {n}, DType.BFLOAT16, org.jtorch.types.Device.cpu()); Tensor f = Torch.empty(new long[] {n}, DType.FLOAT32, org.jtorch.types.Device.cpu())) {
            var hs = h.storage().segment();
            for (int i = 0; i < n; i++) hs.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i * 2L, (short) i);
            HalfConversion.bf16ToF32(hs, 0, f.storage().segment(), 0, n);
            for (int i = 0; i < n; i++) {
                assertEquals(Float.floatToRawIntBits(ElementCodec.bf16ToFloat((short) i)),
                        Float.floatToRawIntBits(f.storage().segment().get(ElementIO.F32, i * 4L)), "bf16 bits " + i);
            }
            SplittableRandom rnd = new SplittableRandom(7);
            float[] special = {0f, -0f, Float.NaN, Float.intBitsToFloat(0xffc01234), Float.intBitsToFloat(0x7f800001), Float.POSITIVE_INFINITY,
                    Float.NEGATIVE_INFINITY, Float.MAX_VALUE, Float.MIN_VALUE, 1.00390625f, 1.01171875f, 3.3895314e38f};
            var fs = f.storage().segment();
            for (int i = 0; i < n; i++) {
                float v = i < special.length ? special[i] : Float.intBitsToFloat(rnd.nextInt());
                fs.set(ElementIO.F32, i * 4L, v);
            }
            HalfConversion.f32ToBf16(fs, 0, hs, 0, n);
            for (int i = 0; i < n; i++) {
                float v = fs.get(ElementIO.F32, i * 4L);
                assertEquals(ElementCodec.floatToBf16(v), hs.get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i * 2L), "float bits " + Integer.toHexString(Float.floatToRawIntBits(v)));
            }
        }
    }

    @Test
    void tensorConversionsTakeTheFastPathAndRoundTrip() {
        try (Tensor x = Torch.randn(37, 19); Tensor b = x.to(DType.BFLOAT16); Tensor back = b.to(DType.FLOAT32);
             Tensor h = x.to(DType.FLOAT16); Tensor hback = h.to(DType.FLOAT32)) {
            float[] xs = x.toFloatArray();
            float[] bs = back.toFloatArray();
            float[] hs = hback.toFloatArray();
            for (int i = 0; i < xs.length; i++) {
                assertEquals(ElementCodec.bf16ToFloat(ElementCodec.floatToBf16(xs[i])), bs[i]);
                assertEquals(Float.float16ToFloat(Float.floatToFloat16(xs[i])), hs[i]);
            }
        }
    }

    /**
     * Contiguous bf16/f16 unary and binary ops (f32 kernel between two conversions) agree with the generic
     * path (taken by a transposed copy of the same values) within one rounding of the half type.
     */
    @Test
    void halfElementwiseFastPathAgreesWithTheGenericPath() {
        for (DType dt : new DType[] {DType.BFLOAT16, DType.FLOAT16}) {
            double ulp = dt == DType.BFLOAT16 ? 1.0 / 128 : 1.0 / 1024;
            try (org.jtorch.memory.MemoryScope scope = new org.jtorch.memory.MemoryScope()) {
                Tensor a = Torch.randn(67, 33).to(dt);
                Tensor b = Torch.randn(67, 33).to(dt);
                Tensor aStrided = a.t().contiguous().t();
                Tensor bStrided = b.t().contiguous().t();
                Tensor[][] pairs = {
                        {a.relu(), aStrided.relu()}, {a.exp(), aStrided.exp()}, {a.tanh(), aStrided.tanh()},
                        {a.sigmoid(), aStrided.sigmoid()}, {a.add(b), aStrided.add(bStrided)}, {a.mul(b), aStrided.mul(bStrided)},
                        {a.sub(b.select(0, 3)), aStrided.sub(bStrided.select(0, 3))}, {a.div(b), aStrided.div(bStrided)}};
                for (Tensor[] p : pairs) {
                    assertEquals(dt, p[0].dtype());
                    float[] fast = p[0].toFloatArray();
                    float[] generic = p[1].toFloatArray();
                    for (int i = 0; i < fast.length; i++) {
                        double tol = ulp * Math.max(Math.abs(generic[i]), 1e-3) + 1e-6;
                        if (!(Float.isNaN(fast[i]) && Float.isNaN(generic[i]))) {
                            assertEquals(generic[i], fast[i], tol, dt + " element " + i);
                        }
                    }
                }
            }
        }
    }
}
