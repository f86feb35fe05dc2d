package org.jtorch.cuda;

import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_32F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_32F_FAST_TF32;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_64F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_OP_N;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_OP_T;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_16BF;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_16F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_32F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_64F;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.jtorch.backend.MatmulSettings;
import org.jtorch.cuda.kernels.MatmulPlan;
import org.jtorch.cuda.kernels.MatmulPlan.Operand;
import org.jtorch.cuda.kernels.MatmulPlan.Plan;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Host-side planning of cuBLASLt's bmm (no GPU). Besides the chosen parameters, each layout case runs
 * the plan through a reference column-major strided-batched GEMM written from cuBLASLt's documented
 * semantics ({@code D = op(A) op(B)}, element (i, j) of a column-major matrix at {@code i + j * ld},
 * batch entry t at {@code t * batchStride}) on the operands' raw storage, and compares with the
 * row-major definition {@code out[t, i, j] = sum_p a[t, i, p] * b[t, p, j]}.
 */
class MatmulPlanTest {

    private static Plan plan(DType dt, long[] as, long[] aSt, long[] bs, long[] bSt, long[] os, long[] oSt, boolean tf32) {
        return MatmulPlan.plan(dt, as, aSt, bs, bSt, os, oSt, tf32);
    }

    private static long[] contiguous(long... shape) {
        return new long[] {shape[1] * shape[2], shape[2], 1};
    }

    @Test
    void contiguousOperandsSwapIntoTheColumnMajorProductWithoutTransposes() {
        // a [2, 3, 4] @ b [2, 4, 5] = out [2, 3, 5]: D = out^T [5 x 3], A = b^T [5 x 4], B = a^T [4 x 3].
        Plan p = plan(DType.FLOAT32, new long[] {2, 3, 4}, contiguous(2, 3, 4), new long[] {2, 4, 5}, contiguous(2, 4, 5),
                new long[] {2, 3, 5}, contiguous(2, 3, 5), false);
        assertEquals(5, p.rows());
        assertEquals(3, p.cols());
        assertEquals(4, p.inner());
        assertEquals(2, p.batch());
        assertEquals(new Operand(false, CUBLAS_OP_N, 5, 4, 5, 20), p.a());
        assertEquals(new Operand(false, CUBLAS_OP_N, 4, 3, 4, 12), p.b());
        assertEquals(5, p.ldd());
        assertEquals(15, p.batchStrideD());
        assertFalse(p.needsCopy());
        assertFalse(p.outputNeedsTemp());
    }

    @Test
    void transposedViewsArePassedWithOpTAndTheirColumnStrideAsLeadingDimension() {
        // a = x.transpose(1, 2) for x [2, 4, 3]: strides (12, 1, 3); b = y.transpose(1, 2) for y [2, 5, 4]: (20, 1, 4).
        Plan p = plan(DType.FLOAT32, new long[] {2, 3, 4}, new long[] {12, 1, 3}, new long[] {2, 4, 5}, new long[] {20, 1, 4},
                new long[] {2, 3, 5}, contiguous(2, 3, 5), false);
        assertEquals(new Operand(false, CUBLAS_OP_T, 4, 5, 4, 20), p.a());
        assertEquals(new Operand(false, CUBLAS_OP_T, 3, 4, 3, 12), p.b());
        assertFalse(p.needsCopy());
    }

    @Test
    void layoutsWithNoUnitStrideNeedAContiguousCopy() {
        // a[:, ::2, ::2] of [1, 6, 8]: strides (48, 16, 2).
        Plan p = plan(DType.FLOAT32, new long[] {1, 3, 4}, new long[] {48, 16, 2}, new long[] {1, 4, 5}, contiguous(1, 4, 5),
                new long[] {1, 3, 5}, contiguous(1, 3, 5), false);
        assertTrue(p.b().needsCopy());
        assertFalse(p.a().needsCopy());
        assertTrue(p.needsCopy());
    }

    @Test
    void batchBroadcastKeepsAZeroBatchStride() {
        Plan p = plan(DType.FLOAT32, new long[] {3, 2, 4}, new long[] {0, 4, 1}, new long[] {3, 4, 5}, contiguous(3, 4, 5),
                new long[] {3, 2, 5}, contiguous(3, 2, 5), false);
        assertEquals(0, p.b().batchStride());
        assertFalse(p.needsCopy());
    }

    @Test
    void anOutputWithoutUnitColumnStrideIsComputedInATemporary() {
        Plan p = plan(DType.FLOAT32, new long[] {1, 3, 4}, contiguous(1, 3, 4), new long[] {1, 4, 5}, contiguous(1, 4, 5),
                new long[] {1, 3, 5}, new long[] {15, 1, 3}, false);
        assertTrue(p.outputNeedsTemp());
        assertEquals(5, p.ldd());
    }

    @Test
    void computeTypesFollowPyTorch() {
        assertEquals(CUBLAS_COMPUTE_32F, MatmulPlan.computeType(DType.FLOAT32, false));
        assertEquals(CUBLAS_COMPUTE_32F_FAST_TF32, MatmulPlan.computeType(DType.FLOAT32, true));
        // Half inputs accumulate in float32 whatever the TF32 switch says.
        assertEquals(CUBLAS_COMPUTE_32F, MatmulPlan.computeType(DType.FLOAT16, true));
        assertEquals(CUBLAS_COMPUTE_32F, MatmulPlan.computeType(DType.BFLOAT16, false));
        assertEquals(CUBLAS_COMPUTE_64F, MatmulPlan.computeType(DType.FLOAT64, true));
        assertEquals(CUDA_R_32F, MatmulPlan.dataType(DType.FLOAT32));
        assertEquals(CUDA_R_16F, MatmulPlan.dataType(DType.FLOAT16));
        assertEquals(CUDA_R_16BF, MatmulPlan.dataType(DType.BFLOAT16));
        assertEquals(CUDA_R_64F, MatmulPlan.dataType(DType.FLOAT64));
        assertEquals(CUDA_R_32F, MatmulPlan.scaleType(DType.FLOAT16));
        assertEquals(CUDA_R_32F, MatmulPlan.scaleType(DType.BFLOAT16));
        assertEquals(CUDA_R_64F, MatmulPlan.scaleType(DType.FLOAT64));
    }

    @Test
    void tf32IsOffByDefaultLikePyTorch() {
        assertFalse(MatmulSettings.allowTf32());
    }

    @Test
    void integerDtypesAreRejectedNamingBmm() {
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> MatmulPlan.computeType(DType.INT64, false));
        assertTrue(e.getMessage().startsWith("bmm: "), e.getMessage());
        assertTrue(e.getMessage().contains("int64"), e.getMessage());
    }

    @Test
    void alignmentIsTheLargestPowerOfTwoDividingTheAddressUpTo256() {
        assertEquals(256, MatmulPlan.alignment(0x7f0000000000L));
        assertEquals(4, MatmulPlan.alignment(0x7f0000000004L));
        assertEquals(2, MatmulPlan.alignment(0x7f0000000006L));
        assertEquals(128, MatmulPlan.alignment(0x7f0000000080L));
    }

    // ------------------------------------------------------------------ the plan computes the product

    /** One operand: shape [B, R, C] at {@code offset} of a flat buffer, with strides. */
    private record View(long[] shape, long[] strides, int offset) {
        double at(double[] buf, long t, long i, long j) {
            return buf[(int) (offset + t * strides[0] + i * strides[1] + j * strides[2])];
        }

        /** Storage span (elements past offset) the view can touch. */
        int span() {
            long s = 1;
            for (int d = 0; d < 3; d++) s += (shape[d] - 1) * strides[d];
            return (int) Math.max(s, 0);
        }
    }

    /** Row-major-contiguous, transposed (last two swapped in memory), padded rows, broadcast batch. */
    private enum Kind { CONTIGUOUS, TRANSPOSED, PADDED, BROADCAST, STRIDED }

    private static View view(Kind kind, long b, long r, long c, int offset) {
        return switch (kind) {
            case CONTIGUOUS -> new View(new long[] {b, r, c}, new long[] {r * c, c, 1}, offset);
            case TRANSPOSED -> new View(new long[] {b, r, c}, new long[] {r * c, 1, r}, offset);
            case PADDED -> new View(new long[] {b, r, c}, new long[] {r * (c + 3), c + 3, 1}, offset);
            case BROADCAST -> new View(new long[] {b, r, c}, new long[] {0, c, 1}, offset);
            case STRIDED -> new View(new long[] {b, r, c}, new long[] {r * c * 4, 2 * c * 2, 2}, offset);
        };
    }

    /** cuBLASLt's strided-batched {@code D = op(A) op(B)} on raw column-major storage (the reference semantics). */
    private static void columnMajorGemm(Plan p, double[] aBuf, int aOff, double[] bBuf, int bOff, double[] d, int dOff) {
        Operand a = p.a(), b = p.b();
        for (int t = 0; t < p.batch(); t++) {
            for (long i = 0; i < p.rows(); i++) {
                for (long j = 0; j < p.cols(); j++) {
                    double acc = 0;
                    for (long q = 0; q < p.inner(); q++) {
                        long ai = aOff + t * a.batchStride() + (a.op() == CUBLAS_OP_N ? i + q * a.ld() : q + i * a.ld());
                        long bi = bOff + t * b.batchStride() + (b.op() == CUBLAS_OP_N ? q + j * b.ld() : j + q * b.ld());
                        acc += aBuf[(int) ai] * bBuf[(int) bi];
                    }
                    d[(int) (dOff + t * p.batchStrideD() + i + j * p.ldd())] = acc;
                }
            }
        }
    }

    @TestFactory
    List<DynamicTest> planComputesTheRowMajorProduct() {
        List<DynamicTest> tests = new ArrayList<>();
        long[][] sizes = {{2, 3, 4, 5}, {1, 1, 4, 5}, {3, 4, 1, 2}, {2, 3, 4, 1}, {1, 7, 3, 7}};
        for (long[] s : sizes) {
            for (Kind ka : Kind.values()) {
                for (Kind kb : Kind.values()) {
                    long batch = s[0], m = s[1], k = s[2], n = s[3];
                    String name = "B" + batch + "_M" + m + "_K" + k + "_N" + n + "/a=" + ka + "/b=" + kb;
                    tests.add(DynamicTest.dynamicTest(name, () -> {
                        View a = view(ka, batch, m, k, 3);
                        View b = view(kb, batch, k, n, 5);
                        SplittableRandom rnd = new SplittableRandom(name.hashCode());
                        double[] aBuf = new double[a.offset() + a.span() + 8];
                        double[] bBuf = new double[b.offset() + b.span() + 8];
                        for (int i = 0; i < aBuf.length; i++) aBuf[i] = rnd.nextInt(-4, 5);
                        for (int i = 0; i < bBuf.length; i++) bBuf[i] = rnd.nextInt(-4, 5);
                        long[] os = {batch, m, n};
                        Plan p = plan(DType.FLOAT32, a.shape(), a.strides(), b.shape(), b.strides(), os, contiguous(os), false);
                        boolean expectCopy = ka == Kind.STRIDED && k > 1 && m > 1 || kb == Kind.STRIDED && n > 1 && k > 1;
                        assertEquals(expectCopy, p.needsCopy(), "needsCopy");
                        if (p.needsCopy()) return; // the backend makes the operand contiguous and plans again
                        double[] d = new double[(int) (batch * m * n) + 2];
                        columnMajorGemm(p, bBuf, b.offset(), aBuf, a.offset(), d, 1);
                        for (long t = 0; t < batch; t++) {
                            for (long i = 0; i < m; i++) {
                                for (long j = 0; j < n; j++) {
                                    double want = 0;
                                    for (long q = 0; q < k; q++) want += a.at(aBuf, t, i, q) * b.at(bBuf, t, q, j);
                                    assertEquals(want, d[(int) (1 + t * m * n + i * n + j)], "out[" + t + ", " + i + ", " + j + "]");
                                }
                            }
                        }
                    }));
                }
            }
        }
        return tests;
    }
}
