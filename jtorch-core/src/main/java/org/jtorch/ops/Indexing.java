package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.op.IndexingOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.backend.IndexErrorContext;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * Front end of the indexing ops, with PyTorch's semantics: {@code index_select}, {@code gather},
 * {@code scatter}/{@code scatter_add}, {@code index_add}/{@code index_copy}/{@code index_fill},
 * {@code masked_fill}/{@code masked_select}, {@code nonzero}, and advanced (integer-tensor) indexing
 * {@code t[i0, i1, ...]} with {@code index_put_}.
 *
 * <p>Shape and dtype rules are checked here; index values are checked by the kernels before they
 * write, and a bad one raises {@link IndexOutOfBoundsException} naming the op, the value and the size
 * of the dimension. Where PyTorch 1.13 accepts negative indices (advanced indexing, index_fill) they
 * wrap; elsewhere (index_select, gather, scatter, index_add, index_copy) they are errors, as there.
 * Out-of-place forms copy {@code self} and run the in-place form; in-place forms bump the version
 * counter.
 *
 * <p>{@code index_select}, {@code gather}, {@code scatter} (src and value), {@code scatter_add}, {@code index_add},
 * {@code index_copy}, {@code index_fill}, {@code masked_fill} and {@code masked_select} are declared ops ({@link IndexingOps})
 * that the dispatcher runs, their in-place forms through {@link Dispatcher#callInPlace}: their checks, derivatives and
 * kernels live there. So are advanced indexing ({@code index}) and {@code index_put}/{@code index_put_}, whose front ends
 * here expand bool masks into int64 index tensors (a read on the host, as PyTorch's) before the call. Index tensors and
 * masks get no gradient.
 */
public final class Indexing {
    private Indexing() {}

    // ---------------------------------------------------------------- index_select / gather

    /**
     * {@code embedding_renorm_} ({@link org.jtorch.op.FrontEndOps#EMBEDDING_RENORM_}): the distinct rows of the 2-D
     * {@code weight} that the int64/int32 {@code indices} name, scaled in place to a {@code normType}-norm of at most
     * {@code maxNorm}, under no-grad (the weight changes, its history does not). Returns a new handle to {@code weight}.
     */
    public static Tensor embeddingRenorm_(Tensor weight, Tensor indices, double maxNorm, double normType) {
        String op = "embedding_renorm_";
        Arguments.nonNull(op, "self", weight);
        Arguments.nonNull(op, "indices", indices);
        if (weight.dim() != 2 || indices.dtype() != DType.INT64 && indices.dtype() != DType.INT32) {
            throw new IllegalArgumentException(op + ": expected a 2-D self and int64 or int32 indices, got self of shape "
                    + Shapes.format(weight.shape()) + " (" + weight.dtype() + ", " + weight.device() + ") and indices of shape "
                    + Shapes.format(indices.shape()) + " (" + indices.dtype() + ", " + indices.device() + ")");
        }
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(org.jtorch.op.FrontEndOps.EMBEDDING_RENORM_, new Tensor[] {weight, indices}, null,
                    t -> renormRows(t[0], t[1], maxNorm, normType));
        }
        return renormRows(weight, indices, maxNorm, normType);
    }

    private static Tensor renormRows(Tensor weight, Tensor indices, double maxNorm, double normType) {
        try (Grad.Mode g = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            Tensor rows = indices.reshape(-1).to(DType.INT64).unique();
            Tensor norms = weight.indexSelect(0, rows).norm(normType, new int[] {1}, true);
            // As PyTorch's: rows within the bound are left untouched (not multiplied by 1).
            Tensor over = norms.gt(maxNorm).reshape(-1);
            Tensor scaled = rows.maskedSelect(over);
            if (scaled.numel() > 0) {
                // The factor in float64, as PyTorch's (its norm is read out as a double).
                Tensor norms64 = norms.to(DType.FLOAT64);
                Tensor factor = Torch.fullLike(norms64, maxNorm).div(norms64.add(1e-7)).reshape(-1).maskedSelect(over).unsqueeze(1);
                weight.indexCopy_(0, scaled, weight.indexSelect(0, scaled).mul(factor.to(weight.dtype())));
            }
        }
        return weight.alias();
    }

    /**
     * {@code F.one_hot}: the checks PyTorch's {@code one_hot} makes (int64 indices, a class count positive or -1, every
     * class in range: read on the host where the count is inferred, or on the CPU), then the declared op
     * ({@link IndexingOps#ONE_HOT}).
     */
    public static Tensor oneHot(Tensor indices, long numClasses) {
        String op = "one_hot";
        Arguments.nonNull(op, "indices", indices);
        if (indices.dtype() != DType.INT64) {
            throw new IllegalArgumentException(op + ": one_hot is only applicable to index tensor (int64), got " + indices.dtype());
        }
        if (numClasses < -1 || numClasses == 0 && indices.numel() > 0) {
            throw new IllegalArgumentException(op + ": num_classes should be positive or -1, got " + numClasses);
        }
        long classes = numClasses;
        // Only an inferred class count is read on the host. With a given count, off the CPU, the scatter's
        // deferred index check reports a bad value at the next synchronisation, as crossEntropy's targets.
        if (indices.numel() > 0 && (classes == -1 || indices.device().isCpu())) {
            long min;
            long max;
            try (var g = Grad.noGrad(); Tensor lo = indices.min(); Tensor hi = indices.max()) {
                min = lo.itemLong();
                max = hi.itemLong();
            }
            if (min < 0) throw new IllegalArgumentException(op + ": class values must be non-negative, got " + min);
            if (classes == -1) classes = max + 1;
            if (max >= classes) {
                throw new IllegalArgumentException(op + ": class values must be smaller than num_classes (" + classes + "), got " + max);
            }
        } else if (indices.numel() == 0 && classes == -1) {
            throw new IllegalArgumentException(op + ": can not infer total number of classes from empty tensor");
        }
        long n = classes;
        return IndexErrorContext.run(op + ": class values must be in [0, " + classes + "): ",
                () -> Dispatcher.call(IndexingOps.ONE_HOT, new Tensor[] {indices}, n));
    }

    /** {@code self.index_select(dim, index)}: {@code index} is a vector (or 0-d) of int32 or int64 ({@link IndexingOps#INDEX_SELECT}). */
    public static Tensor indexSelect(Tensor self, int dim, Tensor index) {
        return Dispatcher.call(IndexingOps.INDEX_SELECT, new Tensor[] {self, index}, dim);
    }

    /** {@code self.gather(dim, index)}: {@code out[i][j] = self[index[i][j]][j]} for dim 0; index is int64 ({@link IndexingOps#GATHER}). */
    public static Tensor gather(Tensor self, int dim, Tensor index) {
        return Dispatcher.call(IndexingOps.GATHER, new Tensor[] {self, index}, dim);
    }

    // ---------------------------------------------------------------- scatter

    /**
     * {@code self.scatter_(dim, index, src)} (or {@code scatter_add_} when {@code accumulate}):
     * {@code self[index[i][j]][j] = src[i][j]} for dim 0. Only the index-shaped corner of {@code src}
     * is read. Returns {@code self}.
     */
    public static Tensor scatterInPlace(Tensor self, int dim, Tensor index, Tensor src, boolean accumulate) {
        OpDef def = accumulate ? IndexingOps.SCATTER_ADD : IndexingOps.SCATTER;
        return withCorner(src, index, s -> Dispatcher.callInPlace(def, new Tensor[] {self, index, s}, dim));
    }

    /** {@code self.scatter_(dim, index, value)}: writes a scalar (converted to self's dtype) at the indexed places. */
    public static Tensor scatterValueInPlace(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.callInPlace(IndexingOps.SCATTER_VALUE, new Tensor[] {self, index}, dim, value);
    }

    /**
     * {@code self.scatter(dim, index, src)}, or {@code scatter_add} when {@code accumulate} ({@link IndexingOps#SCATTER},
     * {@link IndexingOps#SCATTER_ADD}), given the index-shaped corner of a larger {@code src}, so that the rest of it gets a
     * zero gradient.
     */
    public static Tensor scatter(Tensor self, int dim, Tensor index, Tensor src, boolean accumulate) {
        OpDef def = accumulate ? IndexingOps.SCATTER_ADD : IndexingOps.SCATTER;
        return withCorner(src, index, s -> Dispatcher.call(def, new Tensor[] {self, index, s}, dim));
    }

    /** {@code self.scatter(dim, index, value)} ({@link IndexingOps#SCATTER_VALUE}). */
    public static Tensor scatterValue(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.call(IndexingOps.SCATTER_VALUE, new Tensor[] {self, index}, dim, value);
    }

    /**
     * {@code body} of {@code src}, or of its index-shaped corner when {@code src} is larger than {@code index}: only the
     * corner is read, so that the rest of a larger {@code src} gets a zero gradient.
     */
    private static Tensor withCorner(Tensor src, Tensor index, java.util.function.UnaryOperator<Tensor> body) {
        if (!cornerNeeded(src, index)) return body.apply(src);
        Tensor corner = src.asStrided(index.shape(), src.strides(), src.storageOffset());
        try {
            return body.apply(corner);
        } finally {
            // a view in the graph stays referenced by its node
            if (!corner.requiresGrad()) corner.close();
        }
    }

    /** Whether {@code src} is larger than {@code index} (same rank, every size at least the index's) somewhere. */
    private static boolean cornerNeeded(Tensor src, Tensor index) {
        src.checkOpen("scatter_add");
        index.checkOpen("scatter_add");
        if (src.dim() != index.dim() || src.dim() == 0 || Arrays.equals(src.shape(), index.shape())) return false;
        for (int k = 0; k < src.dim(); k++) if (src.size(k) < index.size(k)) return false;
        return true;
    }

    // ---------------------------------------------------------------- index_add / index_copy / index_fill

    /** {@code self.index_add(dim, index, source, alpha)}: a copy of self with the slices added ({@link IndexingOps#INDEX_ADD}). */
    public static Tensor indexAdd(Tensor self, int dim, Tensor index, Tensor source, double alpha) {
        return Dispatcher.call(IndexingOps.INDEX_ADD, new Tensor[] {self, index, source}, dim, alpha);
    }

    /** {@code self.index_add_(dim, index, source, alpha)}: {@code self.select(dim, index[i]) += alpha * source.select(dim, i)}. */
    public static Tensor indexAddInPlace(Tensor self, int dim, Tensor index, Tensor source, double alpha) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_ADD, new Tensor[] {self, index, source}, dim, alpha);
    }

    /** {@code self.index_copy(dim, index, source)}: a copy of self with the slices written ({@link IndexingOps#INDEX_COPY}). */
    public static Tensor indexCopy(Tensor self, int dim, Tensor index, Tensor source) {
        return Dispatcher.call(IndexingOps.INDEX_COPY, new Tensor[] {self, index, source}, dim);
    }

    /** {@code self.index_copy_(dim, index, source)}: {@code self.select(dim, index[i]) = source.select(dim, i)}; index is int64. */
    public static Tensor indexCopyInPlace(Tensor self, int dim, Tensor index, Tensor source) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_COPY, new Tensor[] {self, index, source}, dim);
    }

    /** {@code self.index_fill_(dim, index, value)}; index is int64 and negative entries wrap, as PyTorch ({@link IndexingOps#INDEX_FILL}). */
    public static Tensor indexFillInPlace(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_FILL, new Tensor[] {self, index}, dim, value);
    }

    /** {@code self.index_fill(dim, index, value)} ({@link IndexingOps#INDEX_FILL}). */
    public static Tensor indexFill(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.call(IndexingOps.INDEX_FILL, new Tensor[] {self, index}, dim, value);
    }

    /** Out-of-place form of an in-place indexing op: runs {@code body} on a copy of {@code self}. */
    public static Tensor onCopy(Tensor self, java.util.function.UnaryOperator<Tensor> body) {
        Tensor r = self.clone();
        try {
            return body.apply(r);
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- masks

    /** {@code self.masked_fill(mask, value)}: the result has the broadcast shape of self and mask, self's dtype ({@link IndexingOps#MASKED_FILL}). */
    public static Tensor maskedFill(Tensor self, Tensor mask, double value) {
        return Dispatcher.call(IndexingOps.MASKED_FILL, new Tensor[] {self, mask}, value);
    }

    /** {@code self.masked_fill_(mask, value)}: the mask must broadcast to self's shape ({@link Dispatcher#callInPlace}). */
    public static Tensor maskedFillInPlace(Tensor self, Tensor mask, double value) {
        return Dispatcher.callInPlace(IndexingOps.MASKED_FILL, new Tensor[] {self, mask}, value);
    }

    /**
     * {@code self.masked_select(mask)}: the elements where the broadcast mask is true, as a 1-d tensor
     * ({@link IndexingOps#MASKED_SELECT}). The count of true elements, which fixes the result's size, is read here, on the host.
     */
    public static Tensor maskedSelect(Tensor self, Tensor mask) {
        String op = "masked_select";
        checkOpen(op, self, mask);
        long[] shape = Shapes.broadcast(op, self.shape(), mask.shape());
        // the meta function reports a mask of another device or dtype
        boolean countable = self.device().equals(mask.device()) && (mask.dtype() == DType.BOOL || mask.dtype() == DType.UINT8);
        // a trace must not fix the count: the JIT runs a function that reads one eagerly
        if (countable && Dispatcher.tracing()) Dispatcher.traceHostRead(mask, op);
        // broadcasting repeats each of the mask's elements numel(shape) / numel(mask) times
        long count = countable && mask.numel() > 0 ? countNonzero(mask) * (Shapes.numel(shape) / mask.numel()) : 0;
        return Dispatcher.call(IndexingOps.MASKED_SELECT, new Tensor[] {self, mask}, count);
    }

    /**
     * {@code self.nonzero()}: int64 {@code [n, self.dim()]}, the coordinates of nonzero elements in row-major order
     * ({@link IndexingOps#NONZERO}): the count by {@link IndexingOps#COUNT_NONZERO}, read here, on the host, sizes the result.
     */
    public static Tensor nonzero(Tensor self) {
        self.checkOpen("nonzero");
        // a trace must not fix the count: the JIT runs a function that reads one eagerly
        if (Dispatcher.tracing()) Dispatcher.traceHostRead(self, "nonzero");
        return Dispatcher.call(IndexingOps.NONZERO, new Tensor[] {self}, countNonzero(self));
    }

    /** {@code torch.count_nonzero(input, dims)}: the number of nonzero elements of {@code input} over {@code dims} (all when none), int64. */
    public static Tensor countNonzero(Tensor input, int... dims) {
        Arguments.nonNull("countNonzero", "input", input);
        Arguments.nonNull("countNonzero", "dims", dims);
        double[] g = new double[dims.length + 1];
        g[0] = dims.length == 0 ? -1 : dims.length;
        for (int i = 0; i < dims.length; i++) g[1 + i] = dims[i];
        return Dispatcher.call(IndexingOps.COUNT_NONZERO, new Tensor[] {input}, g);
    }

    /**
     * The count of {@code t}'s nonzero elements read on the host, outside any trace: the caller reports the read to the
     * trace where it must (a trace must not fix the count).
     */
    private static long countNonzero(Tensor t) {
        return Dispatcher.withoutTrace(() -> {
            try (Tensor count = Dispatcher.call(IndexingOps.COUNT_NONZERO, new Tensor[] {t}, -1)) {
                return count.itemLong();
            }
        });
    }

    /** {@code self.nonzero(as_tuple=True)} and {@code torch.where(condition)}: one int64 vector per dimension. */
    public static List<Tensor> nonzeroTuple(Tensor self) {
        if (self.dim() == 0) {
            try (Tensor v = self.unsqueeze(0)) {
                return nonzeroTuple(v);
            }
        }
        try (Tensor nz = nonzero(self)) {
            List<Tensor> r = new ArrayList<>(self.dim());
            for (int d = 0; d < self.dim(); d++) r.add(nz.select(1, d));
            return r;
        }
    }

    // ---------------------------------------------------------------- advanced indexing

    /**
     * {@code self[indices[0], indices[1], ...]} with NumPy/PyTorch advanced-indexing rules: entries
     * index the leading dimensions; {@code null} is a full slice {@code :}; int64 tensors broadcast
     * together and select (negative values count from the end); a bool (or uint8) tensor of k
     * dimensions covers k dimensions and selects where it is true. When the indexed dimensions are
     * adjacent, the broadcast index shape replaces them in place; otherwise it comes first. The
     * result is a new tensor, never a view ({@link IndexingOps#INDEX_TENSOR}; masks are expanded here).
     */
    public static Tensor index(Tensor self, Tensor... indices) {
        String op = "index";
        Tensor[] plain = plainInputs(self, indices, null);
        if (plain != null) {
            checkEmptyResult(op, plain, 1);
            return Dispatcher.call(IndexingOps.INDEX_TENSOR, plain);
        }
        try (Entries e = Entries.of(IndexingOps.INDEX_TENSOR, op, self, null, indices)) {
            if (!e.anyTensor) return self.clone();
            Tensor[] in = e.inputs(null);
            checkEmptyResult(op, in, 1);
            return Dispatcher.call(IndexingOps.INDEX_TENSOR, in);
        }
    }

    /**
     * The op's inputs where no entry needs the front end's work (every entry an open int64 tensor on self's device, or null;
     * one tensor at least): self, {@code values} where given, then the entries without trailing nulls; else null.
     */
    private static Tensor[] plainInputs(Tensor self, Tensor[] entries, Tensor values) {
        int n = entries.length;
        if (n > self.dim()) return null;
        while (n > 0 && entries[n - 1] == null) n--;
        if (n == 0) return null;
        for (int k = 0; k < n; k++) {
            Tensor t = entries[k];
            if (t != null && (t.isClosed() || t.dtype() != DType.INT64 || !t.device().equals(self.device()))) return null;
        }
        int head = values == null ? 1 : 2;
        Tensor[] in = new Tensor[head + n];
        in[0] = self;
        if (values != null) in[1] = values;
        System.arraycopy(entries, 0, in, head, n);
        return in;
    }

    /**
     * PyTorch checks the indices of an indexing whose result is empty, where the kernel visits none: the range of each index
     * tensor is read here (only where the result may be empty: self or an index tensor without elements).
     */
    private static void checkEmptyResult(String op, Tensor[] inputs, int from) {
        Tensor self = inputs[0];
        boolean mayBeEmpty = self.numel() == 0;
        for (int k = from; k < inputs.length; k++) mayBeEmpty |= inputs[k] != null && inputs[k].numel() == 0;
        if (!mayBeEmpty) return;
        StridedView[] v = new StridedView[inputs.length];
        for (int k = 0; k < v.length; k++) v[k] = view(inputs[k]);
        if (Shapes.numel(IndexingOps.AdvancedIndex.of(op, v[0], v, from).resultShape()) != 0) return;
        for (int k = from; k < inputs.length; k++) {
            Tensor t = inputs[k];
            if (t == null || t.numel() == 0) continue;
            long size = self.size(k - from);
            try (Grad.Mode m = Grad.noGrad(); Tensor low = t.amin(); Tensor high = t.amax()) {
                long lo = low.itemLong(), hi = high.itemLong();
                long bad = lo < -size ? lo : hi >= size ? hi : Long.MIN_VALUE;
                if (bad != Long.MIN_VALUE) {
                    throw new IndexOutOfBoundsException(op + ": index " + bad + " is out of bounds for dimension with size " + size);
                }
            }
        }
    }

    /**
     * {@code self.index_put_(indices, values, accumulate)}: the places {@code self[indices]} selects
     * get {@code values} (broadcast to their shape), or have them added when {@code accumulate}
     * (duplicate indices then sum). {@code values} must have self's dtype ({@link IndexingOps#INDEX_PUT} run in place).
     */
    public static Tensor indexPutInPlace(Tensor self, Tensor[] indices, Tensor values, boolean accumulate) {
        String op = "index_put_";
        self.checkWritable(op);
        values.checkOpen(op);
        // PyTorch checks every index against self, masks included (the int64 ones are checked again by the dispatcher)
        Tensor[] plain = plainInputs(self, indices, values);
        if (plain != null) {
            Dispatcher.callInPlace(IndexingOps.INDEX_PUT, plain, accumulate ? 1 : 0);
            return self;
        }
        for (Tensor index : indices) {
            if (index != null && !index.isClosed() && (index.dtype() == DType.BOOL || index.dtype() == DType.UINT8)) self.checkNoOverlap(op, index);
        }
        try (Entries e = Entries.of(IndexingOps.INDEX_PUT, op, self, values, indices)) {
            Dispatcher.callInPlace(IndexingOps.INDEX_PUT, e.inputs(values), accumulate ? 1 : 0);
            return self;
        }
    }

    /** {@code self.index_put(indices, values, accumulate)}: a copy of self with the places written or added ({@link IndexingOps#INDEX_PUT}). */
    public static Tensor indexPut(Tensor self, Tensor[] indices, Tensor values, boolean accumulate) {
        String op = "index_put";
        values.checkOpen(op);
        Tensor[] plain = plainInputs(self, indices, values);
        if (plain != null) return Dispatcher.call(IndexingOps.INDEX_PUT, plain, accumulate ? 1 : 0);
        try (Entries e = Entries.of(IndexingOps.INDEX_PUT, op, self, values, indices)) {
            // a 0-d mask indexes self with a dimension added: the in-place form on a copy keeps self's shape
            if (e.self != self) return onCopy(self, r -> indexPutInPlace(r, indices, values, accumulate));
            return Dispatcher.call(IndexingOps.INDEX_PUT, e.inputs(values), accumulate ? 1 : 0);
        }
    }

    /**
     * The entries of an advanced index as the ops take them: one per leading dimension of {@code self} (after a 0-d mask's
     * added dimension), null for a full slice or an int64 tensor, each bool or uint8 mask replaced by the int64 coordinates
     * of its true elements ({@code nonzero}, read on the host as PyTorch reads it); trailing full slices dropped. Holds the
     * tensors it made (closed with it, but for a view of self in the graph, which its node references).
     */
    private static final class Entries implements AutoCloseable {
        /** Self, with a dimension of size 1 added for each 0-d mask. */
        Tensor self;
        /** The entries. */
        Tensor[] list;
        /** Whether an entry is a tensor (else every entry is a full slice). */
        boolean anyTensor;
        private final List<Tensor> owned = new ArrayList<>(2);

        /**
         * The entries of {@code def}'s call ({@code values}: index_put's, else null), after the dispatcher's device layer:
         * self, values and every entry on one device (a mask too, before it is expanded).
         */
        static Entries of(OpDef def, String op, Tensor self, Tensor values, Tensor[] entries) {
            self.checkOpen(op);
            for (Tensor t : entries) if (t != null) t.checkOpen(op);
            Dispatcher.sameDevice(def, op, callInputs(self, values, entries));
            Entries e = new Entries();
            try {
                e.build(op, self, entries);
                return e;
            } catch (RuntimeException ex) {
                e.close();
                throw ex;
            }
        }

        /** The op's tensor inputs: self, {@code values} where given (index_put), then the entries. */
        Tensor[] inputs(Tensor values) {
            return callInputs(self, values, list);
        }

        private static Tensor[] callInputs(Tensor self, Tensor values, Tensor[] entries) {
            int head = values == null ? 1 : 2;
            Tensor[] in = new Tensor[head + entries.length];
            in[0] = self;
            if (values != null) in[1] = values;
            System.arraycopy(entries, 0, in, head, entries.length);
            return in;
        }

        private void build(String op, Tensor base, Tensor[] entries) {
            Tensor src = base;
            List<Tensor> expanded = new ArrayList<>(entries.length);
            int consumed = 0;
            for (Tensor t : entries) {
                if (t == null) {
                    expanded.add(null);
                    consumed++;
                    continue;
                }
                anyTensor = true;
                if (t.dtype() == DType.BOOL || t.dtype() == DType.UINT8) {
                    if (t.dim() == 0) {
                        // A 0-d mask adds a dimension of size 1 and keeps (true) or drops (false) it, as PyTorch.
                        src = own(src.unsqueeze(consumed));
                        boolean keep = t.item() != 0;
                        expanded.add(own(keep ? Torch.zeros(new long[] {1}, DType.INT64, base.device())
                                : Tensor.empty(new long[] {0}, DType.INT64, base.device())));
                        consumed++;
                        continue;
                    }
                    if (consumed + t.dim() > src.dim()) throw tooMany(op, base, entries);
                    for (int k = 0; k < t.dim(); k++) {
                        if (t.size(k) != src.size(consumed + k)) {
                            throw new IndexOutOfBoundsException(op + ": the shape of the mask " + Shapes.format(t.shape())
                                    + " at index " + k + " does not match the shape of the indexed tensor "
                                    + Shapes.format(src.shape()) + " at index " + (consumed + k));
                        }
                    }
                    // a trace must not fix the count: the JIT runs a function that reads a mask eagerly
                    if (Dispatcher.tracing()) Dispatcher.traceHostRead(t, op);
                    Tensor nz = own(nonzero(t));
                    for (int k = 0; k < t.dim(); k++) expanded.add(own(nz.select(1, k)));
                    consumed += t.dim();
                } else if (t.dtype() == DType.INT64) {
                    expanded.add(t);
                    consumed++;
                } else {
                    throw new IllegalArgumentException(op + ": tensors used as indices must be long, byte or bool tensors, got "
                            + t.dtype());
                }
                if (consumed > src.dim()) throw tooMany(op, base, entries);
            }
            self = src;
            int n = expanded.size();
            while (n > 0 && expanded.get(n - 1) == null) n--;
            list = expanded.subList(0, n).toArray(new Tensor[0]);
        }

        private Tensor own(Tensor t) {
            owned.add(t);
            return t;
        }

        private static IndexOutOfBoundsException tooMany(String op, Tensor base, Tensor[] entries) {
            return new IndexOutOfBoundsException(op + ": too many indices for tensor of dimension " + base.dim()
                    + " (got " + entries.length + " index entries)");
        }

        @Override
        public void close() {
            // a view in the graph stays referenced by its node
            for (Tensor t : owned) if (!t.requiresGrad()) t.close();
            owned.clear();
        }
    }

    // ---------------------------------------------------------------- helpers

    private static void checkOpen(String op, Tensor a, Tensor b) {
        a.checkOpen(op);
        b.checkOpen(op);
    }
}
