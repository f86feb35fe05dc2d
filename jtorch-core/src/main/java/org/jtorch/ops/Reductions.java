package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import java.util.Arrays;
import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.ReductionOps;
import org.jtorch.op.Shapes;

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
        return withIndices(true, "max", x, dim, keepdim);
    }

    public static ValuesIndices min(Tensor x, int dim, boolean keepdim) {
        return withIndices(false, "min", x, dim, keepdim);
    }

    private static ValuesIndices withIndices(boolean max, String name, Tensor x, int dim, boolean keepdim) {
        x.checkOpen(name);
        int d = Shapes.wrapDim(name, dim, x.dim());
        boolean[] reduced = reducedDims(name, x.shape(), new int[] {dim});
        checkNonEmpty(name, x, reduced, false);
        Tensor values = Tensor.empty(resultShape(x.shape(), reduced, keepdim), x.dtype(), x.device());
        Tensor indices = Tensor.empty(resultShape(x.shape(), reduced, keepdim), DType.INT64, x.device());
        long[] keep = resultShape(x.shape(), reduced, true);
        try (Tensor vk = keepdimView(values, keep); Tensor ik = keepdimView(indices, keep)) {
            Backends.of(x.device()).reductions().argReduce(max, view(x), view(vk.broadcastTo(x.shape())),
                    view(ik.broadcastTo(x.shape())),
                    x.dim() == 0 ? 0 : d);
        }
        if (Autograd.needsGrad(x)) {
            SavedTensor si = Autograd.save(indices);
            long[] inShape = x.shape();
            DType type = x.dtype();
            Autograd.record(max ? "MaxBackward0" : "MinBackward0", values, g -> {
                if (inShape.length == 0) return new Tensor[] {g[0].reshape()};
                Tensor gk = g[0].reshape(keep);
                Tensor ik = si.get().reshape(keep);
                return new Tensor[] {Torch.zeros(inShape, type, gk.device()).scatter_(d, ik, gk)};
            }, new Tensor[] {x}, si);
        }
        return new ValuesIndices(values, indices);
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
        return argAlong(true, "argmax", x, dim, keepdim);
    }

    public static Tensor argmin(Tensor x, int dim, boolean keepdim) {
        return argAlong(false, "argmin", x, dim, keepdim);
    }

    private static Tensor argFlat(boolean max, String name, Tensor x) {
        x.checkOpen(name);
        checkArgDtype(name, x);
        if (x.numel() == 0) {
            throw new IllegalArgumentException(name + "(): Expected reduction dim to be specified for input.numel() == 0.");
        }
        try (Tensor flat = x.dim() == 0 ? x.alias() : x.reshape(-1)) {
            return argAlong(max, name, flat, 0, false);
        }
    }

    private static Tensor argAlong(boolean max, String name, Tensor x, int dim, boolean keepdim) {
        x.checkOpen(name);
        checkArgDtype(name, x);
        int d = Shapes.wrapDim(name, dim, x.dim());
        boolean[] reduced = reducedDims(name, x.shape(), new int[] {dim});
        checkNonEmpty(name, x, reduced, false);
        Tensor indices = Tensor.empty(resultShape(x.shape(), reduced, keepdim), DType.INT64, x.device());
        try (Tensor ik = keepdimView(indices, resultShape(x.shape(), reduced, true))) {
            Backends.of(x.device()).reductions().argReduce(max, view(x), null, view(ik.broadcastTo(x.shape())),
                    x.dim() == 0 ? 0 : d);
        }
        return indices;
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

    /** {@code torch.cumsum(x, dim, dtype)}; {@code dtype} may be null (bool/integers then give int64). */
    public static Tensor cumsum(Tensor x, int dim, DType dtype) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("cumsum", dtype != null, t -> cumsum(t[0], dim, dtype), x);
            if (r != null) return r;
        }
        return scan(false, "cumsum", x, dim, dtype);
    }

    public static Tensor cumprod(Tensor x, int dim, DType dtype) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("cumprod", dtype != null, t -> cumprod(t[0], dim, dtype), x);
            if (r != null) return r;
        }
        return scan(true, "cumprod", x, dim, dtype);
    }

    private static Tensor scan(boolean prod, String name, Tensor x, int dim, DType dtype) {
        x.checkOpen(name);
        int d = Shapes.wrapDim(name, dim, x.dim());
        DType out = dtype != null ? dtype : x.dtype().isFloatingPoint() ? x.dtype() : DType.INT64;
        try (Tensor in = x.to(out)) {
            Tensor r = Tensor.empty(x.shape(), out, x.device());
            Backends.of(x.device()).reductions().scan(prod, view(in), view(r), x.dim() == 0 ? 0 : d);
            if (Autograd.needsGrad(in) && out.isFloatingPoint()) {
                int sd = x.dim() == 0 ? 0 : d;
                if (!prod) {
                    // Reverse cumulative sum: total - cumsum(g) + g.
                    Autograd.record("CumsumBackward0", r, g -> new Tensor[] {
                            g[0].sum(new int[] {sd}, true).sub(g[0].cumsum(sd)).add(g[0])}, new Tensor[] {in});
                } else {
                    SavedTensor sx = Autograd.save(in);
                    SavedTensor sr = Autograd.save(r);
                    Autograd.record("CumprodBackward0", r, g -> new Tensor[] {cumprodBackward(g[0], sx.get(), sr.get(), sd)},
                            new Tensor[] {in}, sx, sr);
                }
            }
            return r;
        }
    }

    /**
     * d y_j / d x_i = prod_{k<=j, k!=i} x_k for j >= i. Without zeros that is revcumsum(g*y)_i / x_i; with
     * zeros, S_i = sum_{j>=i} g_j prod_{i<k<=j} x_k follows S_i = g_i + x_{i+1} S_{i+1}, and the gradient is
     * (prod_{k<i} x_k) S_i, computed along the dimension one step at a time.
     */
    private static Tensor cumprodBackward(Tensor g, Tensor x, Tensor y, int d) {
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

    // ---------------------------------------------------------------- shared

    /**
     * A freshly allocated (contiguous) result seen with the reduced dims kept as size 1, to broadcast back
     * to the input's shape for the kernel. Built with asStrided because a 0-d result may need a [1, 1] view.
     */
    private static Tensor keepdimView(Tensor result, long[] keepShape) {
        return result.asStrided(keepShape, Shapes.contiguousStrides(keepShape), result.storageOffset());
    }

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
