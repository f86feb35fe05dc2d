package org.jtorch.cuda;

import org.jtorch.DType;
import org.jtorch.op.Expr;

/**
 * The CUDA C of a pointwise formula over any number of inputs (a group of ops the JIT fused, or a random fill's
 * transformation of its draws): one grid-stride kernel, {@code jt_fused}, that reads each input through its own
 * element strides (zero where broadcast) over the output's shape, evaluates {@link Expr#toC()} in the compute type
 * (float or double, the inputs' and output's type), and writes the contiguous output. The formula's scalar
 * parameters ({@link Expr.Scalar}) are the kernel's {@code double p0, p1, ...} after the inputs, so one compiled
 * kernel serves every value of them. Compiled by NVRTC through the kernel cache, under a name derived from the source.
 */
public final class FusedKernels {
    private FusedKernels() {}

    /** The kernel's entry point. */
    public static final String ENTRY = "jt_fused";
    /** The entry point of the formula fused into a sum of rows ({@link #sumSource}). */
    public static final String SUM_ENTRY = "jt_fused_sum";

    /** The CUDA C source of {@code formula} over {@code inputs} float32 inputs. */
    public static String source(Expr formula, int inputs) {
        return source(formula, inputs, DType.FLOAT32);
    }

    /** The CUDA C source of {@code formula} over {@code inputs} inputs of dtype {@code compute} (float32 or float64). */
    public static String source(Expr formula, int inputs, DType compute) {
        String t = cType(compute);
        StringBuilder c = header(formula, inputs, "out = ");
        c.append("extern \"C\" __global__ void ").append(ENTRY).append("(").append(t).append("* __restrict__ out");
        parameters(c, inputs, t, scalarParameters(formula));
        c.append(", jt_i64 n, FusedIndex s) {\n");
        c.append("    using namespace jt;\n    typedef ").append(t).append(" A;\n");
        c.append("    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {\n");
        load(c, inputs, "        ");
        c.append("        out[i] = (").append(t).append(")(").append(formula.toC()).append(");\n");
        c.append("    }\n}\n");
        return c.toString();
    }

    /** What a drawing kernel does with dropout's keep masks ({@link org.jtorch.op.FormulaKernel.Draws#masks}). */
    public enum Masks {
        /** Draws, writing no mask. */
        NONE,
        /** Draws, and writes each draw's keep decisions {@code u < keep_j} as bytes (1 kept, 0 dropped). */
        WRITE,
        /** Draws nothing: each factor comes from its saved mask. */
        READ
    }

    /**
     * The float32 source of {@code formula} whose inputs {@code drawn} are dropout factors made in the kernel, not read
     * ({@link org.jtorch.op.FormulaKernel.Draws}): input {@code drawn[j]} at element {@code i} (row-major in the contiguous
     * output) is {@code scale_j} where {@code u < keep_j}, else 0, {@code u} the float32 uniform of word {@code i % 4} of
     * Philox block {@code block_j + i / 4} under {@code seed_j}, {@code (w >> 8) 2^-24}, as {@code random.cu}'s uniform
     * fill writes it. The kernel takes the other inputs in order, then for each draw its seed, first block, threshold
     * and scale ({@link Masks#NONE}), also its mask ({@link Masks#WRITE}: {@code mask_j[i] = u < keep_j}), or its scale
     * and saved mask alone ({@link Masks#READ}: {@code scale_j} where {@code mask_j[i]} is set), then {@code n} and the
     * index of the other inputs' strides.
     */
    public static String drawingSource(Expr formula, int inputs, int[] drawn, Masks masks) {
        java.util.Set<Integer> isDrawn = new java.util.HashSet<>();
        for (int k : drawn) isDrawn.add(k);
        int read = inputs - isDrawn.size();
        StringBuilder c = header(formula, read, "out = ");
        c.append("// drawn inputs: ").append(java.util.Arrays.toString(drawn)).append(", masks: ").append(masks).append("\n");
        c.append("__device__ __forceinline__ float jt_drawn_uniform(jt_u64 seed, jt_u64 first_block, jt_i64 i) {\n");
        c.append("    const jt_u64 block = first_block + (jt_u64)(i >> 2);\n");
        c.append("    jt::U32x4 ctr = {(jt_u32)block, (jt_u32)(block >> 32), 0u, 0u};\n");
        c.append("    const jt::U32x4 r = jt::philox4x32_10(ctr, (jt_u32)seed, (jt_u32)(seed >> 32));\n");
        c.append("    const int k = (int)(i & 3);\n");
        c.append("    const jt_u32 w = k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w;\n");
        c.append("    return (float)__dmul_rn((double)(w >> 8), 1.0 / 16777216.0);\n}\n\n");
        c.append("extern \"C\" __global__ void ").append(ENTRY).append("(float* __restrict__ out");
        for (int k = 0; k < read; k++) c.append(", const float* __restrict__ in").append(k);
        for (int j = 0; j < drawn.length; j++) {
            if (masks != Masks.READ) c.append(", jt_u64 seed").append(j).append(", jt_u64 block").append(j).append(", float keep").append(j);
            c.append(", float scale").append(j);
            if (masks == Masks.WRITE) c.append(", unsigned char* __restrict__ mask").append(j);
            if (masks == Masks.READ) c.append(", const unsigned char* __restrict__ mask").append(j);
        }
        c.append(", jt_i64 n, FusedIndex s) {\n");
        c.append("    using namespace jt;\n    typedef float A;\n");
        c.append("    for (jt_i64 i = global_thread(); i < n; i += grid_threads()) {\n");
        String indent = "        ";
        offsets(c, read, indent);
        for (int k = 0, r = 0; k < inputs; k++) {
            int j = java.util.Arrays.stream(drawn).boxed().toList().indexOf(k);
            if (j >= 0 && masks == Masks.READ) {
                c.append(indent).append("const A x").append(k).append(" = mask").append(j).append("[i] ? scale").append(j).append(" : A(0);\n");
            } else if (j >= 0) {
                c.append(indent).append("const bool keep_").append(k).append(" = jt_drawn_uniform(seed").append(j).append(", block").append(j)
                        .append(", i) < keep").append(j).append(";\n");
                if (masks == Masks.WRITE) c.append(indent).append("mask").append(j).append("[i] = keep_").append(k).append(" ? 1 : 0;\n");
                c.append(indent).append("const A x").append(k).append(" = keep_").append(k).append(" ? scale").append(j).append(" : A(0);\n");
            } else {
                c.append(indent).append("const A x").append(k).append(" = in").append(r).append("[o").append(r).append("];\n");
                r++;
            }
        }
        c.append(indent).append("out[i] = (float)(").append(formula.toC()).append(");\n");
        c.append("    }\n}\n");
        return c.toString();
    }

    /**
     * The CUDA C source of {@code formula} fused into a sum of rows: {@code out[r]} is the sum of the formula over
     * elements {@code [r * row_length, (r + 1) * row_length)} of the inputs' shape, one block per row (grid-stride over
     * rows), each thread accumulating a strided share in double before a warp-shuffle reduction across the block; the
     * formula's values are never stored. Launched with 256 threads a block.
     */
    public static String sumSource(Expr formula, int inputs) {
        StringBuilder c = header(formula, inputs, "out[r] = sum over row r of ");
        c.append("extern \"C\" __global__ void ").append(SUM_ENTRY).append("(float* __restrict__ out");
        parameters(c, inputs, "float", scalarParameters(formula));
        c.append(", jt_i64 rows, jt_i64 row_length, FusedIndex s) {\n");
        c.append("    using namespace jt;\n    typedef float A;\n    __shared__ double partial[32];\n");
        c.append("    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {\n");
        c.append("        double acc = 0.0;\n");
        c.append("        for (jt_i64 j = threadIdx.x; j < row_length; j += blockDim.x) {\n");
        c.append("            const jt_i64 i = r * row_length + j;\n");
        load(c, inputs, "            ");
        c.append("            acc += (double)(float)(").append(formula.toC()).append(");\n");
        c.append("        }\n");
        c.append("        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);\n");
        c.append("        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;\n");
        c.append("        if (lane == 0) partial[warp] = acc;\n");
        c.append("        __syncthreads();\n");
        c.append("        if (warp == 0) {\n");
        c.append("            acc = lane < warps ? partial[lane] : 0.0;\n");
        c.append("            for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);\n");
        c.append("            if (lane == 0) out[r] = (float)acc;\n");
        c.append("        }\n");
        c.append("        __syncthreads();\n");
        c.append("    }\n}\n");
        return c.toString();
    }

    /** The entry point of the formula fused into a layer norm ({@link #layerNormSource}). */
    public static final String LAYER_NORM_ENTRY = "jt_fused_layer_norm";

    /**
     * The CUDA C source of {@code formula} fused into a layer norm over rows: {@code out} row {@code r} is
     * {@code layer_norm(formula(inputs))} over the {@code cols} values of row {@code r}, each input a {@code [rows, cols]}
     * float32 matrix read through its row and column strides ({@code RowStrides}, zero where broadcast). One block a row
     * (grid-stride over rows) runs {@code layernorm.cuh}'s {@code ln_row}, the eager layer norm's own row code, with the
     * formula as its loader: the formula is evaluated where the row is read (three times an element: the sum, the centred
     * squares, the output) and its values are never stored. Launched with {@code LayerNormPlan.rowThreads(cols)} threads.
     */
    public static String layerNormSource(Expr formula, int inputs) {
        StringBuilder c = header(formula, inputs, "out = layer_norm over rows of ");
        c.append("#include \"layernorm.cuh\"\n\n");
        int scalars = scalarParameters(formula);
        c.append("struct RowStrides {\n    jt_i64 row[").append(Math.max(inputs, 1)).append("];\n    jt_i64 col[")
                .append(Math.max(inputs, 1)).append("];\n};\n\n");
        c.append("struct FusedRow {\n");
        for (int k = 0; k < inputs; k++) c.append("    const float* in").append(k).append(";\n");
        for (int k = 0; k < scalars; k++) c.append("    double p").append(k).append(";\n");
        c.append("    jt_i64 r;\n    RowStrides s;\n");
        c.append("    __device__ __forceinline__ float operator()(jt_i64 j) const {\n        using namespace jt;\n        typedef float A;\n");
        for (int k = 0; k < inputs; k++) {
            c.append("        const A x").append(k).append(" = in").append(k).append("[r * s.row[").append(k).append("] + j * s.col[").append(k)
                    .append("]];\n");
        }
        c.append("        return (float)(").append(formula.toC()).append(");\n    }\n};\n\n");
        c.append("extern \"C\" __global__ void ").append(LAYER_NORM_ENTRY).append("(float* __restrict__ out");
        parameters(c, inputs, "float", scalars);
        c.append(", const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ mean, float* __restrict__ rstd");
        c.append(", jt_i64 rows, jt_i64 cols, double eps, RowStrides s) {\n");
        c.append("    using namespace jt;\n    __shared__ double shared[64];\n");
        c.append("    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {\n");
        c.append("        const FusedRow row{");
        for (int k = 0; k < inputs; k++) c.append("in").append(k).append(", ");
        for (int k = 0; k < scalars; k++) c.append("p").append(k).append(", ");
        c.append("r, s};\n");
        c.append("        ln_row<float, float, float, float>(row, cols, w, b, eps, out + r * cols, mean, rstd, r, shared);\n");
        c.append("    }\n}\n");
        return c.toString();
    }

    private static StringBuilder header(Expr formula, int inputs, String what) {
        if (!formula.isFormula()) throw new IllegalArgumentException("fused CUDA kernels take pointwise formulas, got " + formula);
        StringBuilder c = new StringBuilder();
        c.append("// Generated by org.jtorch.cuda.FusedKernels: ").append(what).append(formula).append('\n');
        c.append("#include \"elementwise.cuh\"\n\n");
        c.append("struct FusedIndex {\n    jt_i64 ndim;\n    jt_i64 size[JT_MAX_DIMS];\n    jt_i64 stride[")
                .append(Math.max(inputs, 1)).append("][JT_MAX_DIMS];\n};\n\n");
        return c;
    }

    /** The C type of a compute dtype the fused kernels support. */
    private static String cType(DType compute) {
        return switch (compute) {
            case FLOAT32 -> "float";
            case FLOAT64 -> "double";
            default -> throw new IllegalArgumentException("fused CUDA kernels compute in float32 or float64, not " + compute);
        };
    }

    private static void parameters(StringBuilder c, int inputs, String type, int scalars) {
        for (int k = 0; k < inputs; k++) c.append(", const ").append(type).append("* __restrict__ in").append(k);
        for (int k = 0; k < scalars; k++) c.append(", double p").append(k);
    }

    /** Declares {@code x0, x1, ...}: each input's value at element {@code i} of the shape, read through its strides. */
    private static void load(StringBuilder c, int inputs, String indent) {
        offsets(c, inputs, indent);
        for (int k = 0; k < inputs; k++) c.append(indent).append("const A x").append(k).append(" = in").append(k).append("[o").append(k).append("];\n");
    }

    /** Declares {@code o0, o1, ...}: each input's element offset at element {@code i} of the shape, from its strides. */
    private static void offsets(StringBuilder c, int inputs, String indent) {
        c.append(indent).append("jt_i64 rem = i;\n");
        for (int k = 0; k < inputs; k++) c.append(indent).append("jt_i64 o").append(k).append(" = 0;\n");
        c.append(indent).append("for (int d = (int)s.ndim - 1; d >= 0; d--) {\n");
        c.append(indent).append("    const jt_i64 idx = rem % s.size[d];\n").append(indent).append("    rem /= s.size[d];\n");
        for (int k = 0; k < inputs; k++) c.append(indent).append("    o").append(k).append(" += idx * s.stride[").append(k).append("][d];\n");
        c.append(indent).append("}\n");
    }

    /** How many scalar parameters the kernel of {@code e} takes: one past the highest {@link Expr.Scalar} index it reads. */
    public static int scalarParameters(Expr e) {
        return switch (e) {
            case Expr.Scalar s -> s.index() + 1;
            case Expr.Math m -> m.args().stream().mapToInt(FusedKernels::scalarParameters).max().orElse(0);
            default -> 0;
        };
    }
}
