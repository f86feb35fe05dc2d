package org.jtorch.cuda.kernels;

import java.util.Arrays;
import org.jtorch.cuda.KernelStructs;
import org.jtorch.op.DTypeRule;
import org.jtorch.op.OpDef;
import org.jtorch.types.DType;

/**
 * Host-side choices for an elementwise launch, with no GPU or driver involved (unit-tested on any
 * machine): which entry point of an op's generated source ({@code FormulaKernels}) / {@code copy.cu} /
 * {@code elementwise.cu} (where) serves an op and dtype, whether
 * the contiguous (same-dtype, 16-byte vector) kernel applies or the strided dynamic-cast one, and the
 * coalesced shape and strides the strided kernels read from {@code jt::Strided}.
 *
 * <p>Entry-point names follow the sources: {@code jt_unary_<op>_<dtype>}, {@code jt_unary_<op>_strided_<f32|f64|i64>},
 * {@code jt_binary_<op>_<dtype>}, {@code jt_binary_<op>_strided_<f32|f64|i64>}, {@code jt_fill_<dtype>},
 * {@code jt_copy_strided}, {@code jt_where_strided}.
 */
public final class ElementwisePlan {
    private ElementwisePlan() {}

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

    /** The op's name in the generated sources ({@code jt_unary_<name>_...}): its kernel's name ({@code pow_scalar} beside binary {@code pow}). */
    public static String kernelName(OpDef op) {
        return op.kernel();
    }

    /**
     * Whether the sources instantiate {@code op} computing in {@code compute}: as the op's declared dtype rule
     * ({@code JT_FLOATING_UNARY} for {@link DTypeRule#FLOAT} and {@link DTypeRule#FLOATING_ONLY},
     * {@code JT_INTEGRAL_UNARY} for {@link DTypeRule#INTEGRAL_OR_BOOL}, {@code JT_NUMERIC_UNARY} otherwise, bool
     * through the strided int64 entry), which is what the CPU backend defines ({@code apply} for floating compute,
     * {@code applyLong} for integer and bool compute).
     */
    public static boolean supports(DTypeRule rule, DType compute) {
        return switch (rule) {
            case FLOAT, FLOATING_ONLY -> compute.isFloatingPoint();
            case INTEGRAL_OR_BOOL -> !compute.isFloatingPoint();
            default -> true;
        };
    }

    public static boolean supports(OpDef op, DType compute) {
        return supports(op.rule(), compute);
    }

    /** The dtype the kernels write for {@code op} computing in {@code compute}: bool for predicates, else {@code compute}. */
    public static DType resultType(OpDef op, DType compute) {
        return op.resultType(compute);
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

    /**
     * {@code out = op(x)}: the contiguous kernel when x is of the compute dtype, out of the op's result dtype
     * ({@link #resultType(OpDef, DType)}), both contiguous and the compute dtype is not bool.
     */
    public static Launch unary(OpDef op, DType compute, long[] shape, Operand out, Operand x) {
        if (!supports(op, compute)) throw unsupported(op.pyName(), compute, shape);
        return unary(kernelName(op), resultType(op, compute), compute, shape, out, x);
    }

    /** The same for the entries named {@code name} (a declared formula's, generated), writing {@code result}. */
    public static Launch unary(String name, DType result, DType compute, long[] shape, Operand out, Operand x) {
        long n = numel(shape);
        if (out.contiguous && x.contiguous && x.dtype == compute && out.dtype == result && compute != DType.BOOL) {
            return new Launch("jt_unary_" + name + "_" + suffix(compute), true, n, null);
        }
        return new Launch("jt_unary_" + name + "_strided_" + stridedSuffix(compute), false, n,
                coalesce(shape, out, x));
    }

    /** {@code out = op(a, b)} with a and b broadcast to {@code shape} (zero strides); the contiguous rule as {@link #unary}. */
    public static Launch binary(OpDef op, DType compute, long[] shape, Operand out, Operand a, Operand b) {
        if (!supports(op, compute)) throw unsupported(op.pyName(), compute, shape);
        return binary(kernelName(op), resultType(op, compute), compute, shape, out, a, b);
    }

    /** The same for the entries named {@code name} (a declared formula's, generated), writing {@code result}. */
    public static Launch binary(String name, DType result, DType compute, long[] shape, Operand out, Operand a, Operand b) {
        long n = numel(shape);
        if (out.contiguous && a.contiguous && b.contiguous && a.dtype == compute && b.dtype == compute
                && out.dtype == result && compute != DType.BOOL) {
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

    /** An op asked to compute in a dtype it has no definition for (the CPU backend refuses it too). */
    public static UnsupportedOperationException unsupported(String op, DType compute, long[] shape) {
        return new UnsupportedOperationException(op + ": no CUDA kernel computes this op in " + compute + " (shape "
                + Arrays.toString(shape) + ", device cuda)");
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
