package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.ElementCodec;
import org.jtorch.types.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * HalfGemm against the definition {@code C = alpha * A B + beta * C} evaluated in double from the same bfloat16/float16
 * inputs. Tolerance, per element: float32 accumulation of k products (and the alpha and beta terms) errs by at most
 * {@code (k + 2) u sum|terms|} with {@code u = 2^-24} (Higham's bound for recursive summation with fused multiply-adds);
 * a half-typed result adds one rounding, half an ulp of the half type at that magnitude. Nothing looser: a wrongly
 * packed element is off by a whole product.
 */
class HalfGemmTest {
    private static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private final Arena arena = Arena.ofShared();
    private final int savedThreads = Parallel.numThreads();

    @AfterEach
    void tearDown() {
        Parallel.setNumThreads(savedThreads);
        arena.close();
    }

    /**
     * A batch of rows x cols matrices laid out as: 0 row-major, 1 column-major (a transposed view), 2 row-major with
     * an offset and padded rows, 3 both strides non-unit. Every element (the gaps too) is filled, as {@code type}.
     */
    private HalfGemm.Matrix random(DType type, int batch, int rows, int cols, int layout, SplittableRandom rnd) {
        long offset, rs, cs;
        switch (layout) {
            case 0 -> { offset = 0; rs = cols; cs = 1; }
            case 1 -> { offset = 0; rs = 1; cs = rows; }
            case 2 -> { offset = 3; rs = cols + 5; cs = 1; }
            default -> { offset = 2; rs = 2L * cols + 3; cs = 2; }
        }
        long matrix = Math.max(0, rows - 1) * rs + Math.max(0, cols - 1) * cs + 1;
        long bs = matrix + 7;
        long size = offset + batch * bs;
        int elem = type == DType.FLOAT32 ? 4 : 2;
        MemorySegment seg = arena.allocate(size * elem, 64);
        for (long e = 0; e < size; e++) set(type, seg, e, (float) (rnd.nextDouble() * 2 - 1));
        return new HalfGemm.Matrix(type, seg, offset, bs, rs, cs);
    }

    private static double get(HalfGemm.Matrix x, long t, int i, int j) {
        long e = x.offset() + t * x.batchStride() + i * x.rowStride() + j * x.colStride();
        return get(x.dtype(), x.seg(), e);
    }

    private static double get(DType type, MemorySegment seg, long e) {
        return switch (type) {
            case FLOAT32 -> seg.getAtIndex(F, e);
            case BFLOAT16 -> ElementCodec.bf16ToFloat(seg.getAtIndex(H, e));
            default -> Float.float16ToFloat(seg.getAtIndex(H, e));
        };
    }

    private static void set(DType type, MemorySegment seg, long e, float v) {
        switch (type) {
            case FLOAT32 -> seg.setAtIndex(F, e, v);
            case BFLOAT16 -> seg.setAtIndex(H, e, ElementCodec.floatToBf16(v));
            default -> seg.setAtIndex(H, e, Float.floatToFloat16(v));
        }
    }

    /** Half an ulp of {@code type} at magnitude {@code x} (0 for float32: the bound's u term covers it). */
    private static double halfUlp(DType type, double x) {
        float f = (float) Math.abs(x);
        return switch (type) {
            case FLOAT32 -> 0;
            case BFLOAT16 -> Math.ulp(f) * 65536 / 2;
            default -> Math.max(Math.ulp(f) * 8192, 0x1p-24) / 2;
        };
    }

    /** Runs HalfGemm on random operands and checks every element of C against the double reference, and C's gaps untouched. */
    private void check(DType half, DType out, int batch, int m, int n, int k, float alpha, float beta, int layoutA,
                       int layoutB, int layoutC, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        HalfGemm.Matrix a = random(half, batch, m, k, layoutA, rnd);
        HalfGemm.Matrix b = random(half, batch, k, n, layoutB, rnd);
        HalfGemm.Matrix c = random(out, batch, m, n, out == DType.FLOAT32 ? layoutC % 3 % 2 * 2 : layoutC, rnd);
        long cSize = c.seg().byteSize() / (out == DType.FLOAT32 ? 4 : 2);
        double[] old = new double[(int) cSize];
        for (int e = 0; e < cSize; e++) old[e] = get(out, c.seg(), e);
        HalfGemm.gemmBatched(batch, m, n, k, alpha, a, b, beta, c);
        double u = 0x1p-24;
        boolean[] inside = new boolean[(int) cSize];
        for (int t = 0; t < batch; t++) {
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double sum = 0, mag = 0;
                    for (int p = 0; p < k; p++) {
                        double x = get(a, t, i, p) * get(b, t, p, j);
                        sum += x;
                        mag += Math.abs(x);
                    }
                    int e = (int) (c.offset() + t * c.batchStride() + i * c.rowStride() + j * c.colStride());
                    inside[e] = true;
                    double want = alpha * sum + (beta == 0 ? 0 : beta * old[e]);
                    double accumulation = (k + 2) * u * (Math.abs(alpha) * mag + Math.abs(beta * old[e]));
                    double tol = accumulation + halfUlp(out, Math.abs(want) + accumulation);
                    double got = get(out, c.seg(), e);
                    if (!(Math.abs(got - want) <= tol)) {
                        fail(String.format("%s -> %s batch=%d m=%d n=%d k=%d alpha=%s beta=%s layouts=%d/%d/%d: C[%d][%d][%d]=%s,"
                                        + " want %s +- %s", half, out, batch, m, n, k, alpha, beta, layoutA, layoutB, layoutC, t, i, j,
                                got, want, tol));
                    }
                }
            }
        }
        for (int e = 0; e < cSize; e++) {
            if (!inside[e]) assertEquals(old[e], get(out, c.seg(), e), 0.0, "C element " + e + " outside the matrices was written");
        }
    }

    @Test
    void oddSizesAllLayoutsBf16() {
        // Narrow and short shapes (n < 16, k < 16, m < MR), sizes across a full MR x NR tile, and an MLP-like product.
        int[][] sizes = {{7, 13, 5}, {1, 1, 1}, {17, 33, 31}, {9, 10, 300}, {37, 3, 40}, {8, 32, 16}, {65, 70, 129}};
        long seed = 10;
        for (int[] s : sizes) {
            for (int la = 0; la < 4; la++) {
                for (int lb = 0; lb < 4; lb++) check(DType.BFLOAT16, DType.BFLOAT16, 1, s[0], s[1], s[2], 1f, 0f, la, lb, seed % 4 == 0 ? 3 : 0, seed++);
            }
        }
    }

    @Test
    void float16OperandsAllLayouts() {
        long seed = 300;
        for (int la = 0; la < 4; la++) {
            for (int lb = 0; lb < 4; lb++) check(DType.FLOAT16, DType.FLOAT16, 1, 19, 35, 41, 1f, 0f, la, lb, 0, seed++);
        }
    }

    @Test
    void float32ResultSkipsTheRounding() {
        long seed = 400;
        for (DType half : new DType[] {DType.BFLOAT16, DType.FLOAT16}) {
            for (int la = 0; la < 4; la++) check(half, DType.FLOAT32, 2, 23, 37, 45, 1f, 0f, la, 3 - la, la, seed++);
            check(half, DType.FLOAT32, 1, 40, 50, 60, -0.5f, 2f, 0, 1, 2, seed++);
        }
    }

    @Test
    void alphaAndBetaValues() {
        float[][] ab = {{1, 1}, {-0.5f, 2}, {3, -1}, {0, 0.5f}, {0, 0}, {1, 0.25f}};
        long seed = 100;
        for (DType half : new DType[] {DType.BFLOAT16, DType.FLOAT16}) {
            for (float[] v : ab) check(half, half, 1, 37, 45, 29, v[0], v[1], 0, 1, (int) (seed % 4), seed++);
        }
        check(DType.BFLOAT16, DType.BFLOAT16, 1, 5, 7, 0, 1f, 0.5f, 0, 0, 0, seed++);
        check(DType.BFLOAT16, DType.BFLOAT16, 1, 5, 7, 0, 1f, 0f, 0, 0, 0, seed);
    }

    @Test
    void batchesSmallAndLarge() {
        // Small products spread over threads by batch entry; larger ones one after another on every thread.
        check(DType.BFLOAT16, DType.BFLOAT16, 5, 11, 13, 17, 1f, 0f, 0, 1, 3, 500);
        check(DType.BFLOAT16, DType.BFLOAT16, 3, 70, 90, 80, 1f, 0.5f, 1, 0, 2, 501);
        check(DType.FLOAT16, DType.FLOAT32, 4, 9, 50, 33, 2f, 0f, 3, 3, 0, 502);
    }

    @Test
    void largeAcrossCacheBlocks() {
        // k > KC (the float32 accumulator carries the blocks, one rounding at the end), m > MC, several B strips.
        check(DType.BFLOAT16, DType.BFLOAT16, 1, Gemm.MC + 9, 70, Gemm.KC + 37, 1.5f, 0.25f, 0, 1, 0, 600);
        check(DType.BFLOAT16, DType.FLOAT32, 1, Gemm.MC + 9, 70, Gemm.KC + 37, 1f, 1f, 1, 0, 0, 601);
    }

    @Test
    void multiThreadedEqualsSingleThreaded() {
        int[][] sizes = {{300, 200, 150}, {64, 700, 70}, {700, 20, 90}, {128, 10, 512}};
        SplittableRandom rnd = new SplittableRandom(9);
        for (int[] s : sizes) {
            int m = s[0], n = s[1], k = s[2];
            HalfGemm.Matrix a = random(DType.BFLOAT16, 1, m, k, 0, rnd), b = random(DType.BFLOAT16, 1, k, n, 1, rnd);
            HalfGemm.Matrix c1 = random(DType.BFLOAT16, 1, m, n, 0, rnd), c2 = random(DType.BFLOAT16, 1, m, n, 0, rnd);
            Parallel.setNumThreads(1);
            HalfGemm.gemmBatched(1, m, n, k, 1f, a, b, 0f, c1);
            Parallel.setNumThreads(2);
            HalfGemm.gemmBatched(1, m, n, k, 1f, a, b, 0f, c2);
            long bytes = 2L * m * n; // the matrices, not the gap random() leaves after them
            assertArrayEquals(c1.seg().asSlice(0, bytes).toArray(H), c2.seg().asSlice(0, bytes).toArray(H), "m=" + m + " n=" + n + " k=" + k);
        }
    }

    /**
     * The conversion inside the packing against the separate conversion it replaces: the bfloat16 operands widened to
     * float32 copies (exact), the float32 GEMM on those, and for a bfloat16 C one rounding of {@code alpha * acc + beta * C}.
     * Bit for bit: both run the same float32 micro-kernels on the same packed panels. Shapes past Gemm's special
     * paths (m, n > 30), the MLP's forward product (row-major x, transposed weight) among them, every contiguous layout.
     */
    @Test
    void packingConversionEqualsSeparateConversionBitForBit() {
        int[][] sizes = {{128, 512, 784}, {37, 70, 45}, {64, 96, 300}, {Gemm.MC + 3, 100, Gemm.KC + 37}};
        long seed = 700;
        Parallel.setNumThreads(1);
        for (int[] s : sizes) {
            int m = s[0], n = s[1], k = s[2];
            for (int la = 0; la < 3; la++) {
                for (int lb = 0; lb < 3; lb++) {
                    for (DType out : new DType[] {DType.BFLOAT16, DType.FLOAT32}) {
                        float alpha = seed % 2 == 0 ? 1f : -0.75f, beta = seed % 3 == 0 ? 0f : 0.5f;
                        checkAgainstWidenedSgemm(m, n, k, alpha, beta, la, lb, out, new SplittableRandom(seed++));
                    }
                }
            }
        }
    }

    private void checkAgainstWidenedSgemm(int m, int n, int k, float alpha, float beta, int la, int lb, DType out, SplittableRandom rnd) {
        HalfGemm.Matrix a = random(DType.BFLOAT16, 1, m, k, la, rnd), b = random(DType.BFLOAT16, 1, k, n, lb, rnd);
        HalfGemm.Matrix c = random(out, 1, m, n, 0, rnd);
        MemorySegment aw = widened(a.seg()), bw = widened(b.seg());
        // The separate path: float32 C (alpha and beta in the kernels), or the float32 accumulator then one rounding.
        MemorySegment want = arena.allocate(4L * m * n, 64);
        float[] old = new float[m * n];
        for (int e = 0; e < m * n; e++) {
            old[e] = (float) get(out, c.seg(), e);
            want.setAtIndex(F, e, old[e]);
        }
        boolean f32 = out == DType.FLOAT32;
        Gemm.sgemm(m, n, k, f32 ? alpha : 1f, aw, a.offset(), a.rowStride(), a.colStride(), bw, b.offset(), b.rowStride(), b.colStride(),
                f32 ? beta : 0f, want, 0, n);
        HalfGemm.gemmBatched(1, m, n, k, alpha, a, b, beta, c);
        for (int e = 0; e < m * n; e++) {
            float acc = want.getAtIndex(F, e);
            float expected = f32 ? acc : (float) get(DType.BFLOAT16, roundedBf16(beta == 0f ? alpha * acc : Math.fma(beta, old[e], alpha * acc)), 0);
            float got = (float) get(out, c.seg(), e);
            if (Float.floatToRawIntBits(got) != Float.floatToRawIntBits(expected)) {
                fail(String.format("m=%d n=%d k=%d layouts %d/%d -> %s alpha=%s beta=%s: element %d = %s, separate conversion %s",
                        m, n, k, la, lb, out, alpha, beta, e, got, expected));
            }
        }
    }

    /** A bfloat16 segment's elements as float32, one for one (exact). */
    private MemorySegment widened(MemorySegment half) {
        long count = half.byteSize() / 2;
        MemorySegment f = arena.allocate(4 * count, 64);
        for (long e = 0; e < count; e++) f.setAtIndex(F, e, ElementCodec.bf16ToFloat(half.getAtIndex(H, e)));
        return f;
    }

    private MemorySegment roundedBf16(float v) {
        MemorySegment one = arena.allocate(2);
        one.setAtIndex(H, 0, ElementCodec.floatToBf16(v));
        return one;
    }

    @Test
    void mixedOrUnsupportedTypesAreRefused() {
        SplittableRandom rnd = new SplittableRandom(1);
        HalfGemm.Matrix bf = random(DType.BFLOAT16, 1, 4, 4, 0, rnd), f16 = random(DType.FLOAT16, 1, 4, 4, 0, rnd);
        HalfGemm.Matrix f32Strided = random(DType.FLOAT32, 1, 4, 4, 3, rnd);
        assertThrows(IllegalArgumentException.class, () -> HalfGemm.gemmBatched(1, 4, 4, 4, 1f, bf, f16, 0f, bf));
        assertThrows(IllegalArgumentException.class, () -> HalfGemm.gemmBatched(1, 4, 4, 4, 1f, bf, bf, 0f, f16));
        assertThrows(IllegalArgumentException.class, () -> HalfGemm.gemmBatched(1, 4, 4, 4, 1f, bf, bf, 0f, f32Strided));
    }

    /** The op-level route (CpuLinalgKernels): matmul of bfloat16 views (a transposed weight, a column slice) against float64. */
    @Test
    void matmulOfBf16ViewsMatchesFloat64() {
        Torch.manualSeed(3);
        try (Tensor x = Torch.randn(2, 33, 70); Tensor w = Torch.randn(41, 60);
             Tensor xb = x.to(DType.BFLOAT16); Tensor wb = w.to(DType.BFLOAT16);
             Tensor xs = xb.narrow(2, 5, 60); Tensor wt = wb.t();
             Tensor got = xs.matmul(wt); Tensor got64 = got.to(DType.FLOAT64);
             Tensor x64 = xs.to(DType.FLOAT64); Tensor w64 = wt.to(DType.FLOAT64); Tensor want = x64.matmul(w64);
             Tensor mag = x64.abs().matmul(w64.abs())) {
            assertEquals(DType.BFLOAT16, got.dtype());
            double[] g = got64.contiguous().toDoubleArray(), r = want.contiguous().toDoubleArray(), s = mag.contiguous().toDoubleArray();
            for (int e = 0; e < g.length; e++) {
                double accumulation = 62 * 0x1p-24 * s[e];
                double tol = accumulation + halfUlp(DType.BFLOAT16, Math.abs(r[e]) + accumulation);
                if (!(Math.abs(g[e] - r[e]) <= tol)) fail("element " + e + ": " + g[e] + ", want " + r[e] + " +- " + tol);
            }
        }
    }
}
