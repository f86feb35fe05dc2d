package org.jtorch.cuda.kernels;

import java.util.Arrays;
import java.util.Set;
import org.jtorch.DType;
import org.jtorch.cuda.KernelStructs;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.UnaryOp;

/**
 * Host-side choices for an elementwise launch, with no GPU or driver involved (unit-tested on any
 * machine): which entry point of {@code elementwise.cu} / {@code copy.cu} serves an op and dtype, whether
 * the contiguous (same-dtype, 16-byte vector) kernel applies or the strided dynamic-cast one, and the
 * coalesced shape and strides the strided kernels read from {@code jt::Strided}.
 *
 * <p>Entry-point names follow the sources: {@code jt_unary_<op>_<dtype>}, {@code jt_unary_<op>_strided_<f32|f64|i64>},
 * {@code jt_binary_<op>_<dtype>}, {@code jt_binary_<op>_strided_<f32|f64|i64>}, {@code jt_fill_<dtype>},
 * {@code jt_copy_strided}, {@code jt_where_strided}.
 */
public final class ElementwisePlan {
    private ElementwisePlan() {}

    /** Unary ops with kernels for every numeric dtype ({@code JT_NUMERIC_UNARY}). */
    static final Set<UnaryOp> NUMERIC_UNARY = Set.of(UnaryOp.NEG, UnaryOp.ABS, UnaryOp.RELU);
    /** Unary ops with floating kernels only ({@code JT_FLOATING_UNARY}). */
    static final Set<UnaryOp> FLOATING_UNARY = Set.of(UnaryOp.EXP, UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT,
            UnaryOp.SIN, UnaryOp.COS, UnaryOp.TANH, UnaryOp.SIGMOID);
    static final Set<BinaryOp> NUMERIC_BINARY = Set.of(BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.MAXIMUM,
            BinaryOp.MINIMUM);
    static final Set<BinaryOp> FLOATING_BINARY = Set.of(BinaryOp.DIV);

    /** The dtype suffix of the sources' entry points ({@code f32}, {@code bf16}, {@code u8}, ...). */
    public static String suffix(DType t) {
        return switch (t) {
            case BOOL -> "bool";
            case UINT8 -> "u8";
            case INT8 -> "i8";
            case INT16 -> "i16";
            case INT32 -> "i32";
            case INT64 -> "i64";
            case FLOAT16 -> "f16";
            case BFLOAT16 -> "bf16";
            case FLOAT32 -> "f32";
            case FLOAT64 -> "f64";
        };
    }

    /** The compute type of the strided kernels for op compute dtype {@code compute}: f32 (16/32-bit floats), f64, i64 (integers, bool). */
    public static String stridedSuffix(DType compute) {
        if (compute == DType.FLOAT64) return "f64";
        return compute.isFloatingPoint() ? "f32" : "i64";
    }

    /** The op's name in the sources ({@code JT_SELECT_<name>}), or null when no CUDA kernel implements it. */
    public static String kernelName(UnaryOp op) {
        return NUMERIC_UNARY.contains(op) || FLOATING_UNARY.contains(op) ? op.pyName() : null;
    }

    public static String kernelName(BinaryOp op) {
        return NUMERIC_BINARY.contains(op) || FLOATING_BINARY.contains(op) ? op.pyName() : null;
    }

    /** Whether the sources instantiate {@code op} computing in {@code compute}. */
    public static boolean supports(UnaryOp op, DType compute) {
        return NUMERIC_UNARY.contains(op) || (FLOATING_UNARY.contains(op) && compute.isFloatingPoint());
    }

    public static boolean supports(BinaryOp op, DType compute) {
        return NUMERIC_BINARY.contains(op) || (FLOATING_BINARY.contains(op) && compute.isFloatingPoint());
    }

    /** Whether the contiguous kernels exist for dtype {@code t} (every dtype but bool, floating ones only for floating-only ops). */
    static boolean hasContiguousKernel(DType t, boolean floatingOnly) {
        if (t == DType.BOOL) return false;
        return !floatingOnly || t.isFloatingPoint();
    }

    /** One operand as a kernel sees it: dtype, shape-aligned element strides, contiguity. */
    public record Operand(DType dtype, long[] strides, boolean contiguous) {}

    /**
     * The launch of one elementwise op: {@code entry} is the kernel's name; {@code contiguous} selects the
     * {@code (ptrs..., n[, alpha])} signature, else {@code (ptrs..., n[, alpha], Strided)} with {@code strided}.
     */
    public record Launch(String entry, boolean contiguous, long n, Strided strided) {}

    /**
     * {@code jt::Strided}'s content: the coalesced sizes and per-operand element strides (operand 0 is the
     * output for unary/binary/copy) and the operands' dtype codes ({@link DType#ordinal()}).
     */
    public record Strided(int ndim, int[] dtypes, long[] sizes, long[][] strides) {
        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("Strided[ndim=" + ndim + ", dtypes=" + Arrays.toString(dtypes)
                    + ", sizes=" + Arrays.toString(sizes));
            for (long[] s : strides) sb.append(", ").append(Arrays.toString(s));
            return sb.append(']').toString();
        }
    }

    /** {@code out = op(x)}: the contiguous kernel when x, out and compute share a dtype and both are contiguous. */
    public static Launch unary(UnaryOp op, DType compute, long[] shape, Operand out, Operand x) {
        String name = kernelName(op);
        if (name == null || !supports(op, compute)) throw unsupported(op.pyName(), compute);
        long n = numel(shape);
        boolean floatingOnly = FLOATING_UNARY.contains(op);
        if (out.contiguous && x.contiguous && out.dtype == compute && x.dtype == compute
                && hasContiguousKernel(compute, floatingOnly)) {
            return new Launch("jt_unary_" + name + "_" + suffix(compute), true, n, null);
        }
        return new Launch("jt_unary_" + name + "_strided_" + stridedSuffix(compute), false, n,
                coalesce(shape, out, x));
    }

    /** {@code out = op(a, b)} with a and b broadcast to {@code shape} (zero strides). */
    public static Launch binary(BinaryOp op, DType compute, long[] shape, Operand out, Operand a, Operand b) {
        String name = kernelName(op);
        if (name == null || !supports(op, compute)) throw unsupported(op.pyName(), compute);
        long n = numel(shape);
        boolean floatingOnly = FLOATING_BINARY.contains(op);
        if (out.contiguous && a.contiguous && b.contiguous && out.dtype == compute && a.dtype == compute
                && b.dtype == compute && hasContiguousKernel(compute, floatingOnly)) {
            return new Launch("jt_binary_" + name + "_" + suffix(compute), true, n, null);
        }
        return new Launch("jt_binary_" + name + "_strided_" + stridedSuffix(compute), false, n,
                coalesce(shape, out, a, b));
    }

    /** {@code dst = src} converting dtypes, any strides ({@code jt_copy_strided}). */
    public static Launch copy(long[] shape, Operand dst, Operand src) {
        return new Launch("jt_copy_strided", false, numel(shape), coalesce(shape, dst, src));
    }

    /**
     * {@code out = cond ? a : b} into a contiguous {@code out}: {@code jt_where_strided} reads operands
     * cond, a, b through {@code Strided} (operand 0 is cond here) and writes out at the linear index.
     */
    public static Launch where(long[] shape, Operand cond, Operand a, Operand b) {
        return new Launch("jt_where_strided", false, numel(shape), coalesce(shape, cond, a, b));
    }

    /** The contiguous fill kernel of dtype {@code t}. */
    public static String fillEntry(DType t) {
        return "jt_fill_" + suffix(t);
    }

    private static UnsupportedOperationException unsupported(String op, DType compute) {
        return new UnsupportedOperationException(op + ": no CUDA kernel is wired to this op for " + compute + " yet (device cuda)");
    }

    static long numel(long[] shape) {
        long n = 1;
        for (long s : shape) n *= s;
        return n;
    }

    /**
     * Drops size-1 dimensions and merges neighbours {@code d, d+1} whenever every operand has
     * {@code stride[d] == size[d+1] * stride[d+1]} (as PyTorch's TensorIterator), so that e.g. a
     * contiguous tensor of any rank becomes one dimension. Throws when more than
     * {@value KernelStructs#MAX_DIMS} dimensions remain.
     */
    public static Strided coalesce(long[] shape, Operand... operands) {
        if (operands.length > 3) throw new IllegalArgumentException("jt::Strided holds at most 3 operands, got " + operands.length);
        int k = operands.length;
        long[] sizes = new long[shape.length];
        long[][] strides = new long[k][shape.length];
        int nd = 0;
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] == 1) continue;
            sizes[nd] = shape[d];
            for (int o = 0; o < k; o++) strides[o][nd] = operands[o].strides()[d];
            nd++;
        }
        // Merge from the innermost dimension outwards: dimension d (outer) into d+1 (inner).
        int w = nd - 1;
        long[] cs = new long[nd];
        long[][] cst = new long[k][nd];
        if (nd > 0) {
            cs[w] = sizes[nd - 1];
            for (int o = 0; o < k; o++) cst[o][w] = strides[o][nd - 1];
        }
        for (int d = nd - 2; d >= 0; d--) {
            boolean merge = true;
            for (int o = 0; o < k; o++) merge &= strides[o][d] == cs[w] * cst[o][w];
            if (merge) {
                cs[w] *= sizes[d];
            } else {
                w--;
                cs[w] = sizes[d];
                for (int o = 0; o < k; o++) cst[o][w] = strides[o][d];
            }
        }
        int ndim = nd == 0 ? 0 : nd - w;
        if (ndim > KernelStructs.MAX_DIMS) {
            throw new UnsupportedOperationException("CUDA elementwise kernels handle at most " + KernelStructs.MAX_DIMS
                    + " dimensions after coalescing, got " + ndim + " (shape " + Arrays.toString(shape) + ")");
        }
        long[] outSizes = Arrays.copyOfRange(cs, nd - ndim, nd);
        long[][] outStrides = new long[k][];
        int[] dtypes = new int[k];
        for (int o = 0; o < k; o++) {
            outStrides[o] = Arrays.copyOfRange(cst[o], nd - ndim, nd);
            dtypes[o] = operands[o].dtype().ordinal();
        }
        return new Strided(ndim, dtypes, outSizes, outStrides);
    }
}
