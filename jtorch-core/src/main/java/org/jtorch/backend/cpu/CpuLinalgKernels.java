package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * CPU matrix products: float32 and float64 through the packed {@link Gemm} kernels; float16 and
 * bfloat16 through {@link HalfGemm}, which widens them while packing (f32 accumulation, one rounding of the
 * result, as PyTorch's CPU path); integers with an exact long accumulation.
 */
final class CpuLinalgKernels implements LinalgKernels {

    @Override
    public void bmm(StridedView a, StridedView b, StridedView out, double alpha, double beta) {
        if (out.numel() == 0) return;
        DType t = out.dtype();
        switch (t) {
            case FLOAT32, FLOAT64 -> gemm(a, b, out, alpha, beta);
            case FLOAT16, BFLOAT16 -> halfGemm(a, b, out, alpha, beta);
            default -> integerBmm(a, b, out, (long) alpha, (long) beta);
        }
    }

    /**
     * A float64 linear layer's bias without an activation: copied into each row of {@code out} (one row copy, or one store
     * a row for one output feature), then the product added with beta 1: the caller's own sums, without its generic
     * broadcasting copy (strided element by element). float32 keeps the caller's path, whose GEMM runs an epilogue on
     * each block while it is in cache.
     */
    @Override
    public boolean mmBiasActivation(StridedView a, StridedView b, StridedView out, StridedView bias, Activation activation,
                                    StridedView preActivation) {
        DType t = out.dtype();
        if (activation != Activation.NONE || preActivation != null || bias == null || t != DType.FLOAT64 || a.dtype() != t
                || b.dtype() != t || bias.dtype() != t || bias.dim() != 1 || out.dim() != 3 || out.size(0) != 1) {
            return false;
        }
        long rows = out.size(1), n = out.size(2), rs = out.stride(1);
        if (bias.size(0) != n || n > 1 && (out.stride(2) != 1 || bias.stride(0) != 1)) return false;
        if (rows == 0 || n == 0) return true;
        MemorySegment bs = bias.memory(), os = out.memory();
        long bOff = bias.offset() * Double.BYTES, oOff = out.offset() * Double.BYTES;
        if (n == 1) {
            double v = bs.get(ElementIO.F64, bOff);
            for (long r = 0; r < rows; r++) os.set(ElementIO.F64, oOff + r * rs * Double.BYTES, v);
        } else {
            for (long r = 0; r < rows; r++) MemorySegment.copy(bs, bOff, os, oOff + r * rs * Double.BYTES, n * Double.BYTES);
        }
        bmm(a, b, out, 1, 1);
        return true;
    }

    /** float32 products run the epilogue on each block of the output as the GEMM finishes it. */
    @Override
    public void mmWithEpilogue(StridedView a, StridedView b, StridedView out, double alpha, double beta, Epilogue epilogue) {
        if (out.dtype() != DType.FLOAT32 || out.size(0) != 1 || out.numel() == 0 || out.size(1) == 1 && out.size(2) == 1) {
            LinalgKernels.super.mmWithEpilogue(a, b, out, alpha, beta, epilogue);
            return;
        }
        GemmDims d = GemmDims.of(a, b, out);
        long[] as = a.strides();
        long[] bs = b.strides();
        long[] os = out.strides();
        if (os[2] != 1 && d.n() > 1) throw new IllegalStateException("bmm: output needs unit column stride, got strides "
                + java.util.Arrays.toString(os));
        Gemm.sgemm(d.m(), d.n(), d.k(), (float) alpha, a.memory(), a.offset(), as[1], as[2],
                b.memory(), b.offset(), bs[1], bs[2], (float) beta,
                out.memory(), out.offset(), d.m() > 1 ? os[1] : d.n(), epilogue::block);
    }

    /** float32 and float64 as {@link GemmPackedB}'s panels; other dtypes have none. */
    @Override
    public PackedRight packRight(StridedView b) {
        DType t = b.dtype();
        if (b.dim() != 2 || t != DType.FLOAT32 && t != DType.FLOAT64) return null;
        int k = gemmSize("k", b.size(0), b, b), n = gemmSize("n", b.size(1), b, b);
        GemmPackedB packed = t == DType.FLOAT32 ? GemmPackedB.f32(k, n, b.memory(), b.offset(), b.stride(0), b.stride(1))
                : GemmPackedB.f64(k, n, b.memory(), b.offset(), b.stride(0), b.stride(1));
        return new PackedRight() {
            @Override
            public void multiply(StridedView a, StridedView out, double alpha, double beta) {
                if (a.dtype() != t || out.dtype() != t || a.dim() != 2 || out.dim() != 2 || a.size(1) != k || out.size(0) != a.size(0)
                        || out.size(1) != n || out.stride(1) != 1 && n > 1) {
                    throw new IllegalArgumentException("mm: a packed [" + k + ", " + n + "] " + t + " right operand needs a [M, " + k
                            + "] left operand and a [M, " + n + "] output with unit column stride, both " + t + "; got " + a.dtype() + " "
                            + java.util.Arrays.toString(a.shape()) + " and " + out.dtype() + " " + java.util.Arrays.toString(out.shape())
                            + " with strides " + java.util.Arrays.toString(out.strides()));
                }
                int m = gemmSize("m", a.size(0), a, b);
                packed.multiply(m, alpha, a.memory(), a.offset(), a.stride(0), a.stride(1), beta, out.memory(), out.offset(),
                        m > 1 ? out.stride(0) : n);
            }

            @Override
            public void close() {
                packed.close();
            }
        };
    }

    /**
     * float16/bfloat16: {@link HalfGemm} widens the operands to float32 while packing them (no float32 copy of an
     * operand), accumulates in float32 and rounds the result once into the output, as PyTorch's CPU path.
     */
    private static void halfGemm(StridedView a, StridedView b, StridedView out, double alpha, double beta) {
        GemmDims d = GemmDims.of(a, b, out);
        HalfGemm.gemmBatched(d.batch(), d.m(), d.n(), d.k(), (float) alpha, matrix(a), matrix(b), (float) beta, matrix(out));
    }

    private static HalfGemm.Matrix matrix(StridedView t) {
        long[] s = t.strides();
        return new HalfGemm.Matrix(t.dtype(), t.memory(), t.offset(), s[0], s[1], s[2]);
    }

    private static void gemm(StridedView a, StridedView b, StridedView out, double alpha, double beta) {
        GemmDims d = GemmDims.of(a, b, out);
        int batch = d.batch(), m = d.m(), n = d.n(), k = d.k();
        long[] as = a.strides();
        long[] bs = b.strides();
        long[] os = out.strides();
        if (os[2] != 1 && n > 1) throw new IllegalStateException("bmm: output needs unit column stride, got strides "
                + java.util.Arrays.toString(os));
        MemorySegment aSeg = a.memory();
        MemorySegment bSeg = b.memory();
        MemorySegment oSeg = out.memory();
        if (m == 1 && n == 1 && as[2] == 1 && bs[1] == 1) {
            // Dot products (torch.dot, a row times a column): the packed GEMM's set-up dwarfs them.
            for (int t = 0; t < batch; t++) {
                dot(out.dtype(), k, alpha, aSeg, a.offset() + t * as[0], bSeg, b.offset() + t * bs[0], beta, oSeg,
                        out.offset() + t * os[0]);
            }
            return;
        }
        long ldc = m > 1 ? os[1] : n;
        if (out.dtype() == DType.FLOAT32) {
            Gemm.sgemmBatched(batch, m, n, k, (float) alpha,
                    aSeg, a.offset(), as[0], as[1], as[2],
                    bSeg, b.offset(), bs[0], bs[1], bs[2],
                    (float) beta, oSeg, out.offset(), os[0], ldc);
        } else {
            for (int t = 0; t < batch; t++) {
                Gemm.dgemm(m, n, k, alpha, aSeg, a.offset() + t * as[0], as[1], as[2],
                        bSeg, b.offset() + t * bs[0], bs[1], bs[2], beta, oSeg, out.offset() + t * os[0], ldc);
            }
        }
    }

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per float32 partial dot product before it is added to a double total (as the f32 sums). */
    private static final int DOT_BLOCK = 2048;

    /** {@code out = alpha * sum_i a[i] b[i] + beta * out} over {@code k} contiguous elements of float32 or float64. */
    private static void dot(DType t, int k, double alpha, MemorySegment a, long aOff, MemorySegment b, long bOff, double beta,
                            MemorySegment o, long oOff) {
        double d = t == DType.FLOAT32 ? dotF32(a, aOff * 4, b, bOff * 4, k) : dotF64(a, aOff * 8, b, bOff * 8, k);
        if (t == DType.FLOAT32) {
            float prev = beta == 0 ? 0 : o.get(ElementIO.F32, oOff * 4);
            o.set(ElementIO.F32, oOff * 4, (float) (alpha * d + (beta == 0 ? 0 : beta * prev)));
        } else {
            double prev = beta == 0 ? 0 : o.get(ElementIO.F64, oOff * 8);
            o.set(ElementIO.F64, oOff * 8, alpha * d + (beta == 0 ? 0 : beta * prev));
        }
    }

    /** Four vector accumulators of fused multiply-adds per block of {@value #DOT_BLOCK}, the blocks added in double. */
    private static double dotF32(MemorySegment a, long ao, MemorySegment b, long bo, int n) {
        int fl = FS.length();
        double total = 0;
        int i = 0;
        while (i < n) {
            int blockEnd = Math.min(n, i + DOT_BLOCK);
            FloatVector s0 = FloatVector.zero(FS);
            FloatVector s1 = FloatVector.zero(FS);
            FloatVector s2 = FloatVector.zero(FS);
            FloatVector s3 = FloatVector.zero(FS);
            for (int upper = blockEnd - 4 * fl; i <= upper; i += 4 * fl) {
                long x = ao + 4L * i;
                long y = bo + 4L * i;
                s0 = FloatVector.fromMemorySegment(FS, a, x, LE).fma(FloatVector.fromMemorySegment(FS, b, y, LE), s0);
                s1 = FloatVector.fromMemorySegment(FS, a, x + 4L * fl, LE).fma(FloatVector.fromMemorySegment(FS, b, y + 4L * fl, LE), s1);
                s2 = FloatVector.fromMemorySegment(FS, a, x + 8L * fl, LE).fma(FloatVector.fromMemorySegment(FS, b, y + 8L * fl, LE), s2);
                s3 = FloatVector.fromMemorySegment(FS, a, x + 12L * fl, LE).fma(FloatVector.fromMemorySegment(FS, b, y + 12L * fl, LE), s3);
            }
            double block = VectorF32.sumLanes(s0.add(s1).add(s2.add(s3)));
            for (; i < blockEnd; i++) block += (double) a.get(ElementIO.F32, ao + 4L * i) * b.get(ElementIO.F32, bo + 4L * i);
            total += block;
        }
        return total;
    }

    private static double dotF64(MemorySegment a, long ao, MemorySegment b, long bo, int n) {
        int dl = DS.length();
        DoubleVector s0 = DoubleVector.zero(DS);
        DoubleVector s1 = DoubleVector.zero(DS);
        int i = 0;
        for (int upper = n - 2 * dl; i <= upper; i += 2 * dl) {
            long x = ao + 8L * i;
            long y = bo + 8L * i;
            s0 = DoubleVector.fromMemorySegment(DS, a, x, LE).fma(DoubleVector.fromMemorySegment(DS, b, y, LE), s0);
            s1 = DoubleVector.fromMemorySegment(DS, a, x + 8L * dl, LE).fma(DoubleVector.fromMemorySegment(DS, b, y + 8L * dl, LE), s1);
        }
        // A fixed lane order (lane by lane), so that results do not change as the code gets compiled.
        DoubleVector s = s0.add(s1);
        double total = 0;
        for (int l = 0; l < dl; l++) total += s.lane(l);
        for (; i < n; i++) total += a.get(ElementIO.F64, ao + 8L * i) * b.get(ElementIO.F64, bo + 8L * i);
        return total;
    }

    /** The sizes of {@code out[batch, m, n] = a[batch, m, k] b[batch, k, n]}, as the packed GEMM's ints. */
    private record GemmDims(int batch, int m, int n, int k) {
        static GemmDims of(StridedView a, StridedView b, StridedView out) {
            return new GemmDims(gemmSize("batch", out.size(0), a, b), gemmSize("m", out.size(1), a, b),
                    gemmSize("n", out.size(2), a, b), gemmSize("k", a.size(2), a, b));
        }
    }

    /** The packed GEMM counts in ints: a larger size is an error naming it, not Math.toIntExact's "integer overflow". */
    private static int gemmSize(String what, long size, StridedView a, StridedView b) {
        if (size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("bmm: the CPU GEMM multiplies at most 2^31-1 along each of batch, m, n and k; got "
                    + what + " = " + size + " for operands of shapes " + java.util.Arrays.toString(a.shape()) + " and "
                    + java.util.Arrays.toString(b.shape()));
        }
        return (int) size;
    }

    private static void integerBmm(StridedView a, StridedView b, StridedView out, long alpha, long beta) {
        DType at = a.dtype();
        DType ot = out.dtype();
        long batch = out.size(0);
        long m = out.size(1);
        long n = out.size(2);
        long k = a.size(2);
        long[] as = a.strides();
        long[] bs = b.strides();
        long[] os = out.strides();
        MemorySegment aSeg = a.memory();
        MemorySegment bSeg = b.memory();
        MemorySegment oSeg = out.memory();
        long ae = at.byteSize();
        long oe = ot.byteSize();
        Parallel.forRange(batch * m, Math.max(1, 4096 / Math.max(1, n * k)), (begin, end) -> {
            for (long row = begin; row < end; row++) {
                long t = row / m;
                long i = row % m;
                for (long j = 0; j < n; j++) {
                    long acc = 0;
                    for (long p = 0; p < k; p++) {
                        long x = ElementCodec.getLong(at, aSeg, (a.offset() + t * as[0] + i * as[1] + p * as[2]) * ae);
                        long y = ElementCodec.getLong(at, bSeg, (b.offset() + t * bs[0] + p * bs[1] + j * bs[2]) * ae);
                        acc += x * y;
                    }
                    long o = (out.offset() + t * os[0] + i * os[1] + j * os[2]) * oe;
                    long prev = beta == 0 ? 0 : ElementCodec.getLong(ot, oSeg, o);
                    ElementCodec.setLong(ot, oSeg, o, beta * prev + alpha * acc);
                }
            }
        });
    }
}
