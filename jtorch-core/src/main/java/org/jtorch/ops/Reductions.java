package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.ReductionOps;
import org.jtorch.op.SelectingReductionOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;

/**
 * Front end of the reductions, scans and softmax, with PyTorch 1.13's semantics: validates dims
 * (negative dims wrap; an empty dim list reduces everything; a 0-d tensor accepts dim 0 and -1),
 * computes the result's shape ({@code keepdim} keeps reduced dims as size 1) and dtype, allocates it
 * and calls the device's {@link org.jtorch.backend.ReductionKernels}. The reductions declared in
 * {@link ReductionOps} (sum, prod, mean, amax, amin, norm, logsumexp, var, std, any, all, softmax,
 * log_softmax) are one-line calls of the {@link Dispatcher}; the ones with indices and the scans are still
 * written here.
 *
 * <p>Dtype rules: {@code sum}, {@code prod}, {@code cumsum}, {@code cumprod} of bool and integer
 * tensors give int64 unless a dtype is given (the input is then converted to it first); {@code mean},
 * {@code var}, {@code std}, {@code norm} accept floating tensors only; {@code logsumexp} and softmax
 * compute integer inputs in the default float dtype; {@code any}/{@code all} give bool (uint8 for
 * uint8 input, as PyTorch 1.13). Empty reductions: sum 0, prod 1, mean/var NaN, norm 0, logsumexp
 * -inf, any false, all true; max/min/amax/amin/argmax/argmin over an empty dimension throw.
 */
public final class Reductions {
    private Reductions() {}

    /** The result of {@code max(dim)}/{@code min(dim)}: the extreme values and their int64 indices along the dim. Closing closes both. */
    public record ValuesIndices(Tensor values, Tensor indices) implements AutoCloseable {
        @Override
        public void close() {
            values.close();
            indices.close();
        }
    }

    // ---------------------------------------------------------------- sum, prod, mean

    /** {@code torch.sum(x, dims, keepdim, dtype)}; {@code dtype} may be null (bool/integers then sum to int64). */
    public static Tensor sum(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        return Dispatcher.reduce(ReductionOps.SUM, x, new ReduceArgs(dims, keepdim), dtype, 0);
    }

    /** {@code torch.prod(x, dims, keepdim, dtype)}; unlike PyTorch's {@code prod}, several dims may be given. */
    public static Tensor prod(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        return Dispatcher.reduce(ReductionOps.PROD, x, new ReduceArgs(dims, keepdim), dtype, 0);
    }

    /** {@code torch.mean}: floating tensors only (or an explicit floating {@code dtype}); the sum divided by the count, as ATen's CPU mean. */
    public static Tensor mean(Tensor x, int[] dims, boolean keepdim, DType dtype) {
        return Dispatcher.reduce(ReductionOps.MEAN, x, new ReduceArgs(dims, keepdim), dtype, 0);
    }

    // ---------------------------------------------------------------- extrema

    /** {@code torch.amax(x, dims, keepdim)}: NaN propagates. */
    public static Tensor amax(Tensor x, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.AMAX, x, new ReduceArgs(dims, keepdim), null, 0);
    }

    public static Tensor amin(Tensor x, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.AMIN, x, new ReduceArgs(dims, keepdim), null, 0);
    }

    /** {@code torch.max(x)}: the maximum of all elements (0-d); throws for an empty tensor. */
    public static Tensor max(Tensor x) {
        return overAll("max", ReductionOps.AMAX, x);
    }

    public static Tensor min(Tensor x) {
        return overAll("min", ReductionOps.AMIN, x);
    }

    /** {@code max()}/{@code min()} of every element: amax/amin over all dims, with PyTorch's message for an empty input. */
    private static Tensor overAll(String name, OpDef op, Tensor x) {
        x.checkOpen(name);
        checkNonEmpty(name, x, reducedDims(name, x.shape(), null), true);
        return Dispatcher.reduce(op, x, new ReduceArgs(null, false), null, 0);
    }

    /** {@code torch.max(x, dim, keepdim)}: values and the index of their first occurrence (the first NaN, if any). */
    public static ValuesIndices max(Tensor x, int dim, boolean keepdim) {
        return withIndices(true, x, dim, keepdim);
    }

    public static ValuesIndices min(Tensor x, int dim, boolean keepdim) {
        return withIndices(false, x, dim, keepdim);
    }

    private static ValuesIndices withIndices(boolean max, Tensor x, int dim, boolean keepdim) {
        Tensor[] r = Dispatcher.callAll(max ? SelectingReductionOps.MAX_DIM : SelectingReductionOps.MIN_DIM, new Tensor[] {x}, dim,
                keepdim ? 1 : 0);
        return new ValuesIndices(r[0], r[1]);
    }

    /** {@code torch.argmax(x)}: the index of the maximum in the flattened tensor (0-d int64). */
    public static Tensor argmax(Tensor x) {
        return argFlat(true, "argmax", x);
    }

    public static Tensor argmin(Tensor x) {
        return argFlat(false, "argmin", x);
    }

    /** {@code torch.argmax(x, dim, keepdim)}. */
    public static Tensor argmax(Tensor x, int dim, boolean keepdim) {
        return argAlong(true, x, dim, keepdim);
    }

    public static Tensor argmin(Tensor x, int dim, boolean keepdim) {
        return argAlong(false, x, dim, keepdim);
    }

    private static Tensor argFlat(boolean max, String name, Tensor x) {
        x.checkOpen(name);
        checkArgDtype(name, x);
        if (x.numel() == 0) {
            throw new IllegalArgumentException(name + "(): Expected reduction dim to be specified for input.numel() == 0.");
        }
        try (Tensor flat = x.dim() == 0 ? x.alias() : x.reshape(-1)) {
            return argAlong(max, flat, 0, false);
        }
    }

    private static Tensor argAlong(boolean max, Tensor x, int dim, boolean keepdim) {
        return Dispatcher.call(max ? SelectingReductionOps.ARGMAX : SelectingReductionOps.ARGMIN, new Tensor[] {x}, dim, keepdim ? 1 : 0);
    }

    private static void checkArgDtype(String name, Tensor x) {
        if (x.dtype() == DType.BOOL) throw new IllegalArgumentException(name + ": not implemented for " + x.dtype());
    }

    static void checkNonEmpty(String name, Tensor x, boolean[] reduced, boolean allDims) {
        if (x.numel() != 0) return;
        if (allDims) {
            throw new IllegalArgumentException(name + "(): Expected reduction dim to be specified for input.numel() == 0."
                    + " Specify the reduction dim with the 'dim' argument.");
        }
        long[] shape = x.shape();
        for (int d = 0; d < shape.length; d++) {
            if (reduced[d] && shape[d] == 0) {
                throw new IllegalArgumentException(name + "(): Expected reduction dim " + d + " to have non-zero size"
                        + " (input shape " + Shapes.format(shape) + ")");
            }
        }
    }

    // ---------------------------------------------------------------- statistics and norms

    /** {@code torch.var(x, dims, correction, keepdim)}: {@code sum (x - mean)^2 / max(0, N - correction)}. */
    public static Tensor var(Tensor x, int[] dims, double correction, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.VAR, x, new ReduceArgs(dims, keepdim), null, correction);
    }

    public static Tensor std(Tensor x, int[] dims, double correction, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.STD, x, new ReduceArgs(dims, keepdim), null, correction);
    }

    /** {@code torch.norm(x, p, dims, keepdim)}: the vector p-norm over the dims (p may be 0, ±inf or any real); floating tensors only. */
    public static Tensor norm(Tensor x, double p, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.NORM, x, new ReduceArgs(dims, keepdim), null, p);
    }

    /** {@code torch.logsumexp(x, dims, keepdim)}: {@code log(sum(exp(x)))} computed stably; integer input gives the default float dtype. */
    public static Tensor logsumexp(Tensor x, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.LOGSUMEXP, x, new ReduceArgs(dims, keepdim), null, 0);
    }

    // ---------------------------------------------------------------- logical

    /** {@code torch.any(x, dims, keepdim)}: whether any element is nonzero (NaN counts). */
    public static Tensor any(Tensor x, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.ANY, x, new ReduceArgs(dims, keepdim), null, 0);
    }

    public static Tensor all(Tensor x, int[] dims, boolean keepdim) {
        return Dispatcher.reduce(ReductionOps.ALL, x, new ReduceArgs(dims, keepdim), null, 0);
    }

    // ---------------------------------------------------------------- scans

    /** {@code torch.cumsum(x, dim, dtype)}; {@code dtype} may be null (bool/integers then give int64) ({@link ReductionOps#CUMSUM}). */
    public static Tensor cumsum(Tensor x, int dim, DType dtype) {
        return Dispatcher.alongDim(ReductionOps.CUMSUM, x, dim, dtype);
    }

    /** {@code torch.cumprod(x, dim, dtype)} ({@link ReductionOps#CUMPROD}). */
    public static Tensor cumprod(Tensor x, int dim, DType dtype) {
        return Dispatcher.alongDim(ReductionOps.CUMPROD, x, dim, dtype);
    }

    /**
     * d y_j / d x_i = prod_{k<=j, k!=i} x_k for j >= i. Without zeros that is revcumsum(g*y)_i / x_i; with
     * zeros, S_i = sum_{j>=i} g_j prod_{i<k<=j} x_k follows S_i = g_i + x_{i+1} S_{i+1}, and the gradient is
     * (prod_{k<i} x_k) S_i, computed along the dimension one step at a time.
     */
    static Tensor cumprodBackward(Tensor g, Tensor x, Tensor y, int d) {
        if (x.dim() == 0) return g.alias();
        if (!x.eq(0.0).any(new int[0], false).toBooleanArray()[0]) {
            Tensor gy = g.mul(y);
            Tensor rev = gy.sum(new int[] {d}, true).sub(gy.cumsum(d)).add(gy);
            return rev.div(x);
        }
        long n = x.size(d);
        Tensor result = Torch.zerosLike(x);
        Tensor s = null;
        for (long i = n - 1; i >= 0; i--) {
            Tensor gi = g.select(d, i);
            s = s == null ? gi.alias() : gi.add(x.select(d, i + 1).mul(s));
            Tensor prefix = i == 0 ? Torch.onesLike(gi) : y.select(d, i - 1);
            try (Tensor target = result.select(d, i)) {
                target.copy_(prefix.mul(s));
            }
        }
        return result;
    }

    // ---------------------------------------------------------------- softmax

    /** {@code torch.softmax(x, dim, dtype)}; {@code dtype} may be null (integer input then uses the default float dtype). */
    public static Tensor softmax(Tensor x, int dim, DType dtype) {
        return Dispatcher.alongDim(ReductionOps.SOFTMAX, x, dim, dtype);
    }

    public static Tensor logSoftmax(Tensor x, int dim, DType dtype) {
        return Dispatcher.alongDim(ReductionOps.LOG_SOFTMAX, x, dim, dtype);
    }

    /** {@link ReductionOps#LOG_SOFTMAX_BACKWARD_COMPOSITE}: {@code g - exp(y) * sum(g, dim, keepdim=True)} as ops. */
    static Tensor logSoftmaxBackwardComposite(Tensor g, Tensor y, int dim) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor sum = y.dim() == 0 ? g : g.sum(new int[] {dim}, true);
            return scope.keep(g.sub(y.exp().mul(sum)));
        }
    }

    // ---------------------------------------------------------------- shared

    /** Which dimensions a reduction over {@code dims} covers: all when {@code dims} is empty; duplicates are an error. */
    static boolean[] reducedDims(String op, long[] shape, int[] dims) {
        boolean[] reduced = new boolean[shape.length];
        if (dims == null || dims.length == 0) {
            Arrays.fill(reduced, true);
            return reduced;
        }
        boolean[] seen = new boolean[Math.max(shape.length, 1)];
        for (int dim : dims) {
            int d = Shapes.wrapDim(op, dim, shape.length);
            if (seen[d]) {
                throw new IllegalArgumentException(op + ": dim " + d + " appears multiple times in the list of dims "
                        + Arrays.toString(dims));
            }
            seen[d] = true;
            if (shape.length > 0) reduced[d] = true;
        }
        return reduced;
    }

    /** The result shape: reduced dims removed, or kept as size 1 with {@code keepdim}. */
    static long[] resultShape(long[] shape, boolean[] reduced, boolean keepdim) {
        int n = 0;
        for (int d = 0; d < shape.length; d++) if (keepdim || !reduced[d]) n++;
        long[] r = new long[n];
        for (int d = 0, j = 0; d < shape.length; d++) {
            if (!reduced[d]) r[j++] = shape[d];
            else if (keepdim) r[j++] = 1;
        }
        return r;
    }
}
