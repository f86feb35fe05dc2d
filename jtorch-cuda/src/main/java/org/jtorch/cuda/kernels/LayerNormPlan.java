package org.jtorch.cuda.kernels;

import java.lang.foreign.Arena;
import org.jtorch.types.DType;

/**
 * Host-side choices for the layer norm kernels of {@code layernorm.cu}, with no GPU involved: entry points per block dtype
 * (float16, bfloat16, float32, float64), the row kernels' block size and grid (one block a row, grid-stride), the column
 * sums' parts of rows (a function of the row count only, so that the weight and bias gradients do not depend on the
 * device) and grid, and the argument bytes.
 */
public final class LayerNormPlan {
    private LayerNormPlan() {}

    /** The kernels of {@code layernorm.cu}. */
    public enum Kernel {
        FORWARD("forward"), BACKWARD_INPUT("backward_input"), BACKWARD_COLUMNS("backward_columns"), BACKWARD_FINISH("backward_finish");

        private final String name;

        Kernel(String name) {
            this.name = name;
        }
    }

    /** Most threads of a row block. */
    public static final int MAX_ROW_THREADS = 512;
    /** Elements of a row each thread should at least handle before the block grows. */
    static final int ELEMENTS_PER_THREAD = 4;
    /** Threads of a column-sums block: {@code JT_LN_COLUMN_WARPS} warps of {@code layernorm.cu}, a lane a column. */
    public static final int COLUMN_THREADS = 8 * 32;
    /** The fewest rows of a column-sums part. */
    public static final long MIN_PART_ROWS = 64;
    /** The most column-sums parts (the finish kernel adds this many partial sums per column). */
    public static final int MAX_PARTS = 128;

    /** {@code jt_layer_norm_<kernel>_<f16|bf16|f32|f64>}; other dtypes throw naming the op and dtype. */
    public static String entry(Kernel k, String op, DType t) {
        if (!t.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": the CUDA layer norm kernels take floating dtypes, got " + t + " (device cuda)");
        }
        return "jt_layer_norm_" + k.name + "_" + ElementwisePlan.suffix(t);
    }

    /** The statistics' dtype of a block of {@code t}: float64 for float64, else float32 (PyTorch's CUDA kernels). */
    public static DType statistics(DType t) {
        return t == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
    }

    /** Threads of a row block over {@code cols} values: about {@value #ELEMENTS_PER_THREAD} a thread, rounded up to a warp, 32..{@value #MAX_ROW_THREADS}. */
    public static int rowThreads(long cols) {
        long wanted = (cols + ELEMENTS_PER_THREAD - 1) / ELEMENTS_PER_THREAD;
        long warps = Math.max(1, (wanted + 31) / 32);
        return (int) Math.min(MAX_ROW_THREADS, 32 * warps);
    }

    /** Blocks of a row kernel: one a row, at most {@link LaunchGeometry#BLOCKS_PER_SM} per SM (grid-stride beyond). */
    public static int rowBlocks(long rows, int multiprocessors) {
        if (rows <= 0) return 0;
        return (int) Math.min(rows, (long) multiprocessors * LaunchGeometry.BLOCKS_PER_SM);
    }

    /** Rows of each column-sums part: at least {@value #MIN_PART_ROWS}, at most {@value #MAX_PARTS} parts; the row count alone decides. */
    public static long partRows(long rows) {
        return Math.max(MIN_PART_ROWS, (rows + MAX_PARTS - 1) / MAX_PARTS);
    }

    /** Column-sums parts of {@code rows} rows. */
    public static int parts(long rows) {
        return (int) Math.max(1, (rows + partRows(rows) - 1) / partRows(rows));
    }

    /** Blocks of the column sums: a tile of 32 columns per part, at most {@link LaunchGeometry#BLOCKS_PER_SM} per SM. */
    public static int columnBlocks(long cols, int parts, int multiprocessors) {
        long tiles = (cols + 31) / 32;
        if (tiles == 0) return 0;
        return (int) Math.min(tiles * parts, (long) multiprocessors * LaunchGeometry.BLOCKS_PER_SM);
    }

    /** Doubles of the partial column sums: two per column and part, 0 with one part (the sums are written directly). */
    public static long partials(long cols, int parts) {
        return parts == 1 ? 0 : 2 * cols * parts;
    }

    /** {@code jt_layer_norm_forward_T(const T* x, const T* w, const T* b, T* out, S* mean, S* rstd, jt_i64 rows, cols, double eps)}. */
    public static KernelArgs forwardArgs(Arena arena, long x, long weight, long bias, long out, long mean, long rstd, long rows, long cols,
                                         double eps) {
        return new KernelArgs(arena).pointer(x).pointer(weight).pointer(bias).pointer(out).pointer(mean).pointer(rstd).i64(rows).i64(cols)
                .f64(eps);
    }

    /** {@code jt_layer_norm_backward_input_T(const T* grad, const T* x, const S* mean, const S* rstd, const T* w, T* grad_in, jt_i64 rows, cols)}. */
    public static KernelArgs backwardInputArgs(Arena arena, long grad, long x, long mean, long rstd, long weight, long gradIn, long rows,
                                               long cols) {
        return new KernelArgs(arena).pointer(grad).pointer(x).pointer(mean).pointer(rstd).pointer(weight).pointer(gradIn).i64(rows).i64(cols);
    }

    /**
     * {@code jt_layer_norm_backward_columns_T(const T* grad, const T* x, const S* mean, const S* rstd, T* grad_w, T* grad_b,
     * double* partial, jt_i64 rows, cols, part_rows, int parts)}.
     */
    public static KernelArgs backwardColumnsArgs(Arena arena, long grad, long x, long mean, long rstd, long gradWeight, long gradBias,
                                                 long partial, long rows, long cols) {
        return new KernelArgs(arena).pointer(grad).pointer(x).pointer(mean).pointer(rstd).pointer(gradWeight).pointer(gradBias)
                .pointer(partial).i64(rows).i64(cols).i64(partRows(rows)).i32(parts(rows));
    }

    /** {@code jt_layer_norm_backward_finish_T(T* grad_w, T* grad_b, const double* partial, jt_i64 cols, int parts)}. */
    public static KernelArgs backwardFinishArgs(Arena arena, long gradWeight, long gradBias, long partial, long cols, int parts) {
        return new KernelArgs(arena).pointer(gradWeight).pointer(gradBias).pointer(partial).i64(cols).i32(parts);
    }
}
