package org.jtorch.cuda.kernels;

import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_32F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_32F_FAST_TF32;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_COMPUTE_64F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_OP_N;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_OP_T;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_16BF;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_16F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_32F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_64F;

import java.util.Arrays;
import org.jtorch.types.DType;

/**
 * Host-side planning of one cuBLASLt strided-batched matmul for the core's
 * {@code bmm(a [B,M,K], b [B,K,N], out [B,M,N], alpha, beta)} (row-major shapes with arbitrary strides).
 *
 * <p>cuBLASLt is column-major. A row-major {@code [r, c]} matrix with strides {@code (ld, 1)} is, read
 * column-major, its transpose {@code [c, r]} with leading dimension {@code ld}. So the row-major product
 * {@code C = A B} is computed as the column-major {@code C^T = B^T A^T}: cuBLASLt's "A" operand is the
 * core's {@code b}, its "B" operand the core's {@code a}, and {@code m, n} swap ({@code rows = N,
 * cols = M, inner = K}). An operand already stored column-major (a transposed view, strides {@code (1, ld)})
 * needs no copy: it is passed with {@code CUBLAS_OP_T}. Any other layout (both strides non-unit, overlapping
 * rows, negative strides) must be made contiguous first ({@link Operand#needsCopy()}).
 *
 * <p>Compute types follow PyTorch: float32 in {@code CUBLAS_COMPUTE_32F}, or {@code 32F_FAST_TF32} only
 * when TF32 is allowed ({@link org.jtorch.backend.MatmulSettings#allowTf32()}); float16 and bfloat16
 * inputs with float32 accumulation and float32 alpha/beta ({@code CUBLAS_COMPUTE_32F}, scale
 * {@code CUDA_R_32F}); float64 in {@code CUBLAS_COMPUTE_64F}. Integer and bool dtypes are not supported.
 */
public final class MatmulPlan {
    private MatmulPlan() {}

    /**
     * One cuBLASLt operand: {@code op} applied to a column-major {@code rows x cols} matrix with leading
     * dimension {@code ld} and {@code batchStride} elements between batch entries; or, when
     * {@code needsCopy}, the tensor must first be made contiguous (and planned again).
     */
    public record Operand(boolean needsCopy, int op, long rows, long cols, long ld, long batchStride) {}

    /**
     * The cuBLASLt call: {@code D[rows x cols] = alpha * opA(A) opB(B) + beta * C} column-major, C = D
     * (the output, leading dimension {@code ldd}, batch stride {@code batchStrideD}), {@code batch}
     * entries; {@code A} is the core's {@code b}, {@code B} the core's {@code a}.
     */
    public record Plan(int dataType, int computeType, int scaleType, long rows, long cols, long inner, int batch,
            Operand a, Operand b, long ldd, long batchStrideD, boolean outputNeedsTemp) {
        /** True when an operand must first be made contiguous. */
        public boolean needsCopy() {
            return a.needsCopy() || b.needsCopy();
        }

        /** Nothing for cuBLASLt to do: an empty output. */
        public boolean emptyOutput() {
            return rows == 0 || cols == 0 || batch == 0;
        }
    }

    /**
     * The alignment (bytes) a device address guarantees, the largest power of two dividing it, capped at
     * 256 (cuBLASLt's default assumption); told to the heuristic so that a sliced operand (a storage
     * offset) never gets an algorithm that needs more.
     */
    public static int alignment(long address) {
        if (address == 0) return 256;
        return (int) Math.min(256, Long.lowestOneBit(address));
    }

    public static boolean supports(DType dtype) {
        return switch (dtype) {
            case FLOAT32, FLOAT64, FLOAT16, BFLOAT16 -> true;
            default -> false;
        };
    }

    /** {@code cudaDataType_t} of a supported dtype. */
    public static int dataType(DType dtype) {
        return switch (dtype) {
            case FLOAT32 -> CUDA_R_32F;
            case FLOAT64 -> CUDA_R_64F;
            case FLOAT16 -> CUDA_R_16F;
            case BFLOAT16 -> CUDA_R_16BF;
            default -> throw unsupported(dtype);
        };
    }

    /** {@code cublasComputeType_t}: 64F for float64, 32F_FAST_TF32 for float32 when allowed, 32F otherwise. */
    public static int computeType(DType dtype, boolean allowTf32) {
        return switch (dtype) {
            case FLOAT64 -> CUBLAS_COMPUTE_64F;
            case FLOAT32 -> allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
            case FLOAT16, BFLOAT16 -> CUBLAS_COMPUTE_32F;
            default -> throw unsupported(dtype);
        };
    }

    /** The alpha/beta type: float64 for float64 products, float32 for every other. */
    public static int scaleType(DType dtype) {
        return dtype == DType.FLOAT64 ? CUDA_R_64F : CUDA_R_32F;
    }

    private static UnsupportedOperationException unsupported(DType dtype) {
        return new UnsupportedOperationException("bmm: cuBLASLt has no " + dtype.pyName()
                + " matmul on cuda (float32, float64, float16, bfloat16 only)");
    }

    /**
     * The operand for a row-major {@code r x c} matrix with strides {@code (sr, sc)} (elements) and batch
     * stride {@code sb}, appearing transposed ({@code [c, r]}) in the column-major formulation. Size-1
     * dimensions accept any stride.
     */
    public static Operand operand(long r, long c, long sr, long sc, long sb) {
        if (sr < 0 || sc < 0 || sb < 0) return new Operand(true, CUBLAS_OP_N, c, r, Math.max(1, c), r * c);
        // Row-major in memory (unit column stride): column-major [c, r] with ld = row stride, no transpose.
        long ldRow = r <= 1 ? Math.max(1, c) : sr;
        if ((c <= 1 || sc == 1) && ldRow >= Math.max(1, c)) return new Operand(false, CUBLAS_OP_N, c, r, ldRow, sb);
        // Column-major in memory (unit row stride): column-major [r, c] with ld = column stride, transposed.
        long ldCol = c <= 1 ? Math.max(1, r) : sc;
        if ((r <= 1 || sr == 1) && ldCol >= Math.max(1, r)) return new Operand(false, CUBLAS_OP_T, r, c, ldCol, sb);
        return new Operand(true, CUBLAS_OP_N, c, r, Math.max(1, c), r * c);
    }

    /**
     * Plans {@code out = alpha * a @ b + beta * out} for {@code a [B,M,K]} with strides {@code as},
     * {@code b [B,K,N]} with strides {@code bs} and {@code out [B,M,N]} with strides {@code os}.
     */
    public static Plan plan(DType dtype, long[] aShape, long[] as, long[] bShape, long[] bs, long[] outShape, long[] os,
            boolean allowTf32) {
        if (aShape.length != 3 || bShape.length != 3 || outShape.length != 3) {
            throw new IllegalArgumentException("bmm: expected 3-D operands, got shapes " + Arrays.toString(aShape) + ", "
                    + Arrays.toString(bShape) + " and " + Arrays.toString(outShape));
        }
        long batch = outShape[0], m = outShape[1], n = outShape[2], k = aShape[2];
        if (aShape[0] != batch || bShape[0] != batch || aShape[1] != m || bShape[1] != k || bShape[2] != n) {
            throw new IllegalArgumentException("bmm: shapes " + Arrays.toString(aShape) + " @ " + Arrays.toString(bShape)
                    + " do not give " + Arrays.toString(outShape));
        }
        if (batch > Integer.MAX_VALUE) throw new IllegalArgumentException("bmm: batch " + batch + " exceeds cuBLASLt's int32 batch count");
        int data = dataType(dtype);
        int compute = computeType(dtype, allowTf32);
        // cuBLASLt "A" = core b^T ([N, K] column-major), "B" = core a^T ([K, M] column-major).
        Operand opA = operand(k, n, bs[1], bs[2], batch > 1 ? bs[0] : 0);
        Operand opB = operand(m, k, as[1], as[2], batch > 1 ? as[0] : 0);
        // D = out^T: column-major [N, M] needs the output row-major with unit column stride and ld >= N.
        long ldd = m <= 1 ? Math.max(1, n) : os[1];
        long sbd = batch > 1 ? os[0] : m * n;
        boolean outOk = (n <= 1 || os[2] == 1) && ldd >= Math.max(1, n) && os[1] >= 0
                && (batch <= 1 || sbd >= ldd * Math.max(0, m - 1) + n);
        if (!outOk) {
            ldd = Math.max(1, n);
            sbd = m * n;
        }
        return new Plan(data, compute, scaleType(dtype), n, m, k, (int) batch, opA, opB, ldd, sbd, !outOk);
    }
}
