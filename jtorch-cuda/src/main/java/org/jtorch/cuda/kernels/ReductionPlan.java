package org.jtorch.cuda.kernels;

import java.lang.foreign.Arena;
import java.util.Arrays;
import org.jtorch.op.ReduceOp;
import org.jtorch.types.DType;

/**
 * The host-side choices of a reduction, scan or softmax launch of {@code reduce.cu} (no GPU needed).
 *
 * <p>Every kernel of {@code reduce.cu} works on {@code rows x rowLength} contiguous rows. A reduction
 * follows the core layout convention ({@link org.jtorch.backend.ReductionKernels}: the output has the
 * input's shape with stride 0 along the reduced dimensions); {@link #reduction} permutes the input so
 * that the kept dimensions come first (in order) and the reduced ones last, giving {@code rows} =
 * product of the kept sizes and {@code rowLength} = product of the reduced sizes, and says whether the
 * permuted input already is that row-major block ({@code inputRows}; otherwise the launcher lays it out
 * on the device first) and whether the output's kept dimensions are row-major ({@code outputRows};
 * otherwise the kernel writes a contiguous temporary that is copied into the output). Size-1
 * dimensions are kept dimensions and never break contiguity. {@link #line} does the same for the
 * ops along one dimension (softmax, scans): that dimension moves last.
 *
 * <p>Grid: one block a row with a grid-stride loop over rows; {@link #threads} is the row length
 * rounded up to a warp, at most {@value LaunchGeometry#THREADS}; {@link #blocks} caps the grid at
 * what the device holds resident. Scans run one thread a row ({@link #scanBlocks}).
 */
public final class ReductionPlan {
    private ReductionPlan() {}

    /**
     * A row layout: {@code permutation} of the input's dimensions (kept first, then reduced or the line's
     * dimension), the {@code permutedShape}, {@code rows} and {@code rowLength}, the kept dimensions'
     * sizes and output strides ({@code keptShape}, {@code keptOutStrides}, in the input's dimension order),
     * and whether the input and output need no staging.
     */
    public record Rows(int[] permutation, long[] permutedShape, long rows, long rowLength, long[] keptShape,
                       long[] keptOutStrides, boolean inputRows, boolean outputRows) {
        @Override
        public String toString() {
            return "Rows[perm=" + Arrays.toString(permutation) + ", rows=" + rows + ", rowLength=" + rowLength
                    + ", kept=" + Arrays.toString(keptShape) + ", inputRows=" + inputRows + ", outputRows=" + outputRows + "]";
        }
    }

    /** A reduction of an input of {@code shape}/{@code inStrides} into an output with {@code outStrides} (0 along reduced dims). */
    public static Rows reduction(long[] shape, long[] inStrides, long[] outStrides) {
        int n = shape.length;
        if (inStrides.length != n || outStrides.length != n) {
            throw new IllegalArgumentException("reduction: shape " + Arrays.toString(shape) + ", input strides "
                    + Arrays.toString(inStrides) + " and output strides " + Arrays.toString(outStrides) + " differ in rank");
        }
        boolean[] reduced = new boolean[n];
        for (int d = 0; d < n; d++) reduced[d] = outStrides[d] == 0 && shape[d] != 1;
        int[] perm = new int[n];
        int k = 0, kept = 0;
        for (int d = 0; d < n; d++) if (!reduced[d]) perm[k++] = d;
        kept = k;
        for (int d = 0; d < n; d++) if (reduced[d]) perm[k++] = d;
        long rows = 1, rowLength = 1;
        long[] permuted = new long[n], permutedIn = new long[n];
        long[] keptShape = new long[kept], keptOut = new long[kept];
        for (int i = 0; i < n; i++) {
            permuted[i] = shape[perm[i]];
            permutedIn[i] = inStrides[perm[i]];
            if (i < kept) {
                rows *= permuted[i];
                keptShape[i] = permuted[i];
                keptOut[i] = outStrides[perm[i]];
            } else {
                rowLength *= permuted[i];
            }
        }
        boolean empty = rows * rowLength == 0;
        return new Rows(perm, permuted, rows, rowLength, keptShape, keptOut,
                empty || rowMajor(permuted, permutedIn), rows == 0 || rowMajor(keptShape, keptOut));
    }

    /** An op along dimension {@code dim} (softmax, scan) of same-shaped input and output: {@code dim} moves last. */
    public static Rows line(long[] shape, int dim, long[] inStrides, long[] outStrides) {
        int n = shape.length;
        if (n == 0) return new Rows(new int[0], new long[0], 1, 1, new long[0], new long[0], true, true);
        if (dim < 0 || dim >= n) throw new IllegalArgumentException("line: dim " + dim + " out of range for shape " + Arrays.toString(shape));
        int[] perm = new int[n];
        for (int d = 0, k = 0; d < n; d++) if (d != dim) perm[k++] = d;
        perm[n - 1] = dim;
        long[] permuted = new long[n], pin = new long[n], pout = new long[n];
        long rows = 1;
        for (int i = 0; i < n; i++) {
            permuted[i] = shape[perm[i]];
            pin[i] = inStrides[perm[i]];
            pout[i] = outStrides[perm[i]];
            if (i < n - 1) rows *= permuted[i];
        }
        long rowLength = shape[dim];
        boolean empty = rows * rowLength == 0;
        long[] keptShape = Arrays.copyOf(permuted, n - 1);
        long[] keptOut = Arrays.copyOf(pout, n - 1);
        return new Rows(perm, permuted, rows, rowLength, keptShape, keptOut, empty || rowMajor(permuted, pin),
                empty || rowMajor(permuted, pout));
    }

    /** Whether {@code strides} lay {@code shape} out row-major and densely (size-1 dimensions ignored). */
    static boolean rowMajor(long[] shape, long[] strides) {
        long expected = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            if (shape[d] == 1) continue;
            if (strides[d] != expected) return false;
            expected *= shape[d];
        }
        return true;
    }

    // ------------------------------------------------------------------ dtypes and entry points

    /** The dtype the kernels read for an input of dtype {@code t}: bool is read as uint8 (0/1), others as they are. */
    public static DType kernelInput(DType t) {
        return t == DType.BOOL ? DType.UINT8 : t;
    }

    /** Whether {@code reduce.cu} has the accumulating reduction {@code op} for input dtype {@code in} (after {@link #kernelInput}). */
    public static boolean supports(ReduceOp op, DType in) {
        return switch (op) {
            case SUM, PROD, MAX, MIN, ANY, ALL -> true;
            case NORM -> in.isFloatingPoint();
        };
    }

    /**
     * The dtype {@code jt_reduce_<op>} writes for input dtype {@code in}: int64 for integral sums and products, bool
     * (bytes 0 / 1) for any / all, else {@code in} as the kernel reads it.
     */
    public static DType reduceOutput(ReduceOp op, DType in) {
        if (op == ReduceOp.ANY || op == ReduceOp.ALL) return DType.BOOL;
        DType k = kernelInput(in);
        return (op == ReduceOp.SUM || op == ReduceOp.PROD) && !k.isFloatingPoint() ? DType.INT64 : k;
    }

    /** Whether the kernel's {@code kernelOut} bytes are valid values of {@code out} (same dtype, or any/all's 0 / 1 bytes into bool or uint8). */
    public static boolean writesAs(DType kernelOut, DType out) {
        return kernelOut == out || (kernelOut == DType.BOOL && out == DType.UINT8);
    }

    public static String reduceEntry(ReduceOp op, DType in) {
        DType k = kernelInput(in);
        if (!supports(op, k)) {
            throw new UnsupportedOperationException(op.pyName() + ": no CUDA kernel is wired to this op for " + in + " yet (device cuda)");
        }
        String name = switch (op) {
            case SUM -> "sum";
            case PROD -> "prod";
            case MAX -> "max";
            case MIN -> "min";
            case NORM -> "norm";
            case ANY -> "any";
            case ALL -> "all";
        };
        return "jt_reduce_" + name + "_" + ElementwisePlan.suffix(k);
    }

    public static String argReduceEntry(boolean max, DType in) {
        return "jt_argreduce_" + (max ? "max" : "min") + "_" + ElementwisePlan.suffix(kernelInput(in));
    }

    /** {@code jt_logsumexp_<T>}, {@code jt_variance_<T>}, {@code jt_softmax_<T>}: floating dtypes only. */
    public static String floatingEntry(String op, DType t) {
        if (!t.isFloatingPoint()) {
            throw new UnsupportedOperationException(op + ": no CUDA kernel is wired to this op for " + t + " yet (device cuda)");
        }
        return "jt_" + op + "_" + ElementwisePlan.suffix(t);
    }

    /** {@code jt_scan_<sum|prod>_<T>}: every dtype but bool. */
    public static String scanEntry(boolean prod, DType t) {
        String op = prod ? "cumprod" : "cumsum";
        if (t == DType.BOOL) throw new UnsupportedOperationException(op + ": no CUDA kernel is wired to this op for bool yet (device cuda)");
        return "jt_scan_" + (prod ? "prod" : "sum") + "_" + ElementwisePlan.suffix(t);
    }

    /** {@code jt_argsort_<T>}: every dtype (bool read as uint8). */
    public static String argsortEntry(DType in) {
        return "jt_argsort_" + ElementwisePlan.suffix(kernelInput(in));
    }

    /** {@code jt_searchsorted_<T>}: every dtype but bool (the front end refuses bool, as PyTorch). */
    public static String searchsortedEntry(DType t) {
        if (t == DType.BOOL) throw new UnsupportedOperationException("searchsorted: no CUDA kernel for bool (device cuda)");
        return "jt_searchsorted_" + ElementwisePlan.suffix(t);
    }

    /** The bitonic sort's slots a row: the row length rounded up to a power of two (at least 1). */
    public static long sortSlots(long rowLength) {
        if (rowLength < 0 || rowLength > (1L << 40)) throw new IllegalArgumentException("sortSlots: rowLength " + rowLength);
        return rowLength <= 1 ? 1 : Long.highestOneBit(rowLength - 1) << 1;
    }

    // ------------------------------------------------------------------ geometry

    /** Threads a block for rows of {@code rowLength}: a multiple of 32, at least 32, at most {@value LaunchGeometry#THREADS}. */
    public static int threads(long rowLength) {
        if (rowLength < 0) throw new IllegalArgumentException("threads: rowLength " + rowLength);
        long t = (rowLength + 31) / 32 * 32;
        return (int) Math.max(32, Math.min(LaunchGeometry.THREADS, t));
    }

    /**
     * Blocks for {@code rows} rows of blocks of {@code threads}: one a row, at most as many as the device holds
     * resident ({@value LaunchGeometry#BLOCKS_PER_SM} x {@value LaunchGeometry#THREADS} threads an SM), and at most
     * 2^31 - 1; 0 only for {@code rows == 0} (no launch).
     */
    public static int blocks(long rows, int threads, int multiprocessors) {
        if (rows < 0 || threads < 32 || threads > 1024 || threads % 32 != 0 || multiprocessors < 1) {
            throw new IllegalArgumentException("blocks: rows=" + rows + ", threads=" + threads + ", multiprocessors=" + multiprocessors);
        }
        if (rows == 0) return 0;
        long resident = (long) multiprocessors * LaunchGeometry.BLOCKS_PER_SM * LaunchGeometry.THREADS / threads;
        return (int) Math.min(Math.min(rows, resident), Integer.MAX_VALUE);
    }

    /** Scans: one thread a row, {@value LaunchGeometry#THREADS}-thread blocks. */
    public static int scanBlocks(long rows, int multiprocessors) {
        return LaunchGeometry.blocks(rows, 1, multiprocessors);
    }

    // ------------------------------------------------------------------ argument lists

    /** {@code jt_reduce_<sum|mean|max|min|prod>_<T>(const T* x, Out* out, jt_i64 rows, jt_i64 row_length)}; the scans have the same. */
    public static KernelArgs rowArgs(Arena arena, long x, long out, Rows r) {
        return new KernelArgs(arena).pointer(x).pointer(out).i64(r.rows()).i64(r.rowLength());
    }

    /** {@code jt_reduce_norm_<T>(const T* x, T* out, jt_i64 rows, jt_i64 row_length, double p)}. */
    public static KernelArgs normArgs(Arena arena, long x, long out, Rows r, double p) {
        return rowArgs(arena, x, out, r).f64(p);
    }

    /** {@code jt_argreduce_<max|min>_<T>(const T* x, T* values, jt_i64* indices, jt_i64 rows, jt_i64 row_length)}; values 0 for none. */
    public static KernelArgs argArgs(Arena arena, long x, long values, long indices, Rows r) {
        return new KernelArgs(arena).pointer(x).pointer(values).pointer(indices).i64(r.rows()).i64(r.rowLength());
    }

    /** {@code jt_variance_<T>(const T* x, T* out, jt_i64 rows, jt_i64 row_length, double correction, int sqrt)}. */
    public static KernelArgs varianceArgs(Arena arena, long x, long out, Rows r, double correction, boolean sqrt) {
        return rowArgs(arena, x, out, r).f64(correction).i32(sqrt ? 1 : 0);
    }

    /** {@code jt_argsort_<T>(const T* x, jt_i64* scratch, jt_i64* out, jt_i64 rows, jt_i64 row_length, jt_i64 padded, int descending, jt_i64 k)}. */
    public static KernelArgs argsortArgs(Arena arena, long x, long scratch, long out, Rows r, long padded, boolean descending, long k) {
        return new KernelArgs(arena).pointer(x).pointer(scratch).pointer(out).i64(r.rows()).i64(r.rowLength()).i64(padded)
                .i32(descending ? 1 : 0).i64(k);
    }

    /** {@code jt_searchsorted_<T>(const T* boundaries, const T* values, jt_i64* out, jt_i64 rows, jt_i64 m, jt_i64 n, jt_i64 boundary_rows, int right)}. */
    public static KernelArgs searchsortedArgs(Arena arena, long boundaries, long values, long out, long rows, long m, long n,
                                              long boundaryRows, boolean right) {
        return new KernelArgs(arena).pointer(boundaries).pointer(values).pointer(out).i64(rows).i64(m).i64(n).i64(boundaryRows)
                .i32(right ? 1 : 0);
    }

    /** {@code jt_softmax_<T>(const T* x, T* out, jt_i64 rows, jt_i64 row_length, int log)}. */
    public static KernelArgs softmaxArgs(Arena arena, long x, long out, Rows r, boolean log) {
        return rowArgs(arena, x, out, r).i32(log ? 1 : 0);
    }
}
