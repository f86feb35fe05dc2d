package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;

/**
 * Matrix multiply of bfloat16/float16 operands with float32 accumulation: {@code C = alpha * op(A) op(B) + beta * C},
 * addressed as {@link Gemm}'s general-stride sgemm (elements, any row and column strides).
 *
 * <p>The half-precision elements are widened to float32 while {@link Gemm}'s blocks are packed (a strip or block of
 * at most {@code NR x KC} or {@code MR x KC} elements at a time, through an L1/L2-sized scratch), and the float32
 * micro-kernels run on the packed blocks: no float32 copy of a whole operand is made. C is float32 (written by the
 * micro-kernels directly) or the operands' half type: then the thread's block of C is accumulated in a float32
 * buffer and rounded once (to nearest even), {@code alpha * acc + beta * C}, as PyTorch's CPU path, one {@code MC x NC}
 * block at a time as soon as it is complete (still in L2). bfloat16 rows are widened 16 x 16 at a time into an L1
 * block and transposed in registers by {@link Gemm}'s transposes, as the float32 packing does from memory.
 *
 * <p>The Vector API has no bfloat16 dot product (AVX512-BF16's {@code vdpbf16ps}), so this runs at the float32 FMA
 * rate: what bf16 saves is the conversion passes and half the bytes read, not multiply-adds.
 */
final class HalfGemm {
    private static final int L = Gemm.L, MR = Gemm.MR, NR = Gemm.NR, KC = Gemm.KC, MC = Gemm.MC, NC = Gemm.NC;
    private static final VectorSpecies<Short> S_MR = ShortVector.SPECIES_128;
    /** L lanes of 16 and 32 bits, for widening a row of L bfloat16. */
    private static final VectorSpecies<Short> S_L = VectorSpecies.of(short.class, VectorShape.forBitSize(16 * L));
    private static final VectorSpecies<Integer> I_L = VectorSpecies.of(int.class, VectorShape.forBitSize(32 * L));
    private static final VectorSpecies<Integer> I_MR = IntVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    /** Floats of a half-typed C block accumulated at once per thread (row chunks beyond it repack B). */
    private static final int ACC_FLOATS = 1 << 21;

    private HalfGemm() {}

    /**
     * Per-thread pack buffers (as Gemm's), the conversion scratches and the float32 accumulator of a half C. The scratches
     * and the accumulator are native memory, as every segment Gemm's kernels see elsewhere: heap segments there would
     * make C2's profile of the shared float32 kernels polymorphic.
     */
    private static final class Workspace {
        float[] a = new float[0], b = new float[0];
        final float[] tile = new float[MR * NR];
        final MemorySegment scratch = Arena.ofAuto().allocate(4L * Math.max(MR, NR) * KC, 64);
        /** 16 widened rows of L floats: what one in-register transpose of the packing reads (stays in L1). */
        final MemorySegment block = Arena.ofAuto().allocate(4L * 16 * L, 64);
        MemorySegment acc = MemorySegment.NULL;

        MemorySegment acc(long floats) {
            if (acc.byteSize() < 4 * floats) acc = Arena.ofAuto().allocate(4 * floats, 64);
            return acc;
        }
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    /** One operand or the result: its element type, memory, and element offset, batch, row and column strides. */
    record Matrix(DType dtype, MemorySegment seg, long offset, long batchStride, long rowStride, long colStride) {
        Matrix at(long batchIndex, long row, long col) {
            return new Matrix(dtype, seg, offset + batchIndex * batchStride + row * rowStride + col * colStride,
                    batchStride, rowStride, colStride);
        }
    }

    /**
     * {@code C[t] = alpha * A[t] B[t] + beta * C[t]} for every t of the batch: A is {@code m x k}, B {@code k x n}, both
     * bfloat16 or both float16; C float32 (unit column stride unless n == 1) or the operands' type (any strides). As
     * BLAS, beta == 0 does not read C. Small matrices are spread over threads by batch entry, large ones use every thread.
     */
    static void gemmBatched(int batch, int m, int n, int k, float alpha, Matrix a, Matrix b, float beta, Matrix c) {
        if (a.dtype() != b.dtype() || (a.dtype() != DType.BFLOAT16 && a.dtype() != DType.FLOAT16)
                || (c.dtype() != DType.FLOAT32 && c.dtype() != a.dtype())) {
            throw new IllegalArgumentException("HalfGemm: expected bfloat16 or float16 operands of one type and a float32 or"
                    + " same-typed result, got " + a.dtype() + " x " + b.dtype() + " -> " + c.dtype());
        }
        if (c.dtype() == DType.FLOAT32 && c.colStride() != 1 && n > 1) {
            throw new IllegalArgumentException("HalfGemm: a float32 result needs unit column stride, got " + c.colStride());
        }
        if (batch == 0 || m == 0 || n == 0) return;
        long work = (long) m * n * Math.max(k, 1);
        if (batch > 1 && work < 4 * Gemm.PARALLEL_MIN_WORK && Parallel.numThreads() > 1) {
            Parallel.forRange(batch, Math.max(1, Gemm.PARALLEL_MIN_WORK / work), (t0, t1) -> {
                for (long t = t0; t < t1; t++) gemm(m, n, k, alpha, a.at(t, 0, 0), b.at(t, 0, 0), beta, c.at(t, 0, 0));
            });
        } else {
            for (long t = 0; t < batch; t++) gemm(m, n, k, alpha, a.at(t, 0, 0), b.at(t, 0, 0), beta, c.at(t, 0, 0));
        }
    }

    /** One product; splits C over the threads as {@link Gemm#sgemm} (the side whose other operand is cheaper to pack twice). */
    private static void gemm(int m, int n, int k, float alpha, Matrix a, Matrix b, float beta, Matrix c) {
        if (k == 0 || alpha == 0f) {
            scale(m, n, beta, c);
            return;
        }
        int threads = Parallel.numThreads();
        if (threads == 1 || (long) m * n * k < Gemm.PARALLEL_MIN_WORK || Parallel.inParallelRegion()) {
            region(m, n, k, alpha, a, b, beta, c);
            return;
        }
        int mTiles = (m + MR - 1) / MR;
        int nTiles = (n + NR - 1) / NR;
        if (nTiles >= threads && (m <= n || mTiles < threads)) {
            Parallel.forRange(nTiles, 1, (t0, t1) -> {
                int j0 = (int) t0 * NR;
                region(m, (int) Math.min(n, t1 * NR) - j0, k, alpha, a, b.at(0, 0, j0), beta, c.at(0, 0, j0));
            });
        } else {
            Parallel.forRange(mTiles, 1, (t0, t1) -> {
                int i0 = (int) t0 * MR;
                region((int) Math.min(m, t1 * MR) - i0, n, k, alpha, a.at(0, i0, 0), b, beta, c.at(0, i0, 0));
            });
        }
    }

    /** One thread's part of C: straight into a float32 C, or through the float32 accumulator into a half C. */
    private static void region(int m, int n, int k, float alpha, Matrix a, Matrix b, float beta, Matrix c) {
        if (c.dtype() == DType.FLOAT32) {
            block(m, n, k, alpha, a, b, beta, c.seg(), c.offset(), c.rowStride(), null);
            return;
        }
        Workspace ws = WORKSPACE.get();
        int chunk = Math.max(MR, ACC_FLOATS / n / MR * MR);
        for (int i0 = 0; i0 < m; i0 += chunk) {
            int rows = Math.min(chunk, m - i0);
            MemorySegment acc = ws.acc((long) rows * n);
            block(rows, n, k, 1f, a.at(0, i0, 0), b, 0f, acc, 0, n, new HalfResult(c.at(0, i0, 0), alpha, beta));
        }
    }

    /** A half-typed C that {@link #block} rounds {@code alpha * acc + beta * C} into, block by block, as the accumulator finishes them. */
    private record HalfResult(Matrix c, float alpha, float beta) {}

    /**
     * {@code C = alpha * A B + beta * C} for a float32 C (row stride ldc), on the calling thread: Gemm's blocking, half
     * packing. With {@code half}, C is its float32 accumulator: each {@code mc x nc} block is rounded into the half C
     * right after the last pass over k finished it, while it is still in L2. (Rounding each {@code mc x NR} strip while
     * in L1 instead measured 12% slower on the MLP's weight gradients: 128 short strided rows per strip.)
     */
    private static void block(int m, int n, int k, float alpha, Matrix a, Matrix b, float beta,
                              MemorySegment c, long cOff, long ldc, HalfResult half) {
        Workspace ws = WORKSPACE.get();
        int kcMax = Math.min(KC, k);
        float[] bp = ws.b = atLeast(ws.b, kcMax * Math.min(NC, roundUp(n, NR)));
        float[] ap = ws.a = atLeast(ws.a, kcMax * Math.min(MC, roundUp(m, MR)));
        long ldcBytes = ldc * Float.BYTES;
        for (int jc = 0; jc < n; jc += NC) {
            int nc = Math.min(NC, n - jc);
            for (int pc = 0; pc < k; pc += KC) {
                int kc = Math.min(KC, k - pc);
                packB(b.at(0, pc, jc), kc, nc, bp, ws);
                float betaHere = pc == 0 ? beta : 1f;
                boolean last = pc + kc == k;
                for (int ic = 0; ic < m; ic += MC) {
                    int mc = Math.min(MC, m - ic);
                    packA(a.at(0, ic, pc), mc, kc, ap, ws);
                    for (int jr = 0; jr < nc; jr += NR) {
                        int nr = Math.min(NR, nc - jr);
                        for (int ir = 0; ir < mc; ir += MR) {
                            int mr = Math.min(MR, mc - ir);
                            long cByte = (cOff + (long) (ic + ir) * ldc + jc + jr) * Float.BYTES;
                            if (mr == MR && nr == NR) {
                                if (betaHere == 0f) Gemm.kernelStore(kc, ap, ir * kc, bp, jr * kc, c, cByte, ldcBytes, alpha);
                                else Gemm.kernelUpdate(kc, ap, ir * kc, bp, jr * kc, c, cByte, ldcBytes, alpha, betaHere);
                                continue;
                            }
                            if (nr <= L) Gemm.kernelHalf(kc, ap, ir * kc, bp, jr * kc, ws.tile);
                            else Gemm.kernel(kc, ap, ir * kc, bp, jr * kc, ws.tile);
                            Gemm.updateC(ws.tile, c, cByte, ldcBytes, mr, nr, alpha, betaHere);
                        }
                    }
                    if (half != null && last) {
                        store(mc, nc, c, (cOff + (long) ic * ldc + jc) * Float.BYTES, ldc, half.alpha(), half.beta(), half.c().at(0, ic, jc));
                    }
                }
            }
        }
    }

    /**
     * Packs op(B)'s {@code kc x nc} block into Gemm's NR-wide strips ({@code dst[s*NR*kc + p*NR + j]}, zero past nc),
     * widening as it goes: contiguous rows convert straight into the strip; contiguous columns (a transposed weight)
     * convert into the scratch and are transposed from there in registers.
     */
    private static void packB(Matrix b, int kc, int nc, float[] dst, Workspace ws) {
        DType t = b.dtype();
        MemorySegment seg = b.seg();
        long rs = b.rowStride(), cs = b.colStride();
        for (int jr = 0; jr < nc; jr += NR) {
            int nr = Math.min(NR, nc - jr);
            int base = jr * kc;
            long src = b.offset() + jr * cs;
            if (cs == 1) {
                for (int p = 0; p < kc; p++) widen(t, seg, src + p * rs, nr, dst, base + p * NR);
            } else if (rs == 1 && nr == NR && L == 16 && t == DType.BFLOAT16) {
                packTransposedStripBf16(seg, src, cs, kc, dst, base, ws.block);
            } else if (rs == 1) {
                for (int j = 0; j < nr; j++) HalfConversion.convert(t, seg, 2 * (src + j * cs), DType.FLOAT32, ws.scratch, 4L * j * kc, kc);
                int p = 0;
                if (nr == NR && L == 16) {
                    for (; p + L <= kc; p += L) {
                        Gemm.transposeBlock16(ws.scratch, 4L * p, 4L * kc, dst, base + p * NR, NR);
                        Gemm.transposeBlock16(ws.scratch, 4L * (L * kc + p), 4L * kc, dst, base + p * NR + L, NR);
                    }
                }
                for (int j = 0; j < nr; j++) {
                    for (int q = p; q < kc; q++) dst[base + q * NR + j] = ws.scratch.getAtIndex(ElementIO.F32, (long) j * kc + q);
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    for (int j = 0; j < nr; j++) dst[base + p * NR + j] = load(t, seg, src + p * rs + j * cs);
                }
            }
            if (nr < NR) {
                for (int p = 0; p < kc; p++) java.util.Arrays.fill(dst, base + p * NR + nr, base + (p + 1) * NR, 0f);
            }
        }
    }

    /**
     * Packs op(A)'s {@code mc x kc} block into Gemm's MR-tall strips ({@code dst[s*MR*kc + p*MR + r]}, zero past mc):
     * contiguous columns (a transposed A) widen MR at a time into the strip; contiguous rows convert into the scratch
     * and are transposed from there in registers.
     */
    private static void packA(Matrix a, int mc, int kc, float[] dst, Workspace ws) {
        DType t = a.dtype();
        MemorySegment seg = a.seg();
        long rs = a.rowStride(), cs = a.colStride();
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = Math.min(MR, mc - ir);
            int base = ir * kc;
            long src = a.offset() + ir * rs;
            if (rs == 1 && mr == MR && t == DType.BFLOAT16 && MR == 8) {
                for (int p = 0; p < kc; p++) bf16x8(seg, 2 * (src + p * cs), dst, base + p * MR);
            } else if (cs == 1 && mr == MR && MR == 8 && L == 16 && t == DType.BFLOAT16) {
                int p = 0;
                for (; p + L <= kc; p += L) {
                    for (int r = 0; r < MR; r++) widenRow(seg, src + r * rs + p, ws.block, r);
                    Gemm.transposeA8x16(ws.block, 0, 4L * L, dst, base + p * MR);
                }
                for (; p < kc; p++) {
                    for (int r = 0; r < MR; r++) dst[base + p * MR + r] = load(t, seg, src + r * rs + p);
                }
            } else if (cs == 1) {
                for (int r = 0; r < mr; r++) HalfConversion.convert(t, seg, 2 * (src + r * rs), DType.FLOAT32, ws.scratch, 4L * r * kc, kc);
                int p = 0;
                if (mr == MR && MR == 8 && L == 16) {
                    for (; p + L <= kc; p += L) Gemm.transposeA8x16(ws.scratch, 4L * p, 4L * kc, dst, base + p * MR);
                }
                for (; p < kc; p++) {
                    for (int r = 0; r < mr; r++) dst[base + p * MR + r] = ws.scratch.getAtIndex(ElementIO.F32, (long) r * kc + p);
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    for (int r = 0; r < mr; r++) dst[base + p * MR + r] = load(t, seg, src + r * rs + p * cs);
                }
            }
            if (mr < MR) {
                for (int p = 0; p < kc; p++) java.util.Arrays.fill(dst, base + p * MR + mr, base + (p + 1) * MR, 0f);
            }
        }
    }

    /** Eight contiguous bfloat16 at {@code byteOff}, widened into {@code dst[to..to+8)}. */
    private static void bf16x8(MemorySegment s, long byteOff, float[] dst, int to) {
        IntVector w = (IntVector) ShortVector.fromMemorySegment(S_MR, s, byteOff, LE).convertShape(VectorOperators.S2I, I_MR, 0);
        w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, to);
    }

    /**
     * One full strip of a transposed bfloat16 B ({@code dst[base + p * NR + j] = b[src + j * cs + p]}), as
     * {@link Gemm#packTransposedStrip}: per 16 x 16 block, 16 columns of B are widened into the L1 {@code block}, then
     * transposed in registers. (A whole strip widened first would be {@code NR x kc} floats, 100 KiB at kc = 784: L2.)
     */
    private static void packTransposedStripBf16(MemorySegment b, long src, long cs, int kc, float[] dst, int base, MemorySegment block) {
        int p = kc / L * L;
        for (int half = 0; half < NR; half += L) {
            for (int q = 0; q < p; q += L) {
                for (int j = 0; j < L; j++) widenRow(b, src + (half + j) * cs + q, block, j);
                Gemm.transposeBlock16(block, 0, 4L * L, dst, base + q * NR + half, NR);
            }
        }
        for (; p < kc; p++) {
            for (int j = 0; j < NR; j++) dst[base + p * NR + j] = load(DType.BFLOAT16, b, src + j * cs + p);
        }
    }

    /** L contiguous bfloat16 from element {@code at}, widened into row {@code row} (L floats) of {@code block}. */
    static void widenRow(MemorySegment s, long at, MemorySegment block, int row) {
        HalfConversion.bf16ToFloat(ShortVector.fromMemorySegment(S_L, s, 2 * at, LE)).intoMemorySegment(block, 4L * L * row, LE);
    }

    /** {@code n} contiguous half-precision elements from element {@code at}, widened into {@code dst[to..to+n)}. */
    private static void widen(DType t, MemorySegment s, long at, int n, float[] dst, int to) {
        int j = 0;
        if (t == DType.BFLOAT16) {
            for (; j + L <= n; j += L) {
                IntVector w = (IntVector) ShortVector.fromMemorySegment(S_L, s, 2 * (at + j), LE).convertShape(VectorOperators.S2I, I_L, 0);
                w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, to + j);
            }
        }
        for (; j < n; j++) dst[to + j] = load(t, s, at + j);
    }

    /** The half-precision element at element index {@code at}, as a float. */
    private static float load(DType t, MemorySegment s, long at) {
        short bits = s.get(I16, 2 * at);
        return t == DType.BFLOAT16 ? ElementCodec.bf16ToFloat(bits) : Float.float16ToFloat(bits);
    }

    /**
     * Rounds the accumulated {@code rows x cols} block (from byte {@code accByte}, row stride {@code accLd} floats) into
     * the half C: {@code alpha * acc + beta * C} in float32, one rounding. bfloat16 rows with unit column stride convert
     * in registers.
     */
    private static void store(int rows, int cols, MemorySegment acc, long accByte, long accLd, float alpha, float beta, Matrix c) {
        DType t = c.dtype();
        MemorySegment seg = c.seg();
        long cs = c.colStride();
        FloatVector av = FloatVector.broadcast(Gemm.FS, alpha), bv = FloatVector.broadcast(Gemm.FS, beta);
        for (int i = 0; i < rows; i++) {
            long cRow = c.offset() + i * c.rowStride();
            long from = accByte + 4L * i * accLd;
            int j = 0;
            if (cs == 1 && t == DType.BFLOAT16) {
                for (; j + L <= cols; j += L) {
                    FloatVector v = FloatVector.fromMemorySegment(Gemm.FS, acc, from + 4L * j, LE);
                    if (alpha != 1f) v = v.mul(av);
                    if (beta != 0f) v = HalfConversion.bf16ToFloat(ShortVector.fromMemorySegment(S_L, seg, 2 * (cRow + j), LE)).fma(bv, v);
                    HalfConversion.floatToBf16(v).intoMemorySegment(seg, 2 * (cRow + j), LE);
                }
            }
            for (; j < cols; j++) {
                long at = cRow + j * cs;
                float v = alpha * acc.get(ElementIO.F32, from + 4L * j);
                if (beta != 0f) v = Math.fma(beta, load(t, seg, at), v);
                put(t, seg, at, v);
            }
        }
    }

    /** {@code C = beta * C} (k == 0 or alpha == 0); beta == 0 writes zeros whatever C held. */
    private static void scale(int m, int n, float beta, Matrix c) {
        DType t = c.dtype();
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                long at = c.offset() + i * c.rowStride() + j * c.colStride();
                if (t == DType.FLOAT32) c.seg().set(ElementIO.F32, 4 * at, beta == 0f ? 0f : beta * c.seg().get(ElementIO.F32, 4 * at));
                else put(t, c.seg(), at, beta == 0f ? 0f : beta * load(t, c.seg(), at));
            }
        }
    }

    private static void put(DType t, MemorySegment s, long at, float v) {
        s.set(I16, 2 * at, t == DType.BFLOAT16 ? ElementCodec.floatToBf16(v) : Float.floatToFloat16(v));
    }

    private static float[] atLeast(float[] buffer, int size) {
        return buffer.length < size ? new float[size] : buffer;
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
