package org.jtorch.cuda;

import org.jtorch.op.Expr;
import org.jtorch.types.DType;

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
     * float32 matrix read through its row and column strides ({@code RowIndex}, zero where broadcast). One block a row
     * (grid-stride over rows) runs {@code layernorm.cuh}'s {@code ln_row}, the eager layer norm's own row code, with the
     * formula as its loader: the formula is evaluated where the row is read (three times an element: the sum, the centred
     * squares, the output) and its values are never stored. Launched with {@code LayerNormPlan.rowThreads(cols)} threads.
     */
    public static String layerNormSource(Expr formula, int inputs) {
        return rowKernel(formula, inputs, "out = layer_norm over rows of ", KernelSources.LAYER_NORM_HEADER, LAYER_NORM_ENTRY,
                ", const float* __restrict__ w, const float* __restrict__ b, float* __restrict__ mean, float* __restrict__ rstd"
                        + ", jt_i64 rows, jt_i64 cols, double eps",
                "    __shared__ double shared[64];\n",
                "ln_row<float, float, float, float>(row, cols, w, b, eps, out + r * cols, mean, rstd, r, shared)");
    }

    /** The entry point of the formula fused into a softmax ({@link #softmaxSource}). */
    public static final String SOFTMAX_ENTRY = "jt_fused_softmax";
    /** The entry point of a fused softmax's backward ({@link #softmaxBackwardSource}). */
    public static final String SOFTMAX_BACKWARD_ENTRY = "jt_fused_softmax_backward";

    /**
     * The CUDA C source of {@code formula} fused into a softmax over rows: {@code out} row {@code r} is
     * {@code softmax(formula(inputs))} (log-softmax where the kernel's {@code log_softmax} is nonzero) over the {@code cols}
     * values of row {@code r} (the last dimension; rows row-major over the leading ones), each input a float32 view of the
     * output's shape read through its own strides ({@code RowIndex}, zero where broadcast: a {@code [t, t]} mask under
     * {@code [b, h, t, t]} scores needs no launch a slab). One block a row (grid-stride over rows) runs {@code rowreduce.cuh}'s
     * {@code softmax_row}, the eager softmax's own row code, with the formula as its loader: the formula is evaluated where
     * the row is read (three times an element: the maximum, the sum, the output) and its values are never stored.
     * Launched with {@code ReductionPlan.threads(cols)} threads, as the eager softmax, so that both add a row in one order.
     */
    public static String softmaxSource(Expr formula, int inputs) {
        return rowKernel(formula, inputs, "out = softmax over rows of ", KernelSources.ROW_REDUCE_HEADER, SOFTMAX_ENTRY,
                ", jt_i64 rows, jt_i64 cols, int log_softmax", "    __shared__ float shared[32];\n    __shared__ float result;\n",
                "softmax_row<float>(row, out + r * cols, cols, log_softmax, shared, &result)");
    }

    /**
     * A kernel {@code entry} over rows: the float32 output, the inputs, the formula's scalars, {@code arguments}, then the
     * {@code RowIndex}; per row (one block a row, grid-stride over rows) {@code rowCall} with {@code row}, the formula's
     * loader ({@link #rowLoader}), after the block's {@code shared} declarations.
     */
    private static String rowKernel(Expr formula, int inputs, String what, String include, String entry, String arguments, String shared,
                                    String rowCall) {
        StringBuilder c = header(formula, inputs, what);
        c.append("#include \"").append(include).append("\"\n\n");
        int scalars = scalarParameters(formula);
        rowLoader(c, formula, inputs, scalars);
        c.append("extern \"C\" __global__ void ").append(entry).append("(float* __restrict__ out");
        parameters(c, inputs, "float", scalars);
        c.append(arguments).append(", RowIndex s) {\n");
        c.append("    using namespace jt;\n").append(shared);
        c.append("    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {\n");
        rowLoaderValue(c, inputs, scalars);
        c.append("        ").append(rowCall).append(";\n    }\n}\n");
        return c.toString();
    }

    /**
     * The CUDA C source of the backward of {@link #softmaxSource} in one launch: one block a row (grid-stride over rows)
     * sums {@code g y} (log-softmax: {@code g}) over the row in float32 ({@code block_all_reduce}, the order of the eager
     * sum), then for each element forms the softmax's gradient {@code y (g - sum)} (log-softmax: {@code g - exp(y) sum})
     * and evaluates each of {@code gradients} (formulas of the forward's {@code inputs} inputs and the gradient, input
     * {@code inputs}) there, writing {@code gout0, gout1, ...}: the softmax's gradient is never stored. {@code y} and the
     * outputs are contiguous float32, {@code g} (index slot {@code inputs}) and the inputs read through their own strides
     * ({@code RowIndex}).
     */
    public static String softmaxBackwardSource(Expr formula, int inputs, java.util.List<Expr> gradients) {
        StringBuilder c = header(formula, inputs, "the gradients of softmax over rows of ");
        for (Expr g : gradients) {
            if (!g.isFormula() || scalarParameters(g) > 0) {
                throw new IllegalArgumentException("a fused softmax's backward takes gradient formulas without scalar parameters, got " + g);
            }
            c.append("// gradient: ").append(g).append('\n');
        }
        c.append("#include \"").append(KernelSources.ROW_REDUCE_HEADER).append("\"\n\n");
        rowIndex(c, inputs + 1);
        c.append("extern \"C\" __global__ void ").append(SOFTMAX_BACKWARD_ENTRY).append("(const float* __restrict__ y, const float* __restrict__ g");
        for (int k = 0; k < inputs; k++) c.append(", const float* __restrict__ in").append(k);
        for (int k = 0; k < gradients.size(); k++) c.append(", float* __restrict__ gout").append(k);
        c.append(", jt_i64 rows, jt_i64 cols, int log_softmax, RowIndex s) {\n");
        c.append("    using namespace jt;\n    typedef float A;\n    __shared__ float shared[32];\n    __shared__ float result;\n");
        c.append("    for (jt_i64 r = blockIdx.x; r < rows; r += gridDim.x) {\n");
        c.append("        const float* yr = y + r * cols;\n");
        c.append("        const float* gr = g + row_base(s, ").append(inputs).append(", r);\n        const jt_i64 gc = s.col[").append(inputs).append("];\n");
        for (int k = 0; k < inputs; k++) {
            c.append("        const float* row").append(k).append(" = in").append(k).append(" + row_base(s, ").append(k).append(", r);\n");
        }
        c.append("        float sum = 0.0f;\n");
        c.append("        for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) sum += log_softmax ? gr[j * gc] : gr[j * gc] * yr[j];\n");
        c.append("        sum = block_all_reduce<float, SumReduce>(sum, shared, &result);\n");
        c.append("        for (jt_i64 j = threadIdx.x; j < cols; j += blockDim.x) {\n");
        c.append("            const float gv = gr[j * gc], yv = yr[j];\n");
        for (int k = 0; k < inputs; k++) {
            c.append("            const A x").append(k).append(" = row").append(k).append("[j * s.col[").append(k).append("]];\n");
        }
        // The product is rounded before the subtraction, as the eager composition's separate kernels round it.
        c.append("            const A x").append(inputs).append(" = log_softmax ? gv - __fmul_rn(exp(yv), sum) : yv * (gv - sum);\n");
        for (int k = 0; k < gradients.size(); k++) {
            c.append("            gout").append(k).append("[r * cols + j] = (float)(").append(gradients.get(k).toC()).append(");\n");
        }
        c.append("        }\n    }\n}\n");
        return c.toString();
    }

    /**
     * {@link #rowIndex} and {@code FusedRow}, a loader that evaluates {@code formula} at element {@code j} of a row, each
     * input read from its row's start through its stride along the row.
     */
    private static void rowLoader(StringBuilder c, Expr formula, int inputs, int scalars) {
        rowIndex(c, inputs);
        c.append("struct FusedRow {\n");
        for (int k = 0; k < inputs; k++) c.append("    const float* in").append(k).append(";\n    jt_i64 c").append(k).append(";\n");
        for (int k = 0; k < scalars; k++) c.append("    double p").append(k).append(";\n");
        c.append("    __device__ __forceinline__ float operator()(jt_i64 j) const {\n        using namespace jt;\n        typedef float A;\n");
        for (int k = 0; k < inputs; k++) c.append("        const A x").append(k).append(" = in").append(k).append("[j * c").append(k).append("];\n");
        c.append("        return (float)(").append(formula.toC()).append(");\n    }\n};\n\n");
    }

    /**
     * {@code RowIndex}: the leading dimensions' sizes (the row is the last dimension), each of {@code views} views' strides
     * along them and along the row, in elements; and {@code row_base}, the element offset of row {@code r} (row-major over
     * the leading dimensions) in view {@code k}. A {@code [rows, cols]} matrix has one leading dimension.
     */
    private static void rowIndex(StringBuilder c, int views) {
        int n = Math.max(views, 1);
        c.append("struct RowIndex {\n    jt_i64 lead;\n    jt_i64 size[JT_MAX_DIMS];\n    jt_i64 row[").append(n).append("][JT_MAX_DIMS];\n    jt_i64 col[")
                .append(n).append("];\n};\n\n");
        c.append("__device__ __forceinline__ jt_i64 row_base(const RowIndex& s, int k, jt_i64 r) {\n");
        c.append("    jt_i64 o = 0;\n");
        c.append("    for (int d = (int)s.lead - 1; d >= 0; d--) {\n        o += (r % s.size[d]) * s.row[k][d];\n        r /= s.size[d];\n    }\n");
        c.append("    return o;\n}\n\n");
    }

    /** Declares {@code row}, the kernel's {@link #rowLoader} at row {@code r}. */
    private static void rowLoaderValue(StringBuilder c, int inputs, int scalars) {
        c.append("        const FusedRow row{");
        for (int k = 0; k < inputs; k++) c.append("in").append(k).append(" + row_base(s, ").append(k).append(", r), s.col[").append(k).append("], ");
        for (int k = 0; k < scalars; k++) c.append("p").append(k).append(", ");
        c.append("};\n");
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
